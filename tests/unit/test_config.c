/* test_config.c - defaults, flags, the INI file, precedence, bad values and
 * accounts of server/config.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/pages.h"
#include "server/config.h"
#include "tests/unit/tap.h"

static char err[1024];

/* Runs config_parse_args on a NULL-terminated list of arguments. */
static int parse(struct config *cfg, const char *const *args)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"tabled";
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    config_defaults(cfg);
    err[0] = '\0';
    return config_parse_args(cfg, argc, argv, err, sizeof err);
}

/* Writes text to a fresh temporary file; returns its path (static). */
static const char *write_file(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/tabled-test-config-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_defaults(void)
{
    struct config cfg;
    config_defaults(&cfg);
    TEST_EQ_STR(cfg.host, "127.0.0.1", "default host");
    TEST_EQ_INT(cfg.port, 10002, "default port");
    TEST_EQ_STR(cfg.backend, "leveldb", "default backend");
    TEST_EQ_STR(cfg.data_dir, "./data", "default data dir");
    TEST_EQ_INT(cfg.log_level, LOG_INFO, "default log level");
    TEST_EQ_INT(cfg.access_log, 1, "access log on by default");
    TEST_EQ_INT(cfg.durability, DURABILITY_BATCH, "default durability batch");
    TEST_EQ_STR(cfg.host_suffix, "localhost", "default host suffix");
    TEST_EQ_INT(cfg.auth, 1, "auth on by default");
    TEST_EQ_INT(cfg.max_header_bytes, 64 * 1024, "default max header bytes");
    TEST_EQ_INT(cfg.max_body_bytes, 4 * 1024 * 1024, "default max body bytes");
    TEST_EQ_INT(cfg.request_timeout_ms, 120000, "default request timeout");
    TEST_EQ_INT(cfg.max_conn_output_bytes, 1024 * 1024, "default connection output limit");
    TEST_EQ_INT(cfg.max_total_output_bytes, 64 * 1024 * 1024, "default process output limit");
    TEST_EQ_INT(cfg.header_timeout_ms, 30000, "default header timeout");
    TEST_EQ_INT(cfg.idle_timeout_ms, 120000, "default idle timeout");
    TEST_EQ_INT(cfg.max_connections, 10000, "default max connections");
    TEST_EQ_INT(cfg.scan_budget, 0, "default scan budget");
    TEST_EQ_INT(cfg.scan_budget_ms, 5000, "default scan budget ms");
    TEST_EQ_INT(cfg.tls_port, 0, "TLS off by default");
    TEST_EQ_INT(cfg.naccounts, 1, "one default account");
    TEST_EQ_STR(cfg.accounts[0].name, DEV_ACCOUNT_NAME, "dev account name");
    TEST_EQ_INT(cfg.accounts[0].key1_len, 64, "dev key decodes to 64 bytes");
    TEST_EQ_INT(cfg.accounts[0].key1[0], 0x11, "dev key first byte");
    TEST_EQ_INT(cfg.accounts[0].key1[63], 0x1b, "dev key last byte");
    TEST_EQ_INT(cfg.accounts[0].key2_len, 0, "dev account has no key2");
    TEST_CHECK(config_find_account(&cfg, "DevStoreAccount1") == &cfg.accounts[0],
               "find account is case-insensitive");
    TEST_CHECK(config_find_account(&cfg, "nobody") == NULL, "unknown account not found");
}

/* Pages of the n bytes at p that are resident (mincore). */
static size_t resident_pages(const void *p, size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), np = (n + pg - 1) / pg, r = 0;
    unsigned char vec[64];
    if (np > sizeof vec || mincore((void *)p, np * pg, vec) != 0)
        return (size_t)-1;
    for (size_t i = 0; i < np; i++)
        r += vec[i] & 1;
    return r;
}

/* config_defaults_on_zero() on zeroed pages gives what config_defaults()
 * gives on any memory, and writes only the pages of the fields that have a
 * default: most of the 80 KiB configuration stays without resident pages
 * (what keeps an idle server small, doc/performance.md). */
static void test_defaults_on_zero(void)
{
    struct config *a = malloc(sizeof *a);
    memset(a, 0xa5, sizeof *a);
    config_defaults(a);
    struct config *b = pages_zalloc(sizeof *b);
    size_t pages = (sizeof *b + (size_t)sysconf(_SC_PAGESIZE) - 1) / (size_t)sysconf(_SC_PAGESIZE);
    TEST_EQ_INT(resident_pages(b, sizeof *b), 0, "a fresh block has no resident page");
    config_defaults_on_zero(b);
    size_t r = resident_pages(b, sizeof *b);
    TEST_CHECK(r > 0 && r <= pages / 2, "defaults on zeroed pages touch at most half of them");
    /* parsing (pass 1 on a scratch configuration of its own) keeps it so */
    char *argv[] = {(char *)"tabled", (char *)"--port", (char *)"0", NULL};
    TEST_EQ_INT(config_parse_args(b, 3, argv, err, sizeof err), 0, "parses");
    r = resident_pages(b, sizeof *b);
    TEST_CHECK(r > 0 && r <= pages / 2, "parsing keeps most pages untouched");
    /* last: comparing reads (and on some kernels so allocates) every page */
    char *argv2[] = {(char *)"tabled", (char *)"--port", (char *)"0", NULL};
    TEST_EQ_INT(config_parse_args(a, 3, argv2, err, sizeof err), 0, "parses the same");
    TEST_CHECK(memcmp(a, b, sizeof *a) == 0, "the same configuration as config_defaults()");
    pages_free(b, sizeof *b);
    free(a);
}

static void test_flags(void)
{
    struct config cfg;
    const char *a1[] = {"--host", "0.0.0.0", "--port=5", "--backend", "leveldb",
                        "--data=/var/lib/t", "--log-level", "debug", "--durability", "sync",
                        "--auth", "off", "--access-log=off", "--host-suffix", "example.com",
                        "--scan-budget", "100", "--max-body-bytes", "1000",
                        "--header-timeout-ms", "50", "--idle-timeout-ms=60", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "flags parse");
    TEST_EQ_STR(cfg.host, "0.0.0.0", "--host");
    TEST_EQ_INT(cfg.port, 5, "--port=5");
    TEST_EQ_STR(cfg.backend, "leveldb", "--backend");
    TEST_EQ_STR(cfg.data_dir, "/var/lib/t", "--data=");
    TEST_EQ_INT(cfg.log_level, LOG_DEBUG, "--log-level debug");
    TEST_EQ_INT(cfg.durability, DURABILITY_SYNC, "--durability sync");
    TEST_EQ_INT(cfg.auth, 0, "--auth off");
    TEST_EQ_INT(cfg.access_log, 0, "--access-log=off");
    TEST_EQ_STR(cfg.host_suffix, "example.com", "--host-suffix");
    TEST_EQ_INT(cfg.scan_budget, 100, "--scan-budget");
    TEST_EQ_INT(cfg.max_body_bytes, 1000, "--max-body-bytes");
    TEST_EQ_INT(cfg.header_timeout_ms, 50, "--header-timeout-ms");
    TEST_EQ_INT(cfg.idle_timeout_ms, 60, "--idle-timeout-ms=60");

    const char *a2[] = {"--port", "0", "--durability=none", "--log-level=error", NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "port 0 accepted");
    TEST_EQ_INT(cfg.port, 0, "--port 0");
    TEST_EQ_INT(cfg.durability, DURABILITY_NONE, "--durability=none");
    TEST_EQ_INT(cfg.log_level, LOG_ERROR, "--log-level=error");

    const char *a3[] = {"--tls-port", "10443", "--tls-cert", "c.pem", "--tls-key=k.pem", NULL};
    TEST_EQ_INT(parse(&cfg, a3), 0, "TLS flags parse");
    TEST_EQ_INT(cfg.tls_port, 10443, "--tls-port");
    TEST_EQ_STR(cfg.tls_cert, "c.pem", "--tls-cert");
    TEST_EQ_STR(cfg.tls_key, "k.pem", "--tls-key=");

    const char *a4[] = {"--max-body-bytes", "2M", NULL};
    TEST_EQ_INT(parse(&cfg, a4), 0, "size suffix parses");
    TEST_EQ_INT(cfg.max_body_bytes, 2 * 1024 * 1024, "--max-body-bytes 2M");

    const char *a4b[] = {"--max-conn-output-bytes", "256K", "--max-total-output-bytes=1G",
                         "--request-timeout-ms", "700", "--max-connections", "9", NULL};
    TEST_EQ_INT(parse(&cfg, a4b), 0, "output limit flags parse");
    TEST_EQ_INT(cfg.max_conn_output_bytes, 256 * 1024, "--max-conn-output-bytes 256K");
    TEST_EQ_INT(cfg.max_total_output_bytes, 1024 * 1024 * 1024, "--max-total-output-bytes=1G");
    TEST_EQ_INT(cfg.request_timeout_ms, 700, "--request-timeout-ms");
    TEST_EQ_INT(cfg.max_connections, 9, "--max-connections");

    const char *a5[] = {"--help", NULL};
    fflush(stdout);
    FILE *keep = stdout;
    stdout = fopen("/dev/null", "w");
    int rc_help = parse(&cfg, a5);
    const char *a6[] = {"--port", "bad", "--version", NULL};
    int rc_version = parse(&cfg, a6);
    fclose(stdout);
    stdout = keep;
    TEST_EQ_INT(rc_help, 1, "--help returns 1");
    TEST_EQ_INT(rc_version, -1, "a bad value before --version is still an error");
    const char *a7[] = {"--version", NULL};
    stdout = fopen("/dev/null", "w");
    int rc_v = parse(&cfg, a7);
    fclose(stdout);
    stdout = keep;
    TEST_EQ_INT(rc_v, 1, "--version returns 1");
}

static void test_bad_values(void)
{
    struct config cfg;
    static const struct {
        const char *args[4];
        const char *want;  /* substring of the message */
    } cases[] = {
        {{"--port", "65536", NULL}, "--port"},
        {{"--port", "-1", NULL}, "--port"},
        {{"--port", "12x", NULL}, "--port"},
        {{"--port", NULL}, "needs a value"},
        {{"--log-level", "loud", NULL}, "--log-level"},
        {{"--durability", "maybe", NULL}, "--durability"},
        {{"--auth", "perhaps", NULL}, "--auth"},
        {{"--access-log", "", NULL}, "--access-log"},
        {{"--scan-budget", "-5", NULL}, "--scan-budget"},
        {{"--max-body-bytes", "0", NULL}, "--max-body-bytes"},
        {{"--header-timeout-ms", "0", NULL}, "--header-timeout-ms"},
        {{"--idle-timeout-ms", "abc", NULL}, "--idle-timeout-ms"},
        {{"--request-timeout-ms", "0", NULL}, "--request-timeout-ms"},
        {{"--max-conn-output-bytes", "0", NULL}, "--max-conn-output-bytes"},
        {{"--max-total-output-bytes", "x", NULL}, "--max-total-output-bytes"},
        {{"--bogus", "1", NULL}, "unknown option"},
        {{"stray", NULL}, "unexpected argument"},
        {{"--tls-port", "1443", NULL}, "--tls-cert"},
        {{"--host", "", NULL}, "--host"},
        {{"--account", "nokey", NULL}, "NAME:KEY1"},
        {{"--account", "ab:AAAA", NULL}, "account name"},
        {{"--account", "good1:not*base64", NULL}, "base64"},
        {{"--account", "good1:AAAA:%%%%", NULL}, "key2"},
        {{"--config", "/nonexistent/tabled.conf", NULL}, "/nonexistent/tabled.conf"},
        {{"--help=yes", NULL}, "takes no value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[160];
        int rc = parse(&cfg, cases[i].args);
        snprintf(what, sizeof what, "bad value %s %s -> error mentioning '%s'", cases[i].args[0],
                 cases[i].args[1] ? cases[i].args[1] : "", cases[i].want);
        TEST_CHECK(rc == -1 && strstr(err, cases[i].want), what);
        if (rc != -1 || !strstr(err, cases[i].want))
            printf("#   message: %s\n", err);
    }
}

/* 1 when cfg serves an account of that name. */
static int serves(const struct config *cfg, const char *name)
{
    return config_find_account(cfg, name) != NULL;
}

/* devstoreaccount1 is off once another account is configured, unless
 * listed or --dev-account on (issue 13.6). */
static void test_dev_account(void)
{
    struct config cfg;
    const char *none[] = {NULL};
    TEST_EQ_INT(parse(&cfg, none), 0, "no accounts given");
    TEST_CHECK(cfg.naccounts == 1 && serves(&cfg, DEV_ACCOUNT_NAME),
               "alone, the dev account is served");
    TEST_EQ_INT(cfg.dev_account, -1, "--dev-account defaults to auto");

    const char *a1[] = {"--account", "prod:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "--account prod");
    TEST_CHECK(cfg.naccounts == 1 && serves(&cfg, "prod") && !serves(&cfg, DEV_ACCOUNT_NAME),
               "--account prod: devstoreaccount1 is off");
    TEST_EQ_STR(cfg.accounts[0].name, "prod", "prod is the first account");

    const char *a2[] = {"--dev-account", "on", "--account", "prod:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "--dev-account on --account prod");
    TEST_CHECK(cfg.naccounts == 2 && serves(&cfg, "prod") && serves(&cfg, DEV_ACCOUNT_NAME),
               "--dev-account on keeps devstoreaccount1 beside prod");
    const struct account_cfg *d = config_find_account(&cfg, DEV_ACCOUNT_NAME);
    TEST_CHECK(d && d->key1_len == 64, "with its well-known key");

    const char *a3[] = {"--account", "prod:a2V5MQ==", "--account",
                        DEV_ACCOUNT_NAME ":" DEV_ACCOUNT_KEY, NULL};
    TEST_EQ_INT(parse(&cfg, a3), 0, "devstoreaccount1 listed explicitly");
    TEST_CHECK(cfg.naccounts == 2 && serves(&cfg, DEV_ACCOUNT_NAME),
               "listed explicitly, it is served");

    const char *a4[] = {"--dev-account=off", "--account", "prod:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a4), 0, "--dev-account off with an account");
    TEST_CHECK(cfg.naccounts == 1 && !serves(&cfg, DEV_ACCOUNT_NAME), "off");
    const char *a5[] = {"--dev-account", "off", NULL};
    TEST_CHECK(parse(&cfg, a5) == -1 && strstr(err, "leaves no account"),
               "--dev-account off alone is refused");
    const char *a6[] = {"--dev-account", "maybe", NULL};
    TEST_CHECK(parse(&cfg, a6) == -1 && strstr(err, "--dev-account"), "bad --dev-account value");
    const char *a7[] = {"--dev-account", "off", "--account", DEV_ACCOUNT_NAME ":a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a7), 0, "--dev-account off but devstoreaccount1 listed");
    TEST_CHECK(cfg.naccounts == 1 && serves(&cfg, DEV_ACCOUNT_NAME) &&
                   cfg.accounts[0].key1_len == 4,
               "the listed (re-keyed) devstoreaccount1 is served");

    /* the same from a file: an [account] section; dev-account = on */
    const char *path = write_file("[account fileacct]\nkey1 = a2V5MQ==\n");
    const char *f1[] = {"--config", path, NULL};
    TEST_EQ_INT(parse(&cfg, f1), 0, "file with an account section");
    TEST_CHECK(cfg.naccounts == 1 && !serves(&cfg, DEV_ACCOUNT_NAME),
               "file: devstoreaccount1 off");
    unlink(path);
    path = write_file("dev-account = on\n[account fileacct]\nkey1 = a2V5MQ==\n");
    const char *f2[] = {"--config", path, NULL};
    TEST_EQ_INT(parse(&cfg, f2), 0, "file with dev-account = on");
    TEST_CHECK(cfg.naccounts == 2 && serves(&cfg, DEV_ACCOUNT_NAME), "file: dev-account = on");
    const char *f3[] = {"--config", path, "--dev-account", "auto", NULL};
    TEST_EQ_INT(parse(&cfg, f3), 0, "a flag overrides the file's dev-account");
    TEST_CHECK(cfg.naccounts == 1 && !serves(&cfg, DEV_ACCOUNT_NAME), "auto: off again");
    unlink(path);
}

/* Admin listener access options (issue 13.5). */
static void test_admin_access_options(void)
{
    struct config cfg;
    const char *none[] = {NULL};
    TEST_EQ_INT(parse(&cfg, none), 0, "defaults");
    TEST_EQ_STR(cfg.admin_token, "", "no admin token by default");
    TEST_EQ_INT(cfg.nadmin_allowed_hosts, 0, "no extra admin hosts by default");

    const char *a1[] = {"--admin-token", "abcdefghijklmnop-_.~+/==", "--admin-allowed-host",
                        "Mon.Example, ::1", "--admin-allowed-host=[fd00::2]", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "token and allowed hosts parse");
    TEST_EQ_STR(cfg.admin_token, "abcdefghijklmnop-_.~+/==", "token kept");
    TEST_EQ_INT(cfg.nadmin_allowed_hosts, 3, "three allowed hosts");
    TEST_EQ_STR(cfg.admin_allowed_hosts[0], "mon.example", "lower-cased, blanks cut");
    TEST_EQ_STR(cfg.admin_allowed_hosts[1], "[::1]", "IPv6 literal gets brackets");
    TEST_EQ_STR(cfg.admin_allowed_hosts[2], "[fd00::2]", "bracketed literal kept");

    static const struct {
        const char *args[8];
        const char *want;
    } bad[] = {
        {{"--admin-token", "short", NULL}, "16 to 255"},
        {{"--admin-token", "has a space in it, long", NULL}, "letters, digits"},
        {{"--admin-token", "================", NULL}, "16 to 255"},
        {{"--admin-token", "abcdefghijklmnop=x", NULL}, "letters, digits"},
        {{"--admin-token-file", "/nonexistent/token", NULL}, "/nonexistent/token"},
        {{"--admin-allowed-host", "evil example", NULL}, "--admin-allowed-host"},
        {{"--admin-allowed-host", "a:b", NULL}, "--admin-allowed-host"},
        {{"--admin-allowed-host", "[nope]", NULL}, "--admin-allowed-host"},
        {{"--admin-port", "0", "--admin-host", "0.0.0.0", NULL}, "needs --admin-token"},
        {{"--admin-port", "0", "--admin-host", "::", NULL}, "not a loopback address"},
        {{"--admin-port", "0", "--admin-host", "192.168.1.9", NULL}, "--admin-token"},
        {{"--admin-port", "0", "--admin-host", "myhost.lan", NULL}, "--admin-token"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "bad admin option #%zu -> '%s'", i, bad[i].want);
        int rc = parse(&cfg, bad[i].args);
        TEST_CHECK(rc == -1 && strstr(err, bad[i].want), what);
        if (rc != -1 || !strstr(err, bad[i].want))
            printf("#   message: %s\n", err);
    }
    static const char *loop[] = {"127.0.0.1", "127.255.0.3", "::1", "[::1]", "localhost",
                                 "::ffff:127.0.0.1"};
    for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++) {
        char what[120];
        const char *a[] = {"--admin-port", "0", "--admin-host", loop[i], NULL};
        snprintf(what, sizeof what, "--admin-host %s needs no token", loop[i]);
        TEST_EQ_INT(parse(&cfg, a), 0, what);
    }
    const char *off[] = {"--admin-host", "0.0.0.0", NULL};
    TEST_EQ_INT(parse(&cfg, off), 0, "a non-loopback admin-host is fine while the listener is off");
    TEST_CHECK(!config_addr_is_loopback("0.0.0.0") && !config_addr_is_loopback("::") &&
                   !config_addr_is_loopback("128.0.0.1") && !config_addr_is_loopback("") &&
                   !config_addr_is_loopback("localhost.evil") &&
                   !config_addr_is_loopback("::ffff:10.0.0.1"),
               "config_addr_is_loopback refuses other addresses");

    /* the token from a file: first line, newline and trailing blanks cut */
    char tpath[80];
    snprintf(tpath, sizeof tpath, "%s", write_file("from-a-file-0123456789  \nsecond line\n"));
    char tflag[128];
    snprintf(tflag, sizeof tflag, "--admin-token-file=%s", tpath);
    const char *a2[] = {"--admin-port", "0", "--admin-host", "0.0.0.0", tflag, NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "--admin-token-file satisfies a non-loopback listener");
    TEST_EQ_STR(cfg.admin_token, "from-a-file-0123456789", "token read from the file");
    char fline[256];
    snprintf(fline, sizeof fline, "admin-port = 0\nadmin-host = 0.0.0.0\nadmin-token-file = %s\n"
             "admin-allowed-host = a.example,b.example\n", tpath);
    const char *cpath = write_file(fline);
    char cpath_copy[80];
    snprintf(cpath_copy, sizeof cpath_copy, "%s", cpath);
    const char *a3[] = {"--config", cpath_copy, NULL};
    TEST_EQ_INT(parse(&cfg, a3), 0, "config file: admin-token-file, admin-allowed-host");
    TEST_CHECK(!strcmp(cfg.admin_token, "from-a-file-0123456789") &&
                   cfg.nadmin_allowed_hosts == 2 &&
                   !strcmp(cfg.admin_allowed_hosts[1], "b.example"),
               "config file: the token and both names");
    unlink(cpath_copy);
    unlink(tpath);
    const char *epath = write_file("\n");
    char eflag[128];
    snprintf(eflag, sizeof eflag, "--admin-token-file=%s", epath);
    const char *a4[] = {eflag, NULL};
    TEST_CHECK(parse(&cfg, a4) == -1 && strstr(err, "no token"), "an empty token file is refused");
    unlink(epath);
}

static void test_accounts(void)
{
    struct config cfg;
    /* "a2V5MQ==" = "key1", "a2V5Mg" = "key2" (unpadded) */
    const char *a1[] = {"--account", "Alice1:a2V5MQ==:a2V5Mg", "--account=bob22:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "--account parses");
    TEST_EQ_INT(cfg.naccounts, 2, "configured accounts replace the dev account");
    const struct account_cfg *a = config_find_account(&cfg, "alice1");
    TEST_CHECK(a != NULL, "account name lower-cased");
    TEST_CHECK(a && a->key1_len == 4 && memcmp(a->key1, "key1", 4) == 0, "key1 decoded");
    TEST_CHECK(a && a->key2_len == 4 && memcmp(a->key2, "key2", 4) == 0, "unpadded key2 decoded");
    const struct account_cfg *b = config_find_account(&cfg, "bob22");
    TEST_CHECK(b && b->key2_len == 0, "key2 optional");

    const char *a2[] = {"--account", "devstoreaccount1:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "re-keying an account parses");
    TEST_EQ_INT(cfg.naccounts, 1, "same name replaces, not adds");
    TEST_EQ_INT(cfg.accounts[0].key1_len, 4, "replaced key");

    test_dev_account();

    config_defaults(&cfg);
    TEST_EQ_INT(config_add_account(&cfg, "carol", "a2V5MQ=", NULL, err, sizeof err), -1,
                "bad padding refused");
    TEST_EQ_INT(config_add_account(&cfg, "carol", "a2V5MR==", NULL, err, sizeof err), -1,
                "non-canonical trailing bits refused");
    TEST_EQ_INT(config_add_account(&cfg, "carol", "a2V5MQ==", "", err, sizeof err), 0,
                "empty key2 means none");
    char big[400];
    memset(big, 'A', 200);
    big[200] = '\0';
    TEST_EQ_INT(config_add_account(&cfg, "dave", big, NULL, err, sizeof err), -1,
                "key longer than CONFIG_MAX_KEY_BYTES refused");
}

static void test_file(void)
{
    struct config cfg;
    const char *path = write_file(
        "# tabled test config\n"
        "; another comment\n"
        "host = 0.0.0.0\n"
        "port=7000   # trailing comment\n"
        "backend = leveldb\n"
        "data = /srv/tabled data\n"
        "log_level = warn\n"
        "durability = sync\n"
        "auth = off\n"
        "access-log = off\n"
        "max-body-bytes = 64K\n"
        "scan-budget = 7\n"
        "\n"
        "[account fileacct]\n"
        "key1 = a2V5MQ==\n"
        "key2 = a2V5Mg==\n"
        "[account other1]\n"
        "key1 = a2V5MQ==\n");
    config_defaults(&cfg);
    TEST_EQ_INT(config_load_file(&cfg, path, err, sizeof err), 0, "file loads");
    TEST_EQ_STR(cfg.host, "0.0.0.0", "file: host");
    TEST_EQ_INT(cfg.port, 7000, "file: port with trailing comment");
    TEST_EQ_STR(cfg.backend, "leveldb", "file: backend");
    TEST_EQ_STR(cfg.data_dir, "/srv/tabled data", "file: value with a space");
    TEST_EQ_INT(cfg.log_level, LOG_WARN, "file: log_level with underscore");
    TEST_EQ_INT(cfg.durability, DURABILITY_SYNC, "file: durability");
    TEST_EQ_INT(cfg.auth, 0, "file: auth");
    TEST_EQ_INT(cfg.access_log, 0, "file: access-log");
    TEST_EQ_INT(cfg.max_body_bytes, 65536, "file: size with suffix");
    TEST_EQ_INT(cfg.scan_budget, 7, "file: scan-budget");
    TEST_EQ_INT(cfg.naccounts, 3, "file: two account sections");
    const struct account_cfg *a = config_find_account(&cfg, "fileacct");
    TEST_CHECK(a && a->key1_len == 4 && a->key2_len == 4, "file: account keys");

    /* precedence: flags beat the file, whatever their order */
    const char *a1[] = {"--port", "9000", "--config", path, "--durability=batch", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "file + flags parse");
    TEST_EQ_INT(cfg.port, 9000, "flag before --config still wins");
    TEST_EQ_INT(cfg.durability, DURABILITY_BATCH, "flag after --config wins");
    TEST_EQ_STR(cfg.backend, "leveldb", "file value kept when no flag");
    TEST_EQ_STR(cfg.host_suffix, "localhost", "default kept when neither");
    unlink(path);

    static const struct {
        const char *text;
        const char *want;
    } bad[] = {
        {"port = nope\n", ":1:"},
        {"\n\nfrobnicate = 1\n", ":3: unknown option"},
        {"just words\n", "key = value"},
        {"[account x]\nkey1 = a2V5MQ==\n", "account name"},
        {"[account abc]\nkey2 = a2V5MQ==\n", "no key1"},
        {"[account abc]\nport = 1\n", "key1 and key2"},
        {"[nonsense]\n", "unknown section"},
        {"config = /etc/other.conf\n", "not allowed"},
        {"durability = fast\n", "--durability"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[160];
        path = write_file(bad[i].text);
        config_defaults(&cfg);
        int rc = config_load_file(&cfg, path, err, sizeof err);
        snprintf(what, sizeof what, "bad file #%zu -> error mentioning '%s'", i, bad[i].want);
        TEST_CHECK(rc == -1 && strstr(err, bad[i].want) && strstr(err, path), what);
        if (rc != -1 || !strstr(err, bad[i].want))
            printf("#   message: %s\n", err);
        unlink(path);
    }
}

/* Throttling, admin listener and fault rule options (flags and file). */
static void test_throttle_options(void)
{
    struct config cfg;
    const char *none[] = {NULL};
    TEST_EQ_INT(parse(&cfg, none), 0, "no flags");
    TEST_EQ_INT(cfg.throttle, 0, "throttling is off by default");
    TEST_CHECK(cfg.throttle_partition_rate == 2000 && cfg.throttle_partition_burst == 2000,
               "partition default: 2,000 entities/s");
    TEST_CHECK(cfg.throttle_account_rate == 20000 && cfg.throttle_account_burst == 20000,
               "account default: 20,000 entities/s");
    TEST_EQ_INT(cfg.admin_port, -1, "admin listener off by default");
    TEST_EQ_STR(cfg.admin_host, "127.0.0.1", "admin host default");
    TEST_EQ_INT(cfg.throttle_retry_after, 0, "no Retry-After by default");

    const char *a1[] = {"--throttle", "--port", "7", "--throttle-partition-rate", "2.5",
                        "--throttle-account-burst=50", "--admin-port", "0",
                        "--throttle-batch-account", "per-request", "--fault-seed", "99", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "bare --throttle followed by other flags");
    TEST_EQ_INT(cfg.throttle, 1, "--throttle turns it on");
    TEST_EQ_INT(cfg.port, 7, "the next flag is not taken as --throttle's value");
    TEST_CHECK(cfg.throttle_partition_rate == 2.5, "fractional rate");
    TEST_CHECK(cfg.throttle_account_burst == 50, "account burst");
    TEST_EQ_INT(cfg.admin_port, 0, "admin port 0 = any free port");
    TEST_EQ_INT(cfg.throttle_batch_per_request, 1, "per-request batch cost");
    TEST_EQ_INT(cfg.fault_seed, 99, "fault seed");
    const char *a2[] = {"--throttle=off", NULL};
    TEST_EQ_INT(parse(&cfg, a2), 0, "--throttle=off");
    TEST_EQ_INT(cfg.throttle, 0, "is off");

    const char *a3[] = {"--fault", "r1:busy=0.5,ops=writes", "--fault=r2:latency-ms=5", NULL};
    TEST_EQ_INT(parse(&cfg, a3), 0, "--fault flags");
    TEST_EQ_INT(cfg.nfaults, 3, "three fault settings");
    TEST_CHECK(!strcmp(cfg.faults[0].rule, "r1") && !strcmp(cfg.faults[0].key, "busy") &&
                   !strcmp(cfg.faults[0].value, "0.5") && !strcmp(cfg.faults[1].key, "ops") &&
                   !strcmp(cfg.faults[2].rule, "r2") && !strcmp(cfg.faults[2].value, "5"),
               "fault settings kept in order");

    static const struct {
        const char *args[4];
        const char *want;
    } bad[] = {
        {{"--throttle-partition-rate", "0", NULL}, "--throttle-partition-rate"},
        {{"--throttle-account-burst", "0.5", NULL}, "--throttle-account-burst"},
        {{"--throttle=maybe", NULL}, "--throttle"},
        {{"--throttle-batch-account", "free", NULL}, "per-entity|per-request"},
        {{"--admin-port", "70000", NULL}, "--admin-port"},
        {{"--admin-port", "10002", NULL}, "must differ"},
        {{"--fault", "nocolon", NULL}, "NAME:key=value"},
        {{"--fault", "r:busy", NULL}, "key=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "bad throttle option #%zu -> '%s'", i, bad[i].want);
        int rc = parse(&cfg, bad[i].args);
        TEST_CHECK(rc == -1 && strstr(err, bad[i].want), what);
        if (rc != -1 || !strstr(err, bad[i].want))
            printf("#   message: %s\n", err);
    }

    const char *path = write_file("throttle = on\n"
                                  "throttle-partition-burst = 10\n"
                                  "admin-port = 9999\n"
                                  "[fault slow]\n"
                                  "latency-ms = 10-20\n"
                                  "table = orders\n"
                                  "[tabled]\n"
                                  "throttle-retry-after = 2\n"
                                  "[fault busy]\n"
                                  "busy = 0.1\n");
    config_defaults(&cfg);
    TEST_EQ_INT(config_load_file(&cfg, path, err, sizeof err), 0, "file with fault sections");
    TEST_EQ_INT(cfg.throttle, 1, "file: throttle");
    TEST_CHECK(cfg.throttle_partition_burst == 10, "file: burst");
    TEST_EQ_INT(cfg.admin_port, 9999, "file: admin-port");
    TEST_EQ_INT(cfg.throttle_retry_after, 2, "[tabled] returns to top-level keys");
    TEST_EQ_INT(cfg.nfaults, 3, "file: three fault settings");
    TEST_CHECK(!strcmp(cfg.faults[0].rule, "slow") && !strcmp(cfg.faults[0].key, "latency-ms") &&
                   cfg.faults[0].line == 5 && !strcmp(cfg.faults[1].value, "orders") &&
                   !strcmp(cfg.faults[2].rule, "busy"),
               "file: fault settings with rule names and lines");
    unlink(path);
    path = write_file("[fault ]\nbusy = 1\n");
    config_defaults(&cfg);
    TEST_CHECK(config_load_file(&cfg, path, err, sizeof err) == -1 && strstr(err, "[fault]"),
               "a fault section needs a name");
    unlink(path);
}

/* --strict-versions / strict-versions (issue 14 point 10). */
static void test_strict_versions(void)
{
    struct config cfg;
    const char *none[] = {NULL};
    TEST_EQ_INT(parse(&cfg, none), 0, "no flags");
    TEST_EQ_INT(cfg.strict_versions, 0, "unknown versions accepted by default");
    const char *a1[] = {"--strict-versions", "--port", "9", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "bare --strict-versions followed by another flag");
    TEST_CHECK(cfg.strict_versions == 1 && cfg.port == 9, "--strict-versions turns it on");
    const char *a2[] = {"--strict-versions=off", NULL};
    TEST_CHECK(parse(&cfg, a2) == 0 && cfg.strict_versions == 0, "--strict-versions=off");
    const char *a3[] = {"--strict-versions=sometimes", NULL};
    TEST_CHECK(parse(&cfg, a3) == -1 && strstr(err, "--strict-versions expects on|off"),
               "--strict-versions=sometimes refused");
    const char *path = write_file("strict-versions = on\n");
    config_defaults(&cfg);
    TEST_CHECK(config_load_file(&cfg, path, err, sizeof err) == 0 && cfg.strict_versions == 1,
               "strict-versions = on in a file");
    unlink(path);
    path = write_file("strict-versions = maybe\n");
    config_defaults(&cfg);
    TEST_CHECK(config_load_file(&cfg, path, err, sizeof err) == -1 &&
                   strstr(err, "--strict-versions expects on|off"),
               "strict-versions = maybe refused");
    unlink(path);
}

/* --advisor NAME=VALUE: repeatable, kept in order for main.c (which checks
 * the names and values through advisor/advisor.c), also from the file. */
static void test_advisor_options(void)
{
    struct config cfg;
    const char *a[] = {"--advisor", "hot-share=0.6", "--advisor=scan-min=3", NULL};
    TEST_EQ_INT(parse(&cfg, a), 0, "--advisor twice");
    TEST_EQ_INT(cfg.nadvisor_options, 2, "two advisor settings kept");
    TEST_EQ_STR(cfg.advisor_options[0], "hot-share=0.6", "first as given");
    TEST_EQ_STR(cfg.advisor_options[1], "scan-min=3", "second (--advisor=...) as given");
    const char *path = write_file("advisor = target=1500\n");
    const char *b[] = {"--config", path, NULL};
    TEST_EQ_INT(parse(&cfg, b), 0, "advisor = ... in the config file");
    TEST_EQ_STR(cfg.nadvisor_options == 1 ? cfg.advisor_options[0] : "", "target=1500",
                "file setting kept");
    unlink(path);
    const char *many[2 * CONFIG_MAX_ADVISOR_OPTIONS + 3];
    size_t n = 0;
    for (int i = 0; i <= CONFIG_MAX_ADVISOR_OPTIONS; i++) {
        many[n++] = "--advisor";
        many[n++] = "scan-min=2";
    }
    many[n] = NULL;
    TEST_EQ_INT(parse(&cfg, many), -1, "too many --advisor settings refused");
    TEST_CHECK(strstr(err, "--advisor") != NULL, "the message names --advisor");
}

/* --backend-option NAME=V flags replace every setting of NAME that the
   config file made (a repeatable option such as postgres's
   replica-conninfo: the flags' list, not the file's plus the flags');
   the file's other names stay, and names only in the file stay. */
static void test_backend_option_precedence(void)
{
    struct config cfg;
    const char *path = write_file("backend-option = conninfo=dbname=a\n"
                                  "backend-option = replica-conninfo=host=r1\n"
                                  "backend-option = pool-size=8\n"
                                  "backend-option = replica-conninfo=host=r2\n");
    const char *a[] = {"--config", path, NULL};
    TEST_EQ_INT(parse(&cfg, a), 0, "backend options from a file");
    TEST_EQ_INT(cfg.nbackend_options, 4, "the file's four settings, the repeated one twice");
    const char *b[] = {"--config", path, "--backend-option", "replica-conninfo=host=r3", NULL};
    TEST_EQ_INT(parse(&cfg, b), 0, "a flag over the file");
    TEST_EQ_INT(cfg.nbackend_options, 3, "the flag replaced both of the file's settings");
    TEST_EQ_STR(cfg.backend_options[0], "conninfo=dbname=a", "the file's other names stay");
    TEST_EQ_STR(cfg.backend_options[1], "pool-size=8", "in their order");
    TEST_EQ_STR(cfg.backend_options[2], "replica-conninfo=host=r3", "the flag's setting");
    const char *c[] = {"--config", path, "--backend-option", "replica-conninfo=host=r3",
                       "--backend-option=replica-conninfo=host=r4", NULL};
    TEST_EQ_INT(parse(&cfg, c), 0, "two flags over the file");
    TEST_EQ_INT(cfg.nbackend_options, 4, "both flags kept");
    TEST_EQ_STR(cfg.backend_options[3], "replica-conninfo=host=r4", "the second flag last");
    unlink(path);
}

int main(void)
{
    test_defaults();
    test_defaults_on_zero();
    test_flags();
    test_bad_values();
    test_accounts();
    test_file();
    test_throttle_options();
    test_strict_versions();
    test_admin_access_options();
    test_advisor_options();
    test_backend_option_precedence();
    return test_done();
}

/* test_config.c - defaults, flags, the INI file, precedence, bad values and
 * accounts of core/config.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
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
    TEST_EQ_INT(cfg.max_body_bytes, 4 * 1024 * 1024 + 64 * 1024, "default max body bytes");
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

static void test_accounts(void)
{
    struct config cfg;
    /* "a2V5MQ==" = "key1", "a2V5Mg" = "key2" (unpadded) */
    const char *a1[] = {"--account", "Alice1:a2V5MQ==:a2V5Mg", "--account=bob22:a2V5MQ==", NULL};
    TEST_EQ_INT(parse(&cfg, a1), 0, "--account parses");
    TEST_EQ_INT(cfg.naccounts, 3, "accounts are added to the dev account");
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

int main(void)
{
    test_defaults();
    test_flags();
    test_bad_values();
    test_accounts();
    test_file();
    test_throttle_options();
    return test_done();
}

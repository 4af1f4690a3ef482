/* test_azurite_cli.c - server/azurite_cli.c: Azurite's table command lines
 * (Testcontainers, the container image's default, CI) translated into
 * tabled flags and then applied by config_parse_args; AZURITE_ACCOUNTS;
 * refusals; PFX and encrypted-key conversion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/azurite_cli.h"
#include "server/config.h"
#include "tests/unit/tap.h"

static char err[1024];
static struct azurite_cli az;
static struct config cfg;

/* Translates a NULL-terminated Azurite argument list of the command
 * prog (argv[0]) and applies it. */
static int run_as(const char *prog, const char *env, const char *const *args)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)prog;
    for (; *args; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    err[0] = '\0';
    if (azurite_cli_parse(&az, argc, argv, env, err, sizeof err) < 0)
        return -1;
    config_defaults(&cfg);
    if (config_parse_args(&cfg, az.argc, az.argv, err, sizeof err) != 0)
        return -2;
    azurite_cli_apply(&az, &cfg);
    return 0;
}

/* The same as azurite-table. */
static int run(const char *env, const char *const *args)
{
    return run_as("azurite-table", env, args);
}

/* The translated vector as one string, for exact comparisons. */
static const char *joined(void)
{
    static char s[4096];
    s[0] = '\0';
    for (int i = 1; i < az.argc; i++) {
        strcat(s, i > 1 ? " " : "");
        strcat(s, az.argv[i]);
    }
    return s;
}

static void test_testcontainers(void)
{
    /* testcontainers' Azurite module with only the table service. */
    const char *a[] = {"--tableHost", "0.0.0.0", "--tablePort", "10002", NULL};
    TEST_EQ_INT(run(NULL, a), 0, "testcontainers command line accepted");
    TEST_EQ_STR(joined(), "--host 0.0.0.0 --port 10002 --data ./__tabled_table__",
                "testcontainers: host, port, data in the current directory");
    TEST_EQ_STR(cfg.host, "0.0.0.0", "host applied");
    TEST_EQ_INT(cfg.port, 10002, "port applied");
    TEST_EQ_STR(cfg.backend, "leveldb", "durable backend by default, as Azurite's");
    TEST_EQ_STR(cfg.accounts[0].name, DEV_ACCOUNT_NAME, "devstoreaccount1 kept");
}

static void test_image_default(void)
{
    /* The container image's default command (combined azurite). */
    const char *a[] = {"-l", "/data", "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0",
                       "--tableHost", "0.0.0.0", NULL};
    TEST_EQ_INT(run(NULL, a), 0, "image default command accepted");
    TEST_EQ_STR(cfg.data_dir, "/data/__tabled_table__", "-l sets the data directory");
    TEST_EQ_STR(az.ignored, "--blobHost, --queueHost", "other services' flags noted");
    TEST_EQ_STR(joined(), "--host 0.0.0.0 --port 10002 --data /data/__tabled_table__",
                "blob/queue values are not taken as flags");
}

static void test_ci(void)
{
    const char *a[] = {"--skipApiVersionCheck", "--inMemoryPersistence", "--tablePort=0",
                       "-s", "--loose", "--disableTelemetry", "--disableProductStyleUrl",
                       "--tableKeepAliveTimeout", "7", "-d", "/tmp/az-debug.log", NULL};
    TEST_EQ_INT(run(NULL, a), 0, "CI command line accepted");
    TEST_EQ_STR(cfg.backend, "memory", "--inMemoryPersistence -> memory backend");
    TEST_EQ_INT(cfg.port, 0, "--tablePort=0 form");
    TEST_EQ_INT(cfg.access_log, 0, "-s -> no access log");
    TEST_EQ_INT(cfg.path_style_only, 1, "--disableProductStyleUrl -> path style only");
    TEST_EQ_INT(cfg.idle_timeout_ms, 7000, "--tableKeepAliveTimeout seconds -> ms");
    TEST_EQ_INT(cfg.log_level, LOG_DEBUG, "-d -> debug log level");
    TEST_EQ_STR(az.debug_log, "/tmp/az-debug.log", "-d file kept for main");
}

static void test_accounts(void)
{
    const char *a[] = {NULL};
    const char *env = "acct1:a2V5MQ==:a2V5Mg==; Acct2:a2V5Mw==";
    TEST_EQ_INT(run(env, a), 0, "AZURITE_ACCOUNTS with two accounts");
    TEST_EQ_INT(cfg.naccounts, 2, "two accounts, devstoreaccount1 dropped");
    TEST_EQ_STR(cfg.accounts[0].name, "acct1", "first account");
    TEST_EQ_INT(cfg.accounts[0].key2_len, 4, "first account's second key");
    TEST_EQ_STR(cfg.accounts[1].name, "acct2", "second account, lower-cased");
    TEST_CHECK(config_find_account(&cfg, DEV_ACCOUNT_NAME) == NULL,
               "devstoreaccount1 gone unless listed");
    env = "devstoreaccount1:" DEV_ACCOUNT_KEY ";acct3:a2V5Mw==";
    TEST_EQ_INT(run(env, a), 0, "AZURITE_ACCOUNTS listing devstoreaccount1");
    TEST_CHECK(config_find_account(&cfg, DEV_ACCOUNT_NAME) != NULL, "listed: kept");
    TEST_EQ_INT(run("acct1", a), -1, "an account without a key is refused");
    TEST_CHECK(strstr(err, "AZURITE_ACCOUNTS") != NULL, "message names the variable");
    TEST_EQ_INT(run("acct1:not*base64", a), -2, "a bad key is refused");
}

static void test_refusals(void)
{
    const char *a1[] = {"--tablePort", "70000", NULL};
    TEST_EQ_INT(run(NULL, a1), -1, "port out of range");
    TEST_CHECK(strstr(err, "--tablePort") != NULL, "message names --tablePort");
    const char *a2[] = {"--oauth", "basic", NULL};
    TEST_EQ_INT(run(NULL, a2), -1, "--oauth without --cert");
    TEST_CHECK(strstr(err, "HTTPS") != NULL, "message says HTTPS is needed");
    const char *a3[] = {"--oauth", "full", "--cert", "c.pem", "--key", "k.pem", NULL};
    TEST_EQ_INT(run(NULL, a3), -1, "--oauth other than basic");
    const char *a4[] = {"--port", "1", NULL};
    TEST_EQ_INT(run(NULL, a4), -1, "tabled's own flags are not Azurite's");
    TEST_CHECK(strstr(err, "--port") != NULL, "message names the flag");
    const char *a5[] = {"--cert", "c.pem", NULL};
    TEST_EQ_INT(run(NULL, a5), -1, "--cert alone");
    const char *a6[] = {"--tableHost", NULL};
    TEST_EQ_INT(run(NULL, a6), -1, "missing value");
    const char *a7[] = {"-x", NULL};
    TEST_EQ_INT(run(NULL, a7), -1, "unknown short flag");
    const char *a8[] = {"--silent=true", "--loose=false", NULL};
    TEST_EQ_INT(run(NULL, a8), 0, "--switch=true/false forms");
    TEST_EQ_INT(cfg.access_log, 0, "--silent=true applied");
}

static void test_https(void)
{
    const char *a[] = {"--cert", "c.pem", "--key", "k.pem", "--oauth", "basic", "--tablePort",
                       "10443", NULL};
    TEST_EQ_INT(run(NULL, a), 0, "PEM certificate and key");
    TEST_EQ_INT(cfg.tls_port, 10443, "HTTPS on the table port");
    TEST_EQ_INT(cfg.port, -1, "no plain HTTP listener (HTTPS only, as Azurite's)");
    TEST_EQ_STR(cfg.tls_cert, "c.pem", "certificate");
    TEST_EQ_STR(cfg.tls_key, "k.pem", "key");
    TEST_EQ_INT(cfg.oauth_basic, 1, "--oauth basic");
    char dir[1100];
    TEST_EQ_INT(azurite_cli_tls_files(&az, &cfg, dir, sizeof dir, err, sizeof err), 0,
                "no --pwd: nothing to convert");
    TEST_EQ_STR(dir, "", "no directory made");
}

/* --pwd with a PFX and with an encrypted PEM key, made with openssl(1). */
static void test_pwd(void)
{
    char tmp[] = "/tmp/tabled-test-az-XXXXXX", cmd[4096];
    if (!mkdtemp(tmp) || system("command -v openssl >/dev/null") != 0) {
        TEST_CHECK(0, "openssl(1) and a temporary directory are available");
        return;
    }
    snprintf(cmd, sizeof cmd,
             "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-keyout k.pem -out c.pem -days 2 -subj /CN=127.0.0.1 2>/dev/null && "
             "openssl pkcs12 -export -in c.pem -inkey k.pem -out c.pfx -passout pass:s3cret && "
             "openssl pkey -in k.pem -aes256 -passout pass:s3cret -out ke.pem",
             tmp);
    TEST_EQ_INT(system(cmd), 0, "test certificate, PFX and encrypted key made");
    char pfx[256], cert[256], key[256], dir[1100];
    snprintf(pfx, sizeof pfx, "%s/c.pfx", tmp);
    snprintf(cert, sizeof cert, "%s/c.pem", tmp);
    snprintf(key, sizeof key, "%s/ke.pem", tmp);
    const char *a[] = {"--cert", pfx, "--pwd", "s3cret", NULL};
    TEST_EQ_INT(run(NULL, a), 0, "PFX with --pwd");
    TEST_EQ_INT(azurite_cli_tls_files(&az, &cfg, dir, sizeof dir, err, sizeof err), 0,
                "PFX converted");
    struct stat st;
    TEST_CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "private directory");
    TEST_CHECK(stat(cfg.tls_key, &st) == 0 && (st.st_mode & 0777) == 0600, "key file 0600");
    snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout && openssl pkey -in %s -noout",
             cfg.tls_cert, cfg.tls_key);
    TEST_EQ_INT(system(cmd), 0, "PEM certificate and clear key written");
    azurite_cli_cleanup(dir);
    TEST_CHECK(stat(dir, &st) != 0, "cleanup removes them");
    const char *b[] = {"--cert", pfx, "--pwd", "wrong", NULL};
    TEST_EQ_INT(run(NULL, b), 0, "PFX with a wrong --pwd parses");
    TEST_EQ_INT(azurite_cli_tls_files(&az, &cfg, dir, sizeof dir, err, sizeof err), -1,
                "wrong password refused");
    TEST_CHECK(strstr(err, "--pwd") != NULL, "message names --pwd");
    const char *c[] = {"--cert", cert, "--key", key, "--pwd", "s3cret", NULL};
    TEST_EQ_INT(run(NULL, c), 0, "encrypted PEM key with --pwd");
    TEST_EQ_INT(azurite_cli_tls_files(&az, &cfg, dir, sizeof dir, err, sizeof err), 0,
                "key decrypted");
    TEST_EQ_STR(cfg.tls_cert, cert, "the PEM certificate is used as it is");
    snprintf(cmd, sizeof cmd, "openssl pkey -in %s -noout -passin pass:", cfg.tls_key);
    TEST_EQ_INT(system(cmd), 0, "decrypted key readable without a password");
    azurite_cli_cleanup(dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    TEST_EQ_INT(system(cmd), 0, "cleanup");
}

/* The combined command (argv[0] "azurite"): the container image's
 * default command line, the Blob and Queue addresses, refusals. */
static void test_combined(void)
{
    TEST_EQ_INT(azurite_cli_name("/usr/bin/azurite"), AZURITE_ALL, "azurite: combined");
    TEST_EQ_INT(azurite_cli_name("azurite-table"), AZURITE_TABLE, "azurite-table");
    TEST_EQ_INT(azurite_cli_name("/x/azurite-blob"), AZURITE_NONE, "azurite-blob: not ours");
    TEST_EQ_INT(azurite_cli_name("tabled"), AZURITE_NONE, "tabled");
    const char *a[] = {"-l", "/data", "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0",
                       "--tableHost", "0.0.0.0", NULL};
    TEST_EQ_INT(run_as("/usr/local/bin/azurite", NULL, a), 0, "image default as azurite");
    TEST_EQ_INT(az.all, 1, "Blob and Queue ports to open");
    TEST_EQ_STR(az.prog, "azurite", "messages name azurite");
    TEST_EQ_STR(az.blob_host, "0.0.0.0", "--blobHost");
    TEST_EQ_STR(az.queue_host, "0.0.0.0", "--queueHost");
    TEST_EQ_INT(az.blob_port, 10000, "Blob port defaults to 10000");
    TEST_EQ_INT(az.queue_port, 10001, "Queue port defaults to 10001");
    TEST_EQ_STR(az.ignored, "", "nothing skipped");
    TEST_EQ_STR(joined(), "--host 0.0.0.0 --port 10002 --data /data/__tabled_table__",
                "the table part as azurite-table's");
    const char *b[] = {"--tableHost", "0.0.0.0", "--tablePort", "10002", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, b), 0, "testcontainers-go's table-only line");
    TEST_EQ_STR(az.blob_host, "127.0.0.1", "Blob host defaults to 127.0.0.1");
    const char *c[] = {"--blobPort=20000", "--queuePort", "20001", "--blobKeepAliveTimeout",
                       "5", "--extentMemoryLimit", "64", "--inMemoryPersistence", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, c), 0, "ports and the other services' settings");
    TEST_EQ_INT(az.blob_port, 20000, "--blobPort=N form");
    TEST_EQ_INT(az.queue_port, 20001, "--queuePort N form");
    TEST_EQ_STR(az.ignored, "--blobKeepAliveTimeout, --extentMemoryLimit",
                "the other services' settings noted");
    const char *d[] = {"--blobPort", "x", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, d), -1, "a bad --blobPort");
    TEST_CHECK(strstr(err, "--blobPort") != NULL, "message names --blobPort");
    const char *e[] = {"--queueHost", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, e), -1, "--queueHost without a value");
    const char *f[] = {"--port", "1", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, f), -1, "tabled's own flags refused");
    TEST_CHECK(strstr(err, "see azurite --help") != NULL, "message names azurite");
    const char *g[] = {"--cert", "c.pem", "--key", "k.pem", "--tablePort", "0", NULL};
    TEST_EQ_INT(run_as("azurite", NULL, g), -1, "--cert with --tablePort 0");
    TEST_CHECK(strstr(err, "--tablePort 0") != NULL, "message names it");
}

int main(void)
{
    test_testcontainers();
    test_image_default();
    test_ci();
    test_accounts();
    test_refusals();
    test_https();
    test_pwd();
    test_combined();
    return test_done();
}

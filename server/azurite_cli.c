/* azurite_cli.c - Azurite's table and combined command lines as tabled
 * flags (see azurite_cli.h). Azurite's flags and what each becomes:
 *   --tableHost H              --host H
 *   --tablePort N              --port N (with --cert: --tls-port N, and no
 *                              plain HTTP listener: azurite_cli_apply)
 *   -l, --location DIR         --data DIR/__tabled_table__ (Azurite's
 *                              default location is the current directory)
 *   --inMemoryPersistence      --backend memory
 *   -s, --silent               --access-log off
 *   -d, --debug FILE           --log-level debug, diagnostics appended to FILE
 *   -L, --loose                accepted: tabled never refuses a request for
 *                              an unknown header or query parameter
 *   --skipApiVersionCheck      accepted: tabled accepts every known version
 *   --disableProductStyleUrl   --path-style-only on
 *   --cert, --key, --pwd       --tls-cert, --tls-key (PFX or an encrypted
 *                              key is decrypted with OpenSSL at start)
 *   --oauth basic              --oauth basic (needs --cert, as in Azurite)
 *   --disableTelemetry         accepted: tabled sends no telemetry
 *   --tableKeepAliveTimeout S  --idle-timeout-ms S*1000
 *   --blobHost, --blobPort,    azurite: where main() opens the Blob and
 *   --queueHost, --queuePort   Queue ports (server/absent.h; defaults
 *                              127.0.0.1:10000 and :10001, as Azurite's);
 *                              azurite-table: skipped with a note
 *   --blobKeepAliveTimeout, --queueKeepAliveTimeout, --extentMemoryLimit
 *                              the other services' settings: skipped with
 *                              a note (tabled serves tables only)
 *   AZURITE_ACCOUNTS           --account NAME:KEY1[:KEY2] for each, and
 *                              devstoreaccount1 dropped unless listed */
#include "server/azurite_cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sslload.h"

#include "core/errfmt.h"

void azurite_cli_usage(const struct azurite_cli *az, FILE *out)
{
    fprintf(out,
            "Usage: %s [OPTIONS]\n"
            "%s"
            "\n"
            "  --tableHost ADDR              listen address (default 127.0.0.1)\n"
            "  --tablePort N                 port (default 10002)\n"
            "%s"
            "  -l, --location DIR            workspace (default: current directory)\n"
            "  --import-azurite-db           tabled's own: import DIR's Azurite table database\n"
            "                                (__azurite_db_table__.json) once, at start-up\n"
            "  --inMemoryPersistence         keep data in memory only\n"
            "  -s, --silent                  no access log\n"
            "  -d, --debug FILE              debug log into FILE\n"
            "  -L, --loose                   accepted (tabled ignores unknown headers)\n"
            "  --skipApiVersionCheck         accepted (every known version is served)\n"
            "  --disableProductStyleUrl      account always from the URL path\n"
            "  --cert FILE, --key FILE       HTTPS with a PEM certificate and key\n"
            "  --pwd PASSWORD                password of a PFX --cert or an encrypted --key\n"
            "  --oauth basic                 accept bearer tokens (HTTPS only)\n"
            "  --disableTelemetry            accepted (tabled sends no telemetry)\n"
            "  --tableKeepAliveTimeout S     keep-alive idle close in seconds\n"
            "  --blobKeepAliveTimeout, --queueKeepAliveTimeout, --extentMemoryLimit\n"
            "                                skipped (tables only)\n"
            "  -h, --help, -v, --version\n"
            "Accounts: AZURITE_ACCOUNTS=\"name:key1[:key2];name2:key1\" (base64 keys).\n"
            "See tabled(1), section AZURITE-TABLE.\n",
            az->prog,
            az->all ? "tabled under the command line of Azurite's combined command: the Table\n"
                      "service, and the Blob and Queue ports answering that only the Table\n"
                      "service is provided.\n"
                    : "tabled under the command line of Azurite's table service.\n",
            az->all ? "  --blobHost ADDR, --blobPort N Blob port: answers 501 (default "
                      "127.0.0.1:10000)\n"
                      "  --queueHost ADDR, --queuePort N  Queue port: the same (default "
                      "127.0.0.1:10001)\n"
                    : "  --blobHost, --blobPort, --queueHost, --queuePort  skipped (tables "
                      "only)\n");
}

enum azurite_name azurite_cli_name(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    if (strcmp(base, "azurite-table") == 0)
        return AZURITE_TABLE;
    if (strcmp(base, "azurite") == 0)
        return AZURITE_ALL;
    return AZURITE_NONE;
}

/* Appends one formatted argument to the translated vector. */
static int az_push(struct azurite_cli *az, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int az_push(struct azurite_cli *az, char *err, size_t errlen, const char *fmt, ...)
{
    size_t room = sizeof az->store - az->used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(az->store + az->used, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room || az->argc >= AZURITE_MAX_ARGS) {
        errfmt_set(err, errlen, "command line too long");
        return -1;
    }
    az->argv[az->argc++] = az->store + az->used;
    az->argv[az->argc] = NULL;
    az->used += (size_t)n + 1;
    return 0;
}

/* Copies a flag value into a fixed field. */
static int az_copy(char *dst, size_t cap, const char *v, const char *flag, char *err,
                   size_t errlen)
{
    if (strlen(v) >= cap) {
        errfmt_set(err, errlen, "%s: value too long", flag);
        return -1;
    }
    strcpy(dst, v);
    return 0;
}

/* Adds the accounts of AZURITE_ACCOUNTS ("name:key1[:key2];..."). */
static int az_accounts(struct azurite_cli *az, const char *env, char *err, size_t errlen)
{
    char tmp[8192];
    if (strlen(env) >= sizeof tmp) {
        errfmt_set(err, errlen, "AZURITE_ACCOUNTS is too long");
        return -1;
    }
    strcpy(tmp, env);
    char *save = NULL;
    for (char *it = strtok_r(tmp, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
        while (isspace((unsigned char)*it))
            it++;
        size_t n = strlen(it);
        while (n && isspace((unsigned char)it[n - 1]))
            it[--n] = '\0';
        if (!n)
            continue;
        char *c1 = strchr(it, ':');
        if (!c1 || c1 == it || !c1[1]) {
            errfmt_set(err, errlen, "AZURITE_ACCOUNTS: expected name:key1[:key2], got '%s'", it);
            return -1;
        }
        size_t nl = (size_t)(c1 - it);
        if (nl >= sizeof az->accounts[0] || az->naccounts >= CONFIG_MAX_ACCOUNTS) {
            errfmt_set(err, errlen, "AZURITE_ACCOUNTS: bad or too many accounts at '%s'", it);
            return -1;
        }
        for (size_t i = 0; i < nl; i++)
            az->accounts[az->naccounts][i] = (char)tolower((unsigned char)it[i]);
        az->accounts[az->naccounts][nl] = '\0';
        az->naccounts++;
        if (az_push(az, err, errlen, "--account") < 0 || az_push(az, err, errlen, "%s", it) < 0)
            return -1;
    }
    az->custom_accounts = az->naccounts > 0;
    return 0;
}

/* Parses a port number 0-65535 given to flag. */
static int az_port(const char *flag, const char *val, int *port, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long p = strtol(val, &end, 10);
    if (errno || *end || !*val || p < 0 || p > 65535) {
        errfmt_set(err, errlen, "--%s expects a port number 0-65535, got '%s'", flag, val);
        return -1;
    }
    *port = (int)p;
    return 0;
}

/* azurite: --blobHost, --blobPort, --queueHost or --queuePort. */
static int az_service_addr(struct azurite_cli *az, const char *name, const char *val,
                           char *err, size_t errlen)
{
    if (strcmp(name, "blobPort") == 0)
        return az_port(name, val, &az->blob_port, err, errlen);
    if (strcmp(name, "queuePort") == 0)
        return az_port(name, val, &az->queue_port, err, errlen);
    char *host = strcmp(name, "blobHost") == 0 ? az->blob_host : az->queue_host;
    if (!*val) {
        errfmt_set(err, errlen, "--%s needs an address", name);
        return -1;
    }
    return az_copy(host, sizeof az->blob_host, val, name, err, errlen);
}

/* Flags of Azurite's other services, skipped with a note (under the name
 * azurite the four addresses are taken before this is asked). */
static int az_other_service(const char *name)
{
    static const char *const other[] = {"blobHost", "blobPort", "queueHost", "queuePort",
                                        "blobKeepAliveTimeout", "queueKeepAliveTimeout",
                                        "extentMemoryLimit"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (strcmp(name, other[i]) == 0)
            return 1;
    return 0;
}

int azurite_cli_parse(struct azurite_cli *az, int argc, char **argv, const char *accounts_env,
                      char *err, size_t errlen)
{
    memset(az, 0, sizeof *az);
    az->all = argc > 0 && azurite_cli_name(argv[0]) == AZURITE_ALL;
    az->prog = az->all ? "azurite" : "azurite-table";
    az->port = 10002;
    az->blob_port = 10000;
    az->queue_port = 10001;
    strcpy(az->blob_host, "127.0.0.1");
    strcpy(az->queue_host, "127.0.0.1");
    const char *host = "127.0.0.1", *location = ".", *oauth = NULL;
    int memory = 0, silent = 0, path_style = 0;
    long keepalive = -1;
    if (az_push(az, err, errlen, "tabled") < 0)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char name[64];
        const char *val = NULL;
        /* "-x", "--name" or "--name=value". */
        if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) {
            static const char *const longs[][2] = {{"l", "location"}, {"s", "silent"},
                                                   {"d", "debug"},    {"L", "loose"},
                                                   {"h", "help"},     {"v", "version"}};
            name[0] = '\0';
            for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
                if (a[1] == longs[k][0][0])
                    strcpy(name, longs[k][1]);
            if (!name[0]) {
                errfmt_set(err, errlen, "unknown option '%s' (see %s --help)", a, az->prog);
                return -1;
            }
        } else if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (n >= sizeof name) {
                errfmt_set(err, errlen, "unknown option '%s' (see %s --help)", a, az->prog);
                return -1;
            }
            memcpy(name, a + 2, n);
            name[n] = '\0';
            val = eq ? eq + 1 : NULL;
        } else {
            errfmt_set(err, errlen, "unexpected argument '%s' (see %s --help)", a, az->prog);
            return -1;
        }
        int is_switch = strcmp(name, "inMemoryPersistence") == 0 || strcmp(name, "silent") == 0 ||
                        strcmp(name, "loose") == 0 || strcmp(name, "skipApiVersionCheck") == 0 ||
                        strcmp(name, "disableProductStyleUrl") == 0 ||
                        strcmp(name, "disableTelemetry") == 0 || strcmp(name, "help") == 0 ||
                        strcmp(name, "version") == 0;
        int takes_value = strcmp(name, "tableHost") == 0 || strcmp(name, "tablePort") == 0 ||
                          strcmp(name, "location") == 0 || strcmp(name, "debug") == 0 ||
                          strcmp(name, "cert") == 0 || strcmp(name, "key") == 0 ||
                          strcmp(name, "pwd") == 0 || strcmp(name, "oauth") == 0 ||
                          strcmp(name, "tableKeepAliveTimeout") == 0;
        int other_addr = strcmp(name, "blobHost") == 0 || strcmp(name, "blobPort") == 0 ||
                         strcmp(name, "queueHost") == 0 || strcmp(name, "queuePort") == 0;
        if (az->all && other_addr) {
            /* azurite: where the Blob and Queue ports are opened. */
            if (!val) {
                if (i + 1 >= argc) {
                    errfmt_set(err, errlen, "%s needs a value", a);
                    return -1;
                }
                val = argv[++i];
            }
            if (az_service_addr(az, name, val, err, errlen) < 0)
                return -1;
            continue;
        }
        if (az_other_service(name)) {
            /* The combined azurite command line (the container image's
             * default) also names the blob and queue services: their
             * addresses are noted and skipped, since nothing will ask them
             * of tabled. */
            if (!val && i + 1 < argc)
                i++;
            size_t u = strlen(az->ignored);
            snprintf(az->ignored + u, sizeof az->ignored - u, "%s--%s", u ? ", " : "", name);
            continue;
        }
        if (!is_switch && !takes_value) {
            errfmt_set(err, errlen, "unknown option '%s' (see %s --help)", a, az->prog);
            return -1;
        }
        if (is_switch && val) {
            /* mri-style "--silent=true" / "--silent=false". */
            if (strcasecmp(val, "false") == 0)
                continue;
            if (strcasecmp(val, "true") != 0) {
                errfmt_set(err, errlen, "--%s takes no value", name);
                return -1;
            }
        }
        if (takes_value && !val) {
            if (i + 1 >= argc) {
                errfmt_set(err, errlen, "%s needs a value", a);
                return -1;
            }
            val = argv[++i];
        }
        if (strcmp(name, "tableHost") == 0) {
            host = val;
        } else if (strcmp(name, "tablePort") == 0) {
            if (az_port(name, val, &az->port, err, errlen) < 0)
                return -1;
        } else if (strcmp(name, "location") == 0) {
            if (!*val) {
                errfmt_set(err, errlen, "--location needs a directory");
                return -1;
            }
            location = val;
        } else if (strcmp(name, "debug") == 0) {
            if (az_copy(az->debug_log, sizeof az->debug_log, val, "--debug", err, errlen) < 0)
                return -1;
        } else if (strcmp(name, "cert") == 0) {
            if (az_copy(az->cert, sizeof az->cert, val, "--cert", err, errlen) < 0)
                return -1;
        } else if (strcmp(name, "key") == 0) {
            if (az_copy(az->key, sizeof az->key, val, "--key", err, errlen) < 0)
                return -1;
        } else if (strcmp(name, "pwd") == 0) {
            if (az_copy(az->pwd, sizeof az->pwd, val, "--pwd", err, errlen) < 0)
                return -1;
        } else if (strcmp(name, "oauth") == 0) {
            if (strcmp(val, "basic") != 0) {
                errfmt_set(err, errlen, "--oauth: only 'basic' is supported, got '%s'", val);
                return -1;
            }
            oauth = val;
        } else if (strcmp(name, "tableKeepAliveTimeout") == 0) {
            char *end;
            errno = 0;
            keepalive = strtol(val, &end, 10);
            if (errno || *end || !*val || keepalive < 1 || keepalive > 1000000) {
                errfmt_set(err, errlen, "--tableKeepAliveTimeout expects seconds > 0, got '%s'",
                           val);
                return -1;
            }
        } else if (strcmp(name, "inMemoryPersistence") == 0) {
            memory = 1;
        } else if (strcmp(name, "silent") == 0) {
            silent = 1;
        } else if (strcmp(name, "disableProductStyleUrl") == 0) {
            path_style = 1;
        } else if (strcmp(name, "help") == 0) {
            az->help = 1;
        } else if (strcmp(name, "version") == 0) {
            az->version = 1;
        }
        /* --loose, --skipApiVersionCheck and --disableTelemetry change
         * nothing: see the table at the top of this file. */
    }
    if (az->cert[0] && !az->key[0] && !az->pwd[0]) {
        errfmt_set(err, errlen, "--cert needs --key (PEM) or --pwd (PFX)");
        return -1;
    }
    if (!az->cert[0] && (az->key[0] || az->pwd[0])) {
        errfmt_set(err, errlen, "--key and --pwd need --cert");
        return -1;
    }
    if (oauth && !az->cert[0]) {
        errfmt_set(err, errlen, "--oauth basic needs HTTPS (--cert), as in Azurite");
        return -1;
    }
    az->https = az->cert[0] != '\0';
    if (az->https && az->port == 0) {
        /* tabled's --tls-port 0 means "no HTTPS". */
        errfmt_set(err, errlen, "--tablePort 0 with --cert: give the HTTPS port a number");
        return -1;
    }
    if (az_push(az, err, errlen, "--host") < 0 || az_push(az, err, errlen, "%s", host) < 0)
        return -1;
    if (az->https) {
        if (az_push(az, err, errlen, "--port") < 0 || az_push(az, err, errlen, "0") < 0 ||
            az_push(az, err, errlen, "--tls-port") < 0 ||
            az_push(az, err, errlen, "%d", az->port) < 0 ||
            az_push(az, err, errlen, "--tls-cert") < 0 ||
            az_push(az, err, errlen, "%s", az->cert) < 0 ||
            az_push(az, err, errlen, "--tls-key") < 0 ||
            az_push(az, err, errlen, "%s", az->key[0] ? az->key : az->cert) < 0)
            return -1;
    } else if (az_push(az, err, errlen, "--port") < 0 ||
               az_push(az, err, errlen, "%d", az->port) < 0) {
        return -1;
    }
    if (memory) {
        if (az_push(az, err, errlen, "--backend") < 0 || az_push(az, err, errlen, "memory") < 0)
            return -1;
    } else if (az_push(az, err, errlen, "--data") < 0 ||
               az_push(az, err, errlen, "%s/__tabled_table__", location) < 0) {
        return -1;
    }
    if (silent && (az_push(az, err, errlen, "--access-log") < 0 ||
                   az_push(az, err, errlen, "off") < 0))
        return -1;
    if (az->debug_log[0] && (az_push(az, err, errlen, "--log-level") < 0 ||
                             az_push(az, err, errlen, "debug") < 0))
        return -1;
    if (path_style && (az_push(az, err, errlen, "--path-style-only") < 0 ||
                       az_push(az, err, errlen, "on") < 0))
        return -1;
    if (oauth && (az_push(az, err, errlen, "--oauth") < 0 ||
                  az_push(az, err, errlen, "basic") < 0))
        return -1;
    if (keepalive > 0 && (az_push(az, err, errlen, "--idle-timeout-ms") < 0 ||
                          az_push(az, err, errlen, "%ld", keepalive * 1000) < 0))
        return -1;
    if (accounts_env && az_accounts(az, accounts_env, err, errlen) < 0)
        return -1;
    return 0;
}

void azurite_cli_apply(const struct azurite_cli *az, struct config *cfg)
{
    if (az->https)
        cfg->port = -1;  /* HTTPS only, on --tablePort */
    if (!az->custom_accounts)
        return;
    for (size_t i = 0; i < az->naccounts; i++)
        if (strcmp(az->accounts[i], DEV_ACCOUNT_NAME) == 0)
            return;
    for (size_t i = 0; i < cfg->naccounts; i++) {
        if (strcmp(cfg->accounts[i].name, DEV_ACCOUNT_NAME) == 0) {
            memmove(&cfg->accounts[i], &cfg->accounts[i + 1],
                    (cfg->naccounts - i - 1) * sizeof cfg->accounts[0]);
            cfg->naccounts--;
            return;
        }
    }
}

/* OpenSSL's last error as text after a prefix. */
static void az_ssl_err(const struct sslload_crypto *c, char *err, size_t errlen,
                       const char *what, const char *file)
{
    char e[256] = "unknown error";
    unsigned long code = c->ERR_peek_last_error();
    if (code)
        c->ERR_error_string_n(code, e, sizeof e);
    c->ERR_clear_error();
    errfmt_set(err, errlen, "%s %s: %s", what, file, e);
}

/* Writes a PEM file with mode 0600 through the callback. */
static int az_write_pem(const char *path, int (*write)(FILE *, void *), void *obj)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -1;
    }
    int ok = write(f, obj);
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int az_write_key(FILE *f, void *k)
{
    return sslload_crypto()->PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
}

/* PEM password callback: the --pwd value. */
static int az_pem_pwd(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    int n = (int)strlen(u);
    if (n > size)
        n = size;
    memcpy(buf, u, (size_t)n);
    return n;
}

int azurite_cli_tls_files(const struct azurite_cli *az, struct config *cfg, char *dir,
                          size_t dircap, char *err, size_t errlen)
{
    dir[0] = '\0';
    if (!az->https || !az->pwd[0])
        return 0;
    /* the key is decrypted now, so OpenSSL is opened now */
    const struct sslload_crypto *c = sslload_crypto();
    if (!c) {
        /* the loader has logged which library and what to install */
        errfmt_set(err, errlen, "cannot read the encrypted key: OpenSSL could not be loaded "
                                "(the line above says why and what to install)");
        return -1;
    }
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;
    STACK_OF(X509) *ca = NULL;
    int rc = -1;
    FILE *f = fopen(az->key[0] ? az->key : az->cert, "rb");
    if (!f) {
        errfmt_set(err, errlen, "cannot read %s: %s", az->key[0] ? az->key : az->cert,
                   strerror(errno));
        return -1;
    }
    if (az->key[0]) {
        /* PEM certificate, encrypted PEM key. */
        pkey = c->PEM_read_PrivateKey(f, NULL, az_pem_pwd, (void *)az->pwd);
        fclose(f);
        if (!pkey) {
            az_ssl_err(c, err, errlen, "--key: cannot decrypt", az->key);
            return -1;
        }
    } else {
        PKCS12 *p12 = c->d2i_PKCS12_fp(f, NULL);
        fclose(f);
        if (!p12) {
            az_ssl_err(c, err, errlen, "--cert: not a PFX (PKCS#12) file:", az->cert);
            return -1;
        }
        int ok = c->PKCS12_parse(p12, az->pwd, &pkey, &cert, &ca);
        c->PKCS12_free(p12);
        if (!ok || !pkey || !cert) {
            az_ssl_err(c, err, errlen, "--cert: cannot open PFX (wrong --pwd?)", az->cert);
            goto out;
        }
    }
    const char *tmp = getenv("TMPDIR");
    if (snprintf(dir, dircap, "%s/tabled-tls.XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
            (int)dircap ||
        !mkdtemp(dir)) {
        errfmt_set(err, errlen, "cannot create a private directory for the decrypted key");
        dir[0] = '\0';
        goto out;
    }
    snprintf(cfg->tls_key, sizeof cfg->tls_key, "%s/key.pem", dir);
    if (az_write_pem(cfg->tls_key, az_write_key, pkey) < 0) {
        errfmt_set(err, errlen, "cannot write %s", cfg->tls_key);
        goto out;
    }
    if (cert) {
        snprintf(cfg->tls_cert, sizeof cfg->tls_cert, "%s/cert.pem", dir);
        FILE *cf = fopen(cfg->tls_cert, "w");
        int ok = cf && c->PEM_write_X509(cf, cert) == 1;
        /* sk_X509_num and sk_X509_value, the inline wrappers */
        const OPENSSL_STACK *chain = (const OPENSSL_STACK *)ca;
        for (int i = 0; ok && ca && i < c->OPENSSL_sk_num(chain); i++)
            ok = c->PEM_write_X509(cf, c->OPENSSL_sk_value(chain, i)) == 1;
        if (cf && fclose(cf) != 0)
            ok = 0;
        if (!ok) {
            errfmt_set(err, errlen, "cannot write %s", cfg->tls_cert);
            goto out;
        }
    }
    rc = 0;
out:
    c->EVP_PKEY_free(pkey);
    c->X509_free(cert);
    /* sk_X509_pop_free(ca, X509_free), the inline wrapper */
    if (ca)
        c->OPENSSL_sk_pop_free((OPENSSL_STACK *)ca,
                               (OPENSSL_sk_freefunc)(void (*)(void))c->X509_free);
    return rc;
}

void azurite_cli_cleanup(const char *dir)
{
    if (!dir || !dir[0])
        return;
    char p[1200];
    snprintf(p, sizeof p, "%s/key.pem", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/cert.pem", dir);
    unlink(p);
    rmdir(dir);
}

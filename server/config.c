/* config.c - run-time configuration: defaults, INI file, command line.
 *
 * Every setting is one row of server/config_options.c (name, type, where it is
 * stored, default, help), applied by config_set() through core/options.c, so
 * the file and the command line accept exactly the same values and report
 * the same errors, and --help lists exactly the settings there are. */
#include "server/config.h"
#include "core/pages.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/coding.h"
#include "server/config_options.h"
#include "core/errfmt.h"
#include "core/version.h"

/* Fills every setting's default from the table, then the built-in account. */
void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    config_defaults_on_zero(cfg);
}

void config_defaults_on_zero(struct config *cfg)
{
    /* the rows' defaults are checked by tests/unit/test_options.c */
    (void)opt_defaults(config_options, config_noptions, cfg, NULL, 0);
    config_add_account(cfg, DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY, NULL, NULL, 0);
    cfg->dev_account_listed = 0;  /* the built-in one, not a listed one */
}

/* Decodes an account key (canonical base64, padding optional) into out
 * (cap bytes). Returns the length, or -1 when the text is not base64 or
 * the key does not fit. */
static long key_decode(const char *s, unsigned char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n / 4 * 3 > cap + 2)
        return -1;
    uint8_t tmp[CONFIG_MAX_KEY_BYTES + 6];
    long k = coding_b64_decode(s, n, tmp, CODING_B64_PAD_OPTIONAL | CODING_B64_CANONICAL);
    if (k < 0 || (size_t)k > cap)
        return -1;
    memcpy(out, tmp, (size_t)k);
    return k;
}

int config_add_account(struct config *cfg, const char *name, const char *key1_b64,
                       const char *key2_b64, char *err, size_t errlen)
{
    struct account_cfg a;
    memset(&a, 0, sizeof a);
    size_t n = strlen(name);
    if (n < 3 || n > 24) {
        errfmt_set(err, errlen, "account name '%s' must be 3 to 24 letters or digits", name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c)) {
            errfmt_set(err, errlen, "account name '%s' must be 3 to 24 letters or digits", name);
            return -1;
        }
        a.name[i] = (char)tolower(c);
    }
    if (!key1_b64 || !*key1_b64) {
        errfmt_set(err, errlen, "account '%s' needs a key", name);
        return -1;
    }
    long k = key_decode(key1_b64, a.key1, sizeof a.key1);
    if (k <= 0) {
        errfmt_set(err, errlen, "account '%s': key1 is not valid base64 (at most %d bytes)", name,
                CONFIG_MAX_KEY_BYTES);
        return -1;
    }
    a.key1_len = (size_t)k;
    if (key2_b64 && *key2_b64) {
        k = key_decode(key2_b64, a.key2, sizeof a.key2);
        if (k <= 0) {
            errfmt_set(err, errlen, "account '%s': key2 is not valid base64 (at most %d bytes)",
                    name, CONFIG_MAX_KEY_BYTES);
            return -1;
        }
        a.key2_len = (size_t)k;
    }
    int dev = strcmp(a.name, DEV_ACCOUNT_NAME) == 0;
    for (size_t i = 0; i < cfg->naccounts; i++) {
        if (strcmp(cfg->accounts[i].name, a.name) == 0) {
            cfg->accounts[i] = a;
            cfg->dev_account_listed |= dev;
            return 0;
        }
    }
    if (cfg->naccounts >= CONFIG_MAX_ACCOUNTS) {
        errfmt_set(err, errlen, "too many accounts (at most %d)", CONFIG_MAX_ACCOUNTS);
        return -1;
    }
    cfg->accounts[cfg->naccounts++] = a;
    cfg->dev_account_listed |= dev;
    return 0;
}

const struct account_cfg *config_find_account(const struct config *cfg, const char *name)
{
    return account_find(cfg->accounts, cfg->naccounts, name);
}

int config_addr_is_loopback(const char *addr)
{
    char tmp[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(addr);
    if (strcasecmp(addr, "localhost") == 0)
        return 1;
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
        addr++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, addr, n);
    tmp[n] = '\0';
    unsigned char a[16];
    if (inet_pton(AF_INET, tmp, a) == 1)
        return a[0] == 127;
    if (inet_pton(AF_INET6, tmp, a) != 1)
        return 0;
    static const unsigned char one[16] = {[15] = 1};
    static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
    return memcmp(a, one, 16) == 0 || (memcmp(a, mapped, 12) == 0 && a[12] == 127);
}

/* Sets one option by name (flag name without "--"); shared by the file and
 * the command line, so both accept the same values with the same errors. */
static int config_set(struct config *cfg, const char *name, const char *v, char *err,
                      size_t errlen)
{
    const struct opt *o = opt_find(config_options, config_noptions, name);
    if (!o) {
        errfmt_set(err, errlen, "unknown option '%s'", name);
        return -1;
    }
    return opt_apply(o, cfg, v, err, errlen);
}

/* Drops the built-in devstoreaccount1 (its key is public) when it was not
 * listed and either --dev-account off, or --dev-account auto and another
 * account is configured. Fails when no account is left. */
static int settle_accounts(struct config *cfg, char *err, size_t errlen)
{
    if (cfg->dev_account_listed || cfg->dev_account == 1)
        return 0;
    if (cfg->dev_account == -1 && cfg->naccounts < 2)
        return 0;
    for (size_t i = 0; i < cfg->naccounts; i++) {
        if (strcmp(cfg->accounts[i].name, DEV_ACCOUNT_NAME) == 0) {
            memmove(&cfg->accounts[i], &cfg->accounts[i + 1],
                    (cfg->naccounts - i - 1) * sizeof cfg->accounts[0]);
            cfg->naccounts--;
            break;
        }
    }
    if (cfg->naccounts == 0) {
        errfmt_set(err, errlen, "--dev-account off leaves no account: add one with --account "
                "NAME:KEY1[:KEY2] or an [account NAME] section");
        return -1;
    }
    return 0;
}

/* Checks settings that depend on each other. */
static int config_check(const struct config *cfg, char *err, size_t errlen)
{
    if (cfg->admin_port >= 0 && !cfg->admin_token[0] &&
        !config_addr_is_loopback(cfg->admin_host)) {
        errfmt_set(err, errlen, "--admin-host %s is not a loopback address: an admin listener "
                "reachable from other machines needs --admin-token or --admin-token-file",
                cfg->admin_host);
        return -1;
    }
    if (cfg->admin_port > 0 && (cfg->admin_port == cfg->port || cfg->admin_port == cfg->tls_port)) {
        errfmt_set(err, errlen, "--admin-port must differ from --port and --tls-port");
        return -1;
    }
    if (cfg->tls_port) {
        if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
            errfmt_set(err, errlen, "--tls-port needs --tls-cert and --tls-key");
            return -1;
        }
        if (cfg->tls_port == cfg->port) {
            errfmt_set(err, errlen, "--tls-port must differ from --port");
            return -1;
        }
    }
    return 0;
}

/* Removes leading and trailing blanks in place; returns the new start. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Cuts a trailing " # comment" / " ; comment" off a value line. */
static void cut_comment(char *s)
{
    for (char *p = s; *p; p++) {
        if ((*p == '#' || *p == ';') && (p == s || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            return;
        }
    }
}

/* A [fault NAME] section being read (its settings are added as read). */
struct pending_fault {
    int active;
    char name[64];
};

/* An [account NAME] section being read. */
struct pending_account {
    int active;
    int line;
    char name[64];
    char key1[512];
    char key2[512];
};

/* Adds the account of a finished [account NAME] section. */
static int flush_account(struct config *cfg, struct pending_account *pa, const char *path,
                         char *err, size_t errlen)
{
    if (!pa->active)
        return 0;
    pa->active = 0;
    char msg[512];
    if (!pa->key1[0]) {
        errfmt_set(err, errlen, "%s:%d: [account %s] has no key1", path, pa->line, pa->name);
        return -1;
    }
    if (config_add_account(cfg, pa->name, pa->key1, pa->key2, msg, sizeof msg) < 0) {
        errfmt_set(err, errlen, "%s:%d: %s", path, pa->line, msg);
        return -1;
    }
    return 0;
}

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        errfmt_set(err, errlen, "cannot open config file %s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096], msg[512];
    int lineno = 0, rc = 0;
    struct pending_account pa;
    struct pending_fault pf;
    memset(&pa, 0, sizeof pa);
    memset(&pf, 0, sizeof pf);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            errfmt_set(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end || *trim(end + 1)) {
                errfmt_set(err, errlen, "%s:%d: malformed section header", path, lineno);
                rc = -1;
                break;
            }
            *end = '\0';
            char *sec = trim(s + 1);
            if ((rc = flush_account(cfg, &pa, path, err, errlen)) < 0)
                break;
            pf.active = 0;
            if (strncasecmp(sec, "fault", 5) == 0 && isspace((unsigned char)sec[5])) {
                char *name = trim(sec + 6);
                if (!*name || strlen(name) >= sizeof pf.name) {
                    errfmt_set(err, errlen, "%s:%d: bad fault section", path, lineno);
                    rc = -1;
                    break;
                }
                pf.active = 1;
                strcpy(pf.name, name);
                continue;
            }
            if (strncasecmp(sec, "account", 7) == 0 && isspace((unsigned char)sec[7])) {
                char *name = trim(sec + 8);
                if (!*name || strlen(name) >= sizeof pa.name) {
                    errfmt_set(err, errlen, "%s:%d: bad account section", path, lineno);
                    rc = -1;
                    break;
                }
                memset(&pa, 0, sizeof pa);
                pa.active = 1;
                pa.line = lineno;
                strcpy(pa.name, name);
                continue;
            }
            if (strcasecmp(sec, "tabled") == 0 || strcasecmp(sec, "server") == 0)
                continue;
            errfmt_set(err, errlen, "%s:%d: unknown section [%s]", path, lineno, sec);
            rc = -1;
            break;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            errfmt_set(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s);
        char *val = eq + 1;
        cut_comment(val);
        val = trim(val);
        for (char *p = key; *p; p++)
            *p = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
        if (pf.active) {
            if (config_add_fault_item(cfg, pf.name, key, val, lineno, msg, sizeof msg) < 0) {
                errfmt_set(err, errlen, "%s:%d: %s", path, lineno, msg);
                rc = -1;
                break;
            }
            continue;
        }
        if (pa.active) {
            char *dst = strcmp(key, "key1") == 0 ? pa.key1 : strcmp(key, "key2") == 0 ? pa.key2 : NULL;
            if (!dst || strlen(val) >= sizeof pa.key1) {
                errfmt_set(err, errlen, "%s:%d: [account] sections hold key1 and key2 only", path,
                        lineno);
                rc = -1;
                break;
            }
            strcpy(dst, val);
            continue;
        }
        const struct opt *o = opt_find(config_options, config_noptions, key);
        if (o && (o->type == OPT_FILE || o->type == OPT_SWITCH)) {
            errfmt_set(err, errlen, "%s:%d: '%s' is not allowed in a config file", path, lineno, key);
            rc = -1;
            break;
        }
        if (config_set(cfg, key, val, msg, sizeof msg) < 0) {
            errfmt_set(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        rc = flush_account(cfg, &pa, path, err, errlen);
    fclose(f);
    return rc;
}

/* One parsed command-line argument. */
struct arg {
    char name[64];
    const char *value;  /* NULL for switches */
};

/* Splits argv[*i] into name and value, consuming the next argument as the
 * value when the flag has no "=value" part. */
static int next_arg(int argc, char **argv, int *i, struct arg *a, char *err, size_t errlen)
{
    const char *s = argv[*i];
    if (strcmp(s, "-h") == 0) {
        strcpy(a->name, "help");
        a->value = NULL;
        return 0;
    }
    if (strncmp(s, "--", 2) != 0 || !s[2]) {
        errfmt_set(err, errlen, "unexpected argument '%s' (see --help)", s);
        return -1;
    }
    s += 2;
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if (n >= sizeof a->name) {
        errfmt_set(err, errlen, "unknown option '--%s'", s);
        return -1;
    }
    memcpy(a->name, s, n);
    a->name[n] = '\0';
    const struct opt *o = opt_find(config_options, config_noptions, a->name);
    if (o && o->type == OPT_SWITCH) {
        if (eq) {
            errfmt_set(err, errlen, "--%s takes no value", a->name);
            return -1;
        }
        a->value = NULL;
        return 0;
    }
    if (eq) {
        a->value = eq + 1;
    } else if (o && o->type == OPT_BOOL && (o->flags & OPTF_BARE)) {
        /* "--throttle" means "--throttle=on"; the next argument is never its value */
        a->value = "on";
    } else {
        if (*i + 1 >= argc) {
            errfmt_set(err, errlen, "--%s needs a value", a->name);
            return -1;
        }
        a->value = argv[++*i];
    }
    return 0;
}

/* A --backend-option NAME=V flag overrides the config file's settings of
 * NAME: the file's (the first *nfile entries) are dropped, every one of
 * them, so that a repeatable option (postgres's replica-conninfo) given
 * as flags replaces the file's list instead of adding to it. */
static void drop_file_backend_option(struct config *cfg, size_t *nfile, const char *flag)
{
    const char *eq = strchr(flag, '=');
    size_t nl = eq ? (size_t)(eq - flag) + 1 : strlen(flag);
    for (size_t i = 0; i < *nfile;) {
        if (strncmp(cfg->backend_options[i], flag, nl) != 0) {
            i++;
            continue;
        }
        memmove(cfg->backend_options[i], cfg->backend_options[i + 1],
                (cfg->nbackend_options - i - 1) * sizeof cfg->backend_options[0]);
        cfg->nbackend_options--;
        (*nfile)--;
    }
}

/* Pass 1 of config_parse_args: syntax, --help/--version (1 once printed),
 * and where the config file is (*config_path); values are set on probe, a
 * scratch copy, so errors are found before the file is read. 0 or -1. */
static int parse_pass1(struct config *probe, int argc, char **argv, const char **config_path,
                       char *msg, size_t msglen, char *err, size_t errlen)
{
    struct arg a;
    for (int i = 1; i < argc; i++) {
        if (next_arg(argc, argv, &i, &a, err, errlen) < 0)
            return -1;
        if (strcmp(a.name, "help") == 0) {
            fputs("Usage: tabled [OPTIONS]\n"
                  "An Azure Table Storage compatible server.\n\n", stdout);
            opt_usage(config_options, config_noptions, stdout);
            fputs("\nBackend options: tabled --backend NAME --help lists the\n"
                  "--backend-option names of backend NAME (memory, leveldb, flatfile,\n"
                  "postgres) with their ranges and defaults.\n\n"
                  "Subcommands (tabled SUBCOMMAND --help for their options):\n"
                  "  export   write a store's tables to a JSON-lines file (stopped server's\n"
                  "           store, or a running one through its admin listener)\n"
                  "  import   load a file written by export (or Azurite's) into a store\n"
                  "           (stopped server's store, or a running one through its\n"
                  "           admin listener)\n"
                  "  advise   print the partition advisor's findings of a running tabled\n", stdout);
            return 1;
        }
        if (strcmp(a.name, "version") == 0) {
            printf("tabled %s\n", TABLED_VERSION);
            return 1;
        }
        if (strcmp(a.name, "config") == 0) {
            *config_path = a.value;
            continue;
        }
        if (config_set(probe, a.name, a.value, msg, msglen) < 0) {
            errfmt_set(err, errlen, "%s", msg);
            return -1;
        }
    }
    return 0;
}

int config_parse_args(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    struct arg a;
    const char *config_path = NULL;
    char msg[512];
    /* Pass 1: syntax, --help/--version, and where the config file is. Values
     * are checked against a scratch configuration with the defaults (what cfg
     * holds here) so errors are found before the file is read. It has pages
     * of its own, unmapped at the end: not 80 KiB of stack, which would stay
     * resident, and not a copy of cfg, which would read (and so make
     * resident) every page of it. */
    struct config *probe = pages_zalloc(sizeof *probe);
    config_defaults_on_zero(probe);
    int rc = parse_pass1(probe, argc, argv, &config_path, msg, sizeof msg, err, errlen);
    pages_free(probe, sizeof *probe);
    if (rc != 0)
        return rc;
    if (config_path && config_load_file(cfg, config_path, err, errlen) < 0)
        return -1;
    /* Pass 2: flags override the file. */
    size_t nfile = cfg->nbackend_options;
    for (int i = 1; i < argc; i++) {
        if (next_arg(argc, argv, &i, &a, err, errlen) < 0)
            return -1;
        if (strcmp(a.name, "config") == 0)
            continue;
        if (strcmp(a.name, "backend-option") == 0 && a.value)
            drop_file_backend_option(cfg, &nfile, a.value);
        if (config_set(cfg, a.name, a.value, err, errlen) < 0)
            return -1;
    }
    if (settle_accounts(cfg, err, errlen) < 0)
        return -1;
    return config_check(cfg, err, errlen);
}

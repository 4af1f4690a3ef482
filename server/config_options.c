/* config_options.c - tabled's settings, one row each (see core/options.h),
 * and the setters of the few that need their own logic (accounts, fault
 * rules, the admin token and hosts, dev-account).
 *
 * Adding a setting: a field in struct config (config.h), one row below, and
 * a line in conf/tabled.conf, doc/tabled.1, doc/tabled.conf.5 and README.md
 * (tests/unit/test_options.c fails until all four name it). */
#include "server/config_options.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/errfmt.h"

/* Records one setting of fault rule `rule` (checked by guard/fault.c when
 * main.c builds the rules). */
int config_add_fault_item(struct config *cfg, const char *rule, const char *key,
                          const char *value, int line, char *err, size_t errlen)
{
    if (cfg->nfaults >= CONFIG_MAX_FAULT_ITEMS) {
        errfmt_set(err, errlen, "too many fault settings (at most %d)", CONFIG_MAX_FAULT_ITEMS);
        return -1;
    }
    struct config_fault_item *it = &cfg->faults[cfg->nfaults];
    if (!*rule || strlen(rule) >= sizeof it->rule || strlen(key) >= sizeof it->key ||
        strlen(value) >= sizeof it->value) {
        errfmt_set(err, errlen, "fault %s: name, key or value too long (value at most %zu bytes)",
                rule, sizeof it->value - 1);
        return -1;
    }
    strcpy(it->rule, rule);
    strcpy(it->key, key);
    strcpy(it->value, value);
    it->line = line;
    cfg->nfaults++;
    return 0;
}

/* Applies "--fault NAME:key=value,key=value,...". */
static int apply_fault_spec(void *obj, const char *spec, char *err, size_t errlen)
{
    struct config *cfg = obj;
    char tmp[1024];
    if (strlen(spec) >= sizeof tmp) {
        errfmt_set(err, errlen, "--fault value is too long");
        return -1;
    }
    strcpy(tmp, spec);
    char *colon = strchr(tmp, ':');
    if (!colon || colon == tmp) {
        errfmt_set(err, errlen, "--fault expects NAME:key=value[,key=value...], got '%s'", spec);
        return -1;
    }
    *colon = '\0';
    char *save = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            errfmt_set(err, errlen, "--fault %s: expected key=value, got '%s'", tmp, kv);
            return -1;
        }
        *eq = '\0';
        if (config_add_fault_item(cfg, tmp, kv, eq + 1, 0, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Applies "NAME:KEY1[:KEY2]". */
static int apply_account_spec(void *obj, const char *spec, char *err, size_t errlen)
{
    struct config *cfg = obj;
    char tmp[1024];
    if (strlen(spec) >= sizeof tmp) {
        errfmt_set(err, errlen, "--account value is too long");
        return -1;
    }
    strcpy(tmp, spec);
    char *c1 = strchr(tmp, ':');
    if (!c1) {
        errfmt_set(err, errlen, "--account expects NAME:KEY1[:KEY2], got '%s'", spec);
        return -1;
    }
    *c1++ = '\0';
    char *c2 = strchr(c1, ':');
    if (c2) {
        *c2++ = '\0';
        if (strchr(c2, ':')) {
            errfmt_set(err, errlen, "--account expects NAME:KEY1[:KEY2], got '%s'", spec);
            return -1;
        }
    }
    return config_add_account(cfg, tmp, c1, c2, err, errlen);
}

/* Sets the admin bearer token: RFC 6750 token characters (letters, digits,
 * "-._~+/" and trailing "="), CONFIG_ADMIN_TOKEN_MIN to 255 of them; ""
 * removes it. what names the source in messages. */
static int set_admin_token(struct config *cfg, const char *v, const char *what, char *err,
                           size_t errlen)
{
    size_t n = strlen(v), eq = n;
    while (eq > 0 && v[eq - 1] == '=')
        eq--;
    for (size_t i = 0; i < eq; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!isalnum(c) && !strchr("-._~+/", c)) {
            errfmt_set(err, errlen, "%s: the token may hold letters, digits and -._~+/ "
                    "(then '=' padding) only", what);
            return -1;
        }
    }
    if (n && (eq == 0 || n < CONFIG_ADMIN_TOKEN_MIN || n >= sizeof cfg->admin_token)) {
        errfmt_set(err, errlen, "%s: the token must be %d to %zu characters long", what,
                CONFIG_ADMIN_TOKEN_MIN, sizeof cfg->admin_token - 1);
        return -1;
    }
    memcpy(cfg->admin_token, v, n + 1);
    return 0;
}

/* Reads the admin token from the first line of file path (trailing blanks
 * and the newline cut), so that it need not be on the command line. */
static int read_admin_token_file(void *obj, const char *path, char *err, size_t errlen)
{
    struct config *cfg = obj;
    FILE *f = fopen(path, "r");
    if (!f) {
        errfmt_set(err, errlen, "--admin-token-file: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got) {
        errfmt_set(err, errlen, "--admin-token-file: %s is empty", path);
        return -1;
    }
    size_t n = strlen(line);
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        line[--n] = '\0';
    if (!n) {
        errfmt_set(err, errlen, "--admin-token-file: %s holds no token", path);
        return -1;
    }
    char what[300];
    snprintf(what, sizeof what, "--admin-token-file %s", path);
    return set_admin_token(cfg, line, what, err, errlen);
}

/* Adds the comma-separated Host names of --admin-allowed-host (a name or
 * an IP address; IPv6 literals get brackets as in a Host header). */
static int add_admin_hosts(void *obj, const char *v, char *err, size_t errlen)
{
    struct config *cfg = obj;
    char tmp[1024];
    if (strlen(v) >= sizeof tmp) {
        errfmt_set(err, errlen, "--admin-allowed-host value is too long");
        return -1;
    }
    strcpy(tmp, v);
    char *save = NULL;
    for (char *h = strtok_r(tmp, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*h))
            h++;
        size_t n = strlen(h);
        while (n > 0 && isspace((unsigned char)h[n - 1]))
            h[--n] = '\0';
        unsigned char a6[16];
        char inner[256];
        int v6 = 0, ok = n > 0 && n < 250;
        if (ok && h[0] == '[') {
            /* a bracketed IPv6 literal, as a Host header writes it */
            ok = n > 2 && h[n - 1] == ']';
            if (ok) {
                memcpy(inner, h + 1, n - 2);
                inner[n - 2] = '\0';
                ok = inet_pton(AF_INET6, inner, a6) == 1;
            }
        } else if (ok && inet_pton(AF_INET6, h, a6) == 1) {
            v6 = 1;
        } else {
            for (size_t i = 0; ok && i < n; i++) {
                unsigned char c = (unsigned char)h[i];
                ok = isalnum(c) || c == '-' || c == '.' || c == '_';
            }
        }
        if (!ok) {
            errfmt_set(err, errlen, "--admin-allowed-host expects host names or addresses, got '%s'",
                    h);
            return -1;
        }
        if (cfg->nadmin_allowed_hosts >= CONFIG_MAX_ADMIN_HOSTS) {
            errfmt_set(err, errlen, "at most %d admin allowed hosts", CONFIG_MAX_ADMIN_HOSTS);
            return -1;
        }
        char *dst = cfg->admin_allowed_hosts[cfg->nadmin_allowed_hosts++];
        snprintf(dst, sizeof cfg->admin_allowed_hosts[0], v6 ? "[%s]" : "%s", h);
        for (char *p = dst; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    return 0;
}

/* --admin-token T (the token itself on the command line or in the file). */
static int set_admin_token_flag(void *obj, const char *v, char *err, size_t errlen)
{
    return set_admin_token(obj, v, "--admin-token", err, errlen);
}

/* --dev-account on|off|auto: auto is -1, on 1, off 0 (see config.h). */
static int set_dev_account(void *obj, const char *v, char *err, size_t errlen)
{
    struct config *cfg = obj;
    if (strcasecmp(v, "auto") == 0) {
        cfg->dev_account = -1;
        return 0;
    }
    if (opt_parse_bool(v, &cfg->dev_account) < 0) {
        errfmt_set(err, errlen, "--dev-account expects on|off|auto, got '%s'", v);
        return -1;
    }
    return 0;
}

static const struct opt_name durability_names[] = {
    {"sync", DURABILITY_SYNC, 0}, {"batch", DURABILITY_BATCH, 0}, {"none", DURABILITY_NONE, 0},
    {NULL, 0, 0}};
static const struct opt_name log_level_names[] = {
    {"error", LOG_ERROR, 0}, {"warn", LOG_WARN, 0}, {"info", LOG_INFO, 0},
    {"debug", LOG_DEBUG, 0}, {"warning", LOG_WARN, 1}, {NULL, 0, 0}};
static const struct opt_name oauth_names[] = {{"basic", 1, 0}, {"off", 0, 0}, {NULL, 0, 0}};
static const struct opt_name batch_cost_names[] = {
    {"per-entity", 0, 0}, {"per-request", 1, 0}, {NULL, 0, 0}};
static const struct opt_name port_off_names[] = {{"off", -1, 0}, {NULL, 0, 0}};

/* Where a setting lives in struct config. */
#define AT(field) .offset = offsetof(struct config, field), \
                  .size = sizeof(((struct config *)0)->field)
/* A repeatable setting: an array of strings and its counter. */
#define LIST(field, counter) .offset = offsetof(struct config, field), \
    .size = sizeof(((struct config *)0)->field[0]), \
    .count_offset = offsetof(struct config, counter), \
    .max = sizeof(((struct config *)0)->field) / sizeof(((struct config *)0)->field[0])
#define PORT "a port number 0-65535"
#define BIG 1000000000

/* Every setting, in --help order. */
const struct opt config_options[] = {
    {.name = "config", .type = OPT_FILE, .arg = "FILE",
     .help = "read settings from an INI file (flags override it)"},
    {.name = "host", .type = OPT_STRING, .flags = OPTF_NONEMPTY, AT(host), .def = "127.0.0.1",
     .arg = "ADDR", .expect = "an address", .help = "listen address"},
    {.name = "port", .type = OPT_INT, AT(port), .min = 0, .max = 65535, .def = "10002",
     .arg = "N", .expect = PORT, .help = "HTTP port, 0 = any free port"},
    {.name = "backend", .type = OPT_STRING, .flags = OPTF_NONEMPTY, AT(backend),
     .def = "leveldb", .arg = "NAME", .expect = "a name or a .so path",
     .help = "memory, leveldb, flatfile, postgres or /path/plugin.so"},
    {.name = "data", .alias = "data-dir", .type = OPT_STRING, .flags = OPTF_NONEMPTY,
     AT(data_dir), .def = "./data", .arg = "DIR", .expect = "a directory",
     .help = "data directory for durable backends"},
    {.name = "backend-option", .type = OPT_LIST, .flags = OPTF_PAIR,
     LIST(backend_options, nbackend_options), .arg = "N=V",
     .help = "a backend setting, e.g. cache-size=64M (repeatable)"},
    {.name = "durability", .type = OPT_ENUM, AT(durability), .names = durability_names,
     .def = "batch", .arg = "MODE", .help = "sync, batch or none"},
    {.name = "log-level", .type = OPT_ENUM, AT(log_level), .names = log_level_names,
     .def = "info", .arg = "LEVEL", .help = "error, warn, info or debug"},
    {.name = "log-file", .type = OPT_STRING, AT(log_file), .arg = "FILE",
     .help = "append diagnostics and the access log to FILE, reopened on SIGHUP "
     "(default stderr and stdout)"},
    {.name = "access-log", .type = OPT_BOOL, AT(access_log), .def = "on",
     .help = "one line per request on stdout"},
    {.name = "auth", .type = OPT_BOOL, AT(auth), .def = "on",
     .help = "verify request signatures"},
    {.name = "host-suffix", .type = OPT_STRING, AT(host_suffix), .def = "localhost",
     .arg = "S", .help = "host-style suffix after ACCOUNT.table."},
    {.name = "strict-versions", .type = OPT_BOOL, .flags = OPTF_BARE, AT(strict_versions),
     .def = "off", .help = "refuse x-ms-version values tabled does not know, as the cloud "
     "does (default off: newer ones act as the newest)"},
    {.name = "path-style-only", .type = OPT_BOOL, AT(path_style_only), .def = "off",
     .help = "account always from the URL path"},
    {.name = "oauth", .type = OPT_ENUM, AT(oauth_basic), .names = oauth_names, .def = "off",
     .arg = "basic|off", .help = "accept bearer tokens by their claims, over HTTPS"},
    {.name = "account", .type = OPT_CUSTOM, .set = apply_account_spec,
     .arg = "NAME:KEY1[:KEY2]", .help = "add an account (base64 keys; repeatable)"},
    {.name = "dev-account", .type = OPT_CUSTOM, .set = set_dev_account, .def = "auto",
     .arg = "on|off|auto", .help = "serve devstoreaccount1 (default auto: only when no "
     "other account is configured)"},
    {.name = "tls-port", .type = OPT_INT, AT(tls_port), .min = 0, .max = 65535, .def = "0",
     .arg = "N", .expect = PORT, .help = "HTTPS port, 0 = off"},
    {.name = "tls-cert", .type = OPT_STRING, AT(tls_cert), .arg = "FILE",
     .help = "PEM certificate (chain) for HTTPS"},
    {.name = "tls-key", .type = OPT_STRING, AT(tls_key), .arg = "FILE",
     .help = "PEM private key for HTTPS"},
    {.name = "scan-budget", .type = OPT_INT, AT(scan_budget), .min = 0, .max = BIG,
     .def = "0", .arg = "N", .help = "entities examined per query page, 0 = unlimited"},
    {.name = "scan-budget-ms", .type = OPT_INT, AT(scan_budget_ms), .min = 0, .max = BIG,
     .def = "5000", .arg = "N", .help = "time cut per query page in ms"},
    {.name = "max-body-bytes", .type = OPT_SIZE, AT(max_body_bytes), .def = "4M",
     .arg = "N", .help = "largest request body"},
    {.name = "max-header-bytes", .type = OPT_SIZE, AT(max_header_bytes), .def = "64K",
     .arg = "N", .help = "largest request head"},
    {.name = "header-timeout-ms", .type = OPT_INT, AT(header_timeout_ms), .min = 1,
     .max = BIG, .def = "30000", .arg = "N", .help = "time allowed for a request head"},
    {.name = "request-timeout-ms", .type = OPT_INT, AT(request_timeout_ms), .min = 1,
     .max = BIG, .def = "120000", .arg = "N", .help = "time allowed for a whole request"},
    {.name = "idle-timeout-ms", .type = OPT_INT, AT(idle_timeout_ms), .min = 1, .max = BIG,
     .def = "120000", .arg = "N", .help = "keep-alive idle close, and stalled output"},
    {.name = "max-connections", .type = OPT_INT, AT(max_connections), .min = 1, .max = BIG,
     .def = "10000", .arg = "N", .help = "concurrent connections; at the cap the idlest "
     "one is closed for a newcomer"},
    {.name = "max-conn-output-bytes", .type = OPT_SIZE, AT(max_conn_output_bytes),
     .def = "1M", .arg = "N", .help = "unsent output that holds a connection's next request"},
    {.name = "max-total-output-bytes", .type = OPT_SIZE, AT(max_total_output_bytes),
     .def = "64M", .arg = "N", .help = "unsent output of the whole process above which "
     "connections owing output wait"},
    {.name = "throttle", .type = OPT_BOOL, .flags = OPTF_BARE, AT(throttle), .def = "off",
     .help = "token buckets: 503 ServerBusy above the service's targets"},
    {.name = "throttle-partition-rate", .type = OPT_DOUBLE, AT(throttle_partition_rate),
     .dmin = 0.001, .dmax = 1e7, .def = "2000", .arg = "R",
     .expect = "a number in 0.001..10000000", .help = "entities/s per partition"},
    {.name = "throttle-partition-burst", .type = OPT_DOUBLE, AT(throttle_partition_burst),
     .dmin = 1, .dmax = 1e6, .def = "2000", .arg = "B", .expect = "a number in 1..1000000",
     .help = "bucket size per partition"},
    {.name = "throttle-account-rate", .type = OPT_DOUBLE, AT(throttle_account_rate),
     .dmin = 0.001, .dmax = 1e7, .def = "20000", .arg = "R",
     .expect = "a number in 0.001..10000000", .help = "entities/s per account"},
    {.name = "throttle-account-burst", .type = OPT_DOUBLE, AT(throttle_account_burst),
     .dmin = 1, .dmax = 1e6, .def = "20000", .arg = "B", .expect = "a number in 1..1000000",
     .help = "bucket size per account"},
    {.name = "throttle-batch-account", .type = OPT_ENUM, AT(throttle_batch_per_request),
     .names = batch_cost_names, .def = "per-entity", .arg = "per-entity|per-request",
     .help = "what a batch costs the account bucket"},
    {.name = "throttle-retry-after", .type = OPT_INT, AT(throttle_retry_after), .min = 0,
     .max = 3600, .def = "0", .arg = "N", .expect = "seconds 0-3600",
     .help = "add Retry-After: N to throttled answers, 0 = none"},
    {.name = "fault", .type = OPT_CUSTOM, .set = apply_fault_spec, .arg = "NAME:k=v[,k=v]",
     .help = "a fault injection rule (see tabled.conf(5); repeatable)"},
    {.name = "fault-seed", .type = OPT_INT, AT(fault_seed), .min = 0, .max = INT64_MAX,
     .arg = "N", .help = "seed of the fault injection draws (default random)"},
    {.name = "admin-port", .type = OPT_INT, AT(admin_port), .min = 0, .max = 65535,
     .names = port_off_names, .def = "off", .arg = "N", .expect = PORT " or off",
     .help = "admin listener: /metrics, /healthz, /faults, /advisor, /dashboard, /export, "
     "/import"},
    {.name = "admin-host", .type = OPT_STRING, .flags = OPTF_NONEMPTY, AT(admin_host),
     .def = "127.0.0.1", .arg = "ADDR", .expect = "an address",
     .help = "admin listen address"},
    {.name = "admin-token", .type = OPT_CUSTOM, .set = set_admin_token_flag, .arg = "T",
     .help = "bearer token for mutating admin requests (all of them off loopback, where "
     "it is required)"},
    {.name = "admin-token-file", .type = OPT_CUSTOM, .set = read_admin_token_file, .arg = "F",
     .help = "read the admin token from the first line of F"},
    {.name = "admin-allowed-host", .type = OPT_CUSTOM, .set = add_admin_hosts, .arg = "H",
     .help = "Host names the admin listener answers besides loopback ones (repeatable, "
     "comma-separated)"},
    {.name = "advisor", .type = OPT_LIST, LIST(advisor_options, nadvisor_options),
     .arg = "NAME=VALUE", .help = "a partition advisor threshold, e.g. hot-share=0.6 "
     "(repeatable; --advisor help lists them)"},
    {.name = "help", .type = OPT_SWITCH, .help = "show this help"},
    {.name = "version", .type = OPT_SWITCH, .help = "show the version"},
};

const size_t config_noptions = sizeof config_options / sizeof config_options[0];

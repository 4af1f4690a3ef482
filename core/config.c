/* config.c - run-time configuration: defaults, INI file, command line.
 *
 * Every setting has one name (the long flag without "--", also the key in
 * the file) and is applied by config_set(), so the file and the command line
 * accept exactly the same values and report the same errors. */
#include "core/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/version.h"

/* Writes a formatted message into err (when there is room for one). */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Copies s into a fixed field; fails when it does not fit. */
static int copy_field(char *dst, size_t cap, const char *s, const char *what, char *err,
                      size_t errlen)
{
    size_t n = strlen(s);
    if (n >= cap) {
        set_err(err, errlen, "%s is too long (at most %zu bytes)", what, cap - 1);
        return -1;
    }
    memcpy(dst, s, n + 1);
    return 0;
}

void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->host, "127.0.0.1");
    cfg->port = 10002;
    strcpy(cfg->backend, "leveldb");
    strcpy(cfg->data_dir, "./data");
    cfg->log_level = LOG_INFO;
    cfg->access_log = 1;
    cfg->durability = DURABILITY_BATCH;
    strcpy(cfg->host_suffix, "localhost");
    cfg->auth = 1;
    cfg->max_header_bytes = 64 * 1024;
    cfg->max_body_bytes = 4 * 1024 * 1024;
    cfg->header_timeout_ms = 30000;
    cfg->idle_timeout_ms = 120000;
    cfg->request_timeout_ms = 120000;
    cfg->max_connections = 10000;
    cfg->max_conn_output_bytes = 1024 * 1024;
    cfg->max_total_output_bytes = 64 * 1024 * 1024;
    cfg->scan_budget = 0;
    cfg->scan_budget_ms = 5000;
    cfg->tls_port = 0;
    cfg->throttle = 0;
    cfg->throttle_partition_rate = 2000;
    cfg->throttle_partition_burst = 2000;
    cfg->throttle_account_rate = 20000;
    cfg->throttle_account_burst = 20000;
    cfg->admin_port = -1;
    strcpy(cfg->admin_host, "127.0.0.1");
    config_add_account(cfg, DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY, NULL, NULL, 0);
    cfg->dev_account = -1;
    cfg->dev_account_listed = 0;  /* the built-in one, not a listed one */
}

/* Value of one base64 character, or -1. */
static int b64_val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict base64 decoder (padding optional, no whitespace). Returns the
 * decoded length, or -1 when the text is not base64 or does not fit. */
static long b64_decode(const char *s, unsigned char *out, size_t cap)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (strlen(s) - n > 2 || n % 4 == 1)
        return -1;
    if (strlen(s) != n && (strlen(s) % 4) != 0)
        return -1;
    size_t len = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_val((unsigned char)s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (len >= cap)
                return -1;
            out[len++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0)  /* leftover bits must be zero in canonical base64 */
        return -1;
    return (long)len;
}

int config_add_account(struct config *cfg, const char *name, const char *key1_b64,
                       const char *key2_b64, char *err, size_t errlen)
{
    struct account_cfg a;
    memset(&a, 0, sizeof a);
    size_t n = strlen(name);
    if (n < 3 || n > 24) {
        set_err(err, errlen, "account name '%s' must be 3 to 24 letters or digits", name);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c)) {
            set_err(err, errlen, "account name '%s' must be 3 to 24 letters or digits", name);
            return -1;
        }
        a.name[i] = (char)tolower(c);
    }
    if (!key1_b64 || !*key1_b64) {
        set_err(err, errlen, "account '%s' needs a key", name);
        return -1;
    }
    long k = b64_decode(key1_b64, a.key1, sizeof a.key1);
    if (k <= 0) {
        set_err(err, errlen, "account '%s': key1 is not valid base64 (at most %d bytes)", name,
                CONFIG_MAX_KEY_BYTES);
        return -1;
    }
    a.key1_len = (size_t)k;
    if (key2_b64 && *key2_b64) {
        k = b64_decode(key2_b64, a.key2, sizeof a.key2);
        if (k <= 0) {
            set_err(err, errlen, "account '%s': key2 is not valid base64 (at most %d bytes)",
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
        set_err(err, errlen, "too many accounts (at most %d)", CONFIG_MAX_ACCOUNTS);
        return -1;
    }
    cfg->accounts[cfg->naccounts++] = a;
    cfg->dev_account_listed |= dev;
    return 0;
}

const struct account_cfg *config_find_account(const struct config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->naccounts; i++)
        if (strcasecmp(cfg->accounts[i].name, name) == 0)
            return &cfg->accounts[i];
    return NULL;
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

/* Parses a decimal integer in [min, max]; the whole text must be digits. */
static int parse_long(const char *s, long long min, long long max, long long *out)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Parses a byte count: digits with an optional K, M or G (binary) suffix. */
static int parse_size(const char *s, size_t *out)
{
    char num[32];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n + 1);
    long long mult = 1;
    char last = (char)toupper((unsigned char)num[n - 1]);
    if (last == 'K' || last == 'M' || last == 'G') {
        mult = last == 'K' ? 1024LL : last == 'M' ? 1024LL * 1024 : 1024LL * 1024 * 1024;
        num[n - 1] = '\0';
    }
    long long v;
    if (parse_long(num, 1, (1LL << 40) / mult, &v) < 0)
        return -1;
    *out = (size_t)(v * mult);
    return 0;
}

/* Parses on/off style booleans. */
static int parse_bool(const char *s, int *out)
{
    static const char *yes[] = {"on", "true", "yes", "1"};
    static const char *no[] = {"off", "false", "no", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

/* Parses a decimal number in [min, max] (the whole text). */
static int parse_double(const char *s, double min, double max, double *out)
{
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

/* Records one setting of fault rule `rule` (checked by core/fault.c when
 * main.c builds the rules). */
static int add_fault_item(struct config *cfg, const char *rule, const char *key,
                          const char *value, int line, char *err, size_t errlen)
{
    if (cfg->nfaults >= CONFIG_MAX_FAULT_ITEMS) {
        set_err(err, errlen, "too many fault settings (at most %d)", CONFIG_MAX_FAULT_ITEMS);
        return -1;
    }
    struct config_fault_item *it = &cfg->faults[cfg->nfaults];
    if (!*rule || strlen(rule) >= sizeof it->rule || strlen(key) >= sizeof it->key ||
        strlen(value) >= sizeof it->value) {
        set_err(err, errlen, "fault %s: name, key or value too long (value at most %zu bytes)",
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
static int apply_fault_spec(struct config *cfg, const char *spec, char *err, size_t errlen)
{
    char tmp[1024];
    if (strlen(spec) >= sizeof tmp) {
        set_err(err, errlen, "--fault value is too long");
        return -1;
    }
    strcpy(tmp, spec);
    char *colon = strchr(tmp, ':');
    if (!colon || colon == tmp) {
        set_err(err, errlen, "--fault expects NAME:key=value[,key=value...], got '%s'", spec);
        return -1;
    }
    *colon = '\0';
    char *save = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            set_err(err, errlen, "--fault %s: expected key=value, got '%s'", tmp, kv);
            return -1;
        }
        *eq = '\0';
        if (add_fault_item(cfg, tmp, kv, eq + 1, 0, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Applies "NAME:KEY1[:KEY2]". */
static int apply_account_spec(struct config *cfg, const char *spec, char *err, size_t errlen)
{
    char tmp[1024];
    if (strlen(spec) >= sizeof tmp) {
        set_err(err, errlen, "--account value is too long");
        return -1;
    }
    strcpy(tmp, spec);
    char *c1 = strchr(tmp, ':');
    if (!c1) {
        set_err(err, errlen, "--account expects NAME:KEY1[:KEY2], got '%s'", spec);
        return -1;
    }
    *c1++ = '\0';
    char *c2 = strchr(c1, ':');
    if (c2) {
        *c2++ = '\0';
        if (strchr(c2, ':')) {
            set_err(err, errlen, "--account expects NAME:KEY1[:KEY2], got '%s'", spec);
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
            set_err(err, errlen, "%s: the token may hold letters, digits and -._~+/ "
                    "(then '=' padding) only", what);
            return -1;
        }
    }
    if (n && (eq == 0 || n < CONFIG_ADMIN_TOKEN_MIN || n >= sizeof cfg->admin_token)) {
        set_err(err, errlen, "%s: the token must be %d to %zu characters long", what,
                CONFIG_ADMIN_TOKEN_MIN, sizeof cfg->admin_token - 1);
        return -1;
    }
    memcpy(cfg->admin_token, v, n + 1);
    return 0;
}

/* Reads the admin token from the first line of file path (trailing blanks
 * and the newline cut), so that it need not be on the command line. */
static int read_admin_token_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "--admin-token-file: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got) {
        set_err(err, errlen, "--admin-token-file: %s is empty", path);
        return -1;
    }
    size_t n = strlen(line);
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        line[--n] = '\0';
    if (!n) {
        set_err(err, errlen, "--admin-token-file: %s holds no token", path);
        return -1;
    }
    char what[300];
    snprintf(what, sizeof what, "--admin-token-file %s", path);
    return set_admin_token(cfg, line, what, err, errlen);
}

/* Adds the comma-separated Host names of --admin-allowed-host (a name or
 * an IP address; IPv6 literals get brackets as in a Host header). */
static int add_admin_hosts(struct config *cfg, const char *v, char *err, size_t errlen)
{
    char tmp[1024];
    if (strlen(v) >= sizeof tmp) {
        set_err(err, errlen, "--admin-allowed-host value is too long");
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
            set_err(err, errlen, "--admin-allowed-host expects host names or addresses, got '%s'",
                    h);
            return -1;
        }
        if (cfg->nadmin_allowed_hosts >= CONFIG_MAX_ADMIN_HOSTS) {
            set_err(err, errlen, "at most %d admin allowed hosts", CONFIG_MAX_ADMIN_HOSTS);
            return -1;
        }
        char *dst = cfg->admin_allowed_hosts[cfg->nadmin_allowed_hosts++];
        snprintf(dst, sizeof cfg->admin_allowed_hosts[0], v6 ? "[%s]" : "%s", h);
        for (char *p = dst; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    return 0;
}

/* Sets one option by name (flag name without "--"); shared by the file and
 * the command line. Returns 0, or -1 with a message. */
static int config_set(struct config *cfg, const char *name, const char *v, char *err,
                      size_t errlen)
{
    long long n;
    size_t sz;
    if (strcmp(name, "host") == 0) {
        if (!*v) {
            set_err(err, errlen, "--host needs an address");
            return -1;
        }
        return copy_field(cfg->host, sizeof cfg->host, v, "--host", err, errlen);
    }
    if (strcmp(name, "port") == 0 || strcmp(name, "tls-port") == 0) {
        if (parse_long(v, 0, 65535, &n) < 0) {
            set_err(err, errlen, "--%s expects a port number 0-65535, got '%s'", name, v);
            return -1;
        }
        if (name[0] == 'p')
            cfg->port = (int)n;
        else
            cfg->tls_port = (int)n;
        return 0;
    }
    if (strcmp(name, "backend") == 0) {
        if (!*v) {
            set_err(err, errlen, "--backend needs a name or a .so path");
            return -1;
        }
        return copy_field(cfg->backend, sizeof cfg->backend, v, "--backend", err, errlen);
    }
    if (strcmp(name, "data") == 0 || strcmp(name, "data-dir") == 0) {
        if (!*v) {
            set_err(err, errlen, "--data needs a directory");
            return -1;
        }
        return copy_field(cfg->data_dir, sizeof cfg->data_dir, v, "--data", err, errlen);
    }
    if (strcmp(name, "backend-option") == 0) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v) {
            set_err(err, errlen, "--backend-option expects NAME=VALUE, got '%s'", v);
            return -1;
        }
        if (cfg->nbackend_options >= CONFIG_MAX_BACKEND_OPTIONS) {
            set_err(err, errlen, "at most %d --backend-option settings",
                    CONFIG_MAX_BACKEND_OPTIONS);
            return -1;
        }
        if (copy_field(cfg->backend_options[cfg->nbackend_options],
                       sizeof cfg->backend_options[0], v, "--backend-option", err, errlen) < 0)
            return -1;
        cfg->nbackend_options++;
        return 0;
    }
    if (strcmp(name, "log-level") == 0) {
        static const char *lv[] = {"error", "warn", "info", "debug"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(v, lv[i]) == 0) {
                cfg->log_level = (enum log_level)i;
                return 0;
            }
        }
        if (strcasecmp(v, "warning") == 0) {
            cfg->log_level = LOG_WARN;
            return 0;
        }
        set_err(err, errlen, "--log-level expects error|warn|info|debug, got '%s'", v);
        return -1;
    }
    if (strcmp(name, "durability") == 0) {
        if (strcasecmp(v, "sync") == 0)
            cfg->durability = DURABILITY_SYNC;
        else if (strcasecmp(v, "batch") == 0)
            cfg->durability = DURABILITY_BATCH;
        else if (strcasecmp(v, "none") == 0)
            cfg->durability = DURABILITY_NONE;
        else {
            set_err(err, errlen, "--durability expects sync|batch|none, got '%s'", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "auth") == 0 || strcmp(name, "access-log") == 0) {
        int b;
        if (parse_bool(v, &b) < 0) {
            set_err(err, errlen, "--%s expects on|off, got '%s'", name, v);
            return -1;
        }
        if (name[0] == 'a' && name[1] == 'u')
            cfg->auth = b;
        else
            cfg->access_log = b;
        return 0;
    }
    if (strcmp(name, "path-style-only") == 0) {
        if (parse_bool(v, &cfg->path_style_only) < 0) {
            set_err(err, errlen, "--path-style-only expects on|off, got '%s'", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "oauth") == 0) {
        if (strcasecmp(v, "basic") == 0 || strcasecmp(v, "off") == 0) {
            cfg->oauth_basic = strcasecmp(v, "basic") == 0;
            return 0;
        }
        set_err(err, errlen, "--oauth expects basic|off, got '%s'", v);
        return -1;
    }
    if (strcmp(name, "host-suffix") == 0)
        return copy_field(cfg->host_suffix, sizeof cfg->host_suffix, v, "--host-suffix", err,
                          errlen);
    if (strcmp(name, "scan-budget") == 0 || strcmp(name, "scan-budget-ms") == 0) {
        if (parse_long(v, 0, 1000000000, &n) < 0) {
            set_err(err, errlen, "--%s expects a number >= 0, got '%s'", name, v);
            return -1;
        }
        if (strcmp(name, "scan-budget") == 0)
            cfg->scan_budget = (int)n;
        else
            cfg->scan_budget_ms = (int)n;
        return 0;
    }
    if (strcmp(name, "tls-cert") == 0)
        return copy_field(cfg->tls_cert, sizeof cfg->tls_cert, v, "--tls-cert", err, errlen);
    if (strcmp(name, "tls-key") == 0)
        return copy_field(cfg->tls_key, sizeof cfg->tls_key, v, "--tls-key", err, errlen);
    if (strcmp(name, "account") == 0)
        return apply_account_spec(cfg, v, err, errlen);
    if (strcmp(name, "fault") == 0)
        return apply_fault_spec(cfg, v, err, errlen);
    if (strcmp(name, "strict-versions") == 0) {
        if (parse_bool(v, &cfg->strict_versions) < 0) {
            set_err(err, errlen, "--strict-versions expects on|off, got '%s'", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "throttle") == 0) {
        if (parse_bool(v, &cfg->throttle) < 0) {
            set_err(err, errlen, "--throttle expects on|off, got '%s'", v);
            return -1;
        }
        return 0;
    }
    if (strncmp(name, "throttle-", 9) == 0 &&
        (strcmp(name + 9, "partition-rate") == 0 || strcmp(name + 9, "partition-burst") == 0 ||
         strcmp(name + 9, "account-rate") == 0 || strcmp(name + 9, "account-burst") == 0)) {
        int burst = strstr(name, "burst") != NULL;
        double d;
        if (parse_double(v, burst ? 1 : 0.001, burst ? 1e6 : 1e7, &d) < 0) {
            set_err(err, errlen, "--%s expects a number in %s, got '%s'", name,
                    burst ? "1..1000000" : "0.001..10000000", v);
            return -1;
        }
        if (strcmp(name + 9, "partition-rate") == 0)
            cfg->throttle_partition_rate = d;
        else if (strcmp(name + 9, "partition-burst") == 0)
            cfg->throttle_partition_burst = d;
        else if (strcmp(name + 9, "account-rate") == 0)
            cfg->throttle_account_rate = d;
        else
            cfg->throttle_account_burst = d;
        return 0;
    }
    if (strcmp(name, "throttle-batch-account") == 0) {
        if (strcasecmp(v, "per-entity") == 0)
            cfg->throttle_batch_per_request = 0;
        else if (strcasecmp(v, "per-request") == 0)
            cfg->throttle_batch_per_request = 1;
        else {
            set_err(err, errlen, "--throttle-batch-account expects per-entity|per-request, got '%s'",
                    v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "throttle-retry-after") == 0) {
        if (parse_long(v, 0, 3600, &n) < 0) {
            set_err(err, errlen, "--throttle-retry-after expects seconds 0-3600, got '%s'", v);
            return -1;
        }
        cfg->throttle_retry_after = (int)n;
        return 0;
    }
    if (strcmp(name, "admin-port") == 0) {
        if (strcasecmp(v, "off") == 0) {
            cfg->admin_port = -1;
            return 0;
        }
        if (parse_long(v, 0, 65535, &n) < 0) {
            set_err(err, errlen, "--admin-port expects a port number 0-65535 or off, got '%s'", v);
            return -1;
        }
        cfg->admin_port = (int)n;
        return 0;
    }
    if (strcmp(name, "admin-host") == 0) {
        if (!*v) {
            set_err(err, errlen, "--admin-host needs an address");
            return -1;
        }
        return copy_field(cfg->admin_host, sizeof cfg->admin_host, v, "--admin-host", err,
                          errlen);
    }
    if (strcmp(name, "admin-token") == 0)
        return set_admin_token(cfg, v, "--admin-token", err, errlen);
    if (strcmp(name, "admin-token-file") == 0)
        return read_admin_token_file(cfg, v, err, errlen);
    if (strcmp(name, "admin-allowed-host") == 0)
        return add_admin_hosts(cfg, v, err, errlen);
    if (strcmp(name, "dev-account") == 0) {
        if (strcasecmp(v, "auto") == 0) {
            cfg->dev_account = -1;
            return 0;
        }
        if (parse_bool(v, &cfg->dev_account) < 0) {
            set_err(err, errlen, "--dev-account expects on|off|auto, got '%s'", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "advisor") == 0) {
        if (cfg->nadvisor_options >= CONFIG_MAX_ADVISOR_OPTIONS) {
            set_err(err, errlen, "too many --advisor settings (at most %d)",
                    CONFIG_MAX_ADVISOR_OPTIONS);
            return -1;
        }
        if (copy_field(cfg->advisor_options[cfg->nadvisor_options],
                       sizeof cfg->advisor_options[0], v, "--advisor", err, errlen) < 0)
            return -1;
        cfg->nadvisor_options++;
        return 0;
    }
    if (strcmp(name, "fault-seed") == 0) {
        if (parse_long(v, 0, INT64_MAX, &n) < 0) {
            set_err(err, errlen, "--fault-seed expects a number >= 0, got '%s'", v);
            return -1;
        }
        cfg->fault_seed = (unsigned long long)n;
        return 0;
    }
    if (strcmp(name, "max-body-bytes") == 0 || strcmp(name, "max-header-bytes") == 0 ||
        strcmp(name, "max-conn-output-bytes") == 0 ||
        strcmp(name, "max-total-output-bytes") == 0) {
        if (parse_size(v, &sz) < 0) {
            set_err(err, errlen, "--%s expects a byte count > 0 (K/M/G suffix allowed), got '%s'",
                    name, v);
            return -1;
        }
        if (strcmp(name, "max-body-bytes") == 0)
            cfg->max_body_bytes = sz;
        else if (strcmp(name, "max-header-bytes") == 0)
            cfg->max_header_bytes = sz;
        else if (strcmp(name, "max-conn-output-bytes") == 0)
            cfg->max_conn_output_bytes = sz;
        else
            cfg->max_total_output_bytes = sz;
        return 0;
    }
    if (strcmp(name, "header-timeout-ms") == 0 || strcmp(name, "idle-timeout-ms") == 0 ||
        strcmp(name, "request-timeout-ms") == 0 || strcmp(name, "max-connections") == 0) {
        if (parse_long(v, 1, 1000000000, &n) < 0) {
            set_err(err, errlen, "--%s expects a number > 0, got '%s'", name, v);
            return -1;
        }
        if (name[0] == 'h')
            cfg->header_timeout_ms = (int)n;
        else if (name[0] == 'i')
            cfg->idle_timeout_ms = (int)n;
        else if (name[0] == 'r')
            cfg->request_timeout_ms = (int)n;
        else
            cfg->max_connections = (int)n;
        return 0;
    }
    set_err(err, errlen, "unknown option '%s'", name);
    return -1;
}

/* Options that take no value on the command line. */
static int is_switch(const char *name)
{
    return strcmp(name, "help") == 0 || strcmp(name, "version") == 0;
}

/* Options whose value is optional on the command line ("--throttle" means
 * "--throttle=on"; a separate next argument is never taken as its value). */
static int is_optional_switch(const char *name)
{
    return strcmp(name, "throttle") == 0 || strcmp(name, "strict-versions") == 0;
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
        set_err(err, errlen, "--dev-account off leaves no account: add one with --account "
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
        set_err(err, errlen, "--admin-host %s is not a loopback address: an admin listener "
                "reachable from other machines needs --admin-token or --admin-token-file",
                cfg->admin_host);
        return -1;
    }
    if (cfg->admin_port > 0 && (cfg->admin_port == cfg->port || cfg->admin_port == cfg->tls_port)) {
        set_err(err, errlen, "--admin-port must differ from --port and --tls-port");
        return -1;
    }
    if (cfg->tls_port) {
        if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
            set_err(err, errlen, "--tls-port needs --tls-cert and --tls-key");
            return -1;
        }
        if (cfg->tls_port == cfg->port) {
            set_err(err, errlen, "--tls-port must differ from --port");
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
        set_err(err, errlen, "%s:%d: [account %s] has no key1", path, pa->line, pa->name);
        return -1;
    }
    if (config_add_account(cfg, pa->name, pa->key1, pa->key2, msg, sizeof msg) < 0) {
        set_err(err, errlen, "%s:%d: %s", path, pa->line, msg);
        return -1;
    }
    return 0;
}

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "cannot open config file %s: %s", path, strerror(errno));
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
            set_err(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end || *trim(end + 1)) {
                set_err(err, errlen, "%s:%d: malformed section header", path, lineno);
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
                    set_err(err, errlen, "%s:%d: bad fault section", path, lineno);
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
                    set_err(err, errlen, "%s:%d: bad account section", path, lineno);
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
            set_err(err, errlen, "%s:%d: unknown section [%s]", path, lineno, sec);
            rc = -1;
            break;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            set_err(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
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
            if (add_fault_item(cfg, pf.name, key, val, lineno, msg, sizeof msg) < 0) {
                set_err(err, errlen, "%s:%d: %s", path, lineno, msg);
                rc = -1;
                break;
            }
            continue;
        }
        if (pa.active) {
            char *dst = strcmp(key, "key1") == 0 ? pa.key1 : strcmp(key, "key2") == 0 ? pa.key2 : NULL;
            if (!dst || strlen(val) >= sizeof pa.key1) {
                set_err(err, errlen, "%s:%d: [account] sections hold key1 and key2 only", path,
                        lineno);
                rc = -1;
                break;
            }
            strcpy(dst, val);
            continue;
        }
        if (strcmp(key, "config") == 0 || is_switch(key)) {
            set_err(err, errlen, "%s:%d: '%s' is not allowed in a config file", path, lineno, key);
            rc = -1;
            break;
        }
        if (config_set(cfg, key, val, msg, sizeof msg) < 0) {
            set_err(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        rc = flush_account(cfg, &pa, path, err, errlen);
    fclose(f);
    return rc;
}

static const char usage_text[] =
    "Usage: tabled [OPTIONS]\n"
    "An Azure Table Storage compatible server.\n"
    "\n"
    "  --config FILE           read settings from an INI file (flags override it)\n"
    "  --host ADDR             listen address (default 127.0.0.1)\n"
    "  --port N                HTTP port (default 10002; 0 = any free port)\n"
    "  --backend NAME          memory, leveldb, flatfile or /path/plugin.so (default leveldb)\n"
    "  --data DIR              data directory for durable backends (default ./data)\n"
    "  --backend-option N=V    a backend setting, e.g. cache-size=64M (repeatable)\n"
    "  --durability MODE       sync, batch or none (default batch)\n"
    "  --log-level LEVEL       error, warn, info or debug (default info)\n"
    "  --access-log on|off     one line per request on stdout (default on)\n"
    "  --auth on|off           verify request signatures (default on)\n"
    "  --host-suffix S         host-style suffix after ACCOUNT.table. (default localhost)\n"
    "  --strict-versions[=on|off]  refuse x-ms-version values tabled does not know, as\n"
    "                          the cloud does (default off: newer ones act as the newest)\n"
    "  --path-style-only on|off  account always from the URL path (default off)\n"
    "  --oauth basic|off       accept bearer tokens by their claims, over HTTPS (default off)\n"
    "  --account NAME:KEY1[:KEY2]  add an account (base64 keys; repeatable)\n"
    "  --dev-account on|off|auto  serve devstoreaccount1 (default auto: only when\n"
    "                          no other account is configured)\n"
    "  --tls-port N            HTTPS port (default 0 = off)\n"
    "  --tls-cert FILE         PEM certificate (chain) for HTTPS\n"
    "  --tls-key FILE          PEM private key for HTTPS\n"
    "  --scan-budget N         entities examined per query page, 0 = unlimited\n"
    "  --scan-budget-ms N      time cut per query page in ms (default 5000)\n"
    "  --max-body-bytes N      largest request body (default 4M)\n"
    "  --max-header-bytes N    largest request head (default 64K)\n"
    "  --header-timeout-ms N   time allowed for a request head (default 30000)\n"
    "  --request-timeout-ms N  time allowed for a whole request (default 120000)\n"
    "  --idle-timeout-ms N     keep-alive idle close, and stalled output (default 120000)\n"
    "  --max-connections N     concurrent connections; at the cap the idlest one is\n"
    "                          closed for a newcomer (default 10000)\n"
    "  --max-conn-output-bytes N   unsent output that holds a connection's next\n"
    "                          request (default 1M)\n"
    "  --max-total-output-bytes N  unsent output of the whole process above which\n"
    "                          connections owing output wait (default 64M)\n"
    "  --throttle[=on|off]     token buckets: 503 ServerBusy above the service's targets\n"
    "  --throttle-partition-rate R, --throttle-partition-burst B\n"
    "                          entities/s and bucket size per partition (default 2000)\n"
    "  --throttle-account-rate R, --throttle-account-burst B\n"
    "                          entities/s and bucket size per account (default 20000)\n"
    "  --throttle-batch-account per-entity|per-request\n"
    "                          what a batch costs the account bucket (default per-entity)\n"
    "  --throttle-retry-after N  add Retry-After: N to throttled answers (default 0 = none)\n"
    "  --fault NAME:k=v[,k=v]  a fault injection rule (see README; repeatable)\n"
    "  --fault-seed N          seed of the fault injection draws (default random)\n"
    "  --admin-port N          admin listener: /metrics, /healthz, /faults, /advisor,\n"
    "                          /dashboard (default off)\n"
    "  --admin-host ADDR       admin listen address (default 127.0.0.1)\n"
    "  --admin-token T         bearer token for mutating admin requests (all of\n"
    "                          them off loopback, where it is required)\n"
    "  --admin-token-file F    read the admin token from the first line of F\n"
    "  --admin-allowed-host H  Host names the admin listener answers besides\n"
    "                          loopback ones (repeatable, comma-separated)\n"
    "  --advisor NAME=VALUE    a partition advisor threshold, e.g. hot-share=0.6 (repeatable;\n"
    "                          see README \"Partition advisor\")\n"
    "  --help                  show this help\n"
    "  --version               show the version\n";

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
        set_err(err, errlen, "unexpected argument '%s' (see --help)", s);
        return -1;
    }
    s += 2;
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if (n >= sizeof a->name) {
        set_err(err, errlen, "unknown option '--%s'", s);
        return -1;
    }
    memcpy(a->name, s, n);
    a->name[n] = '\0';
    if (is_switch(a->name)) {
        if (eq) {
            set_err(err, errlen, "--%s takes no value", a->name);
            return -1;
        }
        a->value = NULL;
        return 0;
    }
    if (eq) {
        a->value = eq + 1;
    } else if (is_optional_switch(a->name)) {
        a->value = "on";
    } else {
        if (*i + 1 >= argc) {
            set_err(err, errlen, "--%s needs a value", a->name);
            return -1;
        }
        a->value = argv[++*i];
    }
    return 0;
}

int config_parse_args(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    struct arg a;
    const char *config_path = NULL;
    struct config probe;
    char msg[512];
    /* Pass 1: syntax, --help/--version, and where the config file is. Values
     * are checked against a scratch copy so errors are found before the file
     * is read. */
    probe = *cfg;
    for (int i = 1; i < argc; i++) {
        if (next_arg(argc, argv, &i, &a, err, errlen) < 0)
            return -1;
        if (strcmp(a.name, "help") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (strcmp(a.name, "version") == 0) {
            printf("tabled %s\n", TABLED_VERSION);
            return 1;
        }
        if (strcmp(a.name, "config") == 0) {
            config_path = a.value;
            continue;
        }
        if (config_set(&probe, a.name, a.value, msg, sizeof msg) < 0) {
            set_err(err, errlen, "%s", msg);
            return -1;
        }
    }
    if (config_path && config_load_file(cfg, config_path, err, errlen) < 0)
        return -1;
    /* Pass 2: flags override the file. */
    for (int i = 1; i < argc; i++) {
        if (next_arg(argc, argv, &i, &a, err, errlen) < 0)
            return -1;
        if (strcmp(a.name, "config") == 0)
            continue;
        if (config_set(cfg, a.name, a.value, err, errlen) < 0)
            return -1;
    }
    if (settle_accounts(cfg, err, errlen) < 0)
        return -1;
    return config_check(cfg, err, errlen);
}

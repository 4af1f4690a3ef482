/* fault.c - fault injection rules (see fault.h). */
#include "guard/fault.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/errfmt.h"
#include "core/jsonout.h"
#include "core/rand.h"

struct fault_set {
    struct fault_rule rules[FAULT_MAX_RULES];
    size_t n;
    int any_pk;          /* some rule names a partition */
    struct rand_x128 rng;
};

/* ---- rules ---- */

void fault_rule_init(struct fault_rule *r, const char *name)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    r->ops = FAULT_ALL;
}

/* Copies s into a fixed field of size cap; -1 when too long. */
static int copy_field(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        return -1;
    memcpy(dst, s, n + 1);
    return 0;
}

static int parse_prob(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || !(d >= 0.0 && d <= 1.0))
        return -1;
    *out = d;
    return 0;
}

static int parse_int(const char *v, long long max, long long *out)
{
    char *end;
    errno = 0;
    if (!*v || !isdigit((unsigned char)*v))
        return -1;
    long long n = strtoll(v, &end, 10);
    if (*end || errno || n < 0 || n > max)
        return -1;
    *out = n;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") ||
        !strcmp(v, "1")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(v, "false") || !strcasecmp(v, "off") || !strcasecmp(v, "no") ||
        !strcmp(v, "0")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* "reads,writes,batches" or "all" -> class bits. */
static int parse_ops(const char *v, unsigned *out)
{
    unsigned bits = 0;
    const char *p = v;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ", ");
        if ((n == 5 && !strncasecmp(p, "reads", 5)) || (n == 4 && !strncasecmp(p, "read", 4)))
            bits |= FAULT_READ;
        else if ((n == 6 && !strncasecmp(p, "writes", 6)) || (n == 5 && !strncasecmp(p, "write", 5)))
            bits |= FAULT_WRITE;
        else if ((n == 7 && !strncasecmp(p, "batches", 7)) || (n == 5 && !strncasecmp(p, "batch", 5)))
            bits |= FAULT_BATCH;
        else if (n == 3 && !strncasecmp(p, "all", 3))
            bits |= FAULT_ALL;
        else
            return -1;
        p += n;
    }
    if (!bits)
        return -1;
    *out = bits;
    return 0;
}

/* "N" or "A-B" milliseconds. */
static int parse_range(const char *v, int *lo, int *hi)
{
    char tmp[64];
    if (copy_field(tmp, sizeof tmp, v) < 0)
        return -1;
    char *dash = strchr(tmp, '-');
    long long a, b;
    if (dash) {
        *dash = '\0';
        if (parse_int(tmp, 3600000, &a) < 0 || parse_int(dash + 1, 3600000, &b) < 0 || b < a)
            return -1;
    } else {
        if (parse_int(tmp, 3600000, &a) < 0)
            return -1;
        b = a;
    }
    *lo = (int)a;
    *hi = (int)b;
    return 0;
}

int fault_rule_set(struct fault_rule *r, const char *key, const char *value, char *err,
                   size_t errlen)
{
    char k[64];
    size_t i = 0;
    for (; key[i] && i + 1 < sizeof k; i++)
        k[i] = key[i] == '_' ? '-' : (char)tolower((unsigned char)key[i]);
    k[i] = '\0';
    long long n;
    if (!strcmp(k, "name")) {
        if (!*value || copy_field(r->name, sizeof r->name, value) < 0 || strchr(value, '/')) {
            errfmt_set(err, errlen, "fault name must be 1-%d characters without '/'",
                       FAULT_MAX_NAME - 1);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "account")) {
        if (!strcmp(value, "*"))
            value = "";
        if (copy_field(r->account, sizeof r->account, value) < 0) {
            errfmt_set(err, errlen, "fault account name too long");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "table")) {
        if (!strcmp(value, "*"))
            value = "";
        if (copy_field(r->table, sizeof r->table, value) < 0) {
            errfmt_set(err, errlen, "fault table name too long");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "partition") || !strcmp(k, "partitionkey")) {
        if (copy_field(r->partition, sizeof r->partition, value) < 0) {
            errfmt_set(err, errlen, "fault partition key longer than %d bytes", FAULT_MAX_PK);
            return -1;
        }
        r->has_partition = 1;
        return 0;
    }
    if (!strcmp(k, "ops")) {
        if (parse_ops(value, &r->ops) < 0) {
            errfmt_set(err, errlen, "fault ops: expected reads, writes, batches or all, got '%s'",
                       value);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "busy") || !strcmp(k, "timeout") || !strcmp(k, "reset")) {
        double *dst = k[0] == 'b' ? &r->busy : k[0] == 't' ? &r->timeout : &r->reset;
        if (parse_prob(value, dst) < 0) {
            errfmt_set(err, errlen, "fault %s: expected a probability 0..1, got '%s'", k, value);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "timeout-delay-ms")) {
        if (parse_int(value, 3600000, &n) < 0) {
            errfmt_set(err, errlen, "fault timeout-delay-ms: expected 0..3600000, got '%s'", value);
            return -1;
        }
        r->timeout_delay_ms = (int)n;
        return 0;
    }
    if (!strcmp(k, "latency-ms")) {
        if (parse_range(value, &r->latency_min_ms, &r->latency_max_ms) < 0) {
            errfmt_set(err, errlen, "fault latency-ms: expected N or A-B (ms), got '%s'", value);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "timeout-applies")) {
        if (parse_bool(value, &r->timeout_applies) < 0) {
            errfmt_set(err, errlen, "fault timeout-applies: expected true or false, got '%s'",
                       value);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "every") || !strcmp(k, "count")) {
        if (parse_int(value, 1000000000000LL, &n) < 0) {
            errfmt_set(err, errlen, "fault %s: expected a number >= 0, got '%s'", k, value);
            return -1;
        }
        if (k[0] == 'e')
            r->every = (uint64_t)n;
        else
            r->count = (uint64_t)n;
        return 0;
    }
    errfmt_set(err, errlen, "unknown fault setting '%s'", key);
    return -1;
}

int fault_rule_check(const struct fault_rule *r, char *err, size_t errlen)
{
    if (!r->name[0]) {
        errfmt_set(err, errlen, "a fault rule needs a name");
        return -1;
    }
    if (r->busy + r->timeout + r->reset > 1.0 + 1e-9) {
        errfmt_set(err, errlen, "fault %s: busy + timeout + reset exceed 1", r->name);
        return -1;
    }
    if (r->has_partition && !r->table[0]) {
        errfmt_set(err, errlen, "fault %s: a partition needs a table", r->name);
        return -1;
    }
    return 0;
}

/* Appends s as a JSON string. */
static void json_str(struct buf *b, const char *s)
{
    json_put_string(b, s, strlen(s));
}

void fault_rule_json(const struct fault_rule *r, struct buf *b)
{
    buf_puts(b, "{\"name\":");
    json_str(b, r->name);
    buf_puts(b, ",\"account\":");
    json_str(b, r->account[0] ? r->account : "*");
    buf_puts(b, ",\"table\":");
    json_str(b, r->table[0] ? r->table : "*");
    if (r->has_partition) {
        buf_puts(b, ",\"partition\":");
        json_str(b, r->partition);
    }
    buf_puts(b, ",\"ops\":\"");
    if (r->ops == FAULT_ALL) {
        buf_puts(b, "all");
    } else {
        const char *sep = "";
        if (r->ops & FAULT_READ) {
            buf_puts(b, "reads");
            sep = ",";
        }
        if (r->ops & FAULT_WRITE) {
            buf_printf(b, "%swrites", sep);
            sep = ",";
        }
        if (r->ops & FAULT_BATCH)
            buf_printf(b, "%sbatches", sep);
    }
    buf_printf(b, "\",\"busy\":%.17g,\"timeout\":%.17g,\"reset\":%.17g", r->busy, r->timeout,
               r->reset);
    buf_printf(b, ",\"timeout_delay_ms\":%d", r->timeout_delay_ms);
    if (r->latency_min_ms == r->latency_max_ms)
        buf_printf(b, ",\"latency_ms\":\"%d\"", r->latency_min_ms);
    else
        buf_printf(b, ",\"latency_ms\":\"%d-%d\"", r->latency_min_ms, r->latency_max_ms);
    buf_printf(b, ",\"timeout_applies\":%s", r->timeout_applies ? "true" : "false");
    buf_printf(b, ",\"every\":%llu,\"count\":%llu,\"matched\":%llu,\"injected\":%llu}",
               (unsigned long long)r->every, (unsigned long long)r->count,
               (unsigned long long)r->matched, (unsigned long long)r->injected);
}

/* ---- the set ---- */

struct fault_set *fault_set_new(uint64_t seed)
{
    struct fault_set *fs = calloc(1, sizeof *fs);
    if (!fs)
        abort();
    rand_x128_seed(&fs->rng, seed);
    return fs;
}

void fault_set_free(struct fault_set *fs)
{
    free(fs);
}

static void recount(struct fault_set *fs)
{
    fs->any_pk = 0;
    for (size_t i = 0; i < fs->n; i++)
        if (fs->rules[i].has_partition)
            fs->any_pk = 1;
}

int fault_put(struct fault_set *fs, const struct fault_rule *r)
{
    size_t i = 0;
    while (i < fs->n && strcmp(fs->rules[i].name, r->name) != 0)
        i++;
    if (i == fs->n) {
        if (fs->n == FAULT_MAX_RULES)
            return -1;
        fs->n++;
    }
    fs->rules[i] = *r;
    fs->rules[i].matched = fs->rules[i].injected = 0;
    recount(fs);
    return 0;
}

int fault_delete(struct fault_set *fs, const char *name)
{
    for (size_t i = 0; i < fs->n; i++) {
        if (strcmp(fs->rules[i].name, name) == 0) {
            memmove(&fs->rules[i], &fs->rules[i + 1], (fs->n - i - 1) * sizeof fs->rules[0]);
            fs->n--;
            recount(fs);
            return 1;
        }
    }
    return 0;
}

void fault_clear(struct fault_set *fs)
{
    fs->n = 0;
    fs->any_pk = 0;
}

size_t fault_count(const struct fault_set *fs)
{
    return fs->n;
}

const struct fault_rule *fault_get(const struct fault_set *fs, size_t i)
{
    return i < fs->n ? &fs->rules[i] : NULL;
}

void fault_set_json(const struct fault_set *fs, struct buf *out)
{
    buf_puts(out, "{\"rules\":[");
    for (size_t i = 0; i < fs->n; i++) {
        if (i)
            buf_putc(out, ',');
        fault_rule_json(&fs->rules[i], out);
    }
    buf_puts(out, "]}");
}

int fault_active(const struct fault_set *fs)
{
    return fs && fs->n > 0;
}

int fault_needs_pk(const struct fault_set *fs)
{
    return fs && fs->any_pk;
}

/* ---- decisions ---- */

/* How specifically r matches q: -1 not at all, else 0 (any) .. 3 (partition). */
static int match(const struct fault_rule *r, const struct fault_request *q)
{
    if (!(r->ops & q->cls))
        return -1;
    if (r->count && r->injected >= r->count)
        return -1;
    int level = 0;
    if (r->account[0]) {
        if (!q->account || strcasecmp(r->account, q->account) != 0)
            return -1;
        level = 1;
    }
    if (r->table[0]) {
        size_t n = strlen(r->table);
        if (!q->table || q->table_len != n || strncasecmp(r->table, q->table, n) != 0)
            return -1;
        level = 2;
    }
    if (r->has_partition) {
        size_t n = strlen(r->partition);
        if (!q->pk || q->pk_len != n || memcmp(r->partition, q->pk, n) != 0)
            return -1;
        level = 3;
    }
    return level;
}

int fault_decide(struct fault_set *fs, const struct fault_request *q, struct fault_action *out)
{
    memset(out, 0, sizeof *out);
    if (!fs || fs->n == 0)
        return 0;
    struct fault_rule *best = NULL;
    int best_level = -1;
    for (size_t i = 0; i < fs->n; i++) {
        int l = match(&fs->rules[i], q);
        if (l > best_level) {
            best_level = l;
            best = &fs->rules[i];
        }
    }
    if (!best)
        return 0;
    best->matched++;
    double total = best->busy + best->timeout + best->reset;
    double u = -1;
    if (best->every) {
        if (best->matched % best->every == 0 && total > 0)
            u = rand_x128_unit(&fs->rng) * total;  /* fires; the weights pick the kind */
    } else if (total > 0) {
        u = rand_x128_unit(&fs->rng);
    }
    if (u >= 0) {
        if (u < best->busy)
            out->kind = FAULT_BUSY;
        else if (u < best->busy + best->timeout)
            out->kind = FAULT_TIMEOUT;
        else if (u < total)
            out->kind = FAULT_RESET;
    }
    if (out->kind != FAULT_NONE)
        best->injected++;
    if (out->kind != FAULT_RESET) {
        int lat = best->latency_min_ms;
        if (best->latency_max_ms > best->latency_min_ms)
            lat += (int)(rand_x128_next(&fs->rng) %
                         (uint64_t)(best->latency_max_ms - best->latency_min_ms + 1));
        out->delay_ms = lat;
        if (out->kind == FAULT_TIMEOUT) {
            out->delay_ms += best->timeout_delay_ms;
            out->applies_write = best->timeout_applies;
        }
    }
    out->rule = best->name;
    return out->kind != FAULT_NONE || out->delay_ms > 0;
}

void fault_render_metrics(void *arg, struct buf *b)
{
    buf_puts(b, "# HELP tabled_fault_rules Fault injection rules in force.\n"
                "# TYPE tabled_fault_rules gauge\n");
    buf_printf(b, "tabled_fault_rules %zu\n", fault_count(arg));
}

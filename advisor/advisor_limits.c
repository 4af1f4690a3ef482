/* advisor_limits.c - the partition advisor's thresholds as option rows
 * (core/options.h): name, field, default, range and meaning in one row
 * each, read by the defaults, by `--advisor NAME=VALUE`, by GET
 * /advisor's "thresholds" and by `tabled --advisor help`. */
#include "advisor/advisor_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

/* One threshold: a double of struct advisor_limits in [lo, hi]. */
#define LIMIT(nm, field, def_, lo, hi, help_)                                                  \
    {.name = nm, .type = OPT_DOUBLE, .offset = offsetof(struct advisor_limits, field),       \
     .size = sizeof(double), .dmin = lo, .dmax = hi, .def = def_, .arg = "N", .help = help_}

static const struct opt limit_rows[] = {
    LIMIT("interval", interval_s, "5", 0.1, 3600, "seconds per sample interval"),
    LIMIT("target", target, "2000", 1, 1e9, "entities/s one partition is meant to take"),
    LIMIT("hot-share", hot_share, "0.5", 0.01, 1,
          "share of a table's entities in one partition that makes it hot"),
    LIMIT("hot-min-entities", hot_min_entities, "1000", 1, 1e15,
          "table traffic (entities) before a hot partition is judged"),
    LIMIT("append-share", append_share, "0.8", 0.01, 1,
          "share of creates at the end (start) of the key order"),
    LIMIT("append-min-creates", append_min_creates, "500", 1, 1e15,
          "creates before append-only / prepend is judged"),
    LIMIT("append-min-keys", append_min_keys, "10", 2, 1e15,
          "moves of the largest (smallest) key"),
    LIMIT("append-min-intervals", append_min_intervals, "6", 1, 1e15,
          "intervals with such moves (a sorted seed load, once, is not append-only)"),
    LIMIT("scan-min", scan_min, "5", 1, 1e15, "full table scans before they are reported"),
    LIMIT("efficiency-ratio", efficiency_ratio, "10", 1, 1e15,
          "entities examined per entity returned that makes a query inefficient"),
    LIMIT("efficiency-min-examined", efficiency_min_examined, "1000", 1, 1e15,
          "entities examined before efficiency is judged"),
    LIMIT("partition-entities", partition_entities, "100000", 1, 1e15,
          "entities added to one partition that make it large"),
    LIMIT("batch-min-writes", batch_min_writes, "200", 2, 1e15,
          "single writes to one partition in a stream that could be batches"),
    LIMIT("batch-window-ms", batch_window_ms, "1000", 1, 3600000,
          "gap (ms) that still continues such a stream"),
    LIMIT("throttle-min", throttle_min, "1", 1, 1e15,
          "throttled answers (503) for one partition before they are reported"),
};
#define NLIMITS (sizeof limit_rows / sizeof limit_rows[0])

void advisor_limits_default(struct advisor_limits *lim)
{
    char err[200];
    memset(lim, 0, sizeof *lim);
    if (opt_defaults(limit_rows, NLIMITS, lim, err, sizeof err) != 0)
        abort();                   /* a row's default is wrong: a bug */
}

int advisor_limit_set(struct advisor_limits *lim, const char *spec, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    if (!eq) {
        snprintf(err, errlen, "--advisor expects NAME=VALUE, got '%s'", spec);
        return -1;
    }
    char name[64];
    size_t n = (size_t)(eq - spec);
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), spec);
    const struct opt *o = n < sizeof name ? opt_find(limit_rows, NLIMITS, name) : NULL;
    if (!o) {
        snprintf(err, errlen, "--advisor: unknown threshold '%.*s' (tabled --advisor help "
                 "lists them)", (int)n, spec);
        return -1;
    }
    double d;
    if (opt_parse_double(eq + 1, o->dmin, o->dmax, &d) < 0) {
        snprintf(err, errlen, "--advisor %s expects a number in %g..%g, got '%s'", o->name,
                 o->dmin, o->dmax, eq + 1);
        return -1;
    }
    memcpy((char *)lim + o->offset, &d, sizeof d);
    return 0;
}

size_t advisor_limit_count(void)
{
    return NLIMITS;
}

const char *advisor_limit_name(size_t i)
{
    return i < NLIMITS ? limit_rows[i].name : NULL;
}

double advisor_limit_value(const struct advisor_limits *lim, size_t i)
{
    double d = 0;
    if (i < NLIMITS)
        memcpy(&d, (const char *)lim + limit_rows[i].offset, sizeof d);
    return d;
}

void advisor_limits_usage(FILE *out)
{
    fprintf(out, "Partition advisor thresholds (--advisor NAME=VALUE, repeatable):\n");
    for (size_t i = 0; i < NLIMITS; i++) {
        const struct opt *o = &limit_rows[i];
        fprintf(out, "  %-24s %s (default %s; %g..%g)\n", o->name, o->help, o->def, o->dmin,
                o->dmax);
    }
}

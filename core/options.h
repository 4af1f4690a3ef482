/* options.h - table-driven settings (in the style of nginx's ngx_command_t).
 *
 * A program describes each setting by one row: its name (the long flag
 * without "--", also the config file key), its type, where it is stored
 * (offset and size in the settings struct), its default, its argument name
 * and help line. The functions here apply a value by name, fill defaults
 * and print --help from the rows, so the command line, the config file and
 * the help text cannot disagree. server/config_options.c holds tabled's rows. */
#ifndef TABLED_OPTIONS_H
#define TABLED_OPTIONS_H
#include <stddef.h>
#include <stdio.h>

enum opt_type {
    OPT_BOOL,    /* int: on|off (also true/false, yes/no, 1/0) */
    OPT_INT,     /* int or long long (by size): decimal in [min, max] */
    OPT_SIZE,    /* size_t: byte count > 0, K/M/G (binary) suffix allowed;
                    in [min, max] when max > 0 */
    OPT_DOUBLE,  /* double: decimal number in [dmin, dmax] */
    OPT_STRING,  /* char[size]: copied; OPTF_NONEMPTY refuses "" */
    OPT_ENUM,    /* int: one of the names in values (case-insensitive) */
    OPT_LIST,    /* char[max][size] with a size_t counter at count_offset:
                    each value appended (repeatable flag / key) */
    OPT_CUSTOM,  /* the row's own setter */
    OPT_SWITCH,  /* command line only, no value (help, version) */
    OPT_FILE     /* command line only: a config file to read (config) */
};

#define OPTF_BARE 1u       /* OPT_BOOL: "--name" alone means on */
#define OPTF_NONEMPTY 2u   /* OPT_STRING: "" refused ("--name needs <expect>") */
#define OPTF_PAIR 4u       /* OPT_LIST: each value must be NAME=VALUE */

/* One named value of an OPT_ENUM (or a named value an OPT_INT also takes). */
struct opt_name {
    const char *name;
    int value;
    int hidden;        /* accepted, not shown in messages (a synonym) */
};

/* Applies value v to the settings at obj; returns 0 or -1 with a message. */
typedef int (*opt_setter)(void *obj, const char *v, char *err, size_t errlen);

struct opt {
    const char *name;       /* long flag without "--", also the file key */
    const char *alias;      /* another accepted name (not shown), or NULL */
    enum opt_type type;
    unsigned flags;         /* OPTF_* */
    size_t offset, size;    /* where the value lives: offsetof, sizeof */
    size_t count_offset;    /* OPT_LIST: offsetof the size_t counter */
    long long min, max;     /* OPT_INT range; OPT_LIST: max = capacity */
    double dmin, dmax;      /* OPT_DOUBLE range */
    const struct opt_name *names; /* OPT_ENUM values / OPT_INT extra names,
                                     {NULL} terminated */
    opt_setter set;         /* OPT_CUSTOM */
    const char *def;        /* default as text, applied through the row's
                               setter by opt_defaults; NULL = zero */
    const char *arg;        /* argument name in --help ("N", "ADDR") */
    const char *expect;     /* what a valid value is, for messages; NULL =
                               derived from the type */
    const char *help;       /* help text; "(default ...)" is appended from
                               def unless the text says "default" itself */
};

/* The row named name (or by its alias), or NULL. */
const struct opt *opt_find(const struct opt *tab, size_t n, const char *name);
/* Applies value v (NULL for a switch) of row o to obj. */
int opt_apply(const struct opt *o, void *obj, const char *v, char *err, size_t errlen);
/* Applies every row's default to obj (which the caller zeroed). Returns 0,
 * or -1 with a message (a default the row's own type refuses). */
int opt_defaults(const struct opt *tab, size_t n, void *obj, char *err, size_t errlen);
/* Writes the --help lines of every row: flag, argument, help, default. */
void opt_usage(const struct opt *tab, size_t n, FILE *out);

/* Value parsers shared with other settings code. */
int opt_parse_bool(const char *s, int *out);
int opt_parse_long(const char *s, long long min, long long max, long long *out);
int opt_parse_size(const char *s, size_t *out);
/* As opt_parse_size, in [min, max] (0 allowed when min is 0). */
int opt_parse_size_range(const char *s, unsigned long long min, unsigned long long max,
                         size_t *out);
int opt_parse_double(const char *s, double min, double max, double *out);

#endif

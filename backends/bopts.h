/* bopts.h - a backend's settings declared as option rows (core/options.h).
 *
 * Each built-in backend describes its --backend-option names by rows
 * (name, kind, range, default, help) over its own settings struct. The
 * same rows parse the options in the backend's open, let tabled refuse an
 * unknown or out-of-range name before anything is opened (exit 2), and
 * print `tabled --backend NAME --help`. A plug-in of interface version 4
 * declares its rows in its vtable (struct backend_option); bopt_for turns
 * them into these. */
#ifndef TABLED_BOPTS_H
#define TABLED_BOPTS_H
#include <stddef.h>
#include <stdio.h>

#include "core/options.h"

struct bopt_desc {
    const char *backend;          /* "leveldb" */
    const struct opt *rows;
    size_t nrows;
    size_t objsize;               /* sizeof the settings struct the rows fill */
};

/* The built-in backends' rows (in their own files). */
extern const struct bopt_desc backend_leveldb_opts, backend_flatfile_opts, backend_postgres_opts;

/* The rows of the built-in backend named name, or NULL (a plug-in or an
 * unknown name). Defined in registry.c. */
const struct bopt_desc *bopt_lookup(const char *name);
/* The rows of backend ops: a built-in's, or a version-4 plug-in's own
 * (struct backend_option); NULL when it declares none (its options then
 * pass to open() unchecked). Defined in registry.c. */
struct backend_ops;
const struct bopt_desc *bopt_for(const struct backend_ops *ops);

/* Fills obj (objsize bytes, zeroed here) with the rows' defaults, then
 * applies each "name=value" of params (NULL-terminated, may be NULL; the
 * last one of a name wins). Returns 0, or -1 with a message naming the
 * option: unknown (with the known names) or out of range. */
int bopt_parse(const struct bopt_desc *d, const char *const *params, void *obj, char *err,
               size_t errlen);

/* Checks params against d without keeping the values. */
int bopt_check(const struct bopt_desc *d, const char *const *params, char *err, size_t errlen);

/* Writes the backend's option list: name=ARG, kind and range, default,
 * help; one block per row. */
void bopt_usage(const struct bopt_desc *d, FILE *out);

/* Writes "kind, range" of a row ("byte count 64K..4G") into buf. */
void bopt_describe(const struct opt *o, char *buf, size_t len);

#endif

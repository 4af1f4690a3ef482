/* registry.c - finds a backend vtable by name, or loads one from a plug-in.
 *
 * --backend=NAME picks a built-in from the table below. A name containing
 * '/' is the path of a shared object exporting TABLED_BACKEND_SYMBOL; it is
 * loaded with dlopen(RTLD_NOW | RTLD_LOCAL) and its vtable is checked
 * (version, name, every method its version requires) before anything else
 * of it is trusted. Every version from 1 to TABLED_BACKEND_VERSION_MAX is
 * accepted, and no field newer than the vtable's version is read: a
 * version-1 plug-in's struct ends before caps. A loaded plug-in is never
 * unloaded: its vtable must stay valid for the life of the process. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/bopts.h"
#include "core/errfmt.h"
#ifdef HAVE_LIBPQ
#include "backends/postgres.h"
#endif

/* The memory backend takes no options. */
static const struct bopt_desc registry_memory_opts = {"memory", NULL, 0, 0};

/* Built-in backends. To add one, declare its vtable in backend.h and add a
 * line here. */
static const struct {
    const char *name;
    const struct backend_ops *ops;
    const struct bopt_desc *opts;          /* its --backend-option rows */
} registry_builtins[] = {
    {"memory", &backend_memory_ops, &registry_memory_opts},
    {"leveldb", &backend_leveldb_ops, &backend_leveldb_opts},
    {"flatfile", &backend_flatfile_ops, &backend_flatfile_opts},
#ifdef HAVE_LIBPQ
    {"postgres", &backend_postgres_ops, &backend_postgres_opts}, /* backends/postgres.c (libpq) */
#endif
};

#define REGISTRY_NBUILTINS (sizeof(registry_builtins) / sizeof(registry_builtins[0]))

typedef const struct backend_ops *(*registry_init_fn)(void);

/* Returns NULL when every field of a vtable that its version requires is
 * set, else the name of the first missing one. Version 1 needs every
 * method; version 2 lets each of get, iter_next and apply be NULL when its
 * _v2 form is set. Fields newer than ops->version are never read. */
static const char *registry_check_ops(const struct backend_ops *ops)
{
    if (!ops->name || !ops->name[0])
        return "name";
    if (!ops->open)
        return "open";
    if (!ops->close)
        return "close";
    if (!ops->iter_open)
        return "iter_open";
    if (!ops->iter_seek)
        return "iter_seek";
    if (!ops->iter_close)
        return "iter_close";
    if (!ops->sync)
        return "sync";
    if (ops->version == 1) {
        if (!ops->get)
            return "get";
        if (!ops->iter_next)
            return "iter_next";
        if (!ops->apply)
            return "apply";
        return NULL;
    }
    if (!ops->get && !ops->get_v2)
        return "get_v2 (or get)";
    if (!ops->iter_next && !ops->iter_next_v2)
        return "iter_next_v2 (or iter_next)";
    if (!ops->apply && !ops->apply_v2)
        return "apply_v2 (or apply)";
    return NULL;
}

/* Loads a plug-in shared object and returns its checked vtable. The handle
 * is closed again only when the plug-in is rejected. */
/* A plug-in's option rows (version 4), kept as core/options.h rows over
 * a scratch object, each value checked in a slot of its own. tabled loads
 * one plug-in: the rows of the last one asked for are kept for the life
 * of the process. */
#define REGISTRY_MAX_PLUGIN_OPTS 64
#define REGISTRY_OPT_SLOT 256
static struct opt registry_plugin_rows[REGISTRY_MAX_PLUGIN_OPTS];
static struct bopt_desc registry_plugin_desc;
static const struct backend_ops *registry_plugin_desc_of;

/* The option rows a vtable may carry: only from version 4. */
static const struct backend_option *registry_rows(const struct backend_ops *ops)
{
    return ops->version >= 4 ? ops->options : NULL;
}

/* -1 when ops's option rows are well formed (or absent), else the index
 * of the first bad row. */
static long registry_check_rows(const struct backend_ops *ops)
{
    const struct backend_option *r = registry_rows(ops);
    for (long i = 0; r && r[i].name; i++) {
        if (i >= REGISTRY_MAX_PLUGIN_OPTS || !r[i].name[0] || !r[i].help ||
            (unsigned)r[i].kind > BACKEND_OPTION_BOOL || r[i].min > r[i].max)
            return i;
    }
    return -1;
}

const struct bopt_desc *bopt_for(const struct backend_ops *ops)
{
    for (size_t i = 0; i < REGISTRY_NBUILTINS; i++)
        if (registry_builtins[i].ops == ops)
            return registry_builtins[i].opts;
    const struct backend_option *r = registry_rows(ops);
    if (!r || registry_check_rows(ops) >= 0)
        return NULL;
    if (registry_plugin_desc_of == ops)
        return &registry_plugin_desc;
    size_t n = 0;
    for (; r[n].name; n++) {
        struct opt *o = &registry_plugin_rows[n];
        *o = (struct opt){.name = r[n].name, .offset = n * REGISTRY_OPT_SLOT,
                          .min = r[n].min, .max = r[n].max, .def = r[n].def,
                          .help = r[n].help};
        switch (r[n].kind) {
        case BACKEND_OPTION_STRING:
            o->type = OPT_STRING;
            o->size = REGISTRY_OPT_SLOT;
            o->arg = "TEXT";
            break;
        case BACKEND_OPTION_INT:
            o->type = OPT_INT;
            o->size = sizeof(long long);
            o->arg = "N";
            break;
        case BACKEND_OPTION_SIZE:
            o->type = OPT_SIZE;
            o->size = sizeof(size_t);
            o->arg = "BYTES";
            break;
        case BACKEND_OPTION_BOOL:
            o->type = OPT_BOOL;
            o->size = sizeof(int);
            o->arg = "on|off";
            break;
        }
    }
    registry_plugin_desc = (struct bopt_desc){ops->name, registry_plugin_rows, n,
                                              n * REGISTRY_OPT_SLOT};
    registry_plugin_desc_of = ops;
    return &registry_plugin_desc;
}

static const struct backend_ops *registry_load_plugin(const char *path, char *err, size_t errlen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        errfmt_set(err, errlen, "cannot load backend plug-in: %s", why ? why : path);
        return NULL;
    }
    dlerror();
    void *sym = dlsym(h, TABLED_BACKEND_SYMBOL);
    if (!sym) {
        errfmt_set(err, errlen, "backend plug-in %s does not export %s", path,
                   TABLED_BACKEND_SYMBOL);
        dlclose(h);
        return NULL;
    }
    registry_init_fn init;
    memcpy(&init, &sym, sizeof(init));   /* object pointer -> function pointer */
    const struct backend_ops *ops = init();
    if (!ops) {
        errfmt_set(err, errlen, "backend plug-in %s: %s returned NULL", path,
                   TABLED_BACKEND_SYMBOL);
        dlclose(h);
        return NULL;
    }
    if (ops->version < 1 || ops->version > TABLED_BACKEND_VERSION_MAX) {
        errfmt_set(err, errlen, "backend plug-in %s: interface version %d, this server accepts "
                   "1 to %d", path, ops->version, TABLED_BACKEND_VERSION_MAX);
        dlclose(h);
        return NULL;
    }
    const char *bad = registry_check_ops(ops);
    if (bad) {
        errfmt_set(err, errlen, "backend plug-in %s: vtable field '%s' is missing", path, bad);
        dlclose(h);
        return NULL;
    }
    long row = registry_check_rows(ops);
    if (row >= 0) {
        errfmt_set(err, errlen, "backend plug-in %s: option row %ld is malformed (it needs a "
                   "name, a help text and a known kind, min <= max, and at most %d rows)",
                   path, row, REGISTRY_MAX_PLUGIN_OPTS);
        dlclose(h);
        return NULL;
    }
    return ops;
}

/* Finds a built-in backend by name, or loads a plug-in when the name
 * contains a '/'. */
const struct backend_ops *backend_lookup(const char *name, char *err, size_t errlen)
{
    if (!name || !name[0]) {
        errfmt_set(err, errlen, "no backend name given");
        return NULL;
    }
    if (strchr(name, '/'))
        return registry_load_plugin(name, err, errlen);
    for (size_t i = 0; i < REGISTRY_NBUILTINS; i++)
        if (strcmp(name, registry_builtins[i].name) == 0)
            return registry_builtins[i].ops;

    char known[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < REGISTRY_NBUILTINS && used < sizeof(known); i++) {
        int w = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                         registry_builtins[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    errfmt_set(err, errlen, "unknown backend '%s' (known: %s; or a path to a plug-in .so)", name,
               known);
    return NULL;
}

const struct bopt_desc *bopt_lookup(const char *name)
{
    for (size_t i = 0; i < REGISTRY_NBUILTINS; i++)
        if (strcmp(registry_builtins[i].name, name) == 0)
            return registry_builtins[i].opts;
    return NULL;
}

const struct backend_ops *backend_replica_of(const struct backend_ops *ops)
{
#ifdef HAVE_LIBPQ
    if (ops == &backend_postgres_ops)
        return &backend_postgres_replica_ops;
#endif
    (void)ops;
    return NULL;
}

int backend_replica_sync_time(const struct backend_ops *ops, struct backend_store *st,
                              int64_t *unix_s)
{
#ifdef HAVE_LIBPQ
    if (ops == &backend_postgres_replica_ops)
        return pg_replica_sync_time(st, unix_s);
#endif
    (void)ops;
    (void)st;
    (void)unix_s;
    return -1;
}

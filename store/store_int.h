/* store_int.h - what store/'s modules share beyond store.h (the table
 * catalogue, store/catalog.c, writes its rows through the store). Never
 * included above store/. */
#ifndef TABLED_STORE_INT_H
#define TABLED_STORE_INT_H
#include <stddef.h>

#include "backends/backend.h"
#include "store/store.h"

/* Applies n writes atomically with their expectations (cond may be NULL).
   account >= 0: the writes are entity writes of that account, counted for
   its gauge. Returns 0, BACKEND_CONFLICT (*failed set, when not NULL), or
   a failure status (logged, failure state kept). */
int store_apply(struct store *s, int account, const struct backend_write *w,
                const struct backend_cond *cond, size_t n, size_t *failed);

#endif

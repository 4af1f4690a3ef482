/* backend_model.h - random work on a backend checked against a plain
 * array model (backend_model.c), shared by tests/unit/test_backend_model
 * and tabled-backend-check. */
#ifndef TABLED_BACKEND_MODEL_H
#define TABLED_BACKEND_MODEL_H
#include <stdint.h>

#include "backends/backend.h"

/* Sets the random seed (0 counts as 1) and builds the key set; call once
   before bm_run. */
void bm_init(uint64_t seed);

/* Opens a store of ops in dir (params: its options, or NULL) and runs
   nops random operations through the version-2 methods when present
   (tests/unit/backend_adapter.h), comparing the store with the model
   after each one. Returns the number of mismatches (0: it agreed
   throughout), stopping after 5; each is described on a "#" line. */
int bm_run(const struct backend_ops *ops, const char *dir, const char *const *params,
           long nops);

#endif

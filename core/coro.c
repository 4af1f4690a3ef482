/* coro.c - stackful coroutines on ucontext (see coro.h). */
#include "core/coro.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif
#ifdef CORO_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* Finished stacks kept for reuse (each CORO_STACK_BYTES + a guard page). */
#define CORO_POOL_MAX 32

struct coro {
    ucontext_t ctx;            /* the coroutine's registers while it waits */
    ucontext_t caller;         /* the main stack's, while the coroutine runs */
    void (*fn)(void *arg);
    void (*fin)(void *arg);
    void *arg;
    void *map;                 /* mmap()ed guard page + stack */
    size_t map_len;
    int done;                  /* fn has returned */
#ifdef CORO_ASAN
    void *fake_stack;          /* ASan's fake stack of the side switched from */
    const void *main_bottom;   /* the resuming stack's bounds, for the way back */
    size_t main_size;
#endif
};

static struct coro *coro_running;
static void *coro_pool[CORO_POOL_MAX];
static size_t coro_pool_n;

/* A stack mapping: guard page (no access) then the stack. */
static void *coro_stack_get(size_t *len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *len = CORO_STACK_BYTES + page;
    if (coro_pool_n)
        return coro_pool[--coro_pool_n];
    void *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, *len);
        return NULL;
    }
    return m;
}

/* Returns a stack mapping to the pool (or unmaps it when the pool is full). */
static void coro_stack_put(void *m, size_t len)
{
    if (coro_pool_n < CORO_POOL_MAX) {
        coro_pool[coro_pool_n++] = m;
        return;
    }
    munmap(m, len);
}

/* makecontext passes ints only: the coroutine pointer travels in two. */
static void coro_entry(unsigned lo, unsigned hi)
{
    struct coro *c = (struct coro *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(NULL, &c->main_bottom, &c->main_size);
#endif
    c->fn(c->arg);
    c->done = 1;
#ifdef CORO_ASAN
    /* NULL: this fiber's fake stack may be destroyed, it never runs again */
    __sanitizer_start_switch_fiber(NULL, c->main_bottom, c->main_size);
#endif
    /* uc_link returns to c->caller */
}

/* Sets up c's context to start in coro_entry on its own stack. (Apart
   from coro_new: getcontext returns twice as far as the compiler knows,
   which must not clobber coro_new's locals.) */
static void coro_prepare(struct coro *c)
{
    size_t page = c->map_len - CORO_STACK_BYTES;
    getcontext(&c->ctx);
    c->ctx.uc_stack.ss_sp = (char *)c->map + page;
    c->ctx.uc_stack.ss_size = CORO_STACK_BYTES;
    c->ctx.uc_link = &c->caller;
    uintptr_t p = (uintptr_t)c;
    makecontext(&c->ctx, (void (*)(void))coro_entry, 2, (unsigned)(p & 0xffffffffu),
                (unsigned)(p >> 32));
}

struct coro *coro_new(void (*fn)(void *arg), void (*fin)(void *arg), void *arg)
{
    struct coro *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->map = coro_stack_get(&c->map_len);
    if (!c->map) {
        free(c);
        return NULL;
    }
    c->fn = fn;
    c->fin = fin;
    c->arg = arg;
    coro_prepare(c);
    return c;
}

int coro_resume(struct coro *c)
{
    if (coro_running)
        return -1;
    coro_running = c;
#ifdef CORO_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, (char *)c->map + (c->map_len - CORO_STACK_BYTES),
                                   CORO_STACK_BYTES);
#endif
    swapcontext(&c->caller, &c->ctx);
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
    coro_running = NULL;
    if (!c->done)
        return 0;
    if (c->fin)
        c->fin(c->arg);
    coro_free(c);
    return 1;
}

void coro_yield(void)
{
    struct coro *c = coro_running;
    if (!c)
        return;
#ifdef CORO_ASAN
    __sanitizer_start_switch_fiber(&c->fake_stack, c->main_bottom, c->main_size);
#endif
    swapcontext(&c->ctx, &c->caller);
#ifdef CORO_ASAN
    __sanitizer_finish_switch_fiber(c->fake_stack, &c->main_bottom, &c->main_size);
#endif
}

struct coro *coro_current(void)
{
    return coro_running;
}

void coro_free(struct coro *c)
{
    if (!c)
        return;
    coro_stack_put(c->map, c->map_len);
    free(c);
}

void coro_pool_drain(void)
{
    size_t len = CORO_STACK_BYTES + (size_t)sysconf(_SC_PAGESIZE);
    while (coro_pool_n)
        munmap(coro_pool[--coro_pool_n], len);
}

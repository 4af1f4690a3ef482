/* coro.h - small stackful coroutines for requests that wait on storage.
 *
 * A request whose storage call completes later (a backend that talks to a
 * server, backends/backend.h "Deferred completion") runs on a coroutine:
 * the storage layer yields where it would wait, the event loop serves
 * other connections, and the completion callback resumes the coroutine
 * where it stopped. The operations stay written as straight-line code.
 *
 * Built on ucontext (makecontext/swapcontext). Each coroutine has its own
 * stack (mmap()ed with a guard page below it; untouched pages cost no
 * memory); finished stacks are kept in a small pool for the next one.
 * Single-threaded: one coroutine runs at a time, and only the main stack
 * (the event loop) resumes coroutines. Under AddressSanitizer the stack
 * switches are announced to it (__sanitizer_start_switch_fiber). */
#ifndef TABLED_CORO_H
#define TABLED_CORO_H
#include <stddef.h>

struct coro;

/* Stack size of every coroutine: deep enough for the deepest request path
   (filter parsing recurses up to its limit). */
#define CORO_STACK_BYTES (512u * 1024u)

/* Makes a coroutine that will run fn(arg); it starts at the first
   coro_resume(). When fn has returned, fin(arg) runs on the main stack
   (it may start or resume other coroutines) and the coroutine is freed.
   NULL when out of memory. */
struct coro *coro_new(void (*fn)(void *arg), void (*fin)(void *arg), void *arg);

/* Runs c until it yields or returns. Called from the main stack only (a
   call from inside a coroutine does nothing and returns -1). Returns 1
   when fn has returned (fin has run and c is freed: do not touch it), 0
   when it yielded. */
int coro_resume(struct coro *c);

/* From inside a coroutine: goes back to whoever resumed it. Returns when
   it is resumed again. */
void coro_yield(void);

/* The running coroutine, or NULL on the main stack. */
struct coro *coro_current(void);

/* Frees a coroutine that never started or that waits and will not be
   resumed (shutdown); its stack goes back to the pool. fin is not run. */
void coro_free(struct coro *c);

/* Releases the pooled stacks (at exit, for leak checkers). */
void coro_pool_drain(void);

#endif

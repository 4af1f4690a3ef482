/* bsync.c - the sync worker thread (see bsync.h).
 *
 * States, all under mu: IDLE (no job), QUEUED (bsync_start handed one
 * over), RUNNING (the thread runs it), FINISHED (it returned; rc holds its
 * status; the eventfd has been written), then IDLE again when the watch
 * delivers done on the loop thread. Only the loop thread calls
 * bsync_start, bsync_busy, bsync_wait and bsync_free, and only it reads
 * and clears the eventfd, so job, done, arg and the state machine have one
 * writer at a time, always under mu. state and stop are also read without
 * mu by the thread's polling (below), so they are written atomically.
 *
 * Polling for the next job. Under a steady group commit the loop answers
 * the group a sync released and starts the next sync within tens of
 * microseconds of the job's end; a thread asleep on the condition variable
 * then costs a wake-up on top, which is added to every sync (about 50 us
 * on the 2-CPU VM measured, where an idle virtual CPU halts at once: a
 * fifth of the sync's time in the run). So after a job the thread polls
 * the state for up to BSYNC_POLL_US before it sleeps, but only while at
 * least three in four of the recent gaps between a job's end and the next
 * job's start (a running share) were shorter than that, and only with
 * more than one CPU: when the loop is too busy to start the next sync
 * soon (many connections, the CPUs saturated, where a poll that misses
 * takes time the loop needs) or the store is idle, the thread sleeps at
 * once and costs nothing. doc/performance.md, "The sync worker polls for
 * the next job", has the figures. */
#include "backends/bsync.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/cpu.h"

#define BSYNC_POLL_US 100           /* the longest poll after a job */
#define BSYNC_SHARE_ONE 1024        /* the share of short gaps: fixed point */
#define BSYNC_SHARE_SHIFT 4         /* each new gap weighs 1/16 */
#define BSYNC_SHARE_POLL 768        /* poll at a share of 3/4 or more */

enum bsync_state { BSYNC_IDLE, BSYNC_QUEUED, BSYNC_RUNNING, BSYNC_FINISHED };

struct bsync {
    const struct backend_host *host;
    void *watch;                    /* the host's watch of efd */
    int efd;                        /* eventfd: the thread says "finished" */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;              /* state changes, stop */
    enum bsync_state state;
    int stop;
    int (*job)(void *arg);
    void (*done)(void *arg, int rc);
    void *arg;
    int rc;
    int can_poll;                   /* more than one CPU online */
    uint64_t end_us;                /* when the last job returned (0: none yet) */
    unsigned short_share;           /* share of short job end -> next start
                                       gaps, of BSYNC_SHARE_ONE */
    uint64_t polled, missed;        /* polls that found the next job, or not */
};

/* The state, written for bsync_poll's readers too (under mu as before). */
static void bsync_set(struct bsync *b, enum bsync_state s)
{
    __atomic_store_n(&b->state, s, __ATOMIC_RELEASE);
}

/* Polls, without mu, until a job is queued (1) or stop is set or the
 * clock reaches until (0). */
static int bsync_poll(struct bsync *b, uint64_t until)
{
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) == BSYNC_QUEUED)
            return 1;
        if (__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE))
            return 0;
        if (i % 32 == 0 && clock_mono_us() >= until)
            return 0;
        cpu_relax();
    }
}

/* The thread: waits for a job, runs it, reports, until told to stop. */
static void *bsync_main(void *p)
{
    struct bsync *b = p;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (b->state != BSYNC_QUEUED && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->state != BSYNC_QUEUED)
            break;                  /* stopping with nothing queued */
        bsync_set(b, BSYNC_RUNNING);
        int (*job)(void *) = b->job;
        void *arg = b->arg;
        pthread_mutex_unlock(&b->mu);
        int rc = job(arg);
        pthread_mutex_lock(&b->mu);
        b->rc = rc;
        b->end_us = clock_mono_us();
        bsync_set(b, BSYNC_FINISHED);
        pthread_cond_broadcast(&b->cv);
        uint64_t one = 1;
        while (write(b->efd, &one, sizeof one) < 0 && errno == EINTR)
            ;
        if (b->can_poll && b->short_share >= BSYNC_SHARE_POLL) {
            uint64_t until = b->end_us + BSYNC_POLL_US;
            pthread_mutex_unlock(&b->mu);
            int found = bsync_poll(b, until);
            pthread_mutex_lock(&b->mu);
            if (found)
                b->polled++;
            else
                b->missed++;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* The loop's watch of the eventfd: delivers a finished job's done. */
static void bsync_ready(void *p, unsigned ready)
{
    (void)ready;
    struct bsync *b = p;
    uint64_t n;
    while (read(b->efd, &n, sizeof n) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&b->mu);
    if (b->state != BSYNC_FINISHED) {
        pthread_mutex_unlock(&b->mu);
        return;
    }
    void (*done)(void *, int) = b->done;
    void *arg = b->arg;
    int rc = b->rc;
    bsync_set(b, BSYNC_IDLE);
    pthread_mutex_unlock(&b->mu);
    done(arg, rc);                  /* may start the next job */
}

struct bsync *bsync_new(const struct backend_host *host, char *err, size_t errlen)
{
    struct bsync *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "sync worker: out of memory");
        return NULL;
    }
    b->host = host;
    b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (b->efd < 0) {
        snprintf(err, errlen, "sync worker: eventfd: %s", strerror(errno));
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->can_poll = sysconf(_SC_NPROCESSORS_ONLN) > 1;   /* short_share 0: no polling yet */
    b->watch = host->fd_watch(host->arg, b->efd, BACKEND_FD_READ, bsync_ready, b);
    int e = b->watch ? pthread_create(&b->thread, NULL, bsync_main, b) : ENOMEM;
    if (e != 0) {
        snprintf(err, errlen, "sync worker: %s", strerror(e));
        if (b->watch)
            host->fd_unwatch(host->arg, b->watch);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        close(b->efd);
        free(b);
        return NULL;
    }
    return b;
}

void bsync_start(struct bsync *b, int (*job)(void *arg), void (*done)(void *arg, int rc),
                 void *arg)
{
    pthread_mutex_lock(&b->mu);
    if (b->end_us) {
        /* was the gap since the last job's end short enough for a poll? */
        unsigned shortgap = clock_mono_us() - b->end_us < BSYNC_POLL_US;
        b->short_share = b->short_share - (b->short_share >> BSYNC_SHARE_SHIFT) +
                         (shortgap * BSYNC_SHARE_ONE >> BSYNC_SHARE_SHIFT);
    }
    b->job = job;
    b->done = done;
    b->arg = arg;
    bsync_set(b, BSYNC_QUEUED);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

int bsync_busy(struct bsync *b)
{
    pthread_mutex_lock(&b->mu);
    int busy = b->state != BSYNC_IDLE;
    pthread_mutex_unlock(&b->mu);
    return busy;
}

void bsync_wait(struct bsync *b)
{
    pthread_mutex_lock(&b->mu);
    while (b->state == BSYNC_QUEUED || b->state == BSYNC_RUNNING)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

void bsync_polls(struct bsync *b, uint64_t *found, uint64_t *missed)
{
    pthread_mutex_lock(&b->mu);
    *found = b->polled;
    *missed = b->missed;
    pthread_mutex_unlock(&b->mu);
}

void bsync_free(struct bsync *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    while (b->state == BSYNC_QUEUED || b->state == BSYNC_RUNNING)
        pthread_cond_wait(&b->cv, &b->mu);
    __atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->host->fd_unwatch(b->host->arg, b->watch);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    close(b->efd);
    free(b);
}

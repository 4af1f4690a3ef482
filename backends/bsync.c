/* bsync.c - the sync worker thread (see bsync.h).
 *
 * States, all under mu: IDLE (no job), QUEUED (bsync_start handed one
 * over), RUNNING (the thread runs it), FINISHED (it returned; rc holds its
 * status; the eventfd has been written), then IDLE again when the watch
 * delivers done on the loop thread. Only the loop thread calls
 * bsync_start, bsync_busy, bsync_wait and bsync_free, and only it reads
 * and clears the eventfd, so job, done, arg and the state machine have one
 * writer at a time, always under mu. */
#include "backends/bsync.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
};

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
        b->state = BSYNC_RUNNING;
        int (*job)(void *) = b->job;
        void *arg = b->arg;
        pthread_mutex_unlock(&b->mu);
        int rc = job(arg);
        pthread_mutex_lock(&b->mu);
        b->rc = rc;
        b->state = BSYNC_FINISHED;
        pthread_cond_broadcast(&b->cv);
        uint64_t one = 1;
        while (write(b->efd, &one, sizeof one) < 0 && errno == EINTR)
            ;
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
    b->state = BSYNC_IDLE;
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
    b->job = job;
    b->done = done;
    b->arg = arg;
    b->state = BSYNC_QUEUED;
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

void bsync_free(struct bsync *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    while (b->state == BSYNC_QUEUED || b->state == BSYNC_RUNNING)
        pthread_cond_wait(&b->cv, &b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->host->fd_unwatch(b->host->arg, b->watch);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    close(b->efd);
    free(b);
}

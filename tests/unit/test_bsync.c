/* test_bsync.c - the sync worker (backends/bsync.c): every job runs once
 * and its done comes back on the caller's loop in order; the thread polls
 * for the next job while jobs follow each other closely, and sleeps at
 * once when they do not; stopping it while it polls returns. */
#include "config.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/bsync.h"
#include "tests/unit/tap.h"

/* A host with one watch, driven by hand (the test is the loop). */
struct watch {
    int fd;
    void (*fn)(void *, unsigned);
    void *arg;
};

static void *h_watch(void *arg, int fd, unsigned events, void (*fn)(void *, unsigned), void *fa)
{
    (void)events;
    struct watch *w = arg;
    w->fd = fd;
    w->fn = fn;
    w->arg = fa;
    return w;
}

static void h_unwatch(void *arg, void *watch)
{
    (void)watch;
    ((struct watch *)arg)->fd = -1;
}

/* The jobs' record. */
struct log {
    int ran[1024];
    int nran;
    int done[1024];
    int rcs[1024];
    int ndone;
    int next;                       /* the job to hand over next */
};

static struct log lg;
static int job_ids[1024];

static int job(void *arg)
{
    int id = *(int *)arg;
    lg.ran[lg.nran++] = id;         /* the thread alone writes ran while a job runs */
    return id * 3;
}

static void done(void *arg, int rc)
{
    int id = *(int *)arg;
    lg.done[lg.ndone] = id;
    lg.rcs[lg.ndone++] = rc;
}

/* Waits (up to 5 s) for the eventfd and delivers the done. 1 when it came. */
static int loop_once(struct watch *w)
{
    struct pollfd p = {.fd = w->fd, .events = POLLIN};
    int before = lg.ndone;
    for (int i = 0; i < 50 && lg.ndone == before; i++) {
        if (poll(&p, 1, 100) > 0)
            w->fn(w->arg, 1);
    }
    return lg.ndone > before;
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* n jobs, each started gap_us after the previous one's done. */
static int run_jobs(struct bsync *b, struct watch *w, int n, long gap_us)
{
    for (int i = 0; i < n; i++) {
        if (lg.next >= 1024)
            return 0;
        int id = lg.next++;
        job_ids[id] = id;
        bsync_start(b, job, done, &job_ids[id]);
        if (!loop_once(w))
            return 0;
        if (gap_us)
            sleep_us(gap_us);
    }
    return 1;
}

int main(void)
{
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct watch w = {.fd = -1};
    struct backend_host host = {.arg = &w, .fd_watch = h_watch, .fd_unwatch = h_unwatch};
    char err[256] = "";
    struct bsync *b = bsync_new(&host, err, sizeof err);
    TEST_CHECK(b != NULL, "a worker starts");
    if (!b) {
        printf("#   %s\n", err);
        return test_done();
    }
    TEST_CHECK(w.fd >= 0, "its eventfd is watched");

    /* Back to back: the loop starts each job as soon as the last is done. */
    TEST_CHECK(run_jobs(b, &w, 300, 0), "300 jobs back to back each come back");
    int order = lg.nran == 300 && lg.ndone == 300;
    for (int i = 0; i < lg.ndone && order; i++)
        order = lg.ran[i] == i && lg.done[i] == i && lg.rcs[i] == 3 * i;
    TEST_CHECK(order, "each ran once, in order, its done with its own status");
    TEST_CHECK(!bsync_busy(b), "idle after the last done");
    uint64_t found, missed;
    bsync_polls(b, &found, &missed);
    printf("#   back to back: %llu polls found the next job, %llu did not (%d CPUs)\n",
           (unsigned long long)found, (unsigned long long)missed, cpus);
    if (cpus > 1)
        TEST_CHECK(found >= 150, "back to back, the thread finds most jobs by polling");
    else
        TEST_CHECK(found == 0 && missed == 0, "one CPU: the thread never polls");

    /* Far apart (5 ms): after a few gaps the average says so and the
       thread sleeps at once: no more polls, found or missed. */
    TEST_CHECK(run_jobs(b, &w, 30, 5000), "30 jobs 5 ms apart each come back");
    uint64_t found2, missed2;
    bsync_polls(b, &found2, &missed2);
    TEST_CHECK(run_jobs(b, &w, 20, 5000), "20 more come back");
    uint64_t found3, missed3;
    bsync_polls(b, &found3, &missed3);
    printf("#   5 ms apart: polls found %llu then %llu, missed %llu then %llu\n",
           (unsigned long long)(found2 - found), (unsigned long long)(found3 - found2),
           (unsigned long long)(missed2 - missed), (unsigned long long)(missed3 - missed2));
    TEST_CHECK(found3 == found2 && missed3 == missed2,
               "jobs far apart: the thread no longer polls");
    TEST_CHECK(missed2 - missed <= 20, "it stopped polling within 20 far-apart jobs");

    /* Close again: polling comes back. */
    TEST_CHECK(run_jobs(b, &w, 200, 0), "200 jobs back to back again");
    uint64_t found4, missed4;
    bsync_polls(b, &found4, &missed4);
    if (cpus > 1)
        TEST_CHECK(found4 - found3 >= 100, "back to back again: polling again");
    TEST_EQ_INT(lg.ndone, 550, "every done came back");

    /* Stopping while the thread polls: start a job, take its done, and
       free at once (the thread is within its poll). */
    TEST_CHECK(run_jobs(b, &w, 1, 0), "one more job");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bsync_free(b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("#   bsync_free took %.3f ms\n", ms);
    TEST_CHECK(w.fd == -1, "freed: the watch is removed");
    return test_done();
}

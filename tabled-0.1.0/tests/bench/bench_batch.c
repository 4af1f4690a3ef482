/* bench_batch.c - $batch insert throughput (not part of make check; run
 * with `make bench-batch`).
 *
 *     bench_batch [-t TABLED] [-c CONNECTIONS] [-d SECONDS] [-w WARMUP]
 *                 [-s ENTITY_BYTES] [-b OPS_PER_BATCH] [-m MAX_ENTITIES]
 *                 [-r ROUNDS] [-p HOST:PORT]
 *
 * Starts TABLED (default ./tabled) with --port 0 --auth off --access-log off
 * --backend memory and reads its "ready at" line (or, with -p, uses a server
 * already listening there, which must run with --auth off). Creates table
 * "bench", then keeps CONNECTIONS keep-alive connections (default 16) busy,
 * each sending one batch at a time: a changeset of OPS_PER_BATCH (default
 * 100) inserts of ENTITY_BYTES (default 1024) JSON entities with
 * Prefer: return-no-content, as the SDKs write them. Every answer must be a
 * 202 holding one "HTTP/1.1 204" part per insert, else the run fails. After
 * WARMUP seconds (default 1) it counts the entities acknowledged for SECONDS
 * (default 5, or until MAX_ENTITIES, default 2000000, bound memory) and
 * prints entities/s and batches/s, and (for a server it started) the
 * server's user and system CPU time, page faults and resident memory over
 * the same span: the store grows by every entity, so the kernel's cost of
 * handing out fresh memory is part of what is measured, and differs a lot
 * between machines (virtual ones especially, where it also depends on
 * whether the host still backs the memory the guest hands out).
 *
 * ROUNDS (default 1) repeats all of it with a fresh server each time and
 * ends with the median and range; the first round on a machine is often
 * the slowest for that reason. With -p there is only one round.
 *
 * One thread, poll(2), plain sockets. A connection's request is built once;
 * only the RowKey digits are rewritten in place for each batch. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_CONNS 256
#define BENCH_MAX_OPS 100
#define BENCH_RK_DIGITS 10

/* One keep-alive connection and its batch in flight. */
struct bench_conn {
    int fd;
    int id;
    char *req;            /* the whole HTTP request */
    size_t req_len;
    size_t sent;
    size_t rk_off[BENCH_MAX_OPS]; /* where each RowKey's digits are in req */
    uint64_t seq;         /* batch number of this connection */
    char *in;             /* response bytes read so far */
    size_t in_len, in_cap;
    int busy;             /* a request is in flight */
};

struct bench_opts {
    const char *tabled;
    const char *hostport;
    int conns;
    double seconds;
    double warmup;
    size_t entity_bytes;
    int ops;
    uint64_t max_entities;
};

static char bench_host[256] = "127.0.0.1";
static int bench_port;
static pid_t bench_server = -1;

/* Prints an error and exits; stops the server this program started. */
static void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_batch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (bench_server > 0) {
        kill(bench_server, SIGTERM);
        waitpid(bench_server, NULL, 0);
    }
    exit(1);
}

/* Seconds on the monotonic clock. */
static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU use of a process so far, from /proc/PID/stat. */
struct bench_cpu {
    double user, sys;         /* seconds */
    unsigned long long minflt;  /* minor page faults (first touch of memory) */
    long long rss_pages;      /* resident set */
};

/* Reads pid's CPU seconds, page faults and resident pages; -1 when unknown
 * (e.g. a server given with -p). */
static int bench_cpu(pid_t pid, struct bench_cpu *out)
{
    if (pid <= 0)
        return -1;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');   /* the command name may hold spaces */
    unsigned long long flt, ut, st;
    long long rss;
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %llu %*u %*u %*u %llu %llu"
                     " %*d %*d %*d %*d %*d %*d %*u %*u %lld",
                     &flt, &ut, &st, &rss) != 4)
        return -1;
    double tick = (double)sysconf(_SC_CLK_TCK);
    out->user = (double)ut / tick;
    out->sys = (double)st / tick;
    out->minflt = flt;
    out->rss_pages = rss;
    return 0;
}

/* malloc that never returns NULL. */
static void *bench_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        bench_die("out of memory");
    return p;
}

/* Growable string used to build requests. */
struct bench_str {
    char *p;
    size_t len, cap;
};

static void bench_put(struct bench_str *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            bench_die("vsnprintf failed");
        if ((size_t)n < s->cap - s->len) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap - s->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p)
            bench_die("out of memory");
        s->p = p;
        s->cap = cap;
    }
}

/* Starts the server and learns its port from the "ready at" line. */
static void bench_start_server(const char *tabled)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        bench_die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execl(tabled, tabled, "--port", "0", "--auth", "off", "--access-log", "off",
              "--backend", "memory", "--log-level", "warn", (char *)NULL);
        fprintf(stderr, "bench_batch: cannot run %s: %s\n", tabled, strerror(errno));
        _exit(127);
    }
    bench_server = pid;
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[1024];
    double until = bench_now() + 10;
    while (fgets(line, sizeof line, f)) {
        char *r = strstr(line, "ready at http://");
        if (r && sscanf(r, "ready at http://%255[^:]:%d", bench_host, &bench_port) == 2)
            break;
        if (bench_now() > until)
            break;
    }
    if (!bench_port)
        bench_die("%s did not print its ready line", tabled);
    /* Keep draining its stdout so it never blocks on a full pipe. */
    if (fork() == 0) {
        while (fgets(line, sizeof line, f))
            ;
        _exit(0);
    }
    fclose(f);
}

/* A connected TCP socket to the server. */
static int bench_connect(void)
{
    struct addrinfo hints = {0}, *ai;
    char port[16];
    snprintf(port, sizeof port, "%d", bench_port);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(bench_host, port, &hints, &ai) != 0)
        bench_die("cannot resolve %s", bench_host);
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        bench_die("connect %s:%d: %s", bench_host, bench_port, strerror(errno));
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Length of a complete HTTP response at the start of b (Content-Length or
 * chunked framing), 0 while incomplete; *status gets the status code and
 * *body and *body_len the (dechunked in place) body. */
static size_t bench_response(char *b, size_t n, int *status, char **body, size_t *body_len)
{
    char *end = memmem(b, n, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - b) + 4;
    if (sscanf(b, "HTTP/1.1 %d", status) != 1)
        bench_die("bad status line: %.80s", b);
    long clen = -1;
    int chunked = 0;
    for (char *l = strstr(b, "\r\n") + 2; l < end; l = strstr(l, "\r\n") + 2) {
        if (strncasecmp(l, "Content-Length:", 15) == 0)
            clen = strtol(l + 15, NULL, 10);
        else if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 && strstr(l, "chunked") &&
                 strstr(l, "chunked") < strstr(l, "\r\n"))
            chunked = 1;
    }
    if (!chunked) {
        if (clen < 0)
            bench_die("response without Content-Length");
        if (n < head + (size_t)clen)
            return 0;
        *body = b + head;
        *body_len = (size_t)clen;
        return head + (size_t)clen;
    }
    /* Walk the chunks first; dechunk only once the whole body is here. */
    size_t i = head;
    for (;;) {
        char *crlf = memmem(b + i, n - i, "\r\n", 2);
        if (!crlf)
            return 0;
        size_t sz = strtoul(b + i, NULL, 16);
        size_t data = (size_t)(crlf - b) + 2;
        if (sz == 0) {
            if (n < data + 2)
                return 0;
            break;
        }
        if (n < data + sz + 2)
            return 0;
        i = data + sz + 2;
    }
    size_t out = head;
    i = head;
    for (;;) {
        char *crlf = memmem(b + i, n - i, "\r\n", 2);
        size_t sz = strtoul(b + i, NULL, 16);
        size_t data = (size_t)(crlf - b) + 2;
        if (sz == 0) {
            *body = b + head;
            *body_len = out - head;
            return data + 2;
        }
        memmove(b + out, b + data, sz);
        out += sz;
        i = data + sz + 2;
    }
}

/* Sends req on a fresh connection and returns the status (setup calls). */
static int bench_simple(const char *req)
{
    int fd = bench_connect();
    size_t len = strlen(req), off = 0;
    while (off < len) {
        ssize_t w = write(fd, req + off, len - off);
        if (w <= 0)
            bench_die("write: %s", strerror(errno));
        off += (size_t)w;
    }
    char buf[65536];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            bench_die("setup request: connection closed");
        n += (size_t)r;
        buf[n] = '\0';
        int status;
        char *body;
        size_t blen;
        if (bench_response(buf, n, &status, &body, &blen)) {
            close(fd);
            return status;
        }
    }
}

/* Builds connection c's batch request (RowKey digits patched per batch). */
static void bench_build(struct bench_conn *c, const struct bench_opts *o)
{
    struct bench_str body = {0}, req = {0};
    size_t rk_body_off[BENCH_MAX_OPS];
    bench_put(&body, "--batch_bench\r\nContent-Type: multipart/mixed; "
                     "boundary=changeset_bench\r\n\r\n");
    for (int i = 0; i < o->ops; i++) {
        bench_put(&body, "--changeset_bench\r\nContent-Type: application/http\r\n"
                         "Content-Transfer-Encoding: binary\r\n\r\n"
                         "POST http://%s:%d/devstoreaccount1/bench HTTP/1.1\r\n"
                         "Content-Type: application/json\r\n"
                         "Accept: application/json;odata=minimalmetadata\r\n"
                         "Prefer: return-no-content\r\nDataServiceVersion: 3.0\r\n\r\n",
                  bench_host, bench_port);
        size_t start = body.len;
        bench_put(&body, "{\"PartitionKey\":\"conn%03d\",\"RowKey\":\"", c->id);
        rk_body_off[i] = body.len;
        bench_put(&body, "%0*d-%03d\",\"Seq\":%d,\"Data\":\"", BENCH_RK_DIGITS, 0, i, i);
        size_t used = body.len - start + 3;   /* + closing "}, CRLF not counted */
        size_t pad = o->entity_bytes > used ? o->entity_bytes - used : 1;
        for (size_t k = 0; k < pad; k++)
            bench_put(&body, "%c", 'a' + (int)(k % 26));
        bench_put(&body, "\"}\r\n");
    }
    bench_put(&body, "--changeset_bench--\r\n--batch_bench--\r\n");
    bench_put(&req, "POST /devstoreaccount1/$batch HTTP/1.1\r\nHost: %s:%d\r\n"
                    "x-ms-version: 2019-02-02\r\nDataServiceVersion: 3.0\r\n"
                    "MaxDataServiceVersion: 3.0;NetFx\r\n"
                    "Accept: application/json;odata=minimalmetadata\r\n"
                    "Content-Type: multipart/mixed; boundary=batch_bench\r\n"
                    "Content-Length: %zu\r\n\r\n",
              bench_host, bench_port, body.len);
    size_t head = req.len;
    bench_put(&req, "%s", body.p);
    for (int i = 0; i < o->ops; i++)
        c->rk_off[i] = head + rk_body_off[i];
    c->req = req.p;
    c->req_len = req.len;
    free(body.p);
}

/* Writes this batch's number into every RowKey of c's request. */
static void bench_patch(struct bench_conn *c, int ops)
{
    char digits[BENCH_RK_DIGITS + 1];
    snprintf(digits, sizeof digits, "%0*llu", BENCH_RK_DIGITS, (unsigned long long)c->seq);
    for (int i = 0; i < ops; i++)
        memcpy(c->req + c->rk_off[i], digits, BENCH_RK_DIGITS);
}

static void bench_usage(void)
{
    fputs("usage: bench_batch [-t TABLED] [-c CONNECTIONS] [-d SECONDS] [-w WARMUP]\n"
          "                   [-s ENTITY_BYTES] [-b OPS_PER_BATCH] [-m MAX_ENTITIES]\n"
          "                   [-r ROUNDS] [-p HOST:PORT]\n",
          stderr);
    exit(2);
}

/* One round against the server at bench_host:bench_port (stopped at the
 * end when this program started it): prints its figures and returns the
 * entities per second. */
static double bench_run(const struct bench_opts *opts)
{
    struct bench_opts o = *opts;
    char create[512];
    snprintf(create, sizeof create,
             "POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: %s:%d\r\n"
             "x-ms-version: 2019-02-02\r\nAccept: application/json;odata=nometadata\r\n"
             "Content-Type: application/json\r\nContent-Length: 23\r\n\r\n"
             "{\"TableName\":\"bench\"}\r\n",
             bench_host, bench_port);
    int st = bench_simple(create);
    if (st != 201 && st != 409)
        bench_die("create table: status %d", st);

    struct bench_conn *cs = calloc((size_t)o.conns, sizeof *cs);
    struct pollfd *pfds = calloc((size_t)o.conns, sizeof *pfds);
    if (!cs || !pfds)
        bench_die("out of memory");
    for (int i = 0; i < o.conns; i++) {
        cs[i].id = i;
        cs[i].fd = bench_connect();
        fcntl(cs[i].fd, F_SETFL, fcntl(cs[i].fd, F_GETFL) | O_NONBLOCK);
        bench_build(&cs[i], &o);
        cs[i].in_cap = 1 << 20;
        cs[i].in = bench_alloc(cs[i].in_cap);
    }
    printf("bench_batch: %d connections, batches of %d inserts of %zu-byte entities "
           "(%zu-byte requests), server %s:%d\n",
           o.conns, o.ops, o.entity_bytes, cs[0].req_len, bench_host, bench_port);

    double start = bench_now();
    double t0 = start + o.warmup, t1 = t0 + o.seconds, measured_end = 0;
    uint64_t entities = 0, batches = 0, total = 0;
    int measuring = o.warmup == 0, stopping = 0;
    struct bench_cpu cpu0, cpu1;
    int have_cpu0 = bench_cpu(bench_server, &cpu0) == 0, have_cpu1 = 0;
    for (;;) {
        double now = bench_now();
        if (!measuring && now >= t0) {
            measuring = 1;
            entities = batches = 0;
            t0 = now;
            have_cpu0 = bench_cpu(bench_server, &cpu0) == 0;
        }
        if (!stopping && (now >= t1 || total + (uint64_t)(o.conns * o.ops) > o.max_entities)) {
            stopping = 1;
            measured_end = now;
            have_cpu1 = bench_cpu(bench_server, &cpu1) == 0;
        }
        int active = 0;
        for (int i = 0; i < o.conns; i++) {
            struct bench_conn *c = &cs[i];
            if (!c->busy && !stopping) {
                bench_patch(c, o.ops);
                c->sent = 0;
                c->in_len = 0;
                c->busy = 1;
            }
            pfds[i].fd = c->busy ? c->fd : -1;
            pfds[i].events = c->busy ? (c->sent < c->req_len ? POLLOUT : POLLIN) : 0;
            active += c->busy;
        }
        if (!active)
            break;
        if (poll(pfds, (nfds_t)o.conns, 10000) <= 0)
            bench_die("poll: no progress in 10 s (%s)", strerror(errno));
        for (int i = 0; i < o.conns; i++) {
            struct bench_conn *c = &cs[i];
            if (!pfds[i].revents)
                continue;
            if (c->sent < c->req_len) {
                ssize_t w = write(c->fd, c->req + c->sent, c->req_len - c->sent);
                if (w < 0 && errno != EAGAIN && errno != EINTR)
                    bench_die("write: %s", strerror(errno));
                if (w > 0)
                    c->sent += (size_t)w;
                continue;
            }
            if (c->in_cap - c->in_len < 65536) {
                c->in_cap *= 2;
                c->in = realloc(c->in, c->in_cap);
                if (!c->in)
                    bench_die("out of memory");
            }
            ssize_t r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1);
            if (r == 0)
                bench_die("server closed connection %d", i);
            if (r < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    continue;
                bench_die("read: %s", strerror(errno));
            }
            c->in_len += (size_t)r;
            c->in[c->in_len] = '\0';
            int status;
            char *body;
            size_t blen;
            size_t used = bench_response(c->in, c->in_len, &status, &body, &blen);
            if (!used)
                continue;
            if (used != c->in_len)
                bench_die("unexpected bytes after a response");
            int ok = 0;
            for (char *p = body; (p = memmem(p, blen - (size_t)(p - body), "HTTP/1.1 204", 12));
                 p += 12)
                ok++;
            if (status != 202 || ok != o.ops)
                bench_die("batch %llu of connection %d: status %d, %d of %d parts 204:\n%.600s",
                          (unsigned long long)c->seq, i, status, ok, o.ops, body);
            c->busy = 0;
            c->seq++;
            total += (uint64_t)o.ops;
            if (measuring && !stopping) {
                entities += (uint64_t)o.ops;
                batches++;
            }
        }
    }
    double secs = (measured_end ? measured_end : bench_now()) - t0;
    if (!measuring || secs <= 0)
        bench_die("the run ended before the warm-up did (raise -m or lower -w)");
    printf("bench_batch: %llu entities in %llu batches in %.2f s: %.0f entities/s, "
           "%.0f batches/s (%llu entities written in all)\n",
           (unsigned long long)entities, (unsigned long long)batches, secs,
           (double)entities / secs, (double)batches / secs, (unsigned long long)total);
    double cpu = have_cpu0 && have_cpu1 ? cpu1.user + cpu1.sys - cpu0.user - cpu0.sys : 0;
    if (cpu > 0) {
        double user = cpu1.user - cpu0.user, sys = cpu1.sys - cpu0.sys;
        printf("bench_batch: server CPU %.2f s (%.0f%% of one core): %.0f entities per server "
               "CPU second\n",
               cpu, 100 * cpu / secs, (double)entities / cpu);
        /* The kernel's share is mostly zeroing the pages the growing store
         * touches first, which costs far more on some virtual machines. A
         * fault maps 4 KiB or (transparent huge pages) 2 MiB. */
        unsigned long long faults = cpu1.minflt - cpu0.minflt;
        double grown = (double)(cpu1.rss_pages - cpu0.rss_pages) * (double)sysconf(_SC_PAGESIZE);
        printf("bench_batch: server user %.2f s, system %.2f s, %llu page faults, resident "
               "memory +%.0f MiB (%.0f bytes per entity): %.0f entities per server user CPU "
               "second\n",
               user, sys, faults, grown / 1048576, entities ? grown / (double)entities : 0,
               user > 0 ? (double)entities / user : 0);
    }
    for (int i = 0; i < o.conns; i++) {
        close(cs[i].fd);
        free(cs[i].req);
        free(cs[i].in);
    }
    free(cs);
    free(pfds);
    if (bench_server > 0) {
        kill(bench_server, SIGTERM);
        int wst;
        waitpid(bench_server, &wst, 0);
        if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
            bench_die("tabled did not exit cleanly (status %d)", wst);
        bench_server = -1;
    }
    return (double)entities / secs;
}

/* Compares doubles, for qsort. */
static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct bench_opts o = {"./tabled", NULL, 16, 5.0, 1.0, 1024, 100, 2000000};
    int rounds = 1;
    int opt;
    while ((opt = getopt(argc, argv, "t:c:d:w:s:b:m:r:p:h")) != -1) {
        switch (opt) {
        case 't': o.tabled = optarg; break;
        case 'c': o.conns = atoi(optarg); break;
        case 'd': o.seconds = atof(optarg); break;
        case 'w': o.warmup = atof(optarg); break;
        case 's': o.entity_bytes = (size_t)atol(optarg); break;
        case 'b': o.ops = atoi(optarg); break;
        case 'm': o.max_entities = strtoull(optarg, NULL, 10); break;
        case 'r': rounds = atoi(optarg); break;
        case 'p': o.hostport = optarg; break;
        default: bench_usage();
        }
    }
    if (o.conns < 1 || o.conns > BENCH_MAX_CONNS || o.ops < 1 || o.ops > BENCH_MAX_OPS ||
        o.seconds <= 0 || o.warmup < 0 || o.entity_bytes < 64 || rounds < 1 || rounds > 100 ||
        (o.hostport && rounds != 1))
        bench_usage();
    signal(SIGPIPE, SIG_IGN);
    if (o.hostport && sscanf(o.hostport, "%255[^:]:%d", bench_host, &bench_port) != 2)
        bench_usage();
    double rates[100];
    for (int r = 0; r < rounds; r++) {
        if (rounds > 1)
            printf("bench_batch: round %d of %d\n", r + 1, rounds);
        if (!o.hostport)
            bench_start_server(o.tabled);
        rates[r] = bench_run(&o);
    }
    if (rounds > 1) {
        qsort(rates, (size_t)rounds, sizeof rates[0], bench_cmp_double);
        double median = rounds % 2 ? rates[rounds / 2]
                                   : (rates[rounds / 2 - 1] + rates[rounds / 2]) / 2;
        printf("bench_batch: %d rounds: median %.0f entities/s (range %.0f-%.0f)\n", rounds,
               median, rates[0], rates[rounds - 1]);
    }
    return 0;
}

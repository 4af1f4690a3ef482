/* bench_throttle.c - throttling under load (not part of make check; run
 * with `make bench-throttle`).
 *
 *   bench_throttle [-t TABLED] [-a 'TABLED ARGS'] [-c CONNECTIONS] rate
 *                  [-r RATE] [-n PARTITIONS] [-d SECONDS] [-s ENTITY_BYTES] [-k SKIP]
 *   bench_throttle [-t TABLED] [-a 'TABLED ARGS'] [-c CONNECTIONS] touch
 *                  [-n DISTINCT] [-w IDLE_SECONDS]
 *   bench_throttle [-t TABLED] [-a 'TABLED ARGS'] [-c CONNECTIONS] get [-n REQUESTS]
 *
 * Starts TABLED (default ./tabled) with --port 0 --auth off --access-log off
 * --backend memory --durability none --log-level warn plus TABLED ARGS
 * (default "--throttle"), and creates table "bench".
 *
 * rate: an open-loop paced load. Request k is due at k / RATE seconds
 * (default 4000/s); it goes out on a free keep-alive connection (default
 * 32), round-robin over PARTITIONS (default 1) partitions: an
 * InsertOrReplace (PUT) of an ENTITY_BYTES (default 1024) entity, RowKeys
 * cycling over 1000 per partition. Prints a line per second (sent, 2xx,
 * 503, other), then totals over SECONDS (default 30) and the served
 * entities/s after the first SKIP seconds (default 2: the bucket starts
 * full, so the first second also serves the burst). A request waits for
 * a free connection when none is; one sent more than 10 ms after it was
 * due is counted as late.
 *
 * touch: GETs of DISTINCT (default 1,000,000) missing entities, each in its
 * own partition, as fast as CONNECTIONS (default 32) keep-alive connections
 * go; prints the server's RSS (VmRSS) before, at the end of the touching,
 * and every 5 s while idle for IDLE_SECONDS (default 90). With a low
 * partition rate in TABLED ARGS (e.g. --throttle-partition-rate 0.05
 * --throttle-partition-burst 1: a touched bucket takes 20 s to fill again)
 * every touched partition holds a bucket at the peak.
 *
 * get: REQUESTS (default 100,000) point GETs of one existing entity, as
 * fast as CONNECTIONS connections go; prints requests/s and the server's
 * CPU time per request. Run TABLED under valgrind (a wrapper script as
 * TABLED) with REQUESTS 0 and N to count the instructions of one GET.
 *
 * One thread, poll(2), plain sockets, one request in flight per
 * connection. */
#include <errno.h>
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

#define MAX_CONNS 256
#define MAX_SECONDS 3600
#define MAX_ARGS 64

struct conn {
    int fd;
    char req[4096];
    size_t req_len, sent;
    char in[65536];
    size_t in_len;
    int busy;
    double sent_at;
};

static char host[256] = "127.0.0.1";
static int port;
static pid_t server = -1;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_throttle: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
    }
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident set size of pid in KiB (VmRSS), or -1. */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Starts the server with the fixed flags plus extra (split on blanks). */
static void start_server(const char *tabled, const char *extra)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        char *argv[MAX_ARGS + 16];
        int n = 0;
        static char copy[4096];
        argv[n++] = (char *)tabled;
        const char *fixed[] = {"--port", "0", "--auth", "off", "--access-log", "off",
                               "--backend", "memory", "--durability", "none",
                               "--log-level", "warn"};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            argv[n++] = (char *)fixed[i];
        snprintf(copy, sizeof copy, "%s", extra);
        for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t && n < MAX_ARGS;
             t = strtok_r(NULL, " \t", &save))
            argv[n++] = t;
        argv[n] = NULL;
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execv(tabled, argv);
        fprintf(stderr, "bench_throttle: cannot run %s: %s\n", tabled, strerror(errno));
        _exit(127);
    }
    server = pid;
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *r = strstr(line, "ready at http://");
        if (r && sscanf(r, "ready at http://%255[^:]:%d", host, &port) == 2)
            break;
    }
    if (!port)
        die("%s did not print its ready line", tabled);
    if (fork() == 0) {  /* keep draining its stdout */
        while (fgets(line, sizeof line, f))
            ;
        _exit(0);
    }
    fclose(f);
}

static int connect_server(void)
{
    struct addrinfo hints = {0}, *ai;
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, p, &hints, &ai) != 0)
        die("cannot resolve %s", host);
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("connect %s:%d: %s", host, port, strerror(errno));
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Writes the pending request bytes (blocking sockets, small requests). */
static void send_req(struct conn *c)
{
    while (c->sent < c->req_len) {
        ssize_t n = write(c->fd, c->req + c->sent, c->req_len - c->sent);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("write: %s", strerror(errno));
        c->sent += (size_t)n;
    }
    c->busy = 1;
    c->sent_at = now();
}

/* Reads what is there; returns the status of a complete response (and
 * drops it from the buffer), or 0 when it is not complete yet. */
static int read_resp(struct conn *c)
{
    ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0)
        die("connection closed by the server (%s)", n < 0 ? strerror(errno) : "EOF");
    c->in_len += (size_t)n;
    char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    int status = 0;
    if (sscanf(c->in, "HTTP/1.1 %d", &status) != 1)
        die("bad status line");
    size_t clen = 0;
    for (char *p = c->in; p < end; p = strstr(p, "\r\n") + 2) {
        if (!strncasecmp(p, "Content-Length:", 15)) {
            clen = strtoul(p + 15, NULL, 10);
            break;
        }
    }
    size_t total = (size_t)(end + 4 - c->in) + clen;
    if (c->in_len < total)
        return 0;
    memmove(c->in, c->in + total, c->in_len - total);
    c->in_len -= total;
    c->busy = 0;
    return status;
}

/* One request on a fresh connection, waited for; returns the status. */
static int simple_request(const char *req)
{
    struct conn c = {0};
    c.fd = connect_server();
    snprintf(c.req, sizeof c.req, "%s", req);
    c.req_len = strlen(c.req);
    send_req(&c);
    int st;
    while ((st = read_resp(&c)) == 0)
        ;
    close(c.fd);
    return st;
}

static const char *common_headers =
    "Host: bench\r\nx-ms-version: 2019-02-02\r\nAccept: application/json;odata=nometadata\r\n"
    "DataServiceVersion: 3.0;NetFx\r\n";

static void create_table(void)
{
    char req[1024];
    const char *body = "{\"TableName\":\"bench\"}";
    snprintf(req, sizeof req,
             "POST /devstoreaccount1/Tables HTTP/1.1\r\n%sContent-Type: application/json\r\n"
             "Prefer: return-no-content\r\nContent-Length: %zu\r\n\r\n%s",
             common_headers, strlen(body), body);
    int st = simple_request(req);
    if (st != 204 && st != 201 && st != 409)
        die("create table: status %d", st);
}

/* ---- rate ---- */

static void build_put(struct conn *c, long partition, long row, size_t entity_bytes)
{
    char body[3000];
    size_t pad = entity_bytes > 80 ? entity_bytes - 80 : 1;
    if (pad > sizeof body - 200)
        pad = sizeof body - 200;
    char fill[3000];
    memset(fill, 'x', pad);
    fill[pad] = '\0';
    int bl = snprintf(body, sizeof body, "{\"PartitionKey\":\"p%ld\",\"RowKey\":\"r%ld\",\"Data\":\"%s\"}",
                      partition, row, fill);
    c->req_len = (size_t)snprintf(
        c->req, sizeof c->req,
        "PUT /devstoreaccount1/bench(PartitionKey='p%ld',RowKey='r%ld') HTTP/1.1\r\n%s"
        "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
        partition, row, common_headers, bl, body);
    c->sent = 0;
}

static void run_rate(int argc, char **argv, int nconns)
{
    double rate = 4000, seconds = 30;
    long partitions = 1, skip = 2;
    size_t entity_bytes = 1024;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "-r"))
            rate = atof(v), i++;
        else if (!strcmp(argv[i], "-n"))
            partitions = atol(v), i++;
        else if (!strcmp(argv[i], "-d"))
            seconds = atof(v), i++;
        else if (!strcmp(argv[i], "-s"))
            entity_bytes = (size_t)atol(v), i++;
        else if (!strcmp(argv[i], "-k"))
            skip = atol(v), i++;
        else
            die("rate: unknown option %s", argv[i]);
    }
    if (rate <= 0 || partitions < 1 || seconds < 1 || seconds > MAX_SECONDS || skip >= seconds)
        die("rate: bad options");
    static struct conn conns[MAX_CONNS];
    struct pollfd pfd[MAX_CONNS];
    for (int i = 0; i < nconns; i++)
        conns[i].fd = connect_server();
    static long ok[MAX_SECONDS + 2], busy[MAX_SECONDS + 2], other[MAX_SECONDS + 2],
        sent[MAX_SECONDS + 2];
    long k = 0, late = 0;
    double t0 = now(), end = t0 + seconds;
    int next_conn = 0;
    for (;;) {
        double t = now();
        /* send every request that is due, on free connections */
        while (t < end && k < (long)((t - t0) * rate) + 1) {
            int found = -1;
            for (int j = 0; j < nconns && found < 0; j++) {
                int i = (next_conn + j) % nconns;
                if (!conns[i].busy)
                    found = i;
            }
            if (found < 0)
                break;  /* sent as soon as a connection frees */
            if (t - (t0 + (double)k / rate) > 0.010)
                late++;
            next_conn = (found + 1) % nconns;
            long part = k % partitions;
            build_put(&conns[found], part, (k / partitions) % 1000, entity_bytes);
            send_req(&conns[found]);
            sent[(int)(t - t0)]++;
            k++;
        }
        int inflight = 0;
        for (int i = 0; i < nconns; i++) {
            pfd[i].fd = conns[i].fd;
            pfd[i].events = POLLIN;
            inflight += conns[i].busy;
        }
        if (t >= end && !inflight)
            break;
        double due = t0 + (double)k / rate;
        int wait_ms = t >= end ? 100 : (int)((due - t) * 1000);
        if (wait_ms < 0)
            wait_ms = 0;
        if (poll(pfd, (nfds_t)nconns, wait_ms) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int i = 0; i < nconns; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int st = read_resp(&conns[i]);
            if (!st)
                continue;
            int sec = (int)(now() - t0);
            if (sec > MAX_SECONDS)
                sec = MAX_SECONDS;
            if (st >= 200 && st < 300)
                ok[sec]++;
            else if (st == 503)
                busy[sec]++;
            else
                other[sec]++;
        }
    }
    long tok = 0, tbusy = 0, toth = 0, tsent = 0, sok = 0;
    int last = (int)seconds;
    printf("second      sent       2xx       503     other\n");
    for (int s = 0; s <= last; s++) {
        if (!sent[s] && !ok[s] && !busy[s] && !other[s])
            continue;
        printf("%6d %9ld %9ld %9ld %9ld\n", s, sent[s], ok[s], busy[s], other[s]);
        tok += ok[s];
        tbusy += busy[s];
        toth += other[s];
        tsent += sent[s];
        if (s >= skip && s < last)
            sok += ok[s];
    }
    printf("offered %.0f/s over %ld partition(s) for %.0f s with %d connections: sent %ld "
           "(%ld sent > 10 ms late)\n",
           rate, partitions, seconds, nconns, tsent, late);
    printf("served  %ld (%.1f/s overall), 503 %ld (%.1f/s), other %ld\n", tok, tok / seconds,
           tbusy, tbusy / seconds, toth);
    printf("served/s after the first %ld s: %.1f entities/s\n", skip,
           (double)sok / (double)(last - skip));
    for (int i = 0; i < nconns; i++)
        close(conns[i].fd);
}

/* ---- touch ---- */

static void build_get(struct conn *c, long partition)
{
    c->req_len = (size_t)snprintf(
        c->req, sizeof c->req,
        "GET /devstoreaccount1/bench(PartitionKey='t%ld',RowKey='r') HTTP/1.1\r\n%s\r\n",
        partition, common_headers);
    c->sent = 0;
}

static void run_touch(int argc, char **argv, int nconns)
{
    long distinct = 1000000, idle = 90;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "-n"))
            distinct = atol(v), i++;
        else if (!strcmp(argv[i], "-w"))
            idle = atol(v), i++;
        else
            die("touch: unknown option %s", argv[i]);
    }
    if (server <= 0)
        die("touch needs a server this program started (for its RSS)");
    static struct conn conns[MAX_CONNS];
    struct pollfd pfd[MAX_CONNS];
    for (int i = 0; i < nconns; i++)
        conns[i].fd = connect_server();
    /* warm-up: every connection serves a few requests of one partition */
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < nconns; i++) {
            conns[i].req_len = (size_t)snprintf(
                conns[i].req, sizeof conns[i].req,
                "GET /devstoreaccount1/bench(PartitionKey='warm',RowKey='r') HTTP/1.1\r\n%s\r\n",
                common_headers);
            conns[i].sent = 0;
            send_req(&conns[i]);
        }
        for (int i = 0; i < nconns; i++)
            while (!read_resp(&conns[i]))
                ;
    }
    sleep(1);
    long before = rss_kib(server);
    printf("RSS before: %ld KiB\n", before);
    fflush(stdout);
    long k = 0, done = 0, st404 = 0, st503 = 0, stother = 0;
    double t0 = now();
    while (done < distinct) {
        for (int i = 0; i < nconns && k < distinct; i++) {
            if (conns[i].busy)
                continue;
            build_get(&conns[i], k++);
            send_req(&conns[i]);
        }
        for (int i = 0; i < nconns; i++) {
            pfd[i].fd = conns[i].fd;
            pfd[i].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)nconns, 1000) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int i = 0; i < nconns; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int st = read_resp(&conns[i]);
            if (!st)
                continue;
            done++;
            if (st == 404)
                st404++;
            else if (st == 503)
                st503++;
            else
                stother++;
        }
    }
    double took = now() - t0;
    long peak = rss_kib(server);
    printf("touched %ld distinct partitions in %.1f s (%.0f/s): 404 %ld, 503 %ld, other %ld\n",
           distinct, took, distinct / took, st404, st503, stother);
    printf("RSS after touching: %ld KiB (+%ld KiB, %.1f bytes per partition)\n", peak,
           peak - before, (double)(peak - before) * 1024.0 / (double)distinct);
    fflush(stdout);
    long last = peak;
    for (long s = 5; s <= idle; s += 5) {
        sleep(5);
        last = rss_kib(server);
        printf("idle %3ld s: RSS %ld KiB (%+.1f%% of before)\n", s, last,
               100.0 * (double)(last - before) / (double)before);
        fflush(stdout);
    }
    printf("RSS before %ld KiB, peak %ld KiB, after %ld s idle %ld KiB: %s (within 10%%: %s)\n",
           before, peak, idle, last, last <= before * 11 / 10 ? "returned" : "NOT returned",
           last <= before * 11 / 10 ? "yes" : "no");
    for (int i = 0; i < nconns; i++)
        close(conns[i].fd);
}

/* CPU seconds (user + system) of pid so far, or -1. */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- get ---- */

static void run_get(int argc, char **argv, int nconns)
{
    long total = 100000;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "-n"))
            total = atol(v), i++;
        else
            die("get: unknown option %s", argv[i]);
    }
    static struct conn conns[MAX_CONNS];
    struct pollfd pfd[MAX_CONNS];
    build_put(&conns[0], 0, 0, 100);
    conns[0].fd = connect_server();
    send_req(&conns[0]);
    int st;
    while ((st = read_resp(&conns[0])) == 0)
        ;
    close(conns[0].fd);
    if (st != 204)
        die("get: PUT answered %d", st);
    for (int i = 0; i < nconns; i++) {
        conns[i].fd = connect_server();
        conns[i].req_len = (size_t)snprintf(
            conns[i].req, sizeof conns[i].req,
            "GET /devstoreaccount1/bench(PartitionKey='p0',RowKey='r0') HTTP/1.1\r\n%s\r\n",
            common_headers);
    }
    long sent = 0, done = 0, bad = 0;
    double cpu0 = cpu_seconds(server), t0 = now();
    while (done < total) {
        for (int i = 0; i < nconns && sent < total; i++) {
            if (conns[i].busy)
                continue;
            conns[i].sent = 0;
            send_req(&conns[i]);
            sent++;
        }
        for (int i = 0; i < nconns; i++) {
            pfd[i].fd = conns[i].fd;
            pfd[i].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)nconns, 1000) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int i = 0; i < nconns; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int s = read_resp(&conns[i]);
            if (!s)
                continue;
            done++;
            bad += s != 200;
        }
    }
    double took = now() - t0, cpu = cpu_seconds(server) - cpu0;
    printf("get: %ld requests (%ld not 200) in %.2f s: %.0f req/s; server CPU %.2f s, "
           "%.2f us per request\n",
           total, bad, took, took > 0 ? total / took : 0, cpu,
           total ? cpu * 1e6 / (double)total : 0);
    for (int i = 0; i < nconns; i++)
        close(conns[i].fd);
}

int main(int argc, char **argv)
{
    const char *tabled = "./tabled", *extra = "--throttle";
    int nconns = 32;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "-t"))
            tabled = v, i++;
        else if (!strcmp(argv[i], "-a"))
            extra = v, i++;
        else if (!strcmp(argv[i], "-c"))
            nconns = atoi(v), i++;
        else
            die("unknown option %s", argv[i]);
    }
    if (i >= argc || nconns < 1 || nconns > MAX_CONNS)
        die("usage: bench_throttle [-t TABLED] [-a 'ARGS'] [-c CONNS] rate|touch|get [options]");
    signal(SIGPIPE, SIG_IGN);
    start_server(tabled, extra);
    printf("server: %s --port 0 --auth off --access-log off --backend memory --durability none "
           "%s (pid %d, port %d)\n", tabled, extra, (int)server, port);
    create_table();
    if (!strcmp(argv[i], "rate"))
        run_rate(argc - i - 1, argv + i + 1, nconns);
    else if (!strcmp(argv[i], "touch"))
        run_touch(argc - i - 1, argv + i + 1, nconns);
    else if (!strcmp(argv[i], "get"))
        run_get(argc - i - 1, argv + i + 1, nconns);
    else
        die("unknown mode %s", argv[i]);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    return 0;
}

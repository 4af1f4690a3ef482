/* bench_insert.c - HTTP load generator for the durability benchmarks:
 * single-entity inserts (or $batch changesets) over many keep-alive
 * connections, one request in flight per connection, from one thread
 * with epoll.
 *
 *     bench_insert -p PORT [-H HOST] [-c CONNS] [-d SECONDS] [-n REQUESTS] [-N PER_CONN]
 *                  [-s VALUE_BYTES] [-b BATCH] [-t TABLE] [-k KEYPREFIX] [-w]
 *                  [-m insert|upsert|merge|delete] [-r REWRITE]
 *
 * With both -d and -n the run ends at whichever comes first; -N ends each
 * connection after that many requests.
 * -m upsert sends Insert Or Replace (PUT to the entity's URL, no If-Match)
 * and -m merge Insert Or Merge (MERGE) instead of inserts (POST); with
 * -r REWRITE a connection's keys repeat every REWRITE requests, so that
 * upserts and merges after the first REWRITE requests rewrite entities
 * that exist (and inserts would conflict: use -r with upsert or merge).
 * -m delete sends Delete Entity with If-Match: * (single requests only):
 * request N of connection C deletes the entity that changeset (N - 1) / 100
 * + 1 of an earlier "-b 100" run with the same -k and connection count
 * inserted as its ((N - 1) % 100)-th entity, so fill the table that way
 * first, with -N changesets per connection, and delete with -N at most 100
 * times that (a missing entity is a 404, which stops the run).
 *
 * Entities are {"PartitionKey": "<prefix>c<conn>", "RowKey": "<seq>",
 * "Data": <VALUE_BYTES of random characters, or with -w of random words
 * and numbers, which compress about as ordinary entities do>} sent with Prefer: return-no-content, so a
 * success is 204 (202 for $batch). The server must run with --auth off and
 * the table must exist. Prints requests and entities per second, latency
 * percentiles, and any non-2xx answers (a non-2xx stops the run). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BI_MAX_CONNS 1024
#define BI_RANDOM_TEXT (1u << 20)

struct bi_conn {
    int fd;
    char *req;              /* the request being sent */
    size_t req_len, sent;
    char resp[65536];       /* the response being read */
    size_t resp_len;
    double t0;              /* when the request was started */
    unsigned long seq;
};

static const char *bi_host = "127.0.0.1", *bi_table = "bench", *bi_prefix = "";
static int bi_port, bi_conns = 64, bi_batch = 0;
static size_t bi_value = 1000;
static double bi_seconds = 10;
static unsigned long bi_limit;      /* requests to send, 0 = by time */
static int bi_timed;                /* -d given: with -n, whichever ends first */
static unsigned long bi_per_conn;   /* -N: requests per connection, at most */
static unsigned long bi_sent_reqs, bi_done, bi_errors;
static double *bi_lat;
static size_t bi_nlat, bi_caplat;
static char *bi_data;               /* filler text for the Data property */
static int bi_words;                /* -w: words instead of random characters */
static const char *bi_method = "POST"; /* -m: POST, PUT (upsert) or MERGE */
static unsigned long bi_rewrite;    /* -r: keys repeat every this many requests */

static double bi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends one entity's JSON for connection ci, row seq. Its Data is a
 * window of VALUE_BYTES into a 1 MiB random text at a random offset, so
 * that stored entities do not compress away (LevelDB uses snappy). */
static int bi_entity(char *out, size_t cap, int ci, unsigned long seq, int part)
{
    static uint64_t rng = 0x9E3779B97F4A7C15ull;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    size_t off = (size_t)(rng % BI_RANDOM_TEXT);
    return snprintf(out, cap,
                    "{\"PartitionKey\":\"%sc%04d\",\"RowKey\":\"r%010lu-%02d\",\"Data\":\"%.*s\"}",
                    bi_prefix, ci, seq, part, (int)bi_value, bi_data + off);
}

/* Builds the next request of connection ci into c->req. */
static void bi_build(struct bi_conn *c, int ci)
{
    size_t cap = (bi_value + 512) * (size_t)(bi_batch ? bi_batch : 1) + 1024;
    char *body = malloc(cap), *req = malloc(cap + 1024);
    if (!body || !req) {
        perror("malloc");
        exit(1);
    }
    c->seq++;
    unsigned long kseq = bi_rewrite ? c->seq % bi_rewrite : c->seq;
    int post = strcmp(bi_method, "POST") == 0;
    int del = strcmp(bi_method, "DELETE") == 0;
    int n = 0;
    const char *ctype = "application/json";
    char path[256];
    if (del) {                          /* the -b 100 fill's entities, in order */
        snprintf(path, sizeof(path),
                 "/devstoreaccount1/%s(PartitionKey='%sc%04d',RowKey='r%010lu-%02d')",
                 bi_table, bi_prefix, ci, (c->seq - 1) / 100 + 1, (int)((c->seq - 1) % 100));
    } else if (!bi_batch) {
        n = bi_entity(body, cap, ci, kseq, 0);
        if (post)
            snprintf(path, sizeof(path), "/devstoreaccount1/%s", bi_table);
        else
            snprintf(path, sizeof(path),
                     "/devstoreaccount1/%s(PartitionKey='%sc%04d',RowKey='r%010lu-%02d')",
                     bi_table, bi_prefix, ci, kseq, 0);
    } else {
        n = snprintf(body, cap,
                     "--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n");
        for (int i = 0; i < bi_batch; i++) {
            char url[256];
            if (post)
                snprintf(url, sizeof(url), "%s", bi_table);
            else
                snprintf(url, sizeof(url), "%s(PartitionKey='%sc%04d',RowKey='r%010lu-%02d')",
                         bi_table, bi_prefix, ci, kseq, i);
            n += snprintf(body + n, cap - (size_t)n,
                          "--changeset_c\r\nContent-Type: application/http\r\n"
                          "Content-Transfer-Encoding: binary\r\n\r\n"
                          "%s http://%s:%d/devstoreaccount1/%s HTTP/1.1\r\n"
                          "Content-Type: application/json\r\n"
                          "Prefer: return-no-content\r\n\r\n",
                          bi_method, bi_host, bi_port, url);
            n += bi_entity(body + n, cap - (size_t)n, ci, kseq, i);
            n += snprintf(body + n, cap - (size_t)n, "\r\n");
        }
        n += snprintf(body + n, cap - (size_t)n, "--changeset_c--\r\n--batch_b--\r\n");
        ctype = "multipart/mixed; boundary=batch_b";
        snprintf(path, sizeof(path), "/devstoreaccount1/$batch");
    }
    int h = snprintf(req, cap + 1024,
                     "%s %s HTTP/1.1\r\nHost: %s:%d\r\nx-ms-version: 2019-02-02\r\n"
                     "Accept: application/json;odata=nometadata\r\nContent-Type: %s\r\n"
                     "%sPrefer: return-no-content\r\nContent-Length: %d\r\n\r\n",
                     bi_batch ? "POST" : bi_method, path, bi_host, bi_port, ctype,
                     del ? "If-Match: *\r\n" : "", n);
    memcpy(req + h, body, (size_t)n);
    free(body);
    free(c->req);
    c->req = req;
    c->req_len = (size_t)h + (size_t)n;
    c->sent = 0;
    c->resp_len = 0;
    c->t0 = bi_now();
    bi_sent_reqs++;
}

/* Sends what is left of the request; 0 ok, -1 on error. */
static int bi_send(struct bi_conn *c)
{
    while (c->sent < c->req_len) {
        ssize_t w = send(c->fd, c->req + c->sent, c->req_len - c->sent, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN ? 0 : -1;
        c->sent += (size_t)w;
    }
    return 0;
}

/* Length of a complete response in c->resp, 0 when incomplete. */
static size_t bi_complete(struct bi_conn *c, int *status)
{
    c->resp[c->resp_len < sizeof(c->resp) ? c->resp_len : sizeof(c->resp) - 1] = 0;
    char *end = strstr(c->resp, "\r\n\r\n");
    if (!end)
        return 0;
    size_t head = (size_t)(end - c->resp) + 4, body = 0;
    char *cl = strcasestr(c->resp, "\r\nContent-Length:");
    if (cl && cl < end)
        body = strtoul(cl + 17, NULL, 10);
    if (c->resp_len < head + body)
        return 0;
    *status = atoi(c->resp + 9);
    return head + body;
}

static void bi_record(double secs)
{
    if (bi_nlat == bi_caplat) {
        bi_caplat = bi_caplat ? bi_caplat * 2 : 65536;
        bi_lat = realloc(bi_lat, bi_caplat * sizeof(*bi_lat));
        if (!bi_lat) {
            perror("realloc");
            exit(1);
        }
    }
    bi_lat[bi_nlat++] = secs;
}

static int bi_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bi_connect(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)bi_port)};
    if (inet_pton(AF_INET, bi_host, &sa.sin_addr) != 1) {
        fprintf(stderr, "bench_insert: host must be an IPv4 address\n");
        exit(2);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "H:p:c:d:n:N:s:b:t:k:wm:r:")) != -1) {
        switch (opt) {
        case 'H': bi_host = optarg; break;
        case 'p': bi_port = atoi(optarg); break;
        case 'c': bi_conns = atoi(optarg); break;
        case 'd': bi_seconds = atof(optarg); bi_timed = 1; break;
        case 'n':
        case 'N':
            /* strtoul takes "-5" for a huge count: a run without end */
            if (optarg[strspn(optarg, "0123456789")] || !*optarg) {
                fprintf(stderr, "bench_insert: -%c wants a count of requests, not \"%s\"\n",
                        opt, optarg);
                return 2;
            }
            *(opt == 'n' ? &bi_limit : &bi_per_conn) = strtoul(optarg, NULL, 10);
            break;
        case 's': bi_value = strtoul(optarg, NULL, 10); break;
        case 'b': bi_batch = atoi(optarg); break;
        case 't': bi_table = optarg; break;
        case 'k': bi_prefix = optarg; break;
        case 'w': bi_words = 1; break;
        case 'm':
            bi_method = !strcmp(optarg, "upsert") ? "PUT"
                        : !strcmp(optarg, "merge") ? "MERGE"
                        : !strcmp(optarg, "delete") ? "DELETE"
                        : !strcmp(optarg, "insert") ? "POST" : NULL;
            if (!bi_method) {
                fprintf(stderr, "bench_insert: -m insert, upsert, merge or delete\n");
                return 2;
            }
            break;
        case 'r': bi_rewrite = strtoul(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: bench_insert -p PORT [-H HOST] [-c CONNS] [-d SECONDS] [-n "
                            "REQUESTS] [-N PER_CONN] [-s VALUE_BYTES] [-b BATCH] [-t TABLE] "
                            "[-k KEYPREFIX] [-w] [-m insert|upsert|merge|delete] [-r REWRITE]\n");
            return 2;
        }
    }
    if (bi_batch && !strcmp(bi_method, "DELETE")) {
        fprintf(stderr, "bench_insert: -m delete sends single requests (no -b)\n");
        return 2;
    }
    if (!bi_port || bi_conns < 1 || bi_conns > BI_MAX_CONNS || bi_batch < 0 || bi_batch > 100) {
        fprintf(stderr, "bench_insert: need -p PORT, 1..%d connections, batch 0..100\n",
                BI_MAX_CONNS);
        return 2;
    }
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char *const words[] = {
        "order", "customer", "shipped", "pending", "invoice", "total", "amount", "street",
        "city", "north", "south", "delivery", "express", "standard", "item", "quantity",
        "price", "discount", "returned", "warehouse", "Berlin", "Lisbon", "Oslo", "Paris",
        "status", "note", "priority", "high", "low", "gift", "wrap", "account"};
    bi_data = malloc(BI_RANDOM_TEXT + bi_value + 16);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < BI_RANDOM_TEXT + bi_value;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (!bi_words) {
            bi_data[i++] = alphabet[x & 63];
            continue;
        }
        /* text: random words and numbers, compresses about as JSON does */
        int n = (x & 3) == 0 ? snprintf(bi_data + i, 16, "%u ", (unsigned)(x >> 40) % 100000)
                             : snprintf(bi_data + i, 16, "%s ", words[(x >> 8) & 31]);
        i += (size_t)n;
    }
    bi_data[BI_RANDOM_TEXT + bi_value] = 0;

    int ep = epoll_create1(0);
    static struct bi_conn conns[BI_MAX_CONNS];
    for (int i = 0; i < bi_conns; i++) {
        conns[i].fd = bi_connect();
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
        bi_build(&conns[i], i);
        bi_send(&conns[i]);
    }
    double start = bi_now(), stop_at = start + bi_seconds;
    int active = bi_conns, stopping = 0;
    struct epoll_event evs[256];
    while (active > 0) {
        int n = epoll_wait(ep, evs, 256, 1000);
        double now = bi_now();
        if ((!bi_limit || bi_timed) && now >= stop_at)
            stopping = 1;
        for (int e = 0; e < n; e++) {
            int ci = (int)evs[e].data.u32;
            struct bi_conn *c = &conns[ci];
            if (c->fd < 0)
                continue;
            if (evs[e].events & EPOLLOUT && bi_send(c) < 0) {
                fprintf(stderr, "bench_insert: send failed: %s\n", strerror(errno));
                return 1;
            }
            if (!(evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
                continue;
            for (;;) {
                ssize_t r = recv(c->fd, c->resp + c->resp_len, sizeof(c->resp) - 1 - c->resp_len, 0);
                if (r < 0 && errno == EAGAIN)
                    break;
                if (r <= 0) {
                    fprintf(stderr, "bench_insert: connection %d closed by the server\n", ci);
                    return 1;
                }
                c->resp_len += (size_t)r;
                int status = 0;
                size_t len = bi_complete(c, &status);
                if (!len)
                    continue;
                bi_record(bi_now() - c->t0);
                bi_done++;
                /* a changeset answers 202 with its failed part alone */
                const char *fail = strstr(c->resp, "\r\nHTTP/1.1 4");
                if (!fail)
                    fail = strstr(c->resp, "\r\nHTTP/1.1 5");
                if (status / 100 != 2 || fail) {
                    bi_errors++;
                    fprintf(stderr, "bench_insert: answer %d: %.300s\n", status, c->resp);
                    stopping = 1;
                }
                if (stopping || (bi_limit && bi_sent_reqs >= bi_limit) ||
                    (bi_per_conn && c->seq >= bi_per_conn)) {
                    close(c->fd);
                    c->fd = -1;
                    active--;
                    break;
                }
                bi_build(c, ci);
                if (bi_send(c) < 0) {
                    fprintf(stderr, "bench_insert: send failed: %s\n", strerror(errno));
                    return 1;
                }
                break;      /* one request in flight: nothing more to read */
            }
        }
    }
    double secs = bi_now() - start;
    qsort(bi_lat, bi_nlat, sizeof(*bi_lat), bi_dcmp);
    double p50 = bi_nlat ? bi_lat[bi_nlat / 2] : 0, p99 = bi_nlat ? bi_lat[bi_nlat * 99 / 100] : 0;
    double mx = bi_nlat ? bi_lat[bi_nlat - 1] : 0;
    unsigned long ents = bi_done * (unsigned long)(bi_batch ? bi_batch : 1);
    printf("requests %lu in %.2f s: %.0f requests/s, %.0f entities/s; latency p50 %.2f ms, "
           "p99 %.2f ms, max %.2f ms; errors %lu\n",
           bi_done, secs, (double)bi_done / secs, (double)ents / secs, p50 * 1e3, p99 * 1e3,
           mx * 1e3, bi_errors);
    return bi_errors ? 1 : 0;
}

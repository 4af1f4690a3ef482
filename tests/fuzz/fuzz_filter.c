/* fuzz_filter.c - libFuzzer target for the $filter engine.
 *
 * The first byte picks the target (entities / tables) and the mismatch
 * rule; the rest is compiled as a filter. When it compiles, it is evaluated
 * against fixed entities holding every Edm type (and NaN, infinities,
 * supplementary characters) and planned; the run aborts if the plan or its
 * backend key intervals miss a matching entity or table name, or if a
 * failed compile leaves no error code. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "codec/edm.h"
#include "filter/filter.h"
#include "store/keys.h"

#define NENT 6
#define NPROP 12

static struct arena *arena;
static long compiled; /* inputs that compiled (reported by the smoke run) */
static struct entity ents[NENT];
static struct property props[NENT][NPROP];
static struct buf vals[NENT]; /* entity_encode of each: what filter_match reads */

static void set(struct property *p, const char *name, enum edm_type t)
{
    p->name = name;
    p->name_len = strlen(name);
    p->v.type = t;
}

/* Entities whose properties vary in value and presence. */
static void setup(void)
{
    static const char *const pks[NENT] = {"", "a", "a", "b\xc3\xa9", "\xef\xbf\xbd", "\xf0\x9f\x98\x80"};
    static const char *const rks[NENT] = {"", "1", "2", "x", "\xf0\x9f\x98\x80", "\xef\xbf\xbd"};
    static const char *const strs[NENT] = {"", "Ann", "bob", "O'Neil", "\xf0\x9f\x98\x80", "z"};
    static const double dbls[NENT] = {0.0, 12.5, 3.0, NAN, INFINITY, -1e300};
    static const uint8_t bins[NENT][3] = {{0}, {1, 2, 3}, {0xff}, {0, 0}, {10, 11}, {1}};
    arena = arena_new(0);
    for (int i = 0; i < NENT; i++) {
        struct entity *e = &ents[i];
        struct property *p = props[i];
        size_t n = 0;
        e->pk = pks[i];
        e->pk_len = strlen(pks[i]);
        e->rk = rks[i];
        e->rk_len = strlen(rks[i]);
        e->timestamp = EDM_DATETIME_MIN_TICKS + (int64_t)i * 100000000000000000LL;
        set(&p[n], "S", EDM_STRING);
        p[n].v.u.s.ptr = strs[i];
        p[n++].v.u.s.len = strlen(strs[i]);
        if (i != 2) {
            set(&p[n], "I", EDM_INT32);
            p[n++].v.u.i32 = i == 5 ? INT32_MIN : i * 3 - 4;
        }
        set(&p[n], "L", EDM_INT64);
        p[n++].v.u.i64 = i == 4 ? INT64_MAX : (int64_t)i * 5000000000LL - 1;
        set(&p[n], "D", EDM_DOUBLE);
        p[n++].v.u.d = dbls[i];
        set(&p[n], "B", EDM_BOOLEAN);
        p[n++].v.u.b = i % 2;
        set(&p[n], "T", EDM_DATETIME);
        p[n++].v.u.ticks = EDM_DATETIME_MIN_TICKS + (int64_t)i * 7777777777777LL;
        set(&p[n], "G", EDM_GUID);
        memset(p[n].v.u.guid, i * 51, 16);
        n++;
        set(&p[n], "X", EDM_BINARY);
        p[n].v.u.s.ptr = (const char *)bins[i];
        p[n++].v.u.s.len = (size_t)(i % 4);
        /* Same name, another type per entity. */
        set(&p[n], "V", (enum edm_type)(1 + i % 8));
        memset(&p[n].v.u, 0, sizeof p[n].v.u);
        if (p[n].v.type == EDM_STRING || p[n].v.type == EDM_BINARY)
            p[n].v.u.s.ptr = "v";
        n++;
        e->props = p;
        e->nprops = n;
        e->cap = NPROP;
        buf_init(&vals[i]);
        entity_encode(e, &vals[i]);
    }
}

/* 1 when the backend key of e falls into one of p's key intervals. */
static int keys_contain(const struct filter_plan *p, const struct entity *e)
{
    struct buf k, s, t;
    int in = 0;
    buf_init(&k);
    buf_init(&s);
    buf_init(&t);
    keys_entity(&k, 42, e->pk, e->pk_len, e->rk, e->rk_len);
    for (size_t i = 0; i < p->n && !in; i++) {
        buf_reset(&s);
        buf_reset(&t);
        filter_range_keys(&p->ranges[i], 42, &s, &t);
        size_t m = k.len < s.len ? k.len : s.len;
        int c1 = memcmp(s.data, k.data, m);
        int ge = c1 < 0 || (c1 == 0 && s.len <= k.len);
        m = k.len < t.len ? k.len : t.len;
        int c2 = memcmp(k.data, t.data, m);
        int lt = c2 < 0 || (c2 == 0 && k.len < t.len);
        in = ge && lt;
    }
    buf_free(&k);
    buf_free(&s);
    buf_free(&t);
    return in;
}

static void check_entities(struct filter *f)
{
    struct filter_plan p;
    struct filter_stats st = {0, 0};
    filter_set_stats(f, &st);
    filter_plan(f, arena, &p);
    if (p.n > FILTER_PLAN_MAX_RANGES)
        abort();
    for (int i = 0; i < NENT; i++) {
        struct filter_row row = {ents[i].pk, ents[i].rk, ents[i].pk_len, ents[i].rk_len,
                                 vals[i].data, vals[i].len};
        if (!filter_match(f, &row))
            continue;
        if (!filter_plan_contains(&p, ents[i].pk, ents[i].pk_len, ents[i].rk, ents[i].rk_len))
            abort(); /* the plan lost a matching entity */
        if (!keys_contain(&p, &ents[i]))
            abort(); /* the key mapping lost it */
    }
    if (st.examined != NENT)
        abort();
}

static void check_tables(struct filter *f)
{
    static const char *const names[] = {"a", "A", "orders", "Orders", "ORE", "ord", "m1",
                                        "M1", "zZ", "Zz", "t0", "T0x"};
    struct filter_plan p, folded;
    filter_plan(f, arena, &p);
    filter_plan_fold_case(arena, &p, &folded);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(names[i]);
        if (!filter_match_table(f, names[i], n))
            continue;
        char low[16];
        for (size_t k = 0; k <= n; k++)
            low[k] = (char)(names[i][k] >= 'A' && names[i][k] <= 'Z' ? names[i][k] + 32
                                                                      : names[i][k]);
        if (!filter_plan_contains(&p, names[i], n, NULL, 0))
            abort();
        if (!filter_plan_contains(&folded, low, n, NULL, 0))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!arena)
        setup();
    if (size == 0)
        return 0;
    enum filter_target target = (data[0] & 1) ? FILTER_TABLES : FILTER_ENTITIES;
    struct filter_options o = {(data[0] & 2) ? FILTER_MISMATCH_CLOUDSTUB : FILTER_MISMATCH_FALSE,
                               0, 0};
    struct filter *f;
    enum terr err;
    const char *msg;
    if (filter_compile(arena, (const char *)data + 1, size - 1, target, &o, &f, &err, &msg) == 0) {
        compiled++;
        if (target == FILTER_TABLES)
            check_tables(f);
        else
            check_entities(f);
    } else if (err == TERR_NONE) {
        abort();
    } else if (err == TERR_InvalidInput && msg && strlen(msg) < 20) {
        abort();
    }
    arena_reset(arena);
    return 0;
}

#ifdef FUZZ_FILTER_MAIN
/* Without libFuzzer (make check): replays the seed corpus, then a fixed
 * series of mutated inputs, printing TAP. A finding aborts the program. */
#include <dirent.h>
#include <stdio.h>

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Pieces spliced into mutated inputs. */
static const char *const pieces[] = {
    " eq ", " ne ", " gt ", " ge ", " lt ", " le ", " and ", " or ", "not ", "(", ")",
    "'", "''", "PartitionKey", "RowKey", "Timestamp", "TableName", "S", "I", "L", "D", "B",
    "T", "G", "X", "V", "1", "-2147483649", "9223372036854775807L", "1.5e3", ".5d", "true",
    "null", "datetime'2024-06-01T00:00:00Z'", "guid'4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11'",
    "X'0aff'", "binary''", "'\xf0\x9f\x98\x80'", "'\xef\xbf\xbd'", "startswith(", ",", "/",
    " add ", "\xc3", "\t",
};

static size_t mutate(uint8_t *buf, size_t n, size_t cap)
{
    int steps = 1 + (int)(next_rand() % 4);
    for (int s = 0; s < steps; s++) {
        size_t at = n ? (size_t)(next_rand() % (n + 1)) : 0;
        switch (next_rand() % 4) {
        case 0: /* flip a byte */
            if (n)
                buf[at % n] = (uint8_t)next_rand();
            break;
        case 1: /* delete a run */
            if (n) {
                size_t len = 1 + (size_t)(next_rand() % 8);
                if (at + len > n)
                    len = n - at;
                memmove(buf + at, buf + at + len, n - at - len);
                n -= len;
            }
            break;
        default: { /* insert a piece */
            const char *p = pieces[next_rand() % (sizeof pieces / sizeof *pieces)];
            size_t len = strlen(p);
            if (n + len <= cap) {
                memmove(buf + at + len, buf + at, n - at);
                memcpy(buf + at, p, len);
                n += len;
            }
            break;
        }
        }
    }
    return n;
}

int main(void)
{
    const char *top = getenv("TOP_SRCDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus_filter", top ? top : ".");
    static uint8_t seeds[64][512];
    static size_t seed_len[64];
    size_t nseeds = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) && nseeds < 64) {
            if (de->d_name[0] == '.')
                continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            FILE *fp = fopen(path, "rb");
            if (!fp)
                continue;
            seed_len[nseeds] = fread(seeds[nseeds], 1, sizeof seeds[0], fp);
            fclose(fp);
            LLVMFuzzerTestOneInput(seeds[nseeds], seed_len[nseeds]);
            nseeds++;
        }
        closedir(d);
    }
    printf("%s 1 - %zu corpus seeds replayed from %s\n", nseeds ? "ok" : "not ok", nseeds, dir);
    static uint8_t buf[2048];
    long runs = 0;
    for (int i = 0; i < 50000 && nseeds; i++) {
        size_t k = (size_t)(next_rand() % nseeds), n = seed_len[k];
        memcpy(buf, seeds[k], n);
        n = mutate(buf, n, sizeof buf);
        LLVMFuzzerTestOneInput(buf, n);
        runs++;
    }
    printf("ok 2 - %ld mutated inputs without a finding (%ld compiled)\n1..2\n", runs,
           compiled);
    return nseeds ? 0 : 1;
}
#endif

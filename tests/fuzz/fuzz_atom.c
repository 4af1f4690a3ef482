/* fuzz_atom.c - libFuzzer target for the Atom entry reader (atom_read.c):
 * any input either is refused or gives a JSON object that yajl accepts;
 * when that object is a valid entity, writing the entity as Atom and
 * reading it back must give the same entity (names, types, values, bit
 * for bit). The input is copied into an exactly sized heap block so
 * AddressSanitizer catches a read past its end.
 *
 * Built with -DFUZZ_ATOM_MAIN (make check: tests/fuzz/smoke_atom) it
 * replays tests/fuzz/corpus_atom and a fixed series of mutations of it,
 * printing TAP. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "codec/atom.h"
#include "codec/entity_json.h"

/* Same value, same type (doubles compared as bits). */
static int same_value(const struct edm_value *a, const struct edm_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case EDM_STRING:
    case EDM_BINARY:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0;
    case EDM_BOOLEAN: return a->u.b == b->u.b;
    case EDM_DATETIME: return a->u.ticks == b->u.ticks;
    case EDM_DOUBLE: return memcmp(&a->u.d, &b->u.d, sizeof a->u.d) == 0;
    case EDM_GUID: return memcmp(a->u.guid, b->u.guid, 16) == 0;
    case EDM_INT32: return a->u.i32 == b->u.i32;
    case EDM_INT64: return a->u.i64 == b->u.i64;
    }
    return 0;
}

/* Checks one input; aborts on a finding. */
static void check(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        return;
    memcpy(body, data, size);
    struct arena *a = arena_new(4096);
    const char *json;
    size_t jl;
    if (atom_to_json(a, body, size, &json, &jl) == TERR_NONE) {
        char err[64];
        yajl_val v = yajl_tree_parse(json, err, sizeof err);
        if (!v || !YAJL_IS_OBJECT(v))
            abort();   /* the reader made JSON that is not an object */
        yajl_tree_free(v);
        struct entity e1, e2;
        if (entity_json_parse(a, json, jl, ENTITY_PARSE_INSERT, &e1) == TERR_NONE) {
            struct buf out;
            buf_init(&out);
            struct atom_ctx ctx = {.base = "http://127.0.0.1:10002/devstoreaccount1",
                                   .account = "devstoreaccount1", .table = "fuzz",
                                   .updated = "2024-01-01T00:00:00.0000000Z"};
            e1.timestamp = 638400000000000000LL;
            atom_write_entity(&out, &e1, &ctx, 1);
            const char *json2;
            size_t jl2;
            if (atom_to_json(a, out.data, out.len, &json2, &jl2) != TERR_NONE ||
                entity_json_parse(a, json2, jl2, ENTITY_PARSE_INSERT, &e2) != TERR_NONE)
                abort();   /* what was written cannot be read back */
            if (e1.pk_len != e2.pk_len || memcmp(e1.pk, e2.pk, e1.pk_len) != 0 ||
                e1.rk_len != e2.rk_len || memcmp(e1.rk, e2.rk, e1.rk_len) != 0 ||
                e1.nprops != e2.nprops)
                abort();
            for (size_t i = 0; i < e1.nprops; i++)
                if (strcmp(e1.props[i].name, e2.props[i].name) != 0 ||
                    !same_value(&e1.props[i].v, &e2.props[i].v))
                    abort();   /* the round trip changed a property */
            buf_free(&out);
        }
    }
    arena_free(a);
    free(body);
}

#ifndef FUZZ_ATOM_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    return 0;
}
#else
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
    "<", ">", "/>", "</d:A>", "<d:A>", " m:type=\"Edm.Int64\"", " m:null=\"true\"", "&amp;",
    "&#x1;", "&#xD;", "<!DOCTYPE x [<!ENTITY a \"b\">]>", "&a;", "<![CDATA[x]]>", "\xc3",
    "\xef\xbf\xbe", "INF", "-INF", "NaN", "1E+308", "-9223372036854775808", "'", "\"",
    "<m:properties>", "</m:properties>", "<content type=\"application/xml\">", "</content>",
};

/* A few random edits of buf (n bytes, capacity cap); returns the new length. */
static size_t mutate(uint8_t *buf, size_t n, size_t cap)
{
    int steps = 1 + (int)(next_rand() % 4);
    for (int s = 0; s < steps; s++) {
        size_t at = n ? (size_t)(next_rand() % (n + 1)) : 0;
        switch (next_rand() % 3) {
        case 0:
            if (n > at) {
                size_t k = 1 + (size_t)(next_rand() % 8);
                if (k > n - at)
                    k = n - at;
                memmove(buf + at, buf + at + k, n - at - k);
                n -= k;
            }
            break;
        case 1: {
            const char *p = pieces[next_rand() % (sizeof pieces / sizeof pieces[0])];
            size_t k = strlen(p);
            if (n + k <= cap) {
                memmove(buf + at + k, buf + at, n - at);
                memcpy(buf + at, p, k);
                n += k;
            }
            break;
        }
        default:
            if (at < n)
                buf[at] = (uint8_t)next_rand();
            break;
        }
    }
    return n;
}

int main(void)
{
    DIR *d = opendir(FUZZ_ATOM_CORPUS);
    if (!d) {
        printf("not ok 1 - open %s\n1..1\n", FUZZ_ATOM_CORPUS);
        return 1;
    }
    int t = 0;
    struct dirent *de;
    static uint8_t in[1 << 16], mut[1 << 17];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", FUZZ_ATOM_CORPUS, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t n = fread(in, 1, sizeof in, f);
        fclose(f);
        check(in, n);
        for (int i = 0; i < 2000; i++) {
            memcpy(mut, in, n);
            size_t m = mutate(mut, n, sizeof mut);
            check(mut, m);
        }
        printf("ok %d - %s and 2000 mutations\n", ++t, de->d_name);
    }
    closedir(d);
    printf("1..%d\n", t);
    return t > 0 ? 0 : 1;
}
#endif

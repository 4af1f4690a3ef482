/* purge.c - removing the entities of deleted tables (see purge.h). */
#include "store/purge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coding.h"
#include "core/pages.h"
#include "store/keys.h"
#include "store/tables.h"

#define PURGE_RECORD_VERSION 1

struct purge_job {
    struct purge_job *next;
    uint64_t id;
    int account;
    struct buf resume;         /* last entity key deleted; empty: none yet */
    uint64_t bytes;            /* keys' and values' bytes deleted so far */
};

struct purge {
    struct purge_job *head, *tail;
    size_t n;
    struct buf keys;           /* the keys of one chunk, back to back */
    size_t offs[PURGE_CHUNK], lens[PURGE_CHUNK];
    struct backend_write w[PURGE_CHUNK + 1];
    struct backend_cond cond[PURGE_CHUNK + 1];   /* shared stores */
    struct buf start, end, rkey, rval;
};

struct purge *purge_new(void)
{
    /* 72 KiB of chunk arrays, used only while a purge runs: in pages of
     * their own (core/pages.h), not a calloc() that may zero reused heap */
    struct purge *p = pages_zalloc(sizeof *p);
    buf_init(&p->keys);
    buf_init(&p->start);
    buf_init(&p->end);
    buf_init(&p->rkey);
    buf_init(&p->rval);
    return p;
}

static void job_free(struct purge_job *j)
{
    buf_free(&j->resume);
    free(j);
}

void purge_free(struct purge *p)
{
    if (!p)
        return;
    while (p->head) {
        struct purge_job *j = p->head;
        p->head = j->next;
        job_free(j);
    }
    buf_free(&p->keys);
    buf_free(&p->start);
    buf_free(&p->end);
    buf_free(&p->rkey);
    buf_free(&p->rval);
    pages_free(p, sizeof *p);
}

/* The queued job of table id, or NULL. */
static struct purge_job *job_find(const struct purge *p, uint64_t id)
{
    for (struct purge_job *j = p->head; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

/* Appends a job (FIFO: the oldest delete is purged first). */
static struct purge_job *job_add(struct purge *p, uint64_t id, int account)
{
    struct purge_job *j = calloc(1, sizeof *j);
    if (!j)
        abort();
    j->id = id;
    j->account = account;
    buf_init(&j->resume);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->n++;
    return j;
}

void purge_add(struct purge *p, uint64_t id, int account)
{
    if (!job_find(p, id))
        job_add(p, id, account);
}

size_t purge_pending(const struct purge *p)
{
    return p->n;
}

void purge_record(struct buf *key, struct buf *val, uint64_t id)
{
    keys_purge(key, id);
    buf_put_u8(val, PURGE_RECORD_VERSION);
}

/* Big-endian u64 at p. */
static uint64_t be64_at(const unsigned char *p)
{
    return coding_get_be64(p);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Reads the purge records into jobs (with their resume keys). */
static int load_records(struct purge *p, struct kv *kv,
                        char *err, size_t errlen)
{
    const char s[1] = {KEY_TAG_PURGE}, e[1] = {KEY_TAG_PURGE + 1};
    struct kv_iter *it;
    int rc = kv_iter_open(kv, s, 1, e, 1, &it, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    const void *k, *v;
    size_t kl, vl;
    while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        if (kl != 9)
            continue;           /* not a record this version writes */
        uint64_t id = be64_at((const unsigned char *)k + 1);
        if (job_find(p, id))
            continue;
        struct purge_job *j = job_add(p, id, -1);
        const unsigned char *vb = v;
        /* A resume key is an entity key of this table; anything else
           (a newer record version) restarts at the table's first key. */
        if (vl > 10 && vb[0] == PURGE_RECORD_VERSION && vb[1] == KEY_TAG_ENTITY &&
            be64_at(vb + 2) == id)
            buf_append(&j->resume, vb + 1, vl - 1);
    }
    kv_iter_close(it);
    if (rc < 0) {
        snprintf(err, errlen, "reading the purge records failed (%d)", rc);
        return rc;
    }
    return BACKEND_OK;
}

/* Sorted ids of every table row (of every account) into *ids. */
static int live_ids(struct kv *kv, uint64_t **ids,
                    size_t *n, char *err, size_t errlen)
{
    const char s[1] = {KEY_TAG_TABLE}, e[1] = {KEY_TAG_TABLE + 1};
    struct kv_iter *it;
    int rc = kv_iter_open(kv, s, 1, e, 1, &it, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    size_t cap = 64;
    *n = 0;
    *ids = malloc(cap * sizeof **ids);
    if (!*ids)
        abort();
    const void *k, *v;
    size_t kl, vl;
    while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        uint64_t id;
        const char *name;
        size_t nl, al;
        const unsigned char *acl;
        if (tables_decode(v, vl, &id, &name, &nl, &acl, &al) != 0)
            continue;           /* tables_load refuses the store anyway */
        if (*n == cap) {
            cap *= 2;
            uint64_t *more = realloc(*ids, cap * sizeof **ids);
            if (!more)
                abort();
            *ids = more;
        }
        (*ids)[(*n)++] = id;
    }
    kv_iter_close(it);
    if (rc < 0) {
        snprintf(err, errlen, "reading the table rows failed (%d)", rc);
        free(*ids);
        *ids = NULL;
        return rc;
    }
    qsort(*ids, *n, sizeof **ids, cmp_u64);
    return BACKEND_OK;
}

/* Queues the entity ids that belong to no table row and no record: one
 * seek per distinct id in the store, never a walk over its entities. */
static int find_orphans(struct purge *p, struct kv *kv,
                        const uint64_t *ids, size_t nids, char *err, size_t errlen)
{
    const char s[1] = {KEY_TAG_ENTITY}, e[1] = {KEY_TAG_ENTITY + 1};
    struct kv_iter *it;
    int rc = kv_iter_open(kv, s, 1, e, 1, &it, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    const void *k, *v;
    size_t kl, vl;
    while ((rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        if (kl < 9)
            break;              /* not an entity key: nothing to purge here */
        uint64_t id = be64_at((const unsigned char *)k + 1);
        if (!bsearch(&id, ids, nids, sizeof *ids, cmp_u64) && !job_find(p, id))
            job_add(p, id, -1);
        if (id == UINT64_MAX)
            break;
        unsigned char next[9] = {KEY_TAG_ENTITY};
        for (int i = 0; i < 8; i++)
            next[1 + i] = (unsigned char)((id + 1) >> (56 - 8 * i));
        if ((rc = kv_iter_seek(it, next, sizeof next)) != BACKEND_OK)
            break;
    }
    kv_iter_close(it);
    if (rc < 0) {
        snprintf(err, errlen, "looking for entities of deleted tables failed (%d)", rc);
        return rc;
    }
    return BACKEND_OK;
}

int purge_load(struct purge *p, struct kv *kv,
               uint64_t *max_id, char *err, size_t errlen)
{
    *max_id = 0;
    int rc = load_records(p, kv, err, errlen);
    if (rc != BACKEND_OK)
        return rc;
    /* Orphans come from data older than purge records; on a shared
       store another front end may be creating a table right now, whose
       entities would look orphaned (store/tables.h). */
    if (!kv_shared(kv)) {
        uint64_t *ids;
        size_t nids;
        if ((rc = live_ids(kv, &ids, &nids, err, errlen)) != BACKEND_OK)
            return rc;
        rc = find_orphans(p, kv, ids, nids, err, errlen);
        free(ids);
    }
    for (const struct purge_job *j = p->head; j; j = j->next)
        if (j->id > *max_id)
            *max_id = j->id;
    return rc;
}

int purge_rescan(struct purge *p, struct kv *kv, char *err, size_t errlen)
{
    return load_records(p, kv, err, errlen);
}

/* Removes the finished head job. */
static void job_done(struct purge *p)
{
    struct purge_job *j = p->head;
    p->head = j->next;
    if (!p->head)
        p->tail = NULL;
    p->n--;
    job_free(j);
}

int purge_step(struct purge *p, struct kv *kv,
               struct purge_progress *pr, char *err, size_t errlen)
{
    memset(pr, 0, sizeof *pr);
    pr->account = -1;
    struct purge_job *j = p->head;
    if (!j)
        return BACKEND_OK;
    pr->id = j->id;
    pr->account = j->account;

    /* [resume key or the table's first key, end of the table's keys) */
    buf_reset(&p->start);
    buf_reset(&p->end);
    if (j->resume.len)
        buf_append(&p->start, j->resume.data, j->resume.len);
    else
        keys_entity_table_prefix(&p->start, j->id);
    keys_entity_table_prefix(&p->end, j->id);
    keys_prefix_end(&p->end);
    struct kv_iter *it;
    int rc = kv_iter_open(kv, p->start.data, p->start.len, p->end.data, p->end.len, &it, err,
                            errlen);
    if (rc != BACKEND_OK)
        return rc;
    size_t n = 0, bytes = 0;
    const void *k, *v;
    size_t kl, vl;
    buf_reset(&p->keys);
    while (n < PURGE_CHUNK && p->keys.len < PURGE_CHUNK_BYTES &&
           (rc = kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
        if (j->resume.len && kl == j->resume.len && memcmp(k, j->resume.data, kl) == 0)
            continue;           /* deleted already; a backend may still show it */
        p->offs[n] = p->keys.len;
        p->lens[n] = kl;
        buf_append(&p->keys, k, kl);
        bytes += kl + vl;
        n++;
    }
    kv_iter_close(it);
    if (rc < 0) {
        snprintf(err, errlen, "reading the entities of deleted table %llu failed (%d)",
                 (unsigned long long)j->id, rc);
        return rc;
    }
    int last = rc == 0 || n == 0;   /* the range is exhausted */
    for (size_t i = 0; i < n; i++)
        p->w[i] = (struct backend_write){BACKEND_DELETE, p->keys.data + p->offs[i], p->lens[i],
                                         NULL, 0};
    buf_reset(&p->rkey);
    buf_reset(&p->rval);
    keys_purge(&p->rkey, j->id);
    if (last) {
        p->w[n] = (struct backend_write){BACKEND_DELETE, p->rkey.data, p->rkey.len, NULL, 0};
    } else {
        buf_put_u8(&p->rval, PURGE_RECORD_VERSION);
        buf_append(&p->rval, p->keys.data + p->offs[n - 1], p->lens[n - 1]);
        p->w[n] = (struct backend_write){BACKEND_PUT, p->rkey.data, p->rkey.len, p->rval.data,
                                         p->rval.len};
    }
    /* On a shared store another front end may purge the same table: the
       record must still exist, or that one finished it (and deleted the
       record, which this apply must not bring back). */
    struct backend_cond *cond = NULL;
    if (kv_shared(kv)) {
        memset(p->cond, 0, (n + 1) * sizeof *p->cond);
        p->cond[n].expect = BACKEND_EXPECT_PRESENT;
        cond = p->cond;
    }
    rc = kv_apply(kv, p->w, cond, n + 1, 0, NULL, err, errlen);
    if (rc == BACKEND_CONFLICT) {
        pr->finished = 1;       /* by another front end */
        pr->table_bytes = j->bytes;
        job_done(p);
        return BACKEND_OK;
    }
    if (rc != BACKEND_OK)
        return rc;
    pr->removed = n;
    pr->bytes = bytes;
    j->bytes += bytes;
    pr->table_bytes = j->bytes;
    if (last) {
        pr->finished = 1;
        job_done(p);
    } else {
        buf_reset(&j->resume);
        buf_append(&j->resume, p->keys.data + p->offs[n - 1], p->lens[n - 1]);
    }
    return BACKEND_OK;
}

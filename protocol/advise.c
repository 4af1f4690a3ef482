/* advise.c - what the Table service tells the partition advisor
 * (advisor/advisor.h) about each answered entity operation: the table, the
 * partition, and for queries the shape the filter planner found. Called
 * only when svc->advisor is set (the admin listener is on). */
#include <string.h>

#include "advisor/advisor.h"
#include "core/clock.h"
#include "protocol/ctx.h"
#include "filter/filter.h"
#include "protocol/service.h"

/* The advisor's key for table name[0..n) and partition pk of request c. */
static struct advisor_key key_of(const struct req_ctx *c, const char *table, size_t table_len,
                                 const char *pk, size_t pk_len)
{
    struct advisor_key k = {(unsigned)(c->account - c->svc->set.accounts), table, table_len, pk,
                            pk_len};
    return k;
}

void service_advise_read(struct req_ctx *c, uint64_t now_us)
{
    struct advisor_key k = key_of(c, c->table, c->table_len, c->pk, c->pk_len);
    advisor_read(c->svc->advisor, &k, now_us);
}

void service_advise_writes(struct req_ctx *c, const struct entity_write *w, size_t n)
{
    struct advisor *adv = c->svc->advisor;
    if (!adv || n == 0)
        return;
    uint64_t now = clock_mono_us();
    int batch = c->op == OP_BATCH;
    for (size_t i = 0; i < n; i++) {
        struct advisor_key k = key_of(c, w[i].t->name, w[i].t->name_len, w[i].e.pk, w[i].e.pk_len);
        advisor_write(adv, &k, optable_get(w[i].op)->advise, w[i].created, batch, now);
    }
    if (batch) {
        struct advisor_key k = key_of(c, w[0].t->name, w[0].t->name_len, w[0].e.pk, w[0].e.pk_len);
        advisor_batch(adv, &k, n, now);
    }
}

/* The query shape of plan p; *pk names the partition of a point or
 * partition query. */
static enum advisor_shape plan_shape(const struct filter_plan *p, const char **pk, size_t *pk_len)
{
    *pk = NULL;
    *pk_len = 0;
    if (p->n == 0)
        return ADVISOR_POINT;  /* nothing can match: nothing is read */
    if (filter_plan_is_full(p))
        return ADVISOR_SCAN;
    for (size_t i = 0; i < p->n; i++) {
        const struct filter_range *r = &p->ranges[i];
        if (r->lo.unbounded || r->hi.unbounded || r->lo.pk_len != r->hi.pk_len ||
            memcmp(r->lo.pk, r->hi.pk, r->lo.pk_len) != 0 ||
            (i > 0 && (r->lo.pk_len != *pk_len || memcmp(r->lo.pk, *pk, *pk_len) != 0))) {
            *pk = NULL;
            *pk_len = 0;
            return ADVISOR_RANGE;
        }
        *pk = r->lo.pk;
        *pk_len = r->lo.pk_len;
    }
    return p->n == 1 && filter_range_is_point(&p->ranges[0]) ? ADVISOR_POINT : ADVISOR_PARTITION;
}

void service_advise_query(struct req_ctx *c, const struct table_info *t,
                          const struct filter_plan *plan, uint64_t examined, uint64_t returned)
{
    const char *pk;
    size_t pk_len;
    enum advisor_shape shape = plan_shape(plan, &pk, &pk_len);
    const struct query_param *f = url_query_get(c->qp, c->nqp, "$filter");
    struct advisor_key k = key_of(c, t->name, t->name_len, pk, pk_len);
    advisor_query(c->svc->advisor, &k, shape, examined, returned, f ? f->value : NULL,
                  f ? f->value_len : 0, clock_mono_us());
}

void service_advise_throttled(struct req_ctx *c, const char *table, size_t table_len,
                              const char *pk, size_t pk_len)
{
    if (!table)
        return;
    struct advisor_key k = key_of(c, table, table_len, pk, pk_len);
    advisor_throttled(c->svc->advisor, &k, clock_mono_us());
}

/* filter_keys.c - a plan's logical key ranges as backend key intervals
 * (the table in filter.h; key layout in keys.h). Kept apart from
 * filter_plan.c so that planning itself knows nothing of backend keys. */
#include "filter/filter.h"
#include "store/keys.h"

/* Lower end of r as the first backend key of the interval. */
static void lower_key(const struct filter_bound *lo, uint64_t id, struct buf *b)
{
    if (lo->unbounded) {
        keys_entity_table_prefix(b, id);
    } else if (!lo->has_rk) {
        keys_entity_partition_prefix(b, id, lo->pk, lo->pk_len);
        if (!lo->inclusive)
            keys_prefix_end(b); /* ends in 0x00: always succeeds */
    } else {
        keys_entity(b, id, lo->pk, lo->pk_len, lo->rk, lo->rk_len);
        if (!lo->inclusive)
            buf_put_u8(b, 0); /* the smallest key after (pk, rk) */
    }
}

/* Upper end of r as the first backend key past the interval. */
static void upper_key(const struct filter_bound *hi, uint64_t id, struct buf *b)
{
    if (hi->unbounded) {
        keys_entity_table_prefix(b, id);
        keys_prefix_end(b); /* starts with 'e': always succeeds */
    } else if (!hi->has_rk) {
        keys_entity_partition_prefix(b, id, hi->pk, hi->pk_len);
        if (hi->inclusive)
            keys_prefix_end(b);
    } else {
        keys_entity(b, id, hi->pk, hi->pk_len, hi->rk, hi->rk_len);
        if (hi->inclusive)
            buf_put_u8(b, 0);
    }
}

void filter_range_keys(const struct filter_range *r, uint64_t table_id, struct buf *start,
                       struct buf *end)
{
    lower_key(&r->lo, table_id, start);
    upper_key(&r->hi, table_id, end);
}

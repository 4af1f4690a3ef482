/* advisor_int.h - the partition advisor's data, shared by its files:
 * advisor.c (collection), advisor_find.c (findings), advisor_json.c
 * (GET /advisor and the metrics). Not for other modules. */
#ifndef TABLED_ADVISOR_INT_H
#define TABLED_ADVISOR_INT_H
#include "advisor/advisor.h"

#define ADVISOR_BUCKETS (2 * ADVISOR_SKETCH)  /* hash chains of the sketch */
#define ADVISOR_HLL 1024                       /* HyperLogLog registers */
#define ADVISOR_BATCH_SIZES 4                  /* 1, 2-10, 11-50, 51-100 */

/* One counter of the Space-Saving sketch: a partition. */
struct advisor_part {
    uint64_t hash;
    int16_t next;                 /* chain in the table's buckets, -1 = end */
    uint8_t name_len;
    uint8_t truncated;            /* the key is longer than name[] */
    char name[ADVISOR_NAME_MAX];
    uint64_t count;               /* entities (estimate: true + at most err) */
    uint64_t err;                 /* count inherited from an evicted counter */
    uint64_t requests, reads, writes;
    uint64_t single_writes;       /* writes outside batches */
    uint64_t stream_writes;       /* single writes close after the previous one */
    uint64_t throttled;
    int64_t size;                 /* entities created - deleted while watched */
    uint32_t slot_count;          /* entities in the current interval */
    uint32_t peak_slot;           /* most entities in one finished interval */
    uint64_t last_single_us;
};

/* One finished interval of a table. */
struct advisor_slot {
    uint32_t entities, requests;
    uint32_t shapes[ADVISOR_SHAPES];
    struct {
        uint32_t n;
        uint8_t name_len;
        char name[ADVISOR_NAME_MAX];
    } top[ADVISOR_SLOT_TOP];
    uint8_t ntop;
};

struct advisor_qstat {
    uint64_t n, examined, returned;
};

struct advisor_table {
    uint64_t hash;
    unsigned account;
    char name[64];
    size_t name_len;
    uint64_t req[ADVISOR_OPS], ent[ADVISOR_OPS];
    uint64_t entities;            /* all entities touched (the shares' base) */
    struct advisor_qstat shape[ADVISOR_SHAPES];
    char example[ADVISOR_SHAPES][ADVISOR_FILTER_MAX];  /* last $filter per shape */
    struct {
        char filter[ADVISOR_FILTER_MAX];
        enum advisor_shape shape;
        uint64_t examined, returned;
        double ratio;
    } worst;                      /* least efficient query page */
    uint64_t throttled, throttled_account;
    uint64_t batches, batch_entities, batch_sizes[ADVISOR_BATCH_SIZES];
    uint64_t single_writes;
    /* order of created entities' PartitionKeys */
    uint64_t creates, at_end, new_max, at_start, new_min;
    /* intervals in which the largest (smallest) key moved, and the last
     * such interval (slots_done + 1; 0: none yet): a sorted seed load moves
     * the keys in a few intervals, an append-only pattern in many */
    uint64_t max_intervals, min_intervals, max_moved_in, min_moved_in;
    int have_range;
    uint8_t min_len, max_len;
    char min[ADVISOR_KEY_MAX], max[ADVISOR_KEY_MAX];
    /* partitions */
    uint8_t hll[ADVISOR_HLL];
    int16_t bucket[ADVISOR_BUCKETS];
    struct advisor_part part[ADVISOR_SKETCH];
    int nparts;
    /* the current interval and the ring of finished ones */
    uint32_t cur_entities, cur_requests, cur_shapes[ADVISOR_SHAPES];
    struct advisor_slot ring[ADVISOR_SLOTS];
};

struct advisor {
    struct advisor_limits lim;
    char accounts[ADVISOR_MAX_ACCOUNTS][64];
    struct advisor_table *tables[ADVISOR_MAX_TABLES];
    size_t ntables;
    struct advisor_table *last;   /* the table of the previous call */
    uint64_t untracked;           /* operations on tables beyond the cap */
    uint64_t start_us;            /* counting since */
    uint64_t slot_start_us;       /* start of the current interval */
    uint64_t slot_us;             /* interval length */
    uint64_t slots_done;          /* finished intervals (ring index = n % SLOTS) */
    struct advisor_finding found[ADVISOR_MAX_FINDINGS];  /* scratch of the reports */
};

/* advisor.c: closes the intervals that ended before now. */
void advisor_tick(struct advisor *adv, uint64_t now_us);
/* advisor_json.c: appends s[0..n) as a JSON string. */
void advisor_json_string(struct buf *b, const char *s, size_t n);

#endif

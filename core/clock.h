/* clock.h - the monotonic clock every layer measures with (latency,
 * throttle buckets, the advisor's windows, query page budgets, backend
 * retry backoff): one time base, so their figures can be compared. */
#ifndef TABLED_CLOCK_H
#define TABLED_CLOCK_H
#include <stdint.h>

/* CLOCK_MONOTONIC in microseconds. */
uint64_t clock_mono_us(void);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t clock_mono_ms(void);

#endif

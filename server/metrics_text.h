/* metrics_text.h - the metrics' Prometheus text form (admin /metrics). */
#ifndef TABLED_METRICS_TEXT_H
#define TABLED_METRICS_TEXT_H

#include "core/buf.h"
#include "core/metrics.h"

/* Appends the whole exposition text: the metrics' own series, then those
 * of metrics_add_series, each family with its # HELP and # TYPE lines. */
void metrics_render(const struct metrics *m, struct buf *out);

#endif

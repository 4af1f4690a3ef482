/* advise.h - `tabled advise`: fetches GET /advisor from a running tabled's
 * admin listener and prints the findings as a text report.
 *
 *   tabled advise [--admin URL] [--fail-on info|warning|critical|never]
 *
 * URL defaults to $TABLED_ADMIN, else http://127.0.0.1:10003. Exit status:
 * 0 no finding of the --fail-on severity or above (default warning), 1 at
 * least one, 2 usage error or the admin listener could not be read. */
#ifndef TABLED_ADVISE_H
#define TABLED_ADVISE_H
#include <stddef.h>
#include <stdio.h>

#include <yajl/yajl_tree.h>

int advise_main(int argc, char **argv);
/* Reads an advisor document (GET /advisor's body, body[0..n), no NUL
 * needed) as `tabled advise` does: strict JSON (UTF-8 checked), nesting
 * bounded by JSONWALK_MAX_DEPTH before any tree is built, an object with a
 * "findings" array. The tree (yajl_tree_free it), or NULL with a reason. */
yajl_val advise_read(const char *body, size_t n, char *err, size_t errlen);
/* Prints the text report of doc (from advise_read) to out; returns the
 * number of findings of severity rank >= fail_on (0 info .. 3 never). */
int advise_report(FILE *out, yajl_val doc, const char *url, int fail_on);

#endif

/* version.c - the known service versions and the version a request
 * gets (version.h, doc/protocol.md, Service versions). */
#include "protocol/version.h"

#include <string.h>

/* Service versions accepted in x-ms-version (doc/protocol.md, Service versions), ascending. */
static const char *const versions[] = {
    "2009-04-14", "2009-07-17", "2009-09-19", "2011-08-18", "2012-02-12",
    "2013-08-15", "2014-02-14", "2015-02-21", "2015-04-05", "2015-07-08",
    "2015-12-11", "2016-05-31", "2017-04-17", "2017-07-29", "2017-11-09",
    "2018-02-01", "2018-03-28", "2018-06-17", "2018-11-09", "2019-02-02",
    "2019-07-07", "2019-10-10", "2019-12-12", "2020-02-10", "2020-04-08",
    "2020-06-12", "2020-08-04", "2020-10-02", "2020-12-06", "2021-02-12",
    "2021-04-10", "2021-06-08", "2021-08-06", "2021-10-04", "2021-12-02",
    "2022-11-02", "2023-01-03", "2023-05-03", "2023-08-03", "2023-11-03",
    "2024-02-04", "2024-05-04", "2024-08-04", "2024-11-04", "2025-01-05",
    "2025-05-05", "2025-07-05", "2025-11-05", "2026-02-06", "2026-04-06",
    "2026-06-06",
};
#define NVERSIONS (sizeof versions / sizeof versions[0])

/* 1 when v is a well-formed version: YYYY-MM-DD naming a calendar day. */
static int version_well_formed(const char *v)
{
    if (strlen(v) != 10 || v[4] != '-' || v[7] != '-')
        return 0;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
            return 0;
    /* digits only (checked above): no atoi, which costs a locale lookup */
    int y = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 + (v[3] - '0');
    int m = (v[5] - '0') * 10 + (v[6] - '0'), d = (v[8] - '0') * 10 + (v[9] - '0');
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return !(m == 2 && d == 29 && !leap);
}

/* v itself when known, else the newest known version older than v (a
 * binary search); version_behaviour() without the memo. */
static const char *version_lookup(const char *v, int strict)
{
    if (!v || !version_well_formed(v) || strcmp(v, versions[0]) < 0)
        return NULL;
    size_t lo = 1, hi = NVERSIONS;   /* the answer i: versions[i - 1] <= v */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(versions[mid], v) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    /* versions[i - 1] <= v < versions[i] */
    if (strcmp(versions[i - 1], v) == 0)
        return versions[i - 1];
    return strict ? NULL : versions[i - 1];
}

/* See version.h. */
const char *version_behaviour(struct version_memo *memo, const char *v, int strict)
{
    if (memo && v && memo->v[0] && strcmp(v, memo->v) == 0)
        return memo->answer[strict != 0];
    const char *lenient = version_lookup(v, 0);
    if (memo && v && lenient && strlen(v) < sizeof memo->v) {
        strcpy(memo->v, v);
        memo->answer[0] = lenient;
        memo->answer[1] = version_lookup(v, 1);
    }
    return strict ? version_lookup(v, 1) : lenient;
}

int version_sas_strict(const char *v)
{
    return version_behaviour(NULL, v, 1) != NULL;
}

int version_sas_lenient(const char *v)
{
    return version_behaviour(NULL, v, 0) != NULL;
}

const char *version_newest(void)
{
    return versions[NVERSIONS - 1];
}

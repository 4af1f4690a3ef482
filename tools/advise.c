/* advise.c - `tabled advise` (see advise.h): GET /advisor through the
 * tools' HTTP client (tools/httpc.h), and the text report. */
#include "tools/advise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yajl/yajl_tree.h>

#include "core/buf.h"
#include "core/jsonwalk.h"
#include "tools/httpc.h"

#define ADVISE_MAX_BODY (64u << 20)
#define ADVISE_TIMEOUT_S 15
#define WRAP 76

/* Member name of object v, or NULL. */
static yajl_val get(yajl_val v, const char *name)
{
    const char *path[] = {name, NULL};
    return v ? yajl_tree_get(v, path, yajl_t_any) : NULL;
}

static const char *str(yajl_val v, const char *name)
{
    yajl_val m = get(v, name);
    return YAJL_IS_STRING(m) ? YAJL_GET_STRING(m) : NULL;
}

/* The string member, or "?" (for printing). */
static const char *text(yajl_val v, const char *name)
{
    const char *s = str(v, name);
    return s ? s : "?";
}

static double num(yajl_val v, const char *name)
{
    yajl_val m = get(v, name);
    return YAJL_IS_NUMBER(m) ? YAJL_GET_DOUBLE(m) : 0;
}

/* Prints text wrapped at WRAP columns, each line starting with indent;
 * the first line starts with label instead (same width). */
static void wrapped(FILE *out, const char *label, const char *indent, const char *text)
{
    size_t ind = strlen(indent), col = ind;
    fputs(label, out);
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (col > ind && col + 1 + w > WRAP) {
            fprintf(out, "\n%s", indent);
            col = ind;
        } else if (col > ind) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, w, out);
        col += w;
        p += w;
    }
    fputc('\n', out);
}

static int severity_rank(const char *s)
{
    if (!s)
        return -1;
    if (!strcmp(s, "info"))
        return 0;
    if (!strcmp(s, "warning"))
        return 1;
    if (!strcmp(s, "critical"))
        return 2;
    if (!strcmp(s, "never"))
        return 3;
    return -1;
}

yajl_val advise_read(const char *body, size_t n, char *err, size_t errlen)
{
    /* yajl_tree builds and frees its tree recursively: the nesting is
       bounded first, as for every JSON body the server reads (a document
       within the bound holds no raw NUL either, so the tree sees it all). */
    char why[200] = "";
    int rc = jsonwalk_parse(NULL, NULL, body, n, JSONWALK_MAX_DEPTH, 0, why, sizeof why);
    if (rc != JSONWALK_OK) {
        snprintf(err, errlen, "%s", why[0] ? why : "malformed JSON");
        return NULL;
    }
    char *z = malloc(n + 1);
    if (!z) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(z, body, n);
    z[n] = '\0';
    yajl_val doc = yajl_tree_parse(z, why, sizeof why);
    free(z);
    if (!doc || !YAJL_IS_ARRAY(get(doc, "findings"))) {
        snprintf(err, errlen, "%s", doc ? "no findings array" : "malformed JSON");
        yajl_tree_free(doc);
        return NULL;
    }
    return doc;
}

int advise_report(FILE *out, yajl_val doc, const char *url, int fail_on)
{
    yajl_val findings = get(doc, "findings"), tables = get(doc, "tables");
    size_t nf = YAJL_IS_ARRAY(findings) ? findings->u.array.len : 0;
    int count[3] = {0, 0, 0}, failing = 0;
    for (size_t i = 0; i < nf; i++) {
        int r = severity_rank(str(findings->u.array.values[i], "severity"));
        if (r >= 0 && r < 3)
            count[r]++;
        if (r >= fail_on)
            failing++;
    }
    fprintf(out, "tabled partition advisor: %s\n", url);
    fprintf(out, "%zu finding%s (%d critical, %d warning, %d info) in %.0f s of traffic\n", nf,
           nf == 1 ? "" : "s", count[2], count[1], count[0], num(doc, "elapsed_s"));
    for (size_t i = 0; i < nf; i++) {
        yajl_val f = findings->u.array.values[i];
        const char *sev = str(f, "severity"), *part = str(f, "partition");
        char up[16];
        snprintf(up, sizeof up, "%s", sev ? sev : "?");
        for (char *c = up; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        fprintf(out, "\n%-9s %s  %s/%s", up, text(f, "kind"), text(f, "account"), text(f, "table"));
        if (part)
            fprintf(out, "  partition '%s'", part);
        fputc('\n', out);
        wrapped(out, "  ", "  ", text(f, "summary"));
        wrapped(out, "  Why: ", "       ", text(f, "reason"));
        wrapped(out, "  Fix: ", "       ", text(f, "fix"));
    }
    size_t nt = YAJL_IS_ARRAY(tables) ? tables->u.array.len : 0;
    if (nt)
        fprintf(out, "\nTables:\n");
    for (size_t i = 0; i < nt; i++) {
        yajl_val t = tables->u.array.values[i];
        yajl_val q = get(t, "queries"), b = get(t, "batches");
        fprintf(out, "  %s/%s: %.0f entities touched, ~%.0f partitions; queries: %.0f point, %.0f "
               "partition, %.0f range, %.0f scan; %.0f batches, %.0f single writes\n",
               text(t, "account"), text(t, "table"), num(t, "entities"),
               num(t, "partitions_estimate"), num(get(q, "point"), "count"),
               num(get(q, "partition"), "count"), num(get(q, "range"), "count"),
               num(get(q, "scan"), "count"), num(b, "count"), num(t, "single_writes"));
    }
    if (!nf)
        fprintf(out, "\nNo findings: the partitions are used the way the service's guidance "
               "recommends.\n");
    return failing;
}

static void usage(FILE *f)
{
    fputs("usage: tabled advise [--admin URL] [--admin-token T]\n"
          "                     [--fail-on info|warning|critical|never]\n"
          "  Prints the partition advisor's findings of a running tabled (GET /advisor on\n"
          "  its admin listener; URL default $TABLED_ADMIN or http://127.0.0.1:10003).\n"
          "  The token (default $TABLED_ADMIN_TOKEN) is sent as a bearer token: a\n"
          "  listener off loopback with --admin-token set wants it for every request.\n"
          "  Exit status 1 when a finding of the --fail-on severity or above exists\n"
          "  (default warning), 2 when the report could not be read.\n",
          f);
}

int advise_main(int argc, char **argv)
{
    const char *url = getenv("TABLED_ADMIN");
    if (!url || !*url)
        url = "http://127.0.0.1:10003";
    const char *token = getenv("TABLED_ADMIN_TOKEN");
    int fail_on = 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        size_t n = strcspn(a, "=");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (a[n] == '=')
            v = a + n + 1;
        else if (i + 1 < argc)
            v = argv[i + 1];
        if (n == 7 && !strncmp(a, "--admin", 7) && v) {
            url = v;
        } else if (n == 13 && !strncmp(a, "--admin-token", 13) && v) {
            token = v;
        } else if (n == 9 && !strncmp(a, "--fail-on", 9) && v) {
            fail_on = severity_rank(v);
            if (fail_on < 0) {
                fprintf(stderr, "tabled advise: --fail-on expects info, warning, critical or "
                                "never, got '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "tabled advise: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (a[n] != '=')
            i++;
    }
    struct httpc_url u;
    char err[512];
    if (httpc_parse_url(url, &u) < 0) {
        fprintf(stderr, "tabled advise: --admin expects http://HOST:PORT, got '%s'\n", url);
        return 2;
    }
    struct httpc_req req = {.method = "GET", .target = "/advisor", .token = token,
                            .accept = "application/json", .timeout_s = ADVISE_TIMEOUT_S,
                            .max = ADVISE_MAX_BODY};
    struct httpc_answer ans;
    int rc = httpc_do(&u, &req, &ans, err, sizeof err);
    struct buf body = ans.body;
    if (rc == 0 && ans.table) {
        fprintf(stderr, "tabled advise: %s is the table port, not the admin listener; give "
                        "--admin the URL of the port set with --admin-port (default "
                        "http://127.0.0.1:10003)\n", url);
        buf_free(&body);
        return 2;
    }
    if (rc != 0 || ans.status != 200) {
        if (rc != 0)
            fprintf(stderr, "tabled advise: %s\n", err);
        else
            fprintf(stderr, "tabled advise: GET %s/advisor answered %d: %.300s\n", url,
                    ans.status, body.data ? body.data : "");
        buf_free(&body);
        return 2;
    }
    char perr[256] = "";
    yajl_val doc = advise_read(body.data ? body.data : "", body.len, perr, sizeof perr);
    buf_free(&body);
    if (!doc) {
        fprintf(stderr, "tabled advise: %s/advisor did not answer the advisor's JSON (%s); "
                        "is that URL a tabled admin listener?\n", url, perr);
        return 2;
    }
    int failing = advise_report(stdout, doc, url, fail_on);
    yajl_tree_free(doc);
    fflush(stdout);
    return failing ? 1 : 0;
}

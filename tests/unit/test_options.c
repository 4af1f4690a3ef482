/* test_options.c - the table of settings (server/config_options.c) and the
 * machinery that reads it (core/options.c): every row is well formed, its
 * default is a value its own type accepts, --help names every setting, and
 * every setting is documented in conf/tabled.conf, doc/tabled.1,
 * doc/tabled.conf.5 and doc/configuration.md's option tables, so the documentation
 * cannot drift from the code. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config_options.h"
#include "tests/unit/tap.h"

/* Reads a file of the source tree (TOP_SRCDIR, default "."); NULL if absent. */
static char *read_src(const char *rel)
{
    const char *top = getenv("TOP_SRCDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", top && *top ? top : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

/* 1 when the extended regular expression re matches somewhere in text
 * (REG_NEWLINE: ^ and $ match at line ends). */
static int has(const char *text, const char *re)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0)
        return 0;
    int found = regexec(&rx, text, 0, NULL, 0) == 0;
    regfree(&rx);
    return found;
}

/* Writes name with each '-' as roff's "\\-" (escaped for a regex: \\\\-). */
static void roff_name(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (; *name && n + 5 < cap; name++) {
        if (*name == '-') {
            memcpy(out + n, "\\\\-", 3);
            n += 3;
        } else {
            out[n++] = *name;
        }
    }
    out[n] = '\0';
}

/* Rows are well formed and their defaults apply cleanly. */
static void test_rows(void)
{
    for (size_t i = 0; i < config_noptions; i++) {
        const struct opt *o = &config_options[i];
        char what[160];
        snprintf(what, sizeof what, "row %s: help line, known name once", o->name);
        TEST_CHECK(o->help && *o->help && opt_find(config_options, config_noptions, o->name) == o,
                   what);
        if (o->type == OPT_CUSTOM) {
            snprintf(what, sizeof what, "row %s: custom row has a setter", o->name);
            TEST_CHECK(o->set != NULL, what);
        }
        if (o->type == OPT_BOOL || o->type == OPT_ENUM || o->type == OPT_INT) {
            snprintf(what, sizeof what, "row %s: an int (or long long) field", o->name);
            TEST_CHECK(o->size == sizeof(int) ||
                           (o->type == OPT_INT && o->size == sizeof(long long)), what);
        }
        if (o->type == OPT_LIST || o->type == OPT_STRING) {
            snprintf(what, sizeof what, "row %s: stored in struct config", o->name);
            TEST_CHECK(o->size > 0 && o->offset + o->size <= sizeof(struct config), what);
        }
        if (o->def) {
            struct config cfg;
            char err[512] = "";
            memset(&cfg, 0, sizeof cfg);
            snprintf(what, sizeof what, "row %s: default '%s' is accepted", o->name, o->def);
            TEST_CHECK(opt_apply(o, &cfg, o->def, err, sizeof err) == 0, what);
        }
    }
    struct config cfg;
    char err[512] = "";
    memset(&cfg, 0, sizeof cfg);
    TEST_EQ_INT(opt_defaults(config_options, config_noptions, &cfg, err, sizeof err), 0,
                "opt_defaults applies every default");
    TEST_EQ_INT(cfg.admin_port, -1, "admin-port default 'off' is -1");
    TEST_EQ_INT(cfg.max_body_bytes, 4 * 1024 * 1024, "max-body-bytes default 4M");
    TEST_EQ_INT(cfg.dev_account, -1, "dev-account default auto through its setter");
}

/* The generic setters: range, names, lists and their messages. */
static void test_setters(void)
{
    struct config cfg;
    char err[512];
    memset(&cfg, 0, sizeof cfg);
    const struct opt *port = opt_find(config_options, config_noptions, "port");
    TEST_CHECK(opt_apply(port, &cfg, "65536", err, sizeof err) == -1 &&
                   strcmp(err, "--port expects a port number 0-65535, got '65536'") == 0,
               "int out of range: message");
    const struct opt *lv = opt_find(config_options, config_noptions, "log-level");
    TEST_CHECK(opt_apply(lv, &cfg, "WARNING", err, sizeof err) == 0 && cfg.log_level == LOG_WARN,
               "a hidden enum synonym is accepted, case-insensitively");
    TEST_CHECK(opt_apply(lv, &cfg, "loud", err, sizeof err) == -1 &&
                   strcmp(err, "--log-level expects error|warn|info|debug, got 'loud'") == 0,
               "enum message lists the visible names only");
    const struct opt *bo = opt_find(config_options, config_noptions, "backend-option");
    TEST_CHECK(opt_apply(bo, &cfg, "=x", err, sizeof err) == -1 && strstr(err, "NAME=VALUE"),
               "a pair list refuses a value without a name");
    int ok = 1;
    for (int i = 0; i < CONFIG_MAX_BACKEND_OPTIONS; i++)
        ok &= opt_apply(bo, &cfg, "a=b", err, sizeof err) == 0;
    TEST_CHECK(ok && cfg.nbackend_options == CONFIG_MAX_BACKEND_OPTIONS, "list fills up");
    TEST_CHECK(opt_apply(bo, &cfg, "a=b", err, sizeof err) == -1 && strstr(err, "at most 16"),
               "list capacity enforced");
    TEST_CHECK(opt_find(config_options, config_noptions, "data-dir") ==
                   opt_find(config_options, config_noptions, "data"),
               "alias data-dir finds data");
    const struct opt *sz = opt_find(config_options, config_noptions, "max-header-bytes");
    TEST_CHECK(opt_apply(sz, &cfg, "3G", err, sizeof err) == 0 &&
                   cfg.max_header_bytes == 3ULL * 1024 * 1024 * 1024,
               "size with G suffix");
}

/* --help lists every setting with its argument and default. */
static void test_usage(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    opt_usage(config_options, config_noptions, f);
    fclose(f);
    int missing = 0, wide = 0;
    for (size_t i = 0; i < config_noptions; i++) {
        char re[160];
        snprintf(re, sizeof re, "^  --%s( |\\[|$)", config_options[i].name);
        if (!has(buf, re)) {
            printf("#   --help lacks --%s\n", config_options[i].name);
            missing++;
        }
    }
    for (char *line = buf; *line;) {
        size_t n = strcspn(line, "\n");
        wide += n > 80;
        line += n + (line[n] == '\n');
    }
    TEST_EQ_INT(missing, 0, "--help starts a line with every setting");
    TEST_EQ_INT(wide, 0, "--help lines fit in 80 columns");
    TEST_CHECK(strstr(buf, "--port N                HTTP port, 0 = any free port (default 10002)"),
               "--help: flag, argument, help and default from the row");
    TEST_CHECK(strstr(buf, "--throttle[=on|off]") && strstr(buf, "--access-log on|off"),
               "--help: bool forms");
    free(buf);
}

/* Every setting is documented: example file, both man pages, doc/configuration.md. */
static void test_documented(void)
{
    char *conf = read_src("conf/tabled.conf"), *man1 = read_src("doc/tabled.1");
    char *man5 = read_src("doc/tabled.conf.5"), *readme = read_src("doc/configuration.md");
    TEST_CHECK(conf && man1 && man5 && readme, "the four documents are readable (TOP_SRCDIR)");
    if (!conf || !man1 || !man5 || !readme)
        return;
    for (size_t i = 0; i < config_noptions; i++) {
        const struct opt *o = &config_options[i];
        char re[256], rn[160], what[200];
        int file_key = o->type != OPT_SWITCH && o->type != OPT_FILE;
        roff_name(o->name, rn, sizeof rn);
        /* a flag of tabled(1): \-\-name, not followed by more of a name */
        snprintf(re, sizeof re, "\\\\-\\\\-%s([^a-z\\\\]|\\\\f|$)", rn);
        snprintf(what, sizeof what, "tabled(1) documents --%s", o->name);
        TEST_CHECK(has(man1, re), what);
        /* a row of doc/configuration.md's option tables: a line starting with | naming `--name */
        snprintf(re, sizeof re, "^\\|.*--%s([^a-z-]|$)", o->name);
        snprintf(what, sizeof what, "doc/configuration.md's option tables list --%s", o->name);
        TEST_CHECK(has(readme, re), what);
        if (!file_key)
            continue;
        /* conf/tabled.conf: "name = ..." (maybe commented out) or a [name ...] section */
        snprintf(re, sizeof re, "^(# ?)?(%s *=|\\[%s )", o->name, o->name);
        snprintf(what, sizeof what, "conf/tabled.conf shows %s", o->name);
        TEST_CHECK(has(conf, re), what);
        /* tabled.conf(5): a word of an entry's .B, .BI or .BR line (or "[name " section) */
        snprintf(re, sizeof re, "^\\.B[IR]? (.*[ \"\\[])?%s([ \",]|$)", rn);
        snprintf(what, sizeof what, "tabled.conf(5) documents %s", o->name);
        TEST_CHECK(has(man5, re), what);
    }
    free(conf);
    free(man1);
    free(man5);
    free(readme);
}

int main(void)
{
    test_rows();
    test_setters();
    test_usage();
    test_documented();
    return test_done();
}

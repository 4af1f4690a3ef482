/* reload.c - what SIGHUP does: re-reads the configuration the process
 * started with (same command line, the --config file read again), checks
 * it as start-up does, and when it is valid applies the settings that can
 * change while connections stay open; see doc/tabled.conf.5 (RELOADING).
 *
 * Runs on the loop thread between two events, so no request sees half of
 * a change. Everything that can fail (parsing, the advisor thresholds,
 * the new TLS context, opening the log file) is done before anything is
 * applied; applying cannot fail. */
#include "server/reload.h"

#include <stdio.h>
#include <string.h>

#include "advisor/advisor.h"
#include "server/config_options.h"
#include "core/log.h"
#include "server/admin.h"
#include "server/server.h"
#include "server/tls.h"

/* Settings applied live; every other one that changed is logged as
 * needing a restart. Accounts are handled apart (reload_accounts). */
static const char *const live_settings[] = {
    "log-level", "log-file", "access-log", "tls-cert", "tls-key",
    "admin-token", "admin-token-file", "admin-allowed-host", NULL};

static int is_live(const char *name)
{
    for (size_t i = 0; live_settings[i]; i++)
        if (strcmp(live_settings[i], name) == 0)
            return 1;
    return 0;
}

/* 1 when the fault rules of a and b are the same settings in the same
 * order (where in the file they were is not compared). */
static int same_faults(const struct config *a, const struct config *b)
{
    if (a->nfaults != b->nfaults || a->fault_seed != b->fault_seed)
        return 0;
    for (size_t i = 0; i < a->nfaults; i++) {
        const struct config_fault_item *x = &a->faults[i], *y = &b->faults[i];
        if (strcmp(x->rule, y->rule) || strcmp(x->key, y->key) || strcmp(x->value, y->value))
            return 0;
    }
    return 1;
}

/* Logs each setting that differs between cur and next and cannot change
 * live ("needs a restart"); the running value stays. */
static void note_restart_settings(const struct config *cur, const struct config *next)
{
    const char *c = (const char *)cur, *n = (const char *)next;
    for (size_t i = 0; i < config_noptions; i++) {
        const struct opt *o = &config_options[i];
        if (!o->size || is_live(o->name))
            continue;
        size_t len = o->size;
        if (o->type == OPT_LIST) {
            size_t cn, nn;
            memcpy(&cn, c + o->count_offset, sizeof cn);
            memcpy(&nn, n + o->count_offset, sizeof nn);
            if (cn == nn && memcmp(c + o->offset, n + o->offset, len * cn) == 0)
                continue;
        } else if (memcmp(c + o->offset, n + o->offset, len) == 0) {
            continue;
        }
        log_warn("reload: %s changed; it needs a restart (the running value stays)", o->name);
    }
    if (!same_faults(cur, next))
        log_warn("reload: the fault rules changed; they need a restart (or change them live "
                 "through the admin listener's /faults)");
    if (cur->dev_account != next->dev_account)
        log_warn("reload: dev-account changed; which accounts are served changes at a restart");
    if (!cur->log_file[0] && next->log_file[0])
        ; /* starting a log file is live */
    else if (cur->log_file[0] && !next->log_file[0])
        log_warn("reload: log-file was removed; going back to stderr and stdout needs a "
                 "restart (the log file %s stays in use)", cur->log_file);
}

/* Applies the keys of next's accounts to cur's accounts of the same name,
 * in place (requests hold pointers to them, and their order is what
 * counters and buckets are indexed by). An account no longer configured
 * loses both keys, so every request signed for it fails authentication at
 * once; one added is served after a restart. Returns how many accounts
 * had their keys changed or removed. */
static int reload_accounts(struct config *cur, const struct config *next)
{
    int changed = 0;
    for (size_t i = 0; i < cur->naccounts; i++) {
        struct account_cfg *a = &cur->accounts[i];
        const struct account_cfg *b = config_find_account(next, a->name);
        if (!b && (a->key1_len || a->key2_len)) {
            log_warn("reload: account %s is no longer configured: its keys are revoked now, "
                     "and a restart stops serving it", a->name);
        }
        if (!b) {
            if (a->key1_len || a->key2_len)
                changed++;
            explicit_bzero(a->key1, sizeof a->key1);
            explicit_bzero(a->key2, sizeof a->key2);
            a->key1_len = a->key2_len = 0;
            continue;
        }
        if (a->key1_len == b->key1_len && a->key2_len == b->key2_len &&
            memcmp(a->key1, b->key1, b->key1_len) == 0 &&
            memcmp(a->key2, b->key2, b->key2_len) == 0)
            continue;
        explicit_bzero(a->key1, sizeof a->key1);
        explicit_bzero(a->key2, sizeof a->key2);
        memcpy(a->key1, b->key1, b->key1_len);
        memcpy(a->key2, b->key2, b->key2_len);
        a->key1_len = b->key1_len;
        a->key2_len = b->key2_len;
        changed++;
    }
    for (size_t i = 0; i < next->naccounts; i++)
        if (!config_find_account(cur, next->accounts[i].name))
            log_warn("reload: account %s was added; it is served after a restart",
                     next->accounts[i].name);
    return changed;
}

/* Reads and checks the configuration as start-up did into next. Returns
 * 0, or -1 with a message in err. */
static int reload_read(const struct reload *r, struct config *next, char *err, size_t errlen)
{
    config_defaults(next);
    int rc = config_parse_args(next, r->argc, r->argv, err, errlen);
    if (rc != 0) {
        if (rc > 0)
            snprintf(err, errlen, "the command line asks for --help or --version");
        return -1;
    }
    struct advisor_limits alim;
    advisor_limits_default(&alim);
    for (size_t i = 0; i < next->nadvisor_options; i++)
        if (advisor_limit_set(&alim, next->advisor_options[i], err, errlen) < 0)
            return -1;
    if (r->az) {
        /* azurite-table: its accounts and its decrypted TLS files */
        azurite_cli_apply(r->az, next);
        memcpy(next->tls_cert, r->cfg->tls_cert, sizeof next->tls_cert);
        memcpy(next->tls_key, r->cfg->tls_key, sizeof next->tls_key);
    }
    return 0;
}

void reload_run(void *arg)
{
    const struct reload *r = arg;
    struct config *cur = r->cfg;
    static struct config next;   /* large: not on the stack */
    char err[1024] = "";
    log_info("reload: SIGHUP received, reading the configuration again");
    if (reload_read(r, &next, err, sizeof err) < 0) {
        log_error("reload refused: %s; the running configuration stays in force", err);
        goto out;
    }
    /* the TLS context (from the new paths, or the same files read again) */
    SSL_CTX *ctx = NULL;
    if (cur->tls_port) {
        ctx = tls_ctx_new(next.tls_cert, next.tls_key, err, sizeof err);
        if (!ctx) {
            log_error("reload refused: %s; the running configuration stays in force", err);
            goto out;
        }
    }
    /* the log file last: opened first, switched to only when that worked */
    const char *log_path = next.log_file[0] ? next.log_file : cur->log_file;
    if (log_path[0] && log_open_file(log_path, err, sizeof err) < 0) {
        tls_ctx_free(ctx);
        log_error("reload refused: %s; the running configuration stays in force", err);
        goto out;
    }

    /* apply: nothing below fails */
    note_restart_settings(cur, &next);
    if (next.log_file[0])
        memcpy(cur->log_file, next.log_file, sizeof cur->log_file);
    cur->log_level = next.log_level;
    log_set_level(cur->log_level);
    cur->access_log = next.access_log;
    int keys = reload_accounts(cur, &next);
    if (ctx) {
        server_tls_swap(r->srv, ctx);
        memcpy(cur->tls_cert, next.tls_cert, sizeof cur->tls_cert);
        memcpy(cur->tls_key, next.tls_key, sizeof cur->tls_key);
    }
    if (r->admin) {
        memcpy(cur->admin_token, next.admin_token, sizeof cur->admin_token);
        memcpy(cur->admin_allowed_hosts, next.admin_allowed_hosts,
               sizeof cur->admin_allowed_hosts);
        cur->nadmin_allowed_hosts = next.nadmin_allowed_hosts;
        admin_set_access(r->admin, cur);
    }
    log_info("reload: configuration reloaded (keys changed for %d account(s)%s%s)", keys,
             ctx ? ", TLS certificate read again" : "", log_path[0] ? ", log file reopened" : "");
out:
    explicit_bzero(&next, sizeof next);
}

/* main.c - tabled: configuration, backend, service, throttling, fault
 * injection and metrics, listeners, run, stop. */
#include <config.h> /* the build's, not server/config.h */
#ifndef PACKAGE_VERSION
#error "configure's config.h was not included"
#endif

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

#include <event2/event.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/bopts.h"
#include "backends/postgres.h"   /* struct postgres_pools only: the backend is a module */
#include "core/coro.h"
#include "server/admin.h"
#include "store/host.h"
#include "store/kv.h"
#include "store/store.h"
#include "tools/advise.h"
#include "advisor/advisor.h"
#include "server/background.h"
#include "server/absent.h"
#include "server/azurite_cli.h"
#include "server/azurite_db.h"
#include "core/clock.h"
#include "core/coding.h"
#include "server/config.h"
#include "tools/dump.h"
#include "tools/dump_export.h"
#include "guard/fault.h"
#include "core/heap.h"
#include "core/log.h"
#include "core/sslload.h"
#include "core/metrics.h"
#include "server/notify.h"
#include "server/reload.h"
#include "server/handler.h"
#include "server/server.h"
#include "guard/throttle.h"
#include "core/version.h"
#include "protocol/service.h"

/* Durability names as printed and as the backend wants them. */
static const char *durability_name(enum durability d)
{
    return d == DURABILITY_SYNC ? "sync" : d == DURABILITY_NONE ? "none" : "batch";
}

static enum backend_durability backend_durability_of(enum durability d)
{
    return d == DURABILITY_SYNC ? BACKEND_DURABLE_SYNC
           : d == DURABILITY_NONE ? BACKEND_DURABLE_NONE
                                  : BACKEND_DURABLE_BATCH;
}

/* Backend events (recovery, compaction, failed syncs) go to the log. */
static void backend_log(enum backend_log_level level, const char *msg)
{
    log_msg(level == BACKEND_LOG_ERROR  ? LOG_ERROR
            : level == BACKEND_LOG_WARN ? LOG_WARN
                                        : LOG_INFO,
            "%s", msg);
}

/* "HOST:PORT" for a URL (IPv6 literals in brackets). */
static void url_authority(char *out, size_t cap, const char *host, int port)
{
    if (strchr(host, ':'))
        snprintf(out, cap, "[%s]:%d", host, port);
    else
        snprintf(out, cap, "%s:%d", host, port);
}

/* Raises the open-file limit towards what max_connections needs (the usual
 * soft limit of 1024 would make accept() fail long before the cap). */
static void raise_fd_limit(int max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        log_warn("open-file limit %llu is below --max-connections %d",
                 (unsigned long long)rl.rlim_cur, max_connections);
}

/* Builds the fault rules of [fault NAME] sections and --fault flags (the
 * settings of one name, wherever given, make one rule; later ones win).
 * NULL with a message on a bad rule. */
static struct fault_set *faults_from_config(const struct config *cfg, char *err, size_t errlen)
{
    struct fault_set *fs = fault_set_new(cfg->fault_seed);
    for (size_t i = 0; i < cfg->nfaults; i++) {
        const char *name = cfg->faults[i].rule;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(cfg->faults[j].rule, name) == 0;
        if (seen)
            continue;
        struct fault_rule r;
        char msg[512];
        fault_rule_init(&r, name);
        for (size_t j = i; j < cfg->nfaults; j++) {
            const struct config_fault_item *it = &cfg->faults[j];
            if (strcmp(it->rule, name) != 0)
                continue;
            if (fault_rule_set(&r, it->key, it->value, msg, sizeof msg) < 0) {
                if (it->line)
                    snprintf(err, errlen, "config line %d: [fault %s]: %s", it->line, name, msg);
                else
                    snprintf(err, errlen, "--fault %s: %s", name, msg);
                fault_set_free(fs);
                return NULL;
            }
        }
        if (fault_rule_check(&r, msg, sizeof msg) < 0 || fault_put(fs, &r) < 0) {
            snprintf(err, errlen, "fault rule %s: %s", name,
                     fault_count(fs) >= FAULT_MAX_RULES ? "too many rules" : msg);
            fault_set_free(fs);
            return NULL;
        }
    }
    return fs;
}

/* Token buckets of --throttle, keyed with a random hash seed. */
/* The service's settings from the configuration: the few, restart-only
 * values protocol/ reads (it never sees struct config). */
static struct service_settings service_settings_of(const struct config *cfg)
{
    return (struct service_settings){
        .accounts = cfg->accounts,
        .naccounts = cfg->naccounts,
        .auth = cfg->auth,
        .oauth_basic = cfg->oauth_basic,
        .strict_versions = cfg->strict_versions,
        .path_style_only = cfg->path_style_only,
        .scan_budget = cfg->scan_budget,
        .scan_budget_ms = cfg->scan_budget_ms,
        .throttle_batch_per_request = cfg->throttle_batch_per_request,
        .throttle_retry_after = cfg->throttle_retry_after,
    };
}

/* The tools' store options (tools/dump.h): tabled's own command line and
 * config file, read as for the server. The configuration is static: the
 * tool keeps pointers into it until it returns. */
static int dump_store_from_args(int argc, char **argv, struct dump_store *st, char *err,
                                size_t errlen)
{
    static struct config cfg;
    static const char *params[CONFIG_MAX_BACKEND_OPTIONS + 1];
    config_defaults(&cfg);
    int rc = config_parse_args(&cfg, argc, argv, err, errlen);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < cfg.nbackend_options; i++)
        params[i] = cfg.backend_options[i];
    params[cfg.nbackend_options] = NULL;
    *st = (struct dump_store){.backend = cfg.backend, .data_dir = cfg.data_dir,
                              .params = params, .durability = cfg.durability};
    return 0;
}

static struct throttle *throttle_from_config(const struct config *cfg)
{
    struct throttle_limits lim = {cfg->throttle_partition_rate, cfg->throttle_partition_burst,
                                  cfg->throttle_account_rate, cfg->throttle_account_burst};
    unsigned char seed[16];
    if (getrandom(seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&lim;
        memcpy(seed, &t, sizeof t);
        memcpy(seed + 8, &t, sizeof t);
    }
    return throttle_new(&lim, (unsigned)cfg->naccounts, seed);
}

/* 1 when a is devstoreaccount1 with the well-known key (public anyway). */
static int is_public_dev(const struct account_cfg *a)
{
    char key[CODING_B64_LEN(CONFIG_MAX_KEY_BYTES) + 1];
    coding_b64_encode(a->key1, a->key1_len, key);
    int pub = strcmp(a->name, DEV_ACCOUNT_NAME) == 0 && strcmp(key, DEV_ACCOUNT_KEY) == 0;
    explicit_bzero(key, sizeof key);
    return pub;
}

/* Prints the served accounts: "a, b (devstoreaccount1 off: ...)". */
static void print_accounts(const struct config *cfg)
{
    printf("Accounts:          ");
    for (size_t i = 0; i < cfg->naccounts; i++)
        printf("%s%s", i ? ", " : "", cfg->accounts[i].name);
    if (!config_find_account(cfg, DEV_ACCOUNT_NAME))
        printf(" (%s off; --dev-account on serves it)", DEV_ACCOUNT_NAME);
    else if (is_public_dev(config_find_account(cfg, DEV_ACCOUNT_NAME)))
        printf(" (the development account: its key is public)");
    printf("\n");
}

/* Prints the ready banner that scripts and tests wait for. The connection
 * string carries a key only for the development account, whose key is
 * public; another account's key is never printed. */
static void print_ready(const struct config *cfg, const struct backend_ops *ops,
                        const struct server *srv)
{
    const struct account_cfg *acct = &cfg->accounts[0];
    char auth[300];
    /* Without a plain listener (azurite --cert) the HTTPS port is the
     * endpoint, and the connection string names it. */
    int plain = server_port(srv) >= 0;
    const char *scheme = plain ? "http" : "https";
    url_authority(auth, sizeof auth, cfg->host, plain ? server_port(srv) : server_tls_port(srv));
    printf("tabled %s ready at %s://%s (backend %s, durability %s)\n", TABLED_VERSION, scheme,
           auth, ops->name, durability_name(cfg->durability));
    print_accounts(cfg);
    printf("Table endpoint:    %s://%s/%s\n", scheme, auth, acct->name);
    if (plain && server_tls_port(srv)) {
        char tauth[300];
        url_authority(tauth, sizeof tauth, cfg->host, server_tls_port(srv));
        printf("HTTPS endpoint:    https://%s/%s\n", tauth, acct->name);
    }
    if (is_public_dev(acct))
        printf("Connection string for %s: DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;"
               "TableEndpoint=%s://%s/%s;\n",
               acct->name, scheme, acct->name, DEV_ACCOUNT_KEY, scheme, auth, acct->name);
    else
        printf("Connection string for %s: DefaultEndpointsProtocol=%s;AccountName=%s;"
               "TableEndpoint=%s://%s/%s;  (add AccountKey=<key1 of %s>)\n",
               acct->name, scheme, acct->name, scheme, auth, acct->name, acct->name);
    if (server_admin_port(srv) >= 0) {
        char aauth[300];
        url_authority(aauth, sizeof aauth, cfg->admin_host, server_admin_port(srv));
        const char *note = !cfg->admin_token[0] ? ""
                           : config_addr_is_loopback(cfg->admin_host)
                               ? "  (mutating requests need the admin token)"
                               : "  (every request needs the admin token)";
        printf("Admin endpoint:    http://%s/metrics%s\n", aauth, note);
        printf("Advisor dashboard: http://%s/dashboard\n", aauth);
    }
    if (cfg->throttle)
        printf("Throttling:        %g entities/s per partition (burst %g), %g per account "
               "(burst %g)\n",
               cfg->throttle_partition_rate, cfg->throttle_partition_burst,
               cfg->throttle_account_rate, cfg->throttle_account_burst);
    fflush(stdout);
}

/* Azurite's readiness lines. azurite-table: the two its table service
 * prints when started alone (src/table/main.ts) and the one the combined
 * command prints (src/azurite.ts), since test frameworks wait for either.
 * azurite: the combined command's two lines for each of Blob, Queue and
 * Table, in that order. Called once every listener is bound and listening
 * (the kernel accepts connections from then on), so no line comes before
 * its port accepts. ports: the bound Blob and Queue ports. */
static void print_azurite_ready(const struct config *cfg, const struct azurite_cli *az,
                                const struct server *srv, const int ports[2])
{
    const char *scheme = az->https ? "https" : "http";
    char auth[300];
    if (az->all) {
        const char *hosts[2] = {az->blob_host, az->queue_host};
        const int asked[2] = {az->blob_port, az->queue_port};
        for (int i = 0; i < 2; i++) {
            const char *name = absent_name(i ? ABSENT_QUEUE : ABSENT_BLOB);
            url_authority(auth, sizeof auth, hosts[i], asked[i]);
            printf("Azurite %s service is starting at %s://%s\n", name, scheme, auth);
            url_authority(auth, sizeof auth, hosts[i], ports[i]);
            printf("Azurite %s service is successfully listening at %s://%s\n", name, scheme,
                   auth);
        }
    }
    url_authority(auth, sizeof auth, cfg->host,
                  az->https ? server_tls_port(srv) : server_port(srv));
    if (az->all) {
        char asked[300];
        url_authority(asked, sizeof asked, cfg->host, az->port);
        printf("Azurite Table service is starting at %s://%s\n", scheme, asked);
    } else {
        printf("Azurite Table service is starting on %s\n", auth);
        printf("Azurite Table service successfully started on %s\n", auth);
    }
    printf("Azurite Table service is successfully listening at %s://%s\n", scheme, auth);
    fflush(stdout);
}

/* azurite: opens the Blob and Queue ports (server/absent.h) on the loop
 * of srv, over HTTPS with --cert as Azurite's. ports receives the bound
 * ports. Returns 0, or -1 with a message saying which port and what to
 * do. */
static int open_absent_ports(struct server *srv, const struct azurite_cli *az, int ports[2],
                             char *err, size_t errlen)
{
    static struct req_handler handlers[2];
    const char *hosts[2] = {az->blob_host, az->queue_host};
    const int asked[2] = {az->blob_port, az->queue_port};
    for (int i = 0; i < 2; i++) {
        enum absent_service which = i ? ABSENT_QUEUE : ABSENT_BLOB;
        char msg[512];
        absent_handler(which, &handlers[i]);
        ports[i] = server_listen_extra(srv, hosts[i], asked[i], az->https, &handlers[i], msg,
                                       sizeof msg);
        if (ports[i] < 0) {
            snprintf(err, errlen,
                     "%s (the %s port, which answers that only the Table service is "
                     "provided): move it with --%sPort, or start azurite-table for the "
                     "Table service alone",
                     msg, absent_name(which), i ? "queue" : "blob");
            return -1;
        }
    }
    return 0;
}

/* True when tabled was started as azurite-table or azurite (the installed
 * links). */
static int started_as_azurite(const char *argv0)
{
    return azurite_cli_name(argv0) != AZURITE_NONE;
}

/* azurite(-table) -l DIR where Azurite left its table database and tabled has
 * no store yet: imports it (import set: --import-azurite-db) or says how.
 * Returns 0, or -1 when the import failed (the server does not start). */
static int azurite_db_check(const struct config *cfg, const char *prog, int import)
{
    char db[PATH_MAX + 64], store[PATH_MAX + 64], cmd[3 * PATH_MAX];
    if (strcmp(cfg->backend, "memory") == 0 ||
        !azurite_db_pending(cfg->data_dir, db, sizeof db, store, sizeof store))
        return 0;
    if (!import) {
        if (azurite_db_command(db, cfg->backend, store, cmd, sizeof cmd) == 0)
            fprintf(stderr,
                    "%s: %s is an Azurite table database; its tables are not "
                    "served. To serve them, stop %s and run:\n  %s\nthen start "
                    "again. (Started with " AZURITE_DB_FLAG " on a directory without "
                    "__tabled_table__, %s imports the database itself.)\n",
                    prog, db, prog, cmd, prog);
        return 0;
    }
    char *args[] = {"import", "--from-azurite", db, "--backend", (char *)cfg->backend,
                    "--data", store, NULL};
    fprintf(stderr, "%s: importing %s into %s\n", prog, db, store);
    if (dump_main(7, args, dump_store_from_args) != 0) {
        fprintf(stderr, "%s: the import of %s failed (see above); nothing was "
                "started\n", prog, db);
        return -1;
    }
    return 0;
}

/* The decrypted TLS files of azurite-table --pwd, removed at exit. */
static char azurite_tls_dir[1100];
static void remove_azurite_tls_dir(void)
{
    azurite_cli_cleanup(azurite_tls_dir);
}

/* The request handler the server wing calls (server/handler.h), over the
 * Table service. */
static int svc_handle(void *svc, struct request *req, struct response *resp,
                      void (*done)(void *token), void *token)
{
    return service_handle(svc, req, resp, done, token);
}

/* The admin listener's POST /import (server/admin.h), run by the service
 * (protocol/ops/ops_import.c). */
static int svc_import(void *svc, struct request *req, struct response *resp,
                      void (*done)(void *token), void *token)
{
    return service_import(svc, req, resp, done, token);
}

static void svc_fail(void *svc, struct request *req, struct response *resp, enum http_fail why)
{
    service_error(svc, req, resp, why);
}

static int svc_dirty(void *svc)
{
    return service_dirty(svc);
}

static int svc_sync(void *svc)
{
    return service_sync(svc);
}

/* The service's background work (table purge, store probe) for
 * server/background.c, which knows no service. */
static int bg_step(void *svc)
{
    return service_background(svc);
}

/* Registers background.c's wake-up with the service. */
static void bg_set_wake(void *svc, background_wake_fn wake, void *wake_arg)
{
    service_set_wake(svc, wake, wake_arg);
}

/* kv's waiter during start-up: one turn of the event loop, in which a
 * backend's timer or socket completes the call waited for. */
static void main_wait_once(void *arg)
{
    event_base_loop(arg, EVLOOP_ONCE);
}

/* 1 when the backend (ops) has a read-only form over replicas and params
 * (NAME=VALUE, NULL-terminated) name at least one (replica-conninfo). */
static int main_has_replicas(const struct backend_ops *ops, const char *const *params)
{
    if (!backend_replica_of(ops))
        return 0;
    for (size_t i = 0; params[i]; i++)
        if (strncmp(params[i], "replica-conninfo=", 17) == 0)
            return 1;
    return 0;
}

/* Waits for the store after a first kv_open that answered
 * BACKEND_UNAVAILABLE (PostgreSQL down or not yet up, out of connection
 * slots, credentials refused; its reason in err): tries again with backoff
 * (0.25 s doubling to 5 s) instead of exiting, so that the front end may
 * start before its database (boot order, containers). A failure's line is
 * written when the reason changes and otherwise at most every 30 s, saying
 * how many were left out. With srv (the admin listener, already open) the
 * waits turn the event loop, /healthz answering 503 with the reason
 * meanwhile, and a stop signal ends the wait (*stopped = 1); without it
 * the process sleeps and SIGTERM's default action ends it (nothing is open
 * yet). Returns kv_open's last status. */
static int open_store_waiting(const struct backend_ops *ops, const struct backend_options *bopt,
                              struct kv **kv, char *err, size_t errlen,
                              struct event_base *base, struct server *srv,
                              struct metrics *metrics, int *stopped)
{
    unsigned backoff_ms = 250, attempts = 0, suppressed = 0;
    char last[1024] = "";
    uint64_t last_at = 0;
    int rc = BACKEND_UNAVAILABLE;
    *stopped = 0;
    while (rc == BACKEND_UNAVAILABLE) {
        attempts++;
        uint64_t now = clock_mono_us();
        if (strcmp(last, err) != 0 || now - last_at >= 30 * 1000000ull) {
            if (suppressed)
                log_warn("%s; retrying in %.2g s (%u similar lines suppressed)", err,
                         backoff_ms / 1000.0, suppressed);
            else
                log_warn("%s; retrying in %.2g s", err, backoff_ms / 1000.0);
            snprintf(last, sizeof last, "%s", err);
            last_at = now;
            suppressed = 0;
        } else {
            suppressed++;
        }
        if (srv) {
            metrics_store_state(metrics, 2, err);
            struct timeval tv = {backoff_ms / 1000, (long)(backoff_ms % 1000) * 1000L};
            event_base_loopexit(base, &tv);
            event_base_dispatch(base);
            if (server_stopping(srv)) {
                *stopped = 1;
                return rc;
            }
        } else {
            struct timespec ts = {backoff_ms / 1000, (long)(backoff_ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0)
                ;
        }
        backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
        rc = kv_open(ops, bopt, kv, err, errlen);
    }
    metrics_store_state(metrics, 0, NULL);
    if (rc == BACKEND_OK)
        log_warn("connected to the %s store after %u failed attempt%s", ops->name, attempts,
                 attempts == 1 ? "" : "s");
    return rc;
}

/* `tabled --backend NAME --help`: lists that backend's options from its
 * rows (backends/bopts.h) instead of the server's. Returns 1 when it did,
 * 0 when the command line asks for no such thing, 2 for an unknown name. */
static int main_backend_help(int argc, char **argv)
{
    const char *name = NULL;
    int help = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            help = 1;
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strncmp(argv[i], "--backend=", 10) == 0)
            name = argv[i] + 10;
    }
    if (!help || !name)
        return 0;
    const struct bopt_desc *d = bopt_lookup(name);
    if (d) {
        bopt_usage(d, stdout);
        return 1;
    }
    if (strchr(name, '/')) {
        char err[512];
        const struct backend_ops *ops = backend_lookup(name, err, sizeof err);
        if (!ops) {
            fprintf(stderr, "tabled: %s\n", err);
            return 2;
        }
        d = bopt_for(ops);
        if (d)
            bopt_usage(d, stdout);
        else
            printf("The plug-in %s declares no option rows: it checks its own "
                   "--backend-option names (see its documentation).\n", name);
        return 1;
    }
    /* unknown, or postgres without its module: the registry's message */
    char err[1024];
    if (!backend_lookup(name, err, sizeof err))
        fprintf(stderr, "tabled: %s\n", err);
    return 2;
}

int main(int argc, char **argv)
{
    static struct config cfg;
    static struct azurite_cli az;
    static char stdout_buf[64 * 1024];
    char err[1024] = "";

    if (argc > 1 && (strcmp(argv[1], "export") == 0 || strcmp(argv[1], "import") == 0))
        return dump_main(argc - 1, argv + 1, dump_store_from_args);
    int azurite = argc > 0 && started_as_azurite(argv[0]);
    int import_db = azurite && azurite_db_take_flag(&argc, argv);
    if (azurite) {
        if (azurite_cli_parse(&az, argc, argv, getenv("AZURITE_ACCOUNTS"), err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", az.prog ? az.prog : "azurite-table", err);
            return 2;
        }
        if (az.help || az.version) {
            if (az.help)
                azurite_cli_usage(&az, stdout);
            else
                printf("tabled %s (%s)\n", TABLED_VERSION, az.prog);
            return 0;
        }
        if (az.ignored[0])
            fprintf(stderr, "%s: ignoring %s (tabled serves the Table service only)\n",
                    az.prog, az.ignored);
        argc = az.argc;
        argv = az.argv;
    }
    setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
    if (argc > 1 && strcmp(argv[1], "advise") == 0)
        return advise_main(argc, argv);
    int bh = main_backend_help(argc, argv);
    if (bh) {
        fflush(stdout);
        return bh == 1 ? 0 : 2;
    }
    config_defaults_on_zero(&cfg);   /* static, not written yet: no memset over 80 KiB */
    int rc = config_parse_args(&cfg, argc, argv, err, sizeof err);
    if (rc == 1) {
        fflush(stdout);
        return 0;
    }
    struct advisor_limits alim;
    advisor_limits_default(&alim);
    for (size_t i = 0; rc == 0 && i < cfg.nadvisor_options; i++) {
        if (strcmp(cfg.advisor_options[i], "help") == 0) {
            advisor_limits_usage(stdout);
            fflush(stdout);
            return 0;
        }
        rc = advisor_limit_set(&alim, cfg.advisor_options[i], err, sizeof err);
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", azurite ? az.prog : "tabled", err);
        return 2;
    }
    if (azurite) {
        azurite_cli_apply(&az, &cfg);
        if (azurite_cli_tls_files(&az, &cfg, azurite_tls_dir, sizeof azurite_tls_dir, err,
                                  sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", az.prog, err);
            return 2;
        }
        atexit(remove_azurite_tls_dir);
        if (az.debug_log[0] && !freopen(az.debug_log, "a", stderr)) {
            fprintf(stdout, "%s: cannot open debug log %s\n", az.prog, az.debug_log);
            return 2;
        }
        /* a reopened stderr would be fully buffered: lines must reach the
         * debug log as they happen, as they reach a terminal */
        if (az.debug_log[0])
            setvbuf(stderr, NULL, _IOLBF, 0);
        if (azurite_db_check(&cfg, az.prog, import_db) < 0)
            return 1;
    }
    log_set_level(cfg.log_level);
    if (cfg.log_file[0] && log_open_file(cfg.log_file, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", azurite ? az.prog : "tabled", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);  /* until the server reloads on it */
    raise_fd_limit(cfg.max_connections);

    const struct backend_ops *ops = backend_lookup(cfg.backend, err, sizeof err);
    if (!ops) {
        log_error("backend %s: %s", cfg.backend, err);
        return 1;
    }
    const char *bparams[CONFIG_MAX_BACKEND_OPTIONS + 1];
    for (size_t i = 0; i < cfg.nbackend_options; i++)
        bparams[i] = cfg.backend_options[i];
    bparams[cfg.nbackend_options] = NULL;
    /* A backend's options are checked against its rows before anything is
     * opened: a wrong name or value is a usage error (exit 2). A plug-in
     * that declares no rows checks its own in open. */
    const struct bopt_desc *bdesc = bopt_for(ops);
    if (bdesc && bopt_check(bdesc, bparams, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", azurite ? "azurite-table" : "tabled", err);
        return 2;
    }
    struct backend_options bopt = {
        .data_dir = cfg.data_dir,
        .durability = backend_durability_of(cfg.durability),
        .params = bparams,
        .log = backend_log,
    };
    /* The event loop comes first: a backend that completes its calls
     * later waits on it from the start (the catalogue is read now). */
    struct event_base *base = event_base_new();
    if (!base) {
        log_error("cannot create the event loop");
        return 1;
    }
    struct host *host = host_new(base);
    if (!host)
        abort();
    bopt.host = host_hooks(host);
    struct kv *kv = NULL, *rkv = NULL;
    struct store *store = NULL, *rstore = NULL;
    struct service *svc = NULL;
    struct server *srv = NULL;
    struct metrics *metrics = NULL;
    struct admin *admin = NULL;
    struct advisor *advisor = NULL;
    struct background *bg = NULL;
    int status = 1, served = 0;
    /* Throttling, fault rules (also when only the admin listener may add
     * some later) and metrics (only the admin listener shows them). */
    struct throttle *throttle = cfg.throttle ? throttle_from_config(&cfg) : NULL;
    struct fault_set *faults = NULL;
    if (cfg.nfaults || cfg.admin_port >= 0) {
        faults = faults_from_config(&cfg, err, sizeof err);
        if (!faults) {
            log_error("%s", err);
            status = 2;
            goto fail;
        }
    }
    if (cfg.admin_port >= 0) {
        metrics = metrics_new(cfg.accounts, cfg.naccounts);
        if (throttle)
            metrics_add_series(metrics, throttle_render_metrics, throttle);
        if (faults)
            metrics_add_series(metrics, fault_render_metrics, faults);
        admin = admin_new(metrics, faults);
        /* the token's digest needs libcrypto: without it, refuse to start
         * (the reason is logged) rather than serve a closed listener */
        if (cfg.admin_token[0] && !sslload_crypto())
            goto fail;
        admin_set_access(admin, &cfg);
        /* the partition advisor: always on with the admin listener */
        advisor = advisor_new(&alim, clock_mono_us());
        for (size_t i = 0; i < cfg.naccounts; i++)
            advisor_name_account(advisor, (unsigned)i, cfg.accounts[i].name);
        metrics_add_series(metrics, advisor_render_metrics, advisor);
        admin_set_advisor(admin, advisor);
    }
    rc = kv_open(ops, &bopt, &kv, err, sizeof err);
    if (rc == BACKEND_UNAVAILABLE) {
        /* The database is not there yet: the admin listener opens now so
         * that health checks see 503 (with the reason) while we wait; the
         * table port opens once the store is. */
        char lerr[512];
        if (cfg.admin_port >= 0) {
            srv = server_new(&cfg, base, NULL, lerr, sizeof lerr);
            if (!srv) {
                log_error("%s", lerr);
                goto fail;
            }
            server_attach(srv, admin, metrics, throttle);
            char aauth[300];
            url_authority(aauth, sizeof aauth, cfg.admin_host, server_admin_port(srv));
            printf("Waiting for the %s database; http://%s/healthz answers 503 until it can "
                   "be reached, and the table port opens then\n", ops->name, aauth);
            fflush(stdout);
        }
        int stopped;
        rc = open_store_waiting(ops, &bopt, &kv, err, sizeof err, base, srv, metrics, &stopped);
        if (stopped) {
            log_warn("stopped while waiting for the database");
            status = 0;
            goto fail;
        }
    }
    if (rc != BACKEND_OK) {
        log_error("cannot open the %s backend (data %s): %s", ops->name, cfg.data_dir, err);
        goto fail;
    }
    /* Until the server serves, a call that completes later is waited for
     * by turning the loop (nothing else is on it yet); from then on only
     * requests and the background step call the store, on coroutines. */
    kv_set_waiter(kv, main_wait_once, base);
    /* the postgres pools in /metrics (the replicas' too, once opened) */
    static struct postgres_pools pools;
    backend_metrics_fn pool_metrics = backend_metrics_of(kv_ops(kv));
    if (metrics && pool_metrics) {
        pools.primary = kv_backend(kv);
        metrics_add_series(metrics, pool_metrics, &pools);
    }
    store = store_new(kv, cfg.durability);
    struct service_settings set = service_settings_of(&cfg);
    svc = store ? service_new(&set, store, err, sizeof err) : NULL;
    if (!svc) {
        log_error("cannot start the table service: %s", store ? err : "out of memory");
        goto fail;
    }
    /* The secondary endpoint reads replicas of the database when the
     * backend has a read-only form and its options name some (postgres:
     * replica-conninfo); it connects on the loop, not now. */
    if (main_has_replicas(ops, bparams)) {
        rc = kv_open(backend_replica_of(ops), &bopt, &rkv, err, sizeof err);
        rstore = rc == BACKEND_OK ? store_new(rkv, cfg.durability) : NULL;
        if (!rstore || service_set_secondary(svc, rstore, err, sizeof err) != 0) {
            log_error("cannot open the replicas for the secondary endpoint: %s",
                      rc == BACKEND_OK && !rstore ? "out of memory" : err);
            goto fail;
        }
        if (pools.primary)
            pools.replica = kv_backend(rkv);
    }
    if (admin) {
        /* GET /export: tabled export --admin URL (tools/dump_serve.c) */
        static struct dump_source dsrc;
        dsrc.kv = kv;
        admin_set_export(admin, dump_serve_start, &dsrc);
        /* POST /import: tabled import --admin URL FILE */
        admin_set_import(admin, svc_import, svc);
        service_attach_advisor(svc, advisor);
    }
    if (service_attach(svc, throttle, faults, metrics, err, sizeof err) != 0) {
        log_error("cannot count the stored entities: %s", err);
        goto fail;
    }
    struct req_handler handler = {.arg = svc, .handle = svc_handle, .fail = svc_fail,
                                  .dirty = svc_dirty, .sync = svc_sync};
    if (srv ? server_serve(srv, &handler, err, sizeof err) != 0
            : !(srv = server_new(&cfg, base, &handler, err, sizeof err))) {
        log_error("%s", err);
        goto fail;
    }
    int absent_ports[2] = {0, 0};
    if (azurite && az.all && open_absent_ports(srv, &az, absent_ports, err, sizeof err)) {
        log_error("%s", err);
        goto fail;
    }
    server_attach(srv, admin, metrics, throttle);
    static struct reload reload;
    reload = (struct reload){.argc = argc, .argv = argv, .az = azurite ? &az : NULL,
                             .cfg = &cfg, .srv = srv, .admin = admin};
    server_set_reload(srv, reload_run, &reload);
    kv_set_waiter(kv, NULL, NULL);
    if (!cfg.auth)
        log_warn("authentication is off (--auth off): every request is accepted unsigned");
    if (fault_active(faults))
        log_warn("fault injection is on: %zu rule(s)", fault_count(faults));
    bg = background_new(server_base(srv), bg_step, bg_set_wake, svc);
    print_ready(&cfg, ops, srv);
    if (azurite)
        print_azurite_ready(&cfg, &az, srv, absent_ports);
    notify_ready("serving");

    server_run(srv);
    notify_stopping();
    service_quiesce(svc, main_wait_once, base, 10000);
    background_free(bg);
    status = 0;
    served = 1;

    /* one teardown for every exit once the loop exists (what was not made
     * yet is NULL): the server before the service it calls, the store
     * before its loop, coroutine stacks once no request holds one */
fail:
    server_free(srv);
    service_free(svc);
    store_free(rstore);
    kv_close(rkv);
    store_free(store);
    kv_close(kv);
    host_free(host);
    event_base_free(base);
    coro_pool_drain();
    admin_free(admin);
    advisor_free(advisor);
    metrics_free(metrics);
    fault_set_free(faults);
    throttle_free(throttle);
    if (served)
        log_info("stopped");
    log_flush();
    fflush(stdout);
    return status;
}

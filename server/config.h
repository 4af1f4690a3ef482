/* config.h - run-time configuration: defaults, INI file, command line.
 *
 * Precedence: built-in defaults < config file (--config FILE) < flags.
 * The file is INI style: "key = value" lines, '#' or ';' comments, and
 * [account NAME] sections holding "key1 = BASE64" / "key2 = BASE64", and
 * [fault NAME] sections holding the settings of one fault rule.
 * Keys of the top-level section are the long flag names without "--"
 * (host, port, backend, data, log-level, ...). */
#ifndef TABLED_CONFIG_H
#define TABLED_CONFIG_H
#include <stddef.h>

#include "core/account.h"
#include "core/log.h"

#define CONFIG_MAX_FAULT_ITEMS 128
#define CONFIG_MAX_BACKEND_OPTIONS 16
#define CONFIG_MAX_ADMIN_HOSTS 16
#define CONFIG_ADMIN_TOKEN_MIN 16       /* shortest accepted admin token */
#define CONFIG_MAX_ADVISOR_OPTIONS 16


/* One "key = value" of a fault rule, in the order given. */
struct config_fault_item {
    char rule[64];                  /* rule name */
    char key[32];
    char value[256];
    int line;                       /* config file line, 0 = command line */
};

struct config {
    char host[256];            /* listen address, default 127.0.0.1 */
    int port;                  /* default 10002; 0 = pick a free port; -1 (set by
                                  azurite --cert, not a flag value): no plain
                                  HTTP listener, HTTPS only */
    char backend[1024];        /* "memory", "leveldb", "flatfile" or a .so path */
    char data_dir[1024];       /* default "./data" */
    /* --backend-option NAME=VALUE (repeatable), handed to the backend as
       backend_options.params; a later one of the same name wins */
    char backend_options[CONFIG_MAX_BACKEND_OPTIONS][256];
    size_t nbackend_options;
    enum log_level log_level;  /* default LOG_INFO */
    int access_log;            /* one line per request (default on) */
    char log_file[1024];       /* "" (default): diagnostics on stderr, access log on
                                  stdout; else both appended to this file, which
                                  SIGHUP reopens */
    enum durability durability;/* default DURABILITY_BATCH */
    char host_suffix[256];     /* host-style suffix after ACCOUNT.table., default "localhost" */
    int auth;                  /* 1 = verify requests (default), 0 = --auth off */
    int strict_versions;       /* 1: refuse x-ms-version values not in the built-in
                                * list, as the cloud does; 0 (default): accept any
                                * well-formed version from 2009-04-14 on */
    int path_style_only;       /* account always from the path (Azurite's
                                  --disableProductStyleUrl) */
    int oauth_basic;           /* --oauth basic: Azurite-style bearer check */

    /* limits checked by the server wing as bytes arrive */
    size_t max_header_bytes;   /* default 64 KiB (whole header block) */
    size_t max_body_bytes;     /* default 4 MiB (the service's limit) */
    int header_timeout_ms;     /* default 30000: request head must arrive in this */
    int idle_timeout_ms;       /* default 120000: keep-alive idle close */
    int request_timeout_ms;    /* default 120000: whole request (head + body) */
    int max_connections;       /* default 10000; at the cap the idlest is closed */
    size_t max_conn_output_bytes;  /* default 1 MiB: unsent output that stops a
                                      connection's next request */
    size_t max_total_output_bytes; /* default 64 MiB: unsent output of the process
                                      above which connections owing output wait */

    /* queries */
    int scan_budget;           /* max entities examined per page; 0 = unlimited */
    int scan_budget_ms;        /* time cut per page, default 5000 */

    /* TLS (used from [auth] on) */
    int tls_port;              /* 0 = off */
    char tls_cert[1024];
    char tls_key[1024];

    /* throttling (doc/protocol.md, Token buckets): token buckets, off by default */
    int throttle;                   /* --throttle */
    double throttle_partition_rate; /* entities/s per partition, default 2000 */
    double throttle_partition_burst;/* default 2000 */
    double throttle_account_rate;   /* entities/s per account, default 20000 */
    double throttle_account_burst;  /* default 20000 */
    int throttle_batch_per_request; /* account bucket: a batch costs 1, not n */
    int throttle_retry_after;       /* seconds in Retry-After on 503s; 0 = none */

    /* admin listener: /metrics, /healthz, fault rules */
    int admin_port;                 /* -1 = off (default), 0 = any free port */
    char admin_host[256];           /* default 127.0.0.1 */
    /* bearer token (--admin-token or read by --admin-token-file; "" = none):
     * needed by every mutating admin request, and by all of them when
     * admin_host is not a loopback address (which then requires one) */
    char admin_token[256];
    /* Host names the admin listener answers besides loopback ones
     * (--admin-allowed-host, repeatable or comma-separated; lower case,
     * IPv6 literals in brackets) */
    char admin_allowed_hosts[CONFIG_MAX_ADMIN_HOSTS][256];
    size_t nadmin_allowed_hosts;

    /* partition advisor thresholds: --advisor NAME=VALUE (repeatable),
     * checked by main.c through advisor/advisor.c (advisor_limit_set) */
    char advisor_options[CONFIG_MAX_ADVISOR_OPTIONS][64];
    size_t nadvisor_options;

    /* fault injection: [fault NAME] sections and --fault flags, applied by
     * main.c through guard/fault.c (which checks them) */
    unsigned long long fault_seed;  /* 0 = random */
    struct config_fault_item faults[CONFIG_MAX_FAULT_ITEMS];
    size_t nfaults;

    struct account_cfg accounts[CONFIG_MAX_ACCOUNTS];
    size_t naccounts;          /* >= 1; the served accounts once config_parse_args() ran */
    /* devstoreaccount1 with the well-known key (--dev-account): -1 auto (the
     * default: served unless other accounts are configured), 0 off, 1 on.
     * An account section or --account naming it serves it whatever this says. */
    int dev_account;
    int dev_account_listed;    /* devstoreaccount1 was given by --account / [account] */
};

/* Fills defaults (including devstoreaccount1 with the well-known key). */
void config_defaults(struct config *cfg);
/* The same on a configuration known to be all zero (static storage not
 * written yet, or core/pages.h's pages_zalloc): only the fields with a
 * default are written, so the pages of the rest (most of the 80 KiB: the
 * arrays of accounts, fault rules, hosts) are never made resident. */
void config_defaults_on_zero(struct config *cfg);
/* Applies a config file. Returns 0, or -1 with a message in err. */
int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen);
/* Parses argv (applying --config first wherever it appears), then settles
 * which accounts are served (see dev_account) and checks settings that
 * depend on each other. Returns 0 to run, 1 when --help/--version was
 * handled (exit 0), -1 on error (message in err, exit 2). */
int config_parse_args(struct config *cfg, int argc, char **argv, char *err, size_t errlen);
/* (cfg holds the defaults when it is called: config_defaults() or
 * config_defaults_on_zero() just before.) */
/* Adds or replaces an account; key2 may be NULL. Returns 0 or -1 (bad base64). */
int config_add_account(struct config *cfg, const char *name, const char *key1_b64,
                       const char *key2_b64, char *err, size_t errlen);
const struct account_cfg *config_find_account(const struct config *cfg, const char *name);
/* 1 when addr (an address or name to bind or to put in a Host header,
 * IPv6 literals with or without brackets) is a loopback one: 127.0.0.0/8,
 * ::1, ::ffff:127.0.0.0/104 or "localhost" (any case); 0 otherwise, the
 * wildcard addresses 0.0.0.0 and :: included. */
int config_addr_is_loopback(const char *addr);

/* The development account (doc/protocol.md, Development account). */
#define DEV_ACCOUNT_NAME "devstoreaccount1"
#define DEV_ACCOUNT_KEY \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

#endif

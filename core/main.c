/* main.c - tabled: configuration, backend, service, listeners, run, stop. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <openssl/evp.h>

#include "backends/backend.h"
#include "core/config.h"
#include "core/log.h"
#include "core/server.h"
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

/* Prints the ready banner that scripts and tests wait for. */
static void print_ready(const struct config *cfg, const struct backend_ops *ops,
                        const struct server *srv)
{
    const struct account_cfg *acct = &cfg->accounts[0];
    char auth[300], key[4 * CONFIG_MAX_KEY_BYTES / 3 + 8];
    url_authority(auth, sizeof auth, cfg->host, server_port(srv));
    EVP_EncodeBlock((unsigned char *)key, acct->key1, (int)acct->key1_len);
    printf("tabled %s ready at http://%s (backend %s, durability %s)\n", TABLED_VERSION, auth,
           ops->name, durability_name(cfg->durability));
    printf("Table endpoint:    http://%s/%s\n", auth, acct->name);
    if (server_tls_port(srv)) {
        char tauth[300];
        url_authority(tauth, sizeof tauth, cfg->host, server_tls_port(srv));
        printf("HTTPS endpoint:    https://%s/%s\n", tauth, acct->name);
    }
    printf("Connection string: DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
           "TableEndpoint=http://%s/%s;\n",
           acct->name, key, auth, acct->name);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static struct config cfg;
    static char stdout_buf[64 * 1024];
    char err[1024] = "";

    setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
    config_defaults(&cfg);
    int rc = config_parse_args(&cfg, argc, argv, err, sizeof err);
    if (rc == 1) {
        fflush(stdout);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "tabled: %s\n", err);
        return 2;
    }
    log_set_level(cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(cfg.max_connections);

    const struct backend_ops *ops = backend_lookup(cfg.backend, err, sizeof err);
    if (!ops) {
        log_error("backend %s: %s", cfg.backend, err);
        return 1;
    }
    struct backend_options bopt = {
        .data_dir = cfg.data_dir,
        .durability = backend_durability_of(cfg.durability),
        .params = NULL,
    };
    struct backend_store *store = NULL;
    if (ops->open(&bopt, &store, err, sizeof err) != 0) {
        log_error("cannot open the %s backend (data %s): %s", ops->name, cfg.data_dir, err);
        return 1;
    }
    struct service *svc = service_new(&cfg, ops, store, err, sizeof err);
    if (!svc) {
        log_error("cannot start the table service: %s", err);
        ops->close(store);
        return 1;
    }
    struct server *srv = server_new(&cfg, svc, err, sizeof err);
    if (!srv) {
        log_error("%s", err);
        service_free(svc);
        ops->close(store);
        return 1;
    }
    if (!cfg.auth)
        log_warn("authentication is off (--auth off): every request is accepted unsigned");
    print_ready(&cfg, ops, srv);

    server_run(srv);

    server_free(srv);
    service_free(svc);
    ops->close(store);
    log_info("stopped");
    fflush(stdout);
    return 0;
}

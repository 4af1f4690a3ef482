/* sslload.c - opens OpenSSL and libevent_openssl on first use (see
 * sslload.h). */
#include "config.h"

#include "core/sslload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

#define SSLLOAD_NAME(f) #f,
static const char *const crypto_names[] = {SSLLOAD_CRYPTO_FUNCS(SSLLOAD_NAME)};
static const char *const ssl_names[] = {SSLLOAD_SSL_FUNCS(SSLLOAD_NAME)};
static const char *const event_names[] = {SSLLOAD_EVENT_FUNCS(SSLLOAD_NAME)};
#undef SSLLOAD_NAME

#define NCRYPTO (sizeof crypto_names / sizeof crypto_names[0])
#define NSSL (sizeof ssl_names / sizeof ssl_names[0])
#define NEVENT (sizeof event_names / sizeof event_names[0])

static struct sslload_crypto crypto_fns;
static struct sslload_tls tls_fns;
static const struct sslload_crypto *crypto_ok;
static const struct sslload_tls *tls_ok;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

void *sslload_open(const char *soname, const char *const *names, void **syms, size_t n,
                   char *err, size_t errlen)
{
    dlerror();
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "unknown error");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        dlerror();
        syms[i] = dlsym(h, names[i]);
        if (!syms[i]) {
            const char *e = dlerror();
            snprintf(err, errlen, "%s", e ? e : "symbol not found");
            dlclose(h);
            return NULL;
        }
    }
    return h;
}

/* Opens one library for what (a phrase naming the feature); on failure
 * logs the line a user reads. 1 when loaded, else 0. */
static int open_one(const char *soname, const char *package, const char *what,
                    const char *const *names, void **syms, size_t n)
{
    char e[512];
    if (sslload_open(soname, names, syms, n, e, sizeof e))
        return 1;
    log_error("cannot load %s, needed for %s: %s; install the package that provides it "
              "(on Debian: %s) and restart tabled",
              soname, what, e, package);
    return 0;
}

/* Fills a table's fields from syms, in the order of its list. */
#define SSLLOAD_SET(f) memcpy(&dst->f, &syms[i++], sizeof dst->f);

static void crypto_load(void)
{
    void *syms[NCRYPTO];
    if (!open_one(SSLLOAD_CRYPTO_SONAME, "libssl3",
                  "SharedKey and SAS signatures, the admin token and TLS", crypto_names, syms,
                  NCRYPTO))
        return;
    struct sslload_crypto *dst = &crypto_fns;
    size_t i = 0;
    SSLLOAD_CRYPTO_FUNCS(SSLLOAD_SET)
    crypto_ok = dst;
}

static void tls_load(void)
{
    if (!sslload_crypto())
        return;
    void *syms[NSSL > NEVENT ? NSSL : NEVENT];
    struct sslload_tls *dst = &tls_fns;
    size_t i = 0;
    if (!open_one(SSLLOAD_SSL_SONAME, "libssl3", "TLS (HTTPS)", ssl_names, syms, NSSL))
        return;
    SSLLOAD_SSL_FUNCS(SSLLOAD_SET)
    if (!open_one(SSLLOAD_EVENT_OPENSSL_SONAME, "libevent-openssl-2.1-7", "TLS (HTTPS)",
                  event_names, syms, NEVENT))
        return;
    i = 0;
    SSLLOAD_EVENT_FUNCS(SSLLOAD_SET)
    tls_ok = dst;
}
#undef SSLLOAD_SET

const struct sslload_crypto *sslload_crypto(void)
{
    pthread_once(&crypto_once, crypto_load);
    return crypto_ok;
}

const struct sslload_tls *sslload_tls(void)
{
    pthread_once(&tls_once, tls_load);
    return tls_ok;
}

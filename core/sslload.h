/* sslload.h - OpenSSL (libcrypto, libssl) and libevent_openssl, opened with
 * dlopen when a feature first needs them rather than linked: a server that
 * has not yet verified a signature or served TLS does not map them (1.7 MiB
 * resident; doc/performance.md, Idle footprint).
 *
 * Each table below holds exactly the functions tabled calls, each pointer
 * declared with the type of the real declaration in OpenSSL's or libevent's
 * headers, so a call through it is checked like a direct call. Macros of the
 * headers that stand for a call (SSL_CTX_set_mode and the other SSL_CTX_ctrl
 * wrappers, sk_X509_num and the other stack functions) cannot be used with
 * these tables: their callers spell out the function they expand to. The
 * libraries' names are their sonames as built against (configure). */
#ifndef TABLED_SSLLOAD_H
#define TABLED_SSLLOAD_H
#include <stddef.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* libcrypto: SHA-256 (the low-level calls, deprecated in OpenSSL 3 but
 * kept: auth/ copies a keyed state as a plain struct), constant-time
 * compare, the error queue, PEM and PKCS#12 files. */
#define SSLLOAD_CRYPTO_FUNCS(X) \
    X(SHA256) X(SHA256_Init) X(SHA256_Update) X(SHA256_Final) X(CRYPTO_memcmp) \
    X(ERR_peek_last_error) X(ERR_error_string_n) X(ERR_clear_error) \
    X(PEM_read_PrivateKey) X(PEM_write_PrivateKey) X(PEM_write_X509) \
    X(d2i_PKCS12_fp) X(PKCS12_parse) X(PKCS12_free) X(X509_free) X(EVP_PKEY_free) \
    X(OPENSSL_sk_num) X(OPENSSL_sk_value) X(OPENSSL_sk_pop_free)

/* libssl and libevent_openssl: the HTTPS listener. */
#define SSLLOAD_SSL_FUNCS(X) \
    X(TLS_server_method) X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl) X(SSL_CTX_set_options) \
    X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey_file) \
    X(SSL_CTX_check_private_key) X(SSL_new) X(SSL_shutdown) X(SSL_is_init_finished)
#define SSLLOAD_EVENT_FUNCS(X) \
    X(bufferevent_openssl_socket_new) X(bufferevent_openssl_set_allow_dirty_shutdown) \
    X(bufferevent_openssl_get_ssl)

#define SSLLOAD_FIELD(f) __typeof__(f) *f;
/* (__typeof__ of the deprecated SHA256_* declarations is not a use) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct sslload_crypto {
    SSLLOAD_CRYPTO_FUNCS(SSLLOAD_FIELD)
};
struct sslload_tls {
    SSLLOAD_SSL_FUNCS(SSLLOAD_FIELD)
    SSLLOAD_EVENT_FUNCS(SSLLOAD_FIELD)
};
#pragma GCC diagnostic pop
#undef SSLLOAD_FIELD

/* libcrypto's functions, the library opened on the first call (thread-safe:
 * pthread_once). NULL when it cannot be opened: the first call then logs
 * one line saying which library, why (dlerror) and what to install, and
 * every later call returns NULL at once (a restart tries again). */
const struct sslload_crypto *sslload_crypto(void);

/* The same for libssl and libevent_openssl (libcrypto too, which they
 * need). */
const struct sslload_tls *sslload_tls(void);

/* Opens soname (RTLD_NOW) and resolves the n names into syms. Returns the
 * handle, or NULL with the reason in err (dlerror's text; the library is
 * closed again when a name is missing). Used by the two above; a test calls
 * it with a library that does not exist. */
void *sslload_open(const char *soname, const char *const *names, void **syms, size_t n,
                   char *err, size_t errlen);

#endif

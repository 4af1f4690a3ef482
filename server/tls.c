/* tls.c - HTTPS listener support through bufferevent_openssl: the server
 * context, one TLS bufferevent per connection, and the close_notify sent
 * when a connection ends in order (libevent's bufferevent_free only closes
 * the socket). OpenSSL and libevent_openssl are opened when the first
 * context is made (core/sslload.h): a server without TLS never maps them. */
#include "server/tls.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "core/sslload.h"

/* Appends OpenSSL's last queued error (if any) to a message. */
static void tls_err(const struct sslload_crypto *c, char *err, size_t errlen, const char *what,
                    const char *file)
{
    char detail[256] = "";
    unsigned long e = c->ERR_peek_last_error();
    if (e)
        c->ERR_error_string_n(e, detail, sizeof detail);
    c->ERR_clear_error();
    snprintf(err, errlen, "TLS: %s %s%s%s", what, file ? file : "", detail[0] ? ": " : "",
             detail);
}

SSL_CTX *tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    const struct sslload_tls *t = sslload_tls();
    const struct sslload_crypto *c = sslload_crypto();
    if (!t || !c) {
        /* the loader has logged which library and what to install */
        snprintf(err, errlen, "TLS: not available, a library it needs could not be loaded "
                              "(the line above says which and what to install)");
        return NULL;
    }
    SSL_CTX *ctx = t->SSL_CTX_new(t->TLS_server_method());
    if (!ctx) {
        tls_err(c, err, errlen, "cannot create a context", NULL);
        return NULL;
    }
    /* SSL_CTX_set_min_proto_version and SSL_CTX_set_mode, the macros */
    t->SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
    t->SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    t->SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, SSL_MODE_RELEASE_BUFFERS, NULL);
    if (access(cert_file, R_OK) != 0) {
        snprintf(err, errlen, "TLS: cannot read certificate file %s", cert_file);
        t->SSL_CTX_free(ctx);
        return NULL;
    }
    if (access(key_file, R_OK) != 0) {
        snprintf(err, errlen, "TLS: cannot read key file %s", key_file);
        t->SSL_CTX_free(ctx);
        return NULL;
    }
    if (t->SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        tls_err(c, err, errlen, "bad certificate in", cert_file);
        t->SSL_CTX_free(ctx);
        return NULL;
    }
    if (t->SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        /* OpenSSL 3 already compares the key with the certificate here;
         * name that case plainly rather than as a "bad" key. */
        int mismatch = ERR_GET_REASON(c->ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
        tls_err(c, err, errlen,
                mismatch ? "private key does not match the certificate:" : "bad private key in",
                key_file);
        t->SSL_CTX_free(ctx);
        return NULL;
    }
    if (t->SSL_CTX_check_private_key(ctx) != 1) {
        tls_err(c, err, errlen, "private key does not match the certificate:", key_file);
        t->SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* A context exists only once tls_ctx_new() loaded the libraries. */
void tls_ctx_free(SSL_CTX *ctx)
{
    if (ctx)
        sslload_tls()->SSL_CTX_free(ctx);
}

struct bufferevent *tls_bufferevent_new(struct event_base *base, SSL_CTX *ctx, int fd)
{
    const struct sslload_tls *t = sslload_tls();
    SSL *ssl = t->SSL_new(ctx);
    if (!ssl) {
        close(fd);
        return NULL;
    }
    struct bufferevent *bev = t->bufferevent_openssl_socket_new(
        base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        /* With BEV_OPT_CLOSE_ON_FREE libevent has already freed ssl. */
        close(fd);
        return NULL;
    }
    /* Clients often close without close_notify; treat that as a plain EOF. */
    t->bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void tls_close_notify(struct bufferevent *bev)
{
    const struct sslload_tls *t = sslload_tls();
    SSL *ssl = t->bufferevent_openssl_get_ssl(bev);
    if (!ssl || !t->SSL_is_init_finished(ssl) ||
        evbuffer_get_length(bufferevent_get_output(bev)))
        return;
    /* One non-blocking try: a peer that does not read may miss it, which
     * costs it nothing it has not already received. */
    t->SSL_shutdown(ssl);
    /* Errors of this try must not be read as another connection's. */
    sslload_crypto()->ERR_clear_error();
}

/* tls.h - the HTTPS side: one SSL_CTX built from the configured certificate
 * and key, and a TLS bufferevent per accepted connection. */
#ifndef TABLED_TLS_H
#define TABLED_TLS_H
#include <stddef.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>

/* Loads cert (PEM, chain allowed) and key into a server context with TLS 1.2
 * as the minimum version. Returns NULL with a readable message in err when
 * a file is missing, unreadable, or the key does not match the cert. */
SSL_CTX *tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen);
void tls_ctx_free(SSL_CTX *ctx);

/* Wraps an accepted socket in a server-side TLS bufferevent (closes the
 * socket when freed). Returns NULL on failure (the socket is then closed). */
struct bufferevent *tls_bufferevent_new(struct event_base *base, SSL_CTX *ctx, int fd);

/* Sends the TLS close_notify alert on an established connection whose
 * output has all been written (best effort, never blocks), before it is
 * freed: the peer then sees an orderly end of the stream rather than a
 * bare TCP close. Does nothing during the handshake or with output still
 * queued. */
void tls_close_notify(struct bufferevent *bev);

#endif

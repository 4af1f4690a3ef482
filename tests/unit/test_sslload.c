/* test_sslload.c - OpenSSL opened on first use (core/sslload.c): nothing
 * mapped before, the functions working after, and a library or function
 * that cannot be found reported, not crashed on. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/sslload.h"
#include "tests/unit/tap.h"

/* 1 when a mapping of this process is a file whose name starts with lib
 * (e.g. "libcrypto.so"). */
static int mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *slash = strrchr(line, '/');
        if (slash && strncmp(slash + 1, lib, strlen(lib)) == 0)
            found = 1;
    }
    if (f)
        fclose(f);
    return found;
}

static void test_not_linked(void)
{
    TEST_CHECK(!mapped("libcrypto.so"), "libcrypto is not mapped before the first use");
    TEST_CHECK(!mapped("libssl.so"), "libssl is not mapped before the first use");
    TEST_CHECK(!mapped("libevent_openssl"), "libevent_openssl is not mapped before the first use");
}

static void test_open_failures(void)
{
    static const char *const names[] = {"SHA256", "tabled_no_such_function"};
    void *syms[2] = {0};
    char err[512] = "";
    void *h = sslload_open("libtabled-no-such-library.so.0", names, syms, 1, err, sizeof err);
    TEST_CHECK(h == NULL, "a library that does not exist: NULL");
    TEST_CHECK(strstr(err, "libtabled-no-such-library.so.0") != NULL,
               "the message names the library");
    TEST_CHECK(strstr(err, "No such file") != NULL || strstr(err, "cannot open") != NULL,
               "the message is dlerror's");
    printf("#   %s\n", err);
    err[0] = '\0';
    h = sslload_open(SSLLOAD_CRYPTO_SONAME, names, syms, 2, err, sizeof err);
    TEST_CHECK(h == NULL, "a function the library lacks: NULL");
    TEST_CHECK(strstr(err, "tabled_no_such_function") != NULL, "the message names the function");
    printf("#   %s\n", err);
}

static void test_crypto(void)
{
    const struct sslload_crypto *c = sslload_crypto();
    TEST_CHECK(c != NULL, "libcrypto loads");
    if (!c)
        return;
    TEST_CHECK(sslload_crypto() == c, "a second call returns the same table");
    TEST_CHECK(mapped("libcrypto.so"), "libcrypto is mapped after its first use");
    TEST_CHECK(!mapped("libssl.so"), "libssl is still not mapped (signatures need libcrypto only)");
    /* FIPS 180-2's first example: SHA-256("abc") */
    static const unsigned char want[32] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
        0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
        0xf2, 0x00, 0x15, 0xad};
    unsigned char got[32];
    c->SHA256((const unsigned char *)"abc", 3, got);
    TEST_CHECK(memcmp(got, want, sizeof got) == 0, "SHA256 through the table");
    SHA256_CTX ctx;
    c->SHA256_Init(&ctx);
    c->SHA256_Update(&ctx, "a", 1);
    c->SHA256_Update(&ctx, "bc", 2);
    c->SHA256_Final(got, &ctx);
    TEST_EQ_INT(c->CRYPTO_memcmp(got, want, sizeof got), 0, "SHA256_Init/Update/Final agree");
    TEST_CHECK(c->CRYPTO_memcmp(got, "x", 1) != 0, "CRYPTO_memcmp tells different bytes apart");
}

static void test_tls(void)
{
    const struct sslload_tls *t = sslload_tls();
    TEST_CHECK(t != NULL, "libssl and libevent_openssl load");
    if (!t)
        return;
    TEST_CHECK(mapped("libssl.so") && mapped("libevent_openssl"), "both mapped after their use");
    SSL_CTX *ctx = t->SSL_CTX_new(t->TLS_server_method());
    TEST_CHECK(ctx != NULL, "SSL_CTX_new through the table");
    if (ctx) {
        TEST_EQ_INT(t->SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL), 1,
                    "SSL_CTX_ctrl sets the minimum version");
        TEST_EQ_INT(t->SSL_CTX_ctrl(ctx, SSL_CTRL_GET_MIN_PROTO_VERSION, 0, NULL),
                    TLS1_2_VERSION, "and reads it back");
        t->SSL_CTX_free(ctx);
    }
}

int main(void)
{
    test_not_linked();
    test_open_failures();
    test_crypto();
    test_tls();
    return test_done();
}

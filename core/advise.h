/* advise.h - `tabled advise`: fetches GET /advisor from a running tabled's
 * admin listener and prints the findings as a text report.
 *
 *   tabled advise [--admin URL] [--fail-on info|warning|critical|never]
 *
 * URL defaults to $TABLED_ADMIN, else http://127.0.0.1:10003. Exit status:
 * 0 no finding of the --fail-on severity or above (default warning), 1 at
 * least one, 2 usage error or the admin listener could not be read. */
#ifndef TABLED_ADVISE_H
#define TABLED_ADVISE_H
#include <stddef.h>

int advise_main(int argc, char **argv);
/* Splits an admin URL "http://HOST[:PORT][/PREFIX]" into its parts (also
 * used by `tabled export --admin`). -1 when malformed or too long. */
int advise_parse_url(const char *url, char *host, size_t hcap, char *port, size_t pcap,
                     char *prefix, size_t xcap);
/* Connects to host:port with send and receive timeouts of timeout_s
 * seconds (also used by `tabled export --admin`); the socket, or -1 with a
 * message in err. */
int advise_connect(const char *host, const char *port, int timeout_s, char *err, size_t errlen);

#endif

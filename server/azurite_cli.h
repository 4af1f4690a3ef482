/* azurite_cli.h - "azurite-table": the peer emulator's table command line
 * (Azurite's azurite-table) translated into tabled's own flags.
 *
 * tabled started under the name azurite-table (an installed link) reads
 * Azurite's flags and its AZURITE_ACCOUNTS variable, builds the equivalent
 * tabled argument vector, and after start prints the readiness lines that
 * Azurite's table service prints, so scripts and test frameworks written for
 * Azurite keep working. What tabled cannot honour is refused with a message
 * naming the flag. */
#ifndef TABLED_AZURITE_CLI_H
#define TABLED_AZURITE_CLI_H
#include <stddef.h>

#include "core/config.h"

#define AZURITE_MAX_ARGS 160

/* The translation of one Azurite command line. */
struct azurite_cli {
    int argc;                        /* tabled argv: argv[0] = "tabled" */
    char *argv[AZURITE_MAX_ARGS + 1];
    char store[16384];               /* the strings argv points into */
    size_t used;
    int help, version;               /* -h/--help, -v/--version given */
    int https;                       /* --cert given: the table port speaks TLS */
    int port;                        /* --tablePort (default 10002) */
    char debug_log[1024];            /* -d FILE, or "" */
    char cert[1024], key[1024], pwd[256]; /* --cert, --key, --pwd as given */
    char ignored[256];               /* other services' flags, skipped */
    int custom_accounts;             /* AZURITE_ACCOUNTS was set */
    char accounts[CONFIG_MAX_ACCOUNTS][32]; /* its account names, lower-case */
    size_t naccounts;
};

/* Translates Azurite's argv (argv[0] ignored) and the value of
 * AZURITE_ACCOUNTS (NULL when unset) into tabled flags. Returns 0, or -1
 * with a message naming the flag. */
int azurite_cli_parse(struct azurite_cli *az, int argc, char **argv, const char *accounts_env,
                      char *err, size_t errlen);

/* After config_parse_args of az->argv: drops devstoreaccount1 when
 * AZURITE_ACCOUNTS named other accounts (as Azurite does). */
void azurite_cli_apply(const struct azurite_cli *az, struct config *cfg);

/* For --cert with --pwd (a PFX/PKCS#12 file, or a PEM certificate with an
 * encrypted key): writes the certificate chain and the decrypted key as PEM
 * files into a fresh 0700 directory and points cfg->tls_cert/tls_key at
 * them. dir receives the directory (to remove at exit with
 * azurite_cli_cleanup). Returns 0 (also when nothing had to be done) or -1. */
int azurite_cli_tls_files(const struct azurite_cli *az, struct config *cfg, char *dir,
                          size_t dircap, char *err, size_t errlen);
/* Removes what azurite_cli_tls_files wrote. */
void azurite_cli_cleanup(const char *dir);

/* Azurite's help text. */
extern const char azurite_cli_usage[];

#endif

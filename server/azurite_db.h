/* azurite_db.h - an Azurite workspace (-l DIR) that holds Azurite's table
 * database (__azurite_db_table__.json) but no tabled store yet.
 *
 * azurite-table keeps its data in DIR/__tabled_table__; a DIR Azurite used
 * before holds DIR/__azurite_db_table__.json, which tabled does not read
 * while serving. On start-up such a DIR gets a notice naming the exact
 * "tabled import --from-azurite" command, or, with --import-azurite-db on
 * the command line, the database is imported before the server listens. */
#ifndef TABLED_AZURITE_DB_H
#define TABLED_AZURITE_DB_H
#include <stddef.h>

#define AZURITE_DB_FLAG "--import-azurite-db"
#define AZURITE_DB_FILE "__azurite_db_table__.json"

/* Removes every AZURITE_DB_FLAG from argv[1..] (argc updated, argv stays
 * NULL-terminated when it was). Returns 1 when the flag was there. It is
 * taken out before Azurite's own flags are read. */
int azurite_db_take_flag(int *argc, char **argv);

/* For the store directory data_dir (DIR/__tabled_table__): when
 * DIR/__azurite_db_table__.json exists and data_dir does not, writes the
 * database's absolute path into db and the store's into store (so the
 * command printed works from any directory) and returns 1; 0 otherwise
 * (also when data_dir is not in an Azurite workspace). */
int azurite_db_pending(const char *data_dir, char *db, size_t dbcap, char *store,
                       size_t storecap);

/* The import command for db into the store (backend, data_dir), quoted
 * for a POSIX shell, into out. Returns 0, or -1 when it does not fit. */
int azurite_db_command(const char *db, const char *backend, const char *data_dir, char *out,
                       size_t outcap);

#endif

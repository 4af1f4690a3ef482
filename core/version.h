/* version.h - the version string printed by --version and the ready line. */
#ifndef TABLED_CORE_VERSION_H
#define TABLED_CORE_VERSION_H

#define TABLED_VERSION "0.1.0"

#endif

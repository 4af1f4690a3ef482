#!/bin/sh
# Installs the Debian packages tabled needs (when run as root; otherwise
# prints the exact apt-get line) and generates the configure script.
#
#   ./autogen.sh                  what building the server needs
#   ./autogen.sh --test-deps      also what "make check" and "make deb" need
#   --no-autoreconf               install only, do not regenerate configure
#                                 (make check's set-up calls it this way)
#   --check                       install nothing: exit 1 and print the
#                                 command when a package is missing
set -e
cd "$(dirname "$0")"

test_deps=no
autoreconf=yes
check_only=no
for a in "$@"; do
  case "$a" in
    --test-deps) test_deps=yes ;;
    --no-autoreconf) autoreconf=no ;;
    --check) check_only=yes; autoreconf=no ;;
    -h|--help) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "autogen.sh: unknown option $a (see ./autogen.sh --help)" >&2; exit 2 ;;
  esac
done

# Building the server: the libraries configure looks for, llhttp's C sources
# (node-llhttp), libpq-dev for the PostgreSQL backend, the autotools.
PKGS="libevent-dev libssl-dev libyajl-dev libexpat1-dev libleveldb-dev libpq-dev node-llhttp autoconf automake libtool pkg-config make gcc"
# Only for the tests and the package:
# postgresql-15: the PostgreSQL backend's tests start a private server;
# python3-azure: the Python SDK; nodejs and npm: the JavaScript SDK and
# Azurite are installed from npm into the build tree by the tests;
# man-db, groff-base: the man pages are rendered (man -l); chromium: the
# dashboard screenshot; debhelper, dpkg-dev, fakeroot, lintian,
# libsystemd-dev: make deb; libsqlite3-dev: the SQLite plug-in example.
TEST_PKGS="postgresql-15 python3-azure man-db groff-base chromium debhelper dpkg-dev fakeroot lintian libsystemd-dev libsqlite3-dev"
[ "$test_deps" = yes ] && PKGS="$PKGS $TEST_PKGS"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Any installed Node.js and npm will do (they need not come from Debian).
if [ "$test_deps" = yes ]; then
  command -v node >/dev/null 2>&1 || missing="$missing nodejs"
  command -v npm >/dev/null 2>&1 || missing="$missing npm"
fi
if [ -n "$missing" ]; then
  if [ "$check_only" = no ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "autogen.sh: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing
  else
    echo "autogen.sh: missing packages. Run:"
    echo "  sudo apt-get install -y$missing"
    exit 1
  fi
fi
[ "$autoreconf" = no ] || autoreconf -fi

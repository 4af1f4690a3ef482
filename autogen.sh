#!/bin/sh
# Installs the Debian packages tabled needs (when run as root; otherwise prints
# the exact apt-get line) and generates the configure script.
set -e
cd "$(dirname "$0")"

PKGS="libevent-dev libssl-dev libyajl-dev libexpat1-dev libleveldb-dev libpq-dev postgresql-15 node-llhttp autoconf automake libtool pkg-config make gcc python3-azure man-db groff-base"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# libpq-dev: the postgres backend; postgresql-15: its tests start a private
# server (initdb) and are skipped without it.
# man-db and groff-base: tests/integration/test_install.py renders the man
# pages (man -l). The JavaScript SDK tests need Node.js and npm; any
# installed ones will do. (make deb checks its own tools.)
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
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
autoreconf -fi

#!/bin/sh
# Checks the Debian -dev packages dsperf builds against (via pkg-config), and Open MPI's mpirun
# (multi-host runs and their tests). When one is missing it installs them if run as root,
# otherwise prints the one apt-get line that would, and fails.
PKGS="pkg-config libcurl4-openssl-dev libevent-dev libjansson-dev libpcre2-dev libssl-dev libsqlite3-dev zlib1g-dev liburing-dev libopenmpi-dev openmpi-bin"
MODS="libcurl libevent libevent_pthreads jansson libpcre2-8 libcrypto ompi-c sqlite3 zlib liburing"
missing=0
command -v pkg-config >/dev/null 2>&1 || missing=1
command -v mpirun >/dev/null 2>&1 || missing=1
if [ $missing -eq 0 ]; then
  for m in $MODS; do pkg-config --exists "$m" || { missing=1; break; }; done
fi
[ $missing -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "dsperf: installing build dependencies: $PKGS" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PKGS) >&2 || {
    echo "dsperf: apt-get install failed; run: apt-get install $PKGS" >&2; exit 1; }
  exit 0
fi
echo "dsperf: missing build dependencies; run: sudo apt-get install $PKGS" >&2
exit 1

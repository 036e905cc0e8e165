#!/bin/bash
# test/install-deps.sh: install what building and testing gpusort needs on a
# Debian/Ubuntu machine (as root): PostgreSQL PG_MAJOR (default 15) with its
# server headers and PGXS, a C compiler and make, Perl's IPC::Run for the
# TAP tests, Python 3 for the fuzzer, and the en_US, de_DE and sv_SE UTF-8
# locales that the collation tests use.  Does nothing that is already done.
# The distribution must ship PostgreSQL PG_MAJOR (Debian 12: 15; trixie: 17;
# sid: 18); test/chroot.sh runs this script in such a chroot.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root (or install the packages yourself)" >&2; exit 1; }
major=${PG_MAJOR:-15}

# apt fails now and then on a mirror's hiccup: three tries
apt_retry() {
  local n
  for n in 1 2 3; do
    "$@" && return 0
    [ $n = 3 ] || { echo "install-deps: '$*' failed, again in 15 s" >&2; sleep 15; }
  done
  echo "install-deps: '$*' failed 3 times" >&2
  return 1
}

need=()
for p in postgresql-$major postgresql-server-dev-$major libicu-dev libipc-run-perl \
         locales python3 make gcc libc6-dev curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt_retry apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt_retry apt-get install -y -qq "${need[@]}" >/dev/null
fi
# en_US for the suite's default collation; de_DE and sv_SE for libc
# collation tests whose accents and letters sort differently
gen=0
for loc in en_US de_DE sv_SE; do
  if ! locale -a 2>/dev/null | grep -qi "^$loc\.utf-\?8$"; then
    sed -i "s/^# *$loc.UTF-8 UTF-8/$loc.UTF-8 UTF-8/" /etc/locale.gen
    grep -q "^$loc.UTF-8 UTF-8" /etc/locale.gen || echo "$loc.UTF-8 UTF-8" >> /etc/locale.gen
    gen=1
  fi
done
if [ $gen = 1 ]; then locale-gen >/dev/null; fi

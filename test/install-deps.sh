#!/bin/bash
# test/install-deps.sh: install what building and testing gpusort needs on a
# Debian/Ubuntu machine (as root): PostgreSQL 15 with its server headers and
# PGXS, Perl's IPC::Run for the TAP tests, Python 3 for the fuzzer, and the
# en_US, de_DE and sv_SE UTF-8 locales that the collation tests use.  Does
# nothing that is already done.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root (or install the packages yourself)" >&2; exit 1; }

need=()
for p in postgresql-15 postgresql-server-dev-15 libicu-dev libipc-run-perl locales python3 make gcc; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
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

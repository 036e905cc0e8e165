#!/bin/bash
# test/install-deps.sh: install what building and testing gpusort needs on a
# Debian/Ubuntu machine (as root): PostgreSQL 15 with its server headers and
# PGXS, Perl's IPC::Run for the TAP tests, and the en_US.UTF-8 locale that
# the collation tests use.  Does nothing that is already done.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root (or install the packages yourself)" >&2; exit 1; }

need=()
for p in postgresql-15 postgresql-server-dev-15 libipc-run-perl locales make gcc; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then
  sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
  grep -q '^en_US.UTF-8 UTF-8' /etc/locale.gen || echo 'en_US.UTF-8 UTF-8' >> /etc/locale.gen
  locale-gen >/dev/null
fi

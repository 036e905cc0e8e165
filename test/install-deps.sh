#!/bin/bash
# test/install-deps.sh: install what building and testing gpusort needs on a
# Debian/Ubuntu machine (as root): PostgreSQL PG_MAJOR with its server
# headers and PGXS, a C compiler and make, Perl's IPC::Run for the TAP
# tests, Python 3 for the fuzzer, and the en_US, de_DE and sv_SE UTF-8
# locales that the collation tests use.  Does nothing that is already done.
#
# Without PG_MAJOR, the distribution's own PostgreSQL is taken: the major
# of its "postgresql" package's dependency (Debian 12: 15; trixie: 17;
# sid: 18), else the newest postgresql-NN that apt knows of.  A package
# that apt does not know of at all is reported at once; only apt's
# downloads are tried again (three times), for a mirror's hiccups.
# test/chroot.sh runs this script in chroots of newer suites, with
# PG_MAJOR set (19: with experimental's PostgreSQL pinned in).
#
# --packaging adds what building the Debian package needs: pg_buildext
# (postgresql-server-dev-all), debhelper, dpkg-dev and build-essential.
#
# apt's and locale-gen's output is shown only where they fail (it holds
# nothing else a user must read: debconf's "TERM is not set" and "apt-utils
# is not installed" in a shell without a terminal), with a line every 20 s
# meanwhile (test/progress.sh).
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root (or install the packages yourself)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"

packaging=0
case "${1:-}" in
  "") ;;
  --packaging) packaging=1 ;;
  *) echo "usage: $0 [--packaging]" >&2; exit 1 ;;
esac

die() { echo "install-deps: $*" >&2; exit 1; }

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

# package lists are fetched once, and only where something is missing
updated=0
apt_update() {
  [ $updated = 1 ] && return 0
  echo "install-deps: apt-get update"
  apt_retry progress_quiet "apt-get update" apt-get update -q || die "apt-get update failed"
  updated=1
}

# the major of the distribution's own PostgreSQL: "postgresql" depends on
# postgresql-NN; without that package, the highest postgresql-NN known
default_major() {
  local m
  m=$(apt-cache show postgresql 2>/dev/null \
        | sed -n -E 's/^Depends:.*postgresql-([0-9]+)([ ,]|$).*/\1/p' | sort -n | tail -1)
  [ -n "$m" ] || m=$(apt-cache pkgnames postgresql- 2>/dev/null \
        | sed -n -E 's/^postgresql-([0-9]+)$/\1/p' | sort -n | tail -1)
  echo "$m"
}

major=${PG_MAJOR:-}
if [ -z "$major" ]; then
  major=$(default_major)
  if [ -z "$major" ]; then
    apt_update
    major=$(default_major)
  fi
  [ -n "$major" ] || die "no PostgreSQL package known to apt (set PG_MAJOR)"
  echo "install-deps: PostgreSQL $major, the distribution's own (PG_MAJOR not set)"
fi

need=()
for p in postgresql-$major postgresql-server-dev-$major libicu-dev libipc-run-perl \
         locales python3 make gcc libc6-dev curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ $packaging = 1 ]; then
  for p in postgresql-server-dev-all debhelper dpkg-dev build-essential; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt_update
  # a name that apt does not know of fails the same way every time:
  # report it instead of trying again
  unknown=()
  for p in "${need[@]}"; do
    apt-cache show "$p" >/dev/null 2>&1 || unknown+=("$p")
  done
  [ ${#unknown[@]} = 0 ] || die "no such package here: ${unknown[*]} (PostgreSQL $major is not shipped by this distribution's apt sources)"
  # apt's own output is kept quiet; say what may take a minute or two
  echo "install-deps: downloading and installing ${#need[@]} packages and what they depend on"
  apt_retry progress_quiet "installing" apt-get install -y -q "${need[@]}"
  echo "install-deps: installed"
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
if [ $gen = 1 ]; then
  echo "install-deps: generating the locales en_US, de_DE and sv_SE (UTF-8)"
  progress_quiet "generating" locale-gen
fi

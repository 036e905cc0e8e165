#!/bin/bash
# .ci/package.sh: build, check, install and test the Debian package of
# gpusort, as root on a Debian 12 machine with network.
#
#  1. Installs what it needs: test/install-deps.sh (PostgreSQL with its
#     server headers, the locales the suite assumes) and the packaging tools
#     (postgresql-server-dev-all for pg_buildext, debhelper, dpkg-dev,
#     lintian).
#  2. Copies the tree (the files git knows, or all of it outside git) to a
#     scratch directory, makes the orig tarball from it and builds the
#     source and binary packages there (dpkg-buildpackage, debian/rules),
#     for one PostgreSQL version (GPUSORT_PKG_PG, default 15).  With nvcc
#     under CUDA_HOME the package carries the CUDA engine, without it (CI)
#     it is CPU-only; GPUSORT_PKG_PROFILES=nocuda forces CPU-only.
#  3. Runs lintian on the .changes (source, package, debug symbols) and
#     fails on any error or warning.
#  4. Under the lock GPUSORT_PKG_LOCK (default /tmp/gpusort-test.lock, the
#     lock that test runs on a shared machine take around install and test):
#     sets aside a gpusort that "make install" left in the same directories
#     (dpkg would overwrite it, and purging would then remove it), installs
#     the package and checks with dpkg -S that the gpusort.so, control and
#     SQL files PostgreSQL loads are the package's; makes a cluster the
#     Debian way (pg_createcluster, port GPUSORT_PKG_PORT, default 5439 or
#     the next free one, en_US.UTF-8) with gpusort preloaded and the
#     settings test/run.sh gives its own server, starts it (pg_ctlcluster)
#     and runs "make installcheck" against it as postgres; then drops the
#     cluster, purges the package, checks that it left nothing behind, and
#     puts back what was set aside.
#
# Prints each step's time and the total; the exit status is 0 only if all
# passed.  Everything is undone on failure too (cluster, package, scratch
# directory; GPUSORT_PKG_KEEP=1 keeps the scratch directory).
#
# CI (.ci/run) runs it in a Debian 12 chroot of its own (test/chroot.sh
# run DIR 15 -- .ci/package.sh), where no "make install" ever put gpusort
# and no other pass uses what the package installs.  On two cores, with the
# CPU-only build: about 1.5 minutes to install the tools, build and lint,
# then the regression suite, 4.5 minutes on a quiet machine and up to 10 on
# a busy one (as long as test/run.sh's regression pass).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pg=${GPUSORT_PKG_PG:-15}
lock=${GPUSORT_PKG_LOCK:-/tmp/gpusort-test.lock}
cluster=pkgtest
pkg=postgresql-$pg-gpusort
started=$SECONDS

[ "$(id -u)" = 0 ] || { echo "package.sh: run as root" >&2; exit 1; }

# step NAME: say which step starts, and when (seconds since the start)
step() {
  echo "== package.sh: $1 (at $((SECONDS - started)) s)"
}

# --- 1. what building and testing need ------------------------------------
step "dependencies"
PG_MAJOR=$pg "$root/test/install-deps.sh"
need=()
for p in postgresql-server-dev-all debhelper dpkg-dev build-essential lintian; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- 2. build in a copy of the tree ------------------------------------------
step "build"
work=$(mktemp -d /var/tmp/gpusort-pkg.XXXXXX)
setaside=$work/setaside
cluster_made=0
installed=0
cleanup() {
  local rc=$?
  set +e
  if [ $cluster_made = 1 ]; then
    pg_dropcluster --stop "$pg" "$cluster"
  fi
  if [ $installed = 1 ]; then
    dpkg --purge "$pkg" >/dev/null
  fi
  # what make install had left, put back
  if [ -d "$setaside" ]; then
    (cd "$setaside" && find . -type f -print0 | xargs -0r -I{} cp -p {} /{})
  fi
  if [ "${GPUSORT_PKG_KEEP:-0}" = 1 ]; then
    echo "package.sh: scratch directory kept: $work"
  else
    rm -rf "$work"
  fi
  echo "== package.sh: $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s"
  exit $rc
}
trap cleanup EXIT

cd "$root"
version=$(dpkg-parsechangelog -S Version)
upstream=${version%-*}
src=$work/gpusort-$upstream
mkdir -p "$src"
# the files git knows (tracked, or new and not ignored), as they are now;
# no build outputs
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -C "$src" -xf -
else
  tar --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$src" -xf -
fi
tar -C "$work" --exclude="gpusort-$upstream/debian" -cJf "$work/gpusort_$upstream.orig.tar.xz" "gpusort-$upstream"
cd "$src"
export PG_SUPPORTED_VERSIONS=$pg
pg_buildext updatecontrol
dpkg-buildpackage -us -uc ${GPUSORT_PKG_PROFILES:+-P"$GPUSORT_PKG_PROFILES"} > "$work/build.log" 2>&1 || {
  tail -50 "$work/build.log"; echo "package.sh: dpkg-buildpackage failed"; exit 1; }
changes=$(ls "$work"/gpusort_"$version"_*.changes)
deb=$(ls "$work/${pkg}_${version}"_*.deb)
echo "built: $(cd "$work" && ls *.deb *.ddeb *.dsc 2>/dev/null | tr '\n' ' ')"
dpkg-deb -f "$deb" Description | grep -i 'engines in this build' || true

# --- 3. lintian -----------------------------------------------------------------
step "lintian"
# as an unprivileged user (lintian advises against root): it only reads
chmod 755 "$work"
runuser -u nobody -- lintian --display-info --fail-on error,warning "$changes" || {
  echo "package.sh: lintian reported errors or warnings"; exit 1; }
echo "lintian: no errors, no warnings"

# --- 4. install, test, purge: under the lock --------------------------------------
step "waiting for $lock"
exec 9>"$lock"
flock 9
step "install"
bindir=/usr/lib/postgresql/$pg/bin
pkglibdir=$("$bindir/pg_config" --pkglibdir)
extdir=$("$bindir/pg_config" --sharedir)/extension
# an earlier run's package that is still there
if dpkg -s "$pkg" >/dev/null 2>&1; then
  dpkg --purge "$pkg" >/dev/null
fi
# what make install left: set aside, to be put back at the end
for f in "$pkglibdir"/gpusort.so "$extdir"/gpusort.control "$extdir"/gpusort--*.sql; do
  [ -e "$f" ] || continue
  if dpkg -S "$f" >/dev/null 2>&1; then
    echo "package.sh: $f belongs to $(dpkg -S "$f" | cut -d: -f1)" >&2; exit 1
  fi
  mkdir -p "$setaside$(dirname "$f")"
  mv "$f" "$setaside$f"
  echo "set aside (make install's): $f"
done
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
# the files the server loads are the package's
for f in "$pkglibdir"/gpusort.so "$extdir"/gpusort.control "$extdir"/gpusort--"$upstream".sql; do
  owner=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1 || true)
  [ "$owner" = "$pkg" ] || { echo "package.sh: $f is not $pkg's (${owner:-no package})" >&2; exit 1; }
done
echo "installed $pkg $version: $(dpkg -L "$pkg" | grep -c '') paths, gpusort.so and the SQL files are the package's"

step "cluster and make installcheck"
port=${GPUSORT_PKG_PORT:-5439}
while ss -Hltn "sport = :$port" | grep -q . || pg_lsclusters -h | awk '{print $3}' | grep -qx "$port"; do
  port=$((port + 1))
done
if pg_lsclusters -h | awk -v v="$pg" -v c="$cluster" '$1 == v && $2 == c' | grep -q .; then
  pg_dropcluster --stop "$pg" "$cluster"
fi
cluster_made=1
pg_createcluster "$pg" "$cluster" --port "$port" --locale en_US.UTF-8 --encoding UTF8 \
  --start-conf manual >/dev/null
# the settings test/run.sh gives its own server (test/regress.conf), on the
# CPU engine
{ cat "$root/test/regress.conf"; echo "gpusort.engine = 'cpu'"; } \
  > "/etc/postgresql/$pg/$cluster/conf.d/gpusort.conf"
pg_ctlcluster "$pg" "$cluster" start
runuser -u postgres -- psql -X -q -p "$port" -d postgres -c 'CREATE EXTENSION gpusort' \
  -c 'SELECT version, build, engines FROM gpusort_info()' -c 'DROP EXTENSION gpusort'
# the tests, in a copy postgres can write its results in
tests=$work/installcheck
cp -r "$src" "$tests"
chown -R postgres "$tests"
runuser -u postgres -- env LC_ALL=en_US.UTF-8 LANG=en_US.UTF-8 \
  make -C "$tests" installcheck PG_CONFIG="$bindir/pg_config" USE_CUDA=0 \
    PGHOST=/var/run/postgresql PGPORT="$port" PGUSER=postgres || {
  cat "$tests/regression.diffs" 2>/dev/null | head -200
  echo "package.sh: make installcheck failed"; exit 1; }

step "drop the cluster, purge the package"
pg_dropcluster --stop "$pg" "$cluster"
cluster_made=0
dpkg --purge "$pkg" >/dev/null
installed=0
left=$(ls "$pkglibdir"/gpusort.so "$extdir"/gpusort.control "$extdir"/gpusort--*.sql 2>/dev/null || true)
[ -z "$left" ] || { echo "package.sh: left after the purge: $left" >&2; exit 1; }
echo "purged: nothing of gpusort left"

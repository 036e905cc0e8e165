#!/bin/bash
# .ci/package.sh: build, check, install and test the Debian package of
# gpusort for one PostgreSQL version, as root on a Debian machine (or
# chroot) with network that ships that version: 15 on Debian 12, 17 on
# trixie, 18 on sid, 19 on sid with experimental's PostgreSQL 19
# (test/chroot.sh makes each).
#
#  1. Installs what it needs: test/install-deps.sh (PostgreSQL with its
#     server headers, the locales the suite assumes) and the packaging tools
#     (postgresql-server-dev-all for pg_buildext, debhelper, dpkg-dev,
#     lintian); with GPUSORT_PKG_CUDA=1, Debian's CUDA toolkit too
#     (nvidia-cuda-toolkit and nvidia-cuda-toolkit-gcc, from non-free,
#     which apt's sources must then have).
#  2. Copies the tree (the files git knows, or all of it outside git) to a
#     scratch directory, makes the orig tarball from it and builds the
#     source and binary packages there (dpkg-buildpackage, debian/rules),
#     for one PostgreSQL version (GPUSORT_PKG_PG, default 15), which
#     pg_buildext is told is the one supported (PG_SUPPORTED_VERSIONS: 19,
#     from experimental, is not among sid's).  CPU-only, with the build
#     profile pkg.gpusort.nocuda, unless GPUSORT_PKG_CUDA=1: then with the
#     CUDA engine, built by Debian's toolkit and linked with its libcudart.
#     For 15's CPU-only package, the build is the README's package route:
#     its blocks marked "<!-- package route: build", "install" and "query"
#     run as written, one after another, in the copy and in a bare
#     environment (env -i, PATH and HOME alone, as test/chroot.sh gives),
#     through the query, whose plan must be a GpuSort; dpkg-buildpackage -S
#     then adds the source package.  The route needs Debian's cluster
#     "15 main", which package.sh makes where there is none (as the
#     postgresql-15 package does on a machine, and test/chroot.sh's chroots
#     do not) and drops afterwards; where there is one already, the route
#     is skipped and the package built as for the other versions.
#  3. Runs lintian, the distribution's own, on the .changes (source,
#     package, debug symbols) and fails on any error or warning.
#  4. Under the lock GPUSORT_PKG_LOCK (default /tmp/gpusort-test.lock, the
#     lock that test runs on a shared machine take around install and test):
#     sets aside a gpusort that "make install" left in the same directories
#     (dpkg would overwrite it, and purging would then remove it), installs
#     the package (with the libcudart it depends on, where built with CUDA)
#     and checks with dpkg -S that the gpusort.so, control and SQL files
#     PostgreSQL loads are the package's; makes a cluster the Debian way
#     (pg_createcluster, port GPUSORT_PKG_PORT, default 5430 plus the
#     major version or the next free one, en_US.UTF-8) with gpusort
#     preloaded and the settings test/run.sh gives its own server, starts
#     it (pg_ctlcluster; on a port taken meanwhile, on the next) and runs
#     "make installcheck" against it as postgres (the tests of
#     GPUSORT_PKG_TESTS, default all); then drops the cluster, purges the
#     package, checks that it left nothing behind, and puts back what was
#     set aside.
#
# GPUSORT_PKG_OUT: a directory to copy the built .deb files to, with, for
# a CUDA build, the libcudart package they depend on (apt-get download):
# what test/gpu/package.sh installs on the GPU test host.
#
# Prints each step's time and the total; the exit status is 0 only if all
# passed.  Everything is undone on failure too (cluster, package, scratch
# directory; GPUSORT_PKG_KEEP=1 keeps the scratch directory).
#
# CI runs it in a chroot of its own for each version (test/chroot.sh run
# DIR V GPUSORT_PKG_PG=V -- .ci/package.sh), where no "make install" ever
# put gpusort and no other pass uses what the package installs.  On two
# cores, with the CPU-only build: 10 to 70 s to install the tools (sid's
# the most), 20 to 30 s to build and lint (45 to 80 s on a busy machine),
# then the regression suite, 2.5 to 3.5 minutes on a quiet machine and
# more on a busy one (as long as test/run.sh's regression pass): 3 to 4.5
# minutes in all.  The README's route adds 10 to 20 s (its cluster, made
# and restarted, and its query's million rows); its build is the one
# package.sh lints and tests.  A CUDA build adds about a minute of nvcc.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pg=${GPUSORT_PKG_PG:-15}
lock=${GPUSORT_PKG_LOCK:-/tmp/gpusort-test.lock}
cuda=${GPUSORT_PKG_CUDA:-0}
export DEBIAN_FRONTEND=noninteractive
cluster=pkgtest
pkg=postgresql-$pg-gpusort
started=$SECONDS

[ "$(id -u)" = 0 ] || { echo "package.sh: run as root" >&2; exit 1; }
source "$root/test/progress.sh"

# step NAME: say which step starts, and when (seconds since the start)
step() {
  echo "== package.sh: $1 (at $((SECONDS - started)) s)"
}

# --- 1. what building and testing need ------------------------------------
step "dependencies"
PG_MAJOR=$pg "$root/test/install-deps.sh"
need=()
tools=(postgresql-server-dev-all debhelper dpkg-dev build-essential lintian)
[ "$cuda" = 1 ] && tools+=(nvidia-cuda-toolkit nvidia-cuda-toolkit-gcc)
for p in "${tools[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  progress_quiet "apt-get update" apt-get update -q
  if [ "$cuda" = 1 ] && ! apt-cache show nvidia-cuda-toolkit-gcc >/dev/null 2>&1; then
    echo "package.sh: GPUSORT_PKG_CUDA=1 needs Debian's CUDA toolkit: add non-free (and contrib) to apt's sources" >&2
    exit 1
  fi
  progress_quiet "installing" apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# --- 2. build in a copy of the tree ------------------------------------------
step "build"
work=$(mktemp -d /var/tmp/gpusort-pkg.XXXXXX)
setaside=$work/setaside
cluster_made=0
main_made=0
installed=0
# taken: something listens there (a chroot may lack ss: bash's /dev/tcp),
# or a cluster is configured for it
port_taken() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null ||
    pg_lsclusters -h | awk '{print $3}' | grep -qx "$1"
}
# drop_cluster NAME: a cluster that package.sh made, and its configuration,
# which pg_dropcluster leaves where it holds a file of ours (conf.d/gpusort.conf)
drop_cluster() {
  pg_dropcluster --stop "$pg" "$1"
  rm -rf "/etc/postgresql/$pg/$1"
}
cleanup() {
  local rc=$?
  set +e
  [ $main_made = 1 ] && drop_cluster main
  if [ $cluster_made = 1 ]; then
    drop_cluster "$cluster"
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
profiles=()
[ "$cuda" = 1 ] || profiles=(-Ppkg.gpusort.nocuda)

# the README's package route, for 15's CPU-only package, where it will not
# touch a cluster of the machine's own
route=0
if [ "$pg" = 15 ] && [ "$cuda" = 0 ]; then
  if [ -e /etc/postgresql/15/main ] || pg_lsclusters -h | awk '$1 == 15 && $2 == "main"' | grep -q .; then
    echo "package.sh: a cluster 15 main exists here: the README's package route is not run"
  else
    route=1
  fi
fi
# readme_block NAME: the commands of the README's block marked
# "<!-- package route: NAME", the first fenced block after the mark
readme_block() {
  awk -v mark="<!-- package route: $1" '
    index($0, mark) == 1 { want = 1; next }
    want && /^```/ { if (open) exit; open = 1; next }
    open { print }' "$root/README.md"
}
# route_run NAME: run that block as written, from the copy's root, in a
# bare environment; its output in $work/route-NAME.log, which must hold
# none of the warnings a user would have to learn to ignore
route_run() {
  local script=$work/route-$1.sh log=$work/route-$1.log
  readme_block "$1" > "$script"
  [ -s "$script" ] || { echo "package.sh: README.md has no block marked 'package route: $1'" >&2; exit 1; }
  echo "README, package route, $1:"
  sed 's/^/    /' "$script"
  (cd "$src" && PROGRESS_LOG=$log progress_quiet "$1" \
      env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -e "$script") 2>/dev/null || {
    tail -50 "$log"; echo "package.sh: the README's package route failed at '$1'"; exit 1; }
  if grep -E -i 'debconf:|could not change directory|permission denied|^(W|N): ' "$log"; then
    echo "package.sh: the README's package route printed warnings at '$1' (above)"; exit 1
  fi
}

if [ $route = 1 ]; then
  step "build: the README's package route"
  route_run build
  # the source package too, for lintian
  dpkg-buildpackage -S -us -uc "${profiles[@]}" > "$work/build.log" 2>&1 || {
    tail -50 "$work/build.log"; echo "package.sh: dpkg-buildpackage -S failed"; exit 1; }
else
  pg_buildext updatecontrol
  dpkg-buildpackage -us -uc "${profiles[@]}" > "$work/build.log" 2>&1 || {
    tail -50 "$work/build.log"; echo "package.sh: dpkg-buildpackage failed"; exit 1; }
fi
changes=("$work"/gpusort_"$version"_*.changes)
deb=$(ls "$work/${pkg}_${version}"_*.deb)
echo "built: $(cd "$work" && ls *.deb *.ddeb *.dsc 2>/dev/null | tr '\n' ' ')"
dpkg-deb -f "$deb" Description | grep -i 'engines in this build' || true
dpkg-deb -f "$deb" Section Depends Suggests
if [ -n "${GPUSORT_PKG_OUT:-}" ]; then
  mkdir -p "$GPUSORT_PKG_OUT"
  rm -f "$GPUSORT_PKG_OUT"/*.deb
  cp "$work"/*.deb "$GPUSORT_PKG_OUT"/
  # the CUDA runtime the package links, as a package of its own
  for d in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -n 's/^ *\(libcudart[^ ]*\).*/\1/p'); do
    (cd "$GPUSORT_PKG_OUT" && apt-get -o APT::Sandbox::User=root download -q "$d" >/dev/null)
  done
  echo "copied to $GPUSORT_PKG_OUT: $(cd "$GPUSORT_PKG_OUT" && ls | tr '\n' ' ')"
fi

# --- 3. lintian -----------------------------------------------------------------
step "lintian"
# as an unprivileged user (lintian advises against root): it only reads
chmod 755 "$work"
runuser -u nobody -- lintian --display-info --fail-on error,warning "${changes[@]}" || {
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
if [ $route = 1 ]; then
  # Debian's cluster, as the postgresql-15 package makes it, on 5432 or,
  # where another chroot's server has that, the next port free (psql finds
  # the one cluster there is)
  main_port=5432
  while port_taken "$main_port"; do
    main_port=$((main_port + 1))
  done
  main_made=1
  pg_createcluster 15 main --port "$main_port" --start >/dev/null
  route_run install
  step "the README's package route: the query"
  route_run query
  cat "$work/route-query.log"
  grep -q 'Custom Scan (GpuSort)' "$work/route-query.log" &&
    ! grep -q 'ERROR' "$work/route-query.log" || {
    echo "package.sh: the README's query did not run a GpuSort" >&2; exit 1; }
  drop_cluster main
  main_made=0
else
  progress_quiet "installing" apt-get install -y -q --no-install-recommends "$deb"
fi
# the files the server loads are the package's
for f in "$pkglibdir"/gpusort.so "$extdir"/gpusort.control "$extdir"/gpusort--"$upstream".sql; do
  owner=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1 || true)
  [ "$owner" = "$pkg" ] || { echo "package.sh: $f is not $pkg's (${owner:-no package})" >&2; exit 1; }
done
echo "installed $pkg $version: $(dpkg -L "$pkg" | grep -c '') paths, gpusort.so and the SQL files are the package's"

step "cluster and make installcheck"
# CI runs the packages of several versions at once, each in a chroot of its
# own: the lock above is the chroot's, but the network is the machine's.
# Each version starts at a port of its own, and a port another chroot took
# between the check and the start only moves this cluster to the next.
port=${GPUSORT_PKG_PORT:-$((5430 + pg))}
if pg_lsclusters -h | awk -v v="$pg" -v c="$cluster" '$1 == v && $2 == c' | grep -q .; then
  drop_cluster "$cluster"
fi
for try in 1 2 3 4 5 6 7 8; do
  while port_taken "$port"; do
    port=$((port + 1))
  done
  cluster_made=1
  pg_createcluster "$pg" "$cluster" --port "$port" --locale en_US.UTF-8 --encoding UTF8 \
    --start-conf manual >/dev/null
  # the settings test/run.sh gives its own server (test/regress.conf), on the
  # CPU engine
  { cat "$root/test/regress.conf"; echo "gpusort.engine = 'cpu'"; } \
    > "/etc/postgresql/$pg/$cluster/conf.d/gpusort.conf"
  pg_ctlcluster "$pg" "$cluster" start && break
  [ "$try" -lt 8 ] || { echo "package.sh: the cluster did not start" >&2; exit 1; }
  echo "package.sh: the cluster did not start on port $port; trying the next"
  drop_cluster "$cluster"
  cluster_made=0
  port=$((port + 1))
done
runuser -u postgres -- psql -X -q -p "$port" -d postgres -c 'CREATE EXTENSION gpusort' \
  -c 'SELECT version, build, engines FROM gpusort_info()' -c 'DROP EXTENSION gpusort'
# the tests, in a copy postgres can write its results in
tests=$work/installcheck
cp -r "$src" "$tests"
chown -R postgres "$tests"
runuser -u postgres -- env LC_ALL=en_US.UTF-8 LANG=en_US.UTF-8 \
  make -C "$tests" installcheck PG_CONFIG="$bindir/pg_config" USE_CUDA=0 \
    ${GPUSORT_PKG_TESTS:+REGRESS="$GPUSORT_PKG_TESTS"} \
    PGHOST=/var/run/postgresql PGPORT="$port" PGUSER=postgres 2>&1 | progress_watch "make installcheck" || {
  cat "$tests/regression.diffs" 2>/dev/null | head -200
  echo "package.sh: make installcheck failed"; exit 1; }

step "drop the cluster, purge the package"
drop_cluster "$cluster"
cluster_made=0
dpkg --purge "$pkg" >/dev/null
installed=0
left=$(ls "$pkglibdir"/gpusort.so "$extdir"/gpusort.control "$extdir"/gpusort--*.sql 2>/dev/null || true)
[ -z "$left" ] || { echo "package.sh: left after the purge: $left" >&2; exit 1; }
echo "purged: nothing of gpusort left"

#!/bin/bash
# test/core/run.sh: PostgreSQL's own core regression suite (src/test/regress,
# parallel_schedule) on a server with gpusort preloaded.
#
#   test/core/run.sh [MODE ...]     (default: off cpu spill gpu)
#
# MODE is one pass of the whole schedule on a temporary server that
# pg_regress starts, with shared_preload_libraries = 'gpusort' and:
#   off       gpusort.enabled = off: must pass pg_regress's own expected
#             files, as a server without gpusort does
#   cpu       GpuSort for every sort (gpusort.min_rows = 0), CPU engine
#   spill     as cpu, with gpusort.max_memory = 64kB: every sort spills
#   gpu       GpuSort for every sort, gpusort.engine = gpu (without a GPU:
#             its fallback to the CPU engine)
#   parallel  as cpu, with parallel plans forced (parallel costs 0, two
#             workers a Gather), compared with parallel-off (the same with
#             gpusort off).  Not a gate: with plans forced parallel the
#             suite itself is not deterministic (rows of parallel scans
#             without ORDER BY, errors raised in a worker or the leader,
#             deadlocks of workers' catalog locks with the concurrent
#             VACUUM FULL pg_class), in parallel-off as well
#   none      no gpusort at all (see below)
# A forced-on pass differs from expected/ (plans, the order of rows with
# equal sort keys), so pg_regress's verdict is not its result: its results/
# are compared with the off pass's, test by test, by test/core/classify.py,
# which accepts differences inside EXPLAIN output and those listed in
# test/core/tie_order.txt, and fails on anything else.  A forced-on pass
# also fails where no plan of its results shows GpuSort.  The off pass a
# forced-on pass needs is run first where this server version has none.
#
# The suite comes from Debian's source package of the installed server:
# apt-get source --download-only with deb-src entries made from the
# machine's own apt sources, in an apt state of its own (the system's is
# left alone); only src/test/regress and contrib/spi are unpacked from the
# orig tarball, and regress.so, refint.so and autoinc.so are built with
# PGXS.  That is done once per server version and kept, with each pass's
# results, under $GPUSORT_CORE_CACHE/MAJOR.  Where apt cannot download the
# source package, its orig tarball is fetched from the mirror's pool by
# name (postgresql-19_19~rc1.orig.tar.bz2 for a release candidate from
# experimental).  Where the archive no longer has the server's own
# version, the newest of the same major is used (from the index, or else
# an earlier minor release's orig tarball that the mirror's pool still
# keeps); its
# expected files may then not fit the server (fixes of later minor
# releases), so the off pass is compared with a none pass instead: a
# server with gpusort preloaded and off must give the results of one
# without it.  gpusort itself must be built and installed already (make
# install; test/run.sh does that).  As root, the servers run as
# GPUSORT_TEST_USER (PostgreSQL refuses to run as root).
#
# A pass that hangs is killed after GPUSORT_CORE_TIMEOUT seconds, with its
# temporary server, and fails, naming the tests that did not end.
#
# Environment:
#   PG_CONFIG             pg_config of the server to test (default: pg_config)
#   GPUSORT_CORE_CACHE    downloads, builds and results (default /var/tmp/gpusort-core)
#   GPUSORT_CORE_TIMEOUT  seconds a pass may take (default 600; a pass takes
#                         1 to 2 minutes on two busy cores, parallel 3 to 4)
#   GPUSORT_CORE_SCHEDULE schedule file instead of the suite's parallel_schedule
#   GPUSORT_CORE_ORIG     a PostgreSQL source tarball (Debian's orig or the
#                         project's) to take the suite from instead
#   GPUSORT_CORE_EXTRA_CONF  lines added to every pass's configuration but
#                         none's (the GPU host: gpusort.gpu_min_rows = 0)
#   GPUSORT_TEST_USER     who runs the servers as root (default postgres)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
cache=${GPUSORT_CORE_CACHE:-/var/tmp/gpusort-core}
limit=${GPUSORT_CORE_TIMEOUT:-600}
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(off cpu spill gpu)

die() { echo "core/run.sh: $*" >&2; exit 1; }

for m in "${modes[@]}"; do
  case $m in off|cpu|spill|gpu|parallel|parallel-off|none) ;; *) die "unknown mode '$m'" ;; esac
done

bindir=$("$PG_CONFIG" --bindir)
pgversion=$("$PG_CONFIG" --version)          # PostgreSQL 15.20 (Debian 15.20-0+deb12u1)
major=$(echo "$pgversion" | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pg_regress=$(dirname "$("$PG_CONFIG" --pgxs)")/../../src/test/regress/pg_regress
[ -x "$pg_regress" ] || die "no pg_regress at $pg_regress (install the server's -dev package)"
[ -f "$("$PG_CONFIG" --pkglibdir)/gpusort.so" ] || die "gpusort is not installed for $pgversion"

runas=()
if [ "$(id -u)" = 0 ]; then
  user=${GPUSORT_TEST_USER:-postgres}
  source "$here/../server_user.sh"
  server_user_add "$user"
  runas=(runuser -u "$user" --)
fi

work=$cache/$major
mkdir -p "$work"
chmod 755 "$cache" "$work"
exec 9> "$work/lock"
flock -n 9 || { echo "core/run.sh: waiting for another run in $work"; flock 9; }

# --- the suite's source and its C modules, once per server version ------
# download: the orig tarball of Debian's source package of the server, in
# $orig, its version in $srcver
download() {
  local debver apt=$cache/apt aptopt f v versions dl=$work/dl
  debver=$(echo "$pgversion" | sed -nE 's/.*\(Debian ([^)]+)\).*/\1/p')
  [ -n "$debver" ] || debver=$(dpkg-query -W -f '${Version}' "postgresql-$major" 2>/dev/null) || true

  # deb-src entries for the machine's own apt sources, in apt state of our own
  rm -rf "$apt" && mkdir -p "$apt/parts" "$apt/lists/partial"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ ! -f "$f" ] || sed -nE 's/^[[:space:]]*deb(-src)?([[:space:]])/deb-src\2/p' "$f" > "$apt/parts/${f##*/}.list"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ ! -f "$f" ] || sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$apt/parts/${f##*/}"
  done
  aptopt=(-q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/parts"
          -o Dir::State::Lists="$apt/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
          -o APT::Sandbox::User="$(id -un)")
  apt-get "${aptopt[@]}" update >/dev/null ||
    echo "core/run.sh: apt-get update reported errors (some sources have no deb-src)" >&2

  # the installed version first, then the others of this major, newest first
  versions=$(apt-cache "${aptopt[@]}" showsrc "postgresql-$major" | sed -n 's/^Version: //p' | sort -urV)
  rm -rf "$dl" && mkdir -p "$dl"
  for v in $debver $(echo "$versions" | grep -vxF "${debver:-none}"); do
    (cd "$dl" && apt-get "${aptopt[@]}" source --download-only "postgresql-$major=$v" >/dev/null 2>&1) && break
    echo "core/run.sh: postgresql-$major $v: no source to download" >&2
    rm -f "$dl"/*
  done
  orig=$(ls "$dl"/postgresql-"$major"_*.orig.tar.* 2>/dev/null | head -1) || true
  if [ -n "$orig" ]; then
    srcver=$(ls "$dl"/*.dsc | sed -E 's/.*_(.*)\.dsc$/\1/')
    return
  fi

  # the orig tarball by name from the mirror's pool: first those of the
  # installed and the indexed versions (a source package whose .dsc is
  # missing; a beta or release candidate, 19~rc1, has no minor release),
  # then those of earlier minor releases, which a mirror may keep in its
  # pool after their source packages have left the index: the newest one
  # there (the suite of an earlier minor release; see skew below)
  local mirror minor file up ups=()
  mirror=$(cat "$apt"/parts/* | sed -nE 's@^(deb-src[[:space:]]+|URIs:[[:space:]]*)(\[[^]]*\][[:space:]]+)?(https?://[^[:space:]]+/debian)/?([[:space:]].*)?$@\3@p' | head -1) || true
  for v in $debver $versions; do
    up=${v#*:}
    up=${up%-*}
    [[ " ${ups[*]} " == *" $up "* ]] || ups+=("$up")
  done
  minor=$(echo "$versions $debver" | tr ' ' '\n' | sed -nE "s/^$major\.([0-9]+).*/\1/p" | sort -n | tail -1) || true
  if [ -n "$minor" ]; then
    for ((m = minor; m >= 0 && m > minor - 8; m--)); do
      [[ " ${ups[*]} " == *" $major.$m "* ]] || ups+=("$major.$m")
    done
  fi
  if [ -n "$mirror" ]; then
    for up in "${ups[@]}"; do
      file=postgresql-${major}_$up.orig.tar.bz2
      if curl -sfL -m 300 -o "$dl/$file" "$mirror/pool/main/p/postgresql-$major/$file"; then
        orig=$dl/$file
        srcver=$up
        echo "core/run.sh: using $file from $mirror's pool" >&2
        return
      fi
      echo "core/run.sh: $file: not in $mirror's pool" >&2
      rm -f "$dl/$file"
    done
  fi
  die "no source of postgresql-$major to download (GPUSORT_CORE_ORIG names a tarball)"
}

prepare() {
  local orig top
  if [ -n "${GPUSORT_CORE_ORIG:-}" ]; then
    orig=$GPUSORT_CORE_ORIG
    srcver=$(basename "$orig" | sed -E 's/^postgresql-([0-9]+_)?//; s/(\.orig)?\.tar\..*$//')
  else
    download
  fi

  # src/test/regress and contrib/spi only
  rm -rf "$work/src" && mkdir -p "$work/src"
  python3 - "$orig" "$work/src" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    want = [m for m in t if m.name.split('/', 1)[-1].startswith(('src/test/regress/', 'contrib/spi/'))]
    t.extractall(sys.argv[2], want, **({'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}))
PY
  top=$(ls -d "$work"/src/postgresql-*)
  mv "$top/src/test/regress" "$work/src/regress"
  mv "$top/contrib/spi" "$work/src/spi"
  rm -rf "$top"

  # regress.so and the contrib/spi modules the suite loads, with PGXS
  rm -rf "${work:?}/lib" && mkdir -p "$work/lib"
  cp "$work/src/regress/regress.c" "$work/src/spi/refint.c" "$work/src/spi/autoinc.c" "$work/lib/"
  cat > "$work/lib/Makefile" <<MAKE
MODULES = regress refint autoinc
# refint's NOTICEs, which the triggers test expects (as contrib/spi builds it)
PG_CPPFLAGS = -DREFINT_VERBOSE
PG_CONFIG = $PG_CONFIG
PGXS := \$(shell \$(PG_CONFIG) --pgxs)
include \$(PGXS)
MAKE
  make -C "$work/lib" -s -j"$(nproc)" >/dev/null || die "building regress.so, refint.so and autoinc.so failed"
  chmod -R a+rX "$work/src" "$work/lib"
  echo "$pgversion|${GPUSORT_CORE_ORIG:-}|$srcver" > "$work/prepared"
}

if [ "$(cut -d'|' -f1-2 "$work/prepared" 2>/dev/null)" != "$pgversion|${GPUSORT_CORE_ORIG:-}" ]; then
  echo "== preparing the core regression suite for $pgversion"
  start=$SECONDS
  prepare
  rm -rf "$work/out"
  echo "   ($((SECONDS - start)) s)"
fi
srcver=$(cut -d'|' -f3 "$work/prepared")
echo "== core regression suite of postgresql-$major $srcver (${GPUSORT_CORE_ORIG:-Debian source}) on $pgversion"
# where the archive no longer has the installed version's source, the
# suite's expected files may not fit the server: the off pass is then
# compared with a pass without gpusort (none) instead
# (Debian's 19~rc1 is the project's 19rc1)
skew=0
if [ "$(echo "${srcver%%-*}" | tr -d '~')" != "$(echo "$pgversion" | sed -E 's/^PostgreSQL ([^ ]+).*/\1/')" ]; then
  skew=1
  echo "   (not the server's version: the off pass must give the results of a server without gpusort)"
fi
regress=$work/src/regress
schedule=${GPUSORT_CORE_SCHEDULE:-$regress/parallel_schedule}
# what make check passes in this version, beyond what is passed below
extra_opts=()
grep -q -- '--make-testtablespace-dir' "$regress/GNUmakefile" && extra_opts+=(--make-testtablespace-dir)

# the collation of the suite's text results: en_US.UTF-8 where there is one
if locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then
  locale_env=(LANG=en_US.UTF-8 LC_ALL=en_US.UTF-8)
  locale_opt=()
else
  locale_env=()
  locale_opt=(--no-locale)
fi

# --- the passes ----------------------------------------------------------
instance=
stop_instance() {
  local data=$instance/data pid
  [ -n "$instance" ] && [ -f "$data/postmaster.pid" ] || return 0
  pid=$(head -1 "$data/postmaster.pid")
  if kill -0 "$pid" 2>/dev/null; then
    echo "   stopping the server left running in $data"
    "${runas[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
      kill -9 "$pid" 2>/dev/null || true
  fi
}
regress_pid=
cleanup() {
  [ -z "$regress_pid" ] || kill -TERM "$regress_pid" 2>/dev/null || true
  stop_instance
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mode_conf() {
  [ "$1" != none ] || return 0
  echo "shared_preload_libraries = 'gpusort'"
  case $1 in
    off|parallel-off) echo "gpusort.enabled = off" ;;
    *) echo "gpusort.min_rows = 0" ;;
  esac
  case $1 in
    cpu|parallel) echo "gpusort.engine = 'cpu'" ;;
    spill) echo "gpusort.engine = 'cpu'"; echo "gpusort.max_memory = '64kB'" ;;
    gpu) echo "gpusort.engine = 'gpu'" ;;
  esac
  case $1 in
    parallel|parallel-off) printf '%s\n' "max_parallel_workers_per_gather = 2" "parallel_setup_cost = 0" \
        "parallel_tuple_cost = 0" "min_parallel_table_scan_size = 0" ;;
  esac
  echo "${GPUSORT_CORE_EXTRA_CONF:-}"
}

# unfinished DIR: tests that began (a results file) but pg_regress never
# named (it names a test of a parallel group when the test ends)
unfinished() {
  local f t
  for f in "$1"/results/*.out; do
    t=$(basename "$f" .out)
    grep -qF -- " $t" "$1/pg_regress.log" || echo "$t"
  done
}

# run_pass MODE: the schedule in $work/out/MODE; status 0 if pg_regress
# passed, 2 if it failed, 3 if it was killed (hang)
run_pass() {
  local mode=$1 out=$work/out/$1 rc=0 start=$SECONDS
  rm -rf "$out" && mkdir -p "$out"
  mode_conf "$mode" > "$out/gpusort.conf"
  [ ${#runas[@]} -eq 0 ] || chown -R "$user" "$out"
  echo "== pass $mode: $(grep -v shared_preload "$out/gpusort.conf" | paste -sd, | sed 's/,/, /g')$([ "$mode" != none ] || echo "gpusort not loaded")"
  instance=$out/tmp_check
  (cd "$out" && exec timeout --kill-after=30 "$limit" "${runas[@]}" env "${locale_env[@]}" "$pg_regress" \
      --inputdir="$regress" --outputdir="$out" --dlpath="$work/lib" --bindir="$bindir" \
      --temp-instance="$instance" --temp-config="$out/gpusort.conf" "${locale_opt[@]}" \
      --schedule="$schedule" --max-concurrent-tests=20 "${extra_opts[@]}" 9>&-) > "$out/pg_regress.log" 2>&1 &
  regress_pid=$!
  wait $regress_pid || rc=$?
  regress_pid=
  stop_instance
  instance=
  rm -rf "$out/tmp_check"
  echo "   pass $mode: $((SECONDS - start)) s; pg_regress:" \
    "$(grep -E -m1 'tests? (passed|failed)' "$out/pg_regress.log" | sed -E 's/^[# ]*//; s/ *$//' || true)"
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "   pass $mode: killed after $limit s; tests that did not end: $(unfinished "$out" | paste -sd " ")"
    return 3
  fi
  [ $rc = 0 ] || return 2
}

base_for() { case $1 in parallel) echo parallel-off ;; *) echo off ;; esac; }
# the passes to run: before a forced-on pass, the off pass it is compared
# with, where this server version has none yet; before off, none where the
# suite is another version's
todo=()
add() {
  [[ " ${todo[*]} " != *" $1 "* ]] || return 0
  if [ "$1" = off ] && [ $skew = 1 ]; then add none; fi
  todo+=("$1")
}
for m in "${modes[@]}"; do
  case $m in off|parallel-off|none) ;; *) [ -f "$work/out/$(base_for "$m")/passed" ] || add "$(base_for "$m")" ;; esac
done
for m in "${modes[@]}"; do add "$m"; done

failed=()
declare -A compared=()
for m in "${todo[@]}"; do
  rc=0
  run_pass "$m" || rc=$?
  case $m in
    none)
      [ $rc != 3 ] || failed+=("$m (hung)") ;;
    off)
      if [ $skew = 0 ] && [ $rc = 0 ]; then
        touch "$work/out/$m/passed"
      elif [ $skew = 0 ]; then
        [ $rc = 3 ] || cat "$work/out/$m/regression.diffs" 2>/dev/null || true
        echo "   FAILURE: pass off fails pg_regress (diffs: $work/out/$m/regression.diffs)"
        failed+=("$m")
      elif python3 "$here/classify.py" --exact "$work/out/none" "$work/out/off"; then
        touch "$work/out/$m/passed"
      else
        echo "   FAILURE: pass off does not give the results of pass none"
        failed+=("$m")
      fi ;;
    parallel-off)
      # plans differ from expected/: only a baseline, which must end
      if [ $rc = 3 ]; then failed+=("$m (hung)"); else touch "$work/out/$m/passed"; fi ;;
    *)
      [ $rc = 3 ] && failed+=("$m (hung)")
      n=$(grep -l 'GpuSort' "$work/out/$m/results/"*.out 2>/dev/null | wc -l || true)
      echo "   GpuSort in the plans of $n tests"
      [ "$n" -gt 0 ] || { echo "   FAILURE: no plan of pass $m shows GpuSort"; failed+=("$m (no GpuSort)"); }
      compared[$(base_for "$m")]+=" $work/out/$m" ;;
  esac
done

for b in "${!compared[@]}"; do
  [ -d "$work/out/$b/results" ] || continue
  echo "== results compared with pass $b"
  # shellcheck disable=SC2086
  python3 "$here/classify.py" --sql "$regress/sql" --list "$here/tie_order.txt" \
      "$work/out/$b" ${compared[$b]} || failed+=("classify vs $b")
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== core regression suite FAILED: ${failed[*]}"
  exit 1
fi
echo "== core regression suite passed (${modes[*]})"

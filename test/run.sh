#!/bin/bash
# test/run.sh: build, install and test gpusort.
#
# Checks the CPU engine's radix sort and the cgroup memory limit's
# discovery on their own (test/radix, test/cgroup), then runs the
# pg_regress suite (test/sql/NNN_*.sql against test/expected/) on a throwaway
# server that pg_regress starts itself, then the TAP tests in test/t/
# (PostgreSQL::Test::Cluster: loading through shared_preload_libraries,
# session_preload_libraries and LOAD, and other multi-session cases), then a
# short round of the differential fuzzer (test/fuzz/fuzz.py, its own server),
# then, where asked, PostgreSQL's own core regression suite with gpusort
# preloaded (test/core/run.sh).
# PostgreSQL refuses to run as root, so as root the servers run as an
# unprivileged user (GPUSORT_TEST_USER, default postgres) and only the
# install runs as root.
#
# Environment:
#   PG_CONFIG         pg_config of the PostgreSQL to test against (default: pg_config)
#   USE_CUDA          0 to build without CUDA even where nvcc exists
#   GPUSORT_SKIP_BUILD 1 to test the gpusort already installed (another pass
#                     of the same build: installing again under a running
#                     server of another pass would pull the library from
#                     under it)
#   GPUSORT_ENGINE    engine the regression suite forces (default: cpu; gpu on a GPU host)
#   GPUSORT_TESTS     regression tests to run (default: all)
#   GPUSORT_SKIP_REGRESS 1 to skip gpusort's own regression suite
#   GPUSORT_SKIP_RADIX 1 to skip the tests that need no server (radix sort,
#                     cgroup limits)
#   GPUSORT_SKIP_TAP  1 to skip the TAP tests
#   GPUSORT_TAP_TESTS TAP test files to run (default: all, t/*.pl)
#   GPUSORT_SKIP_FUZZ 1 to skip the short fuzzing round (test/fuzz/fuzz.py)
#   GPUSORT_FUZZ_MINUTES length of that round (default 1.25: a fixed seed and a
#                     random one, printed in the log, 45 s each)
#   GPUSORT_EXTRA_CONF lines added to the configuration of the regression
#                     server and of the TAP tests' servers
#   GPUSORT_SPILL     1 to give every sort a budget so small that it spills
#                     (gpusort.max_memory = 64kB) in the regression suite, the
#                     TAP tests and the fuzzing round; results with other
#                     EXPLAIN figures are test/expected/*_1.out
#   GPUSORT_PARALLEL  1 to force parallel plans (parallel_setup_cost and
#                     parallel_tuple_cost 0, min_parallel_table_scan_size 0,
#                     2 workers a Gather) in the regression suite, the TAP
#                     tests and the fuzzing round; results whose plans
#                     differ are test/expected/*_2.out
#   GPUSORT_LOG_DIR   where to keep the regression server's log
#   GPUSORT_CORE      modes of PostgreSQL's own core regression suite to run
#                     last, against a server with gpusort preloaded
#                     (test/core/run.sh: off, cpu, spill, gpu, parallel;
#                     default: none)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)
pgxsdir=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/../.." && pwd)
engine=${GPUSORT_ENGINE:-cpu}
spill_conf=
[ "${GPUSORT_SPILL:-0}" = 1 ] && spill_conf="gpusort.max_memory = '64kB'"
if [ "${GPUSORT_PARALLEL:-0}" = 1 ]; then
  spill_conf="${spill_conf:+$spill_conf
}max_parallel_workers_per_gather = 2
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0"
fi
source "$root/test/progress.sh"
# phase TEXT: a line for each phase, with the time since the start; within
# a phase, progress_watch says where no line came for 20 s
started=$SECONDS
phase() {
  local t=$((SECONDS - started))
  echo "== $* (at $((t / 60))m$(printf %02d $((t % 60)))s)"
}
make_args=(PG_CONFIG="$PG_CONFIG")
[ -n "${USE_CUDA:-}" ] && make_args+=(USE_CUDA="$USE_CUDA")

if [ "${GPUSORT_SKIP_BUILD:-0}" != 1 ]; then
  phase "build and install ($("$PG_CONFIG" --version))"
  make -C "$root" -s -j"$(nproc)" "${make_args[@]}" 2>&1 | progress_watch building
  make -C "$root" -s "${make_args[@]}" install
fi

# Whatever this script makes outside the tree goes when it ends, passed or
# failed (a failed run left its directories in /tmp)
unit_build=
work=
fuzzlog=
keep_fuzzlog=0
trap 'rm -rf "$unit_build" "$work"; [ "$keep_fuzzlog" = 1 ] || [ -z "$fuzzlog" ] || rm -rf "$fuzzlog"' EXIT

# the parts that need no server: the CPU engine's radix sort, in one thread
# and in several, and the cgroup memory limit's discovery, on files laid
# out as the kernel does (test/cgroup)
if [ "${GPUSORT_SKIP_RADIX:-0}" != 1 ]; then
  unit_build=$(mktemp -d /tmp/gpusort-unit.XXXXXX)
  phase "radix sort (test/radix/radix_test.c)"
  gcc -O2 -Wall -std=gnu11 -pthread -I"$root/src" "$root/test/radix/radix_test.c" "$root/src/engine/cpu_radix.c" \
    -o "$unit_build/radix_test"
  "$unit_build/radix_test" 3
  phase "cgroup memory limits (test/cgroup/cgroup_test.c)"
  gcc -O2 -Wall -std=gnu11 -I"$root/src" "$root/test/cgroup/cgroup_test.c" "$root/src/support/cgroup_memory.c" \
    -o "$unit_build/cgroup_test"
  "$unit_build/cgroup_test"
fi

# who runs the servers
runas=()
if [ "$(id -u)" = 0 ]; then
  user=${GPUSORT_TEST_USER:-postgres}
  source "$root/test/server_user.sh"
  server_user_add "$user"
  runas=(runuser -u "$user" --)
fi

# a private copy of the test files the server user can read and write in
work=$(mktemp -d /tmp/gpusort-test.XXXXXX)
cp -r "$root/test" "$root/docs" "$work/"
[ ${#runas[@]} -gt 0 ] && chown -R "$user" "$work"

# regression settings (test/regress.conf), on the chosen engine
{ cat "$root/test/regress.conf"; cat <<CONF; } > "$work/regress.conf"
gpusort.engine = '$engine'
${GPUSORT_EXTRA_CONF:-}
$spill_conf
CONF

# Every server here runs in the en_US.UTF-8 locale, whatever the caller's
# (none at all in a bare shell, cron or a minimal container: initdb would
# then make an SQL_ASCII cluster in which the tests' collations do not
# exist): the suite's text results assume its collation, and the TAP
# tests and the fuzzer name it (test/install-deps.sh generates it).
if locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then
  locale_env=(LC_ALL=en_US.UTF-8 LANG=en_US.UTF-8)
  locale_opt=
elif locale -a 2>/dev/null | grep -qi '^C\.utf-\?8$'; then
  echo "warning: locale en_US.UTF-8 is missing (test/install-deps.sh makes it); text results will differ" >&2
  locale_env=(LC_ALL=C.UTF-8 LANG=C.UTF-8)
  locale_opt=
else
  echo "warning: locales en_US.UTF-8 and C.UTF-8 are missing; text results will differ" >&2
  locale_env=(LC_ALL=C LANG=C)
  locale_opt=--no-locale
fi

tests=${GPUSORT_TESTS:-$(cd "$root/test/sql" && ls [0-9]*.sql | sed 's/\.sql$//' | tr '\n' ' ')}
[ "${GPUSORT_SKIP_REGRESS:-0}" = 1 ] && tests=
[ -z "$tests" ] || phase "pg_regress (engine = $engine${spill_conf:+, $spill_conf}): $tests"
status=0
[ -z "$tests" ] || (cd "$work" && "${runas[@]}" env "${locale_env[@]}" "$pgxsdir/src/test/regress/pg_regress" \
    --inputdir="$work/test" --outputdir="$work" --bindir="$bindir" \
    --temp-instance="$work/instance" --temp-config="$work/regress.conf" \
    --encoding=UTF8 $locale_opt --load-extension=gpusort $tests) 2>&1 | progress_watch pg_regress || status=$?
# GPUSORT_LOG_DIR: keep the server log (test/gpu/run.sh reads which engine sorted)
if [ -n "${GPUSORT_LOG_DIR:-}" ]; then
  mkdir -p "$GPUSORT_LOG_DIR" && cp "$work"/log/postmaster.log "$GPUSORT_LOG_DIR"/ 2>/dev/null || true
fi
if [ $status -ne 0 ]; then
  [ -f "$work/regression.diffs" ] && cat "$work/regression.diffs"
  # keep the diffs and actual results (git-ignored) for a look afterwards
  cp "$work/regression.diffs" "$root/regression.diffs" 2>/dev/null || true
  rm -rf "$root/results" && cp -r "$work/results" "$root/results" 2>/dev/null || true
  echo "pg_regress failed"
  exit $status
fi

if [ "${GPUSORT_SKIP_TAP:-0}" != 1 ]; then
  # prove's console formatter, which writes each result as it comes: the
  # one prove picks where its output is not a terminal (a log, CI) writes a
  # file's results only when the file ends, minutes later for some
  phase "TAP tests (prove --timer: each file's start and time)"
  tap_conf="${GPUSORT_EXTRA_CONF:-}${GPUSORT_EXTRA_CONF:+
}$spill_conf"
  # TMPDIR inside the work directory: the socket directories that a TAP
  # test's servers use (PostgreSQL::Test::Utils::tempdir_short) stay in
  # /tmp when the test dies, and go with the work directory from here
  mkdir -p "$work/tmp"
  [ ${#runas[@]} -gt 0 ] && chown "$user" "$work/tmp"
  if (cd "$work/test" && "${runas[@]}" env "${locale_env[@]}" TMPDIR="$work/tmp" PATH="$bindir:$PATH" \
      PERL5LIB="$pgxsdir/src/test/perl${PERL5LIB:+:$PERL5LIB}" TESTDIR="$work/test" \
      PG_REGRESS="$pgxsdir/src/test/regress/pg_regress" \
      GPUSORT_ENGINE="$engine" GPUSORT_TAP_CONF="$tap_conf" \
      prove -v --timer --formatter TAP::Formatter::Console ${GPUSORT_TAP_TESTS:-t/*.pl}) 2>&1 \
      | progress_watch "TAP tests" | tee "$work/prove.out"; then
    :
  else
    # prove shows only "Dubious" or "No plan found" for a test that died:
    # its cause is in the test's own log and its servers' logs, under the
    # work directory that is removed on exit.  Print their tails for every
    # test that failed (prove's summary names them), and keep the logs.
    failed=$(sed -n 's/^\(t\/[^ ]*\.pl\) *(Wstat.*/\1/p' "$work/prove.out" | sort -u)
    [ -n "$failed" ] || failed=${GPUSORT_TAP_TESTS:-$(cd "$work/test" && ls t/*.pl)}
    for t in $failed; do
      name=$(basename "$t" .pl)
      for f in "$work/test/tmp_check/log/regress_log_$name" "$work/test/tmp_check/log/${name}"_*.log; do
        [ -f "$f" ] || continue
        echo "==== $t: the last 60 lines of $(basename "$f")"
        tail -n 60 "$f"
      done
    done
    rm -rf "$root/tmp_check" && cp -r "$work/test/tmp_check" "$root/tmp_check" 2>/dev/null &&
      echo "(the TAP tests' logs are kept in $root/tmp_check/log)"
    echo "TAP tests failed"
    exit 1
  fi
fi

if [ "${GPUSORT_SKIP_FUZZ:-0}" != 1 ]; then
  phase "fuzz (engine = $engine)"
  # the fuzzer's server log and repro scripts: removed when the round
  # passes; after a failure they stay where the fuzzer said, and a copy
  # goes to test/fuzz/out/ (git-ignored)
  fuzzlog=$(mktemp -d /tmp/gpusort-fuzz.XXXXXX)
  [ ${#runas[@]} -gt 0 ] && chown "$user" "$fuzzlog"
  env "${locale_env[@]}" python3 "$root/test/fuzz/fuzz.py" --pg-config "$PG_CONFIG" --engine "$engine" \
      --seed 1 --seed random --minutes "${GPUSORT_FUZZ_MINUTES:-1.25}" \
      ${spill_conf:+--extra-conf "$spill_conf"} \
      --log-dir "$fuzzlog" ${user:+--user "$user"} || {
    keep_fuzzlog=1
    rm -rf "$root/test/fuzz/out" && cp -r "$fuzzlog" "$root/test/fuzz/out" 2>/dev/null || true
    echo "fuzz failed (repro scripts in $fuzzlog and test/fuzz/out/)"; exit 1; }
fi
if [ -n "${GPUSORT_CORE:-}" ]; then
  phase "PostgreSQL's core regression suite with gpusort preloaded: ${GPUSORT_CORE}"
  env "${locale_env[@]}" PG_CONFIG="$PG_CONFIG" "$root/test/core/run.sh" $GPUSORT_CORE || { echo "core regression suite failed"; exit 1; }
fi
phase "all tests passed"

#!/bin/bash
# bench/demo.sh: set up everything and show gpusort at work.
#
# Installs the build dependencies (as root, on Debian: test/install-deps.sh;
# PG_MAJOR picks the PostgreSQL, by default the distribution's own: 15 on
# Debian 12, 17 on Debian 13), builds and installs gpusort (where a
# package installed gpusort already, the demo uses the package's and says
# so, rather than overwrite its files), starts a throwaway server whose
# only setting is shared_preload_libraries = 'gpusort': everything else is
# PostgreSQL's default and gpusort's (work_mem 4MB, two parallel workers a
# Gather, JIT on; gpusort.engine = auto: the GPU when one is usable, the
# CPU engine otherwise), so that both plans are the ones a default server
# gets.  It fills a table of DEMO_ROWS rows (default 2,000,000), and times
# `SELECT * FROM demo ORDER BY k OFFSET n` with PostgreSQL's own Sort and
# with GpuSort: the first run of a session and the median of DEMO_RUNS
# runs (default 3) after it, each in one session, on the same data.  Then
# it shows both plans with EXPLAIN ANALYZE.  The server and its data are
# removed at the end.  No step is silent for more than 30 s.
#
# Why EXPLAIN ANALYZE's Execution Time is larger than the median: it reads
# the clock for every row of every node (at 10M rows that doubles the
# time of this query), and the timed runs use EXPLAIN (ANALYZE, TIMING
# OFF), which does not.  The first sort of a session also costs more than
# the next ones (the kernel zeroes the memory a backend touches for the
# first time; CUDA is not among the costs: the GPU service started it once
# for the whole server), so the demo reports that run apart, for both
# PostgreSQL's Sort and GpuSort, and shows the plans from sessions that
# have sorted once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=${DEMO_ROWS:-2000000}
runs=${DEMO_RUNS:-3}
t0=$SECONDS
step() { echo "== $* ($((SECONDS - t0)) s)"; }

source "$root/test/progress.sh"

if [ "$(id -u)" = 0 ]; then
  step "installing what the demo needs (test/install-deps.sh: PostgreSQL, its headers, a compiler, the locales; three or four minutes where nothing is installed yet)"
  "$root/test/install-deps.sh"
fi
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
# a gpusort that a package installed is the package's to replace: the demo
# uses it as it is
so=$("$PG_CONFIG" --pkglibdir)/gpusort.so
owner=$(dpkg -S "$so" 2>/dev/null | cut -d: -f1 || true)
if [ -n "$owner" ]; then
  step "gpusort is installed from the package $owner ($(dpkg-query -W -f '${Version}' "$owner")): the demo uses it, not this tree (remove the package to try this tree's build)"
else
  step "building gpusort (on two CPUs about a minute, several with CUDA)"
  make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" 2>&1 | progress_watch building
  make -C "$root" -s PG_CONFIG="$PG_CONFIG" install
fi

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
step "starting a server with gpusort preloaded and every other setting at its default"
pgserver_start /tmp/gpusort-demo "shared_preload_libraries = 'gpusort'"

psql -X -q -c "CREATE EXTENSION gpusort"
psql -X -c "SELECT * FROM gpusort_info()"

# a million rows a statement, so that a large table shows its progress
step "creating demo($rows rows: k int8, pad text, f float8)"
psql -X -q -c "CREATE TABLE demo (k int8, pad text, f float8)"
for ((first = 1; first <= rows; first += 1000000)); do
  last=$((first + 999999 < rows ? first + 999999 : rows))
  psql -X -q -c "INSERT INTO demo
    SELECT (hashint8(g) & 1099511627775)::int8, md5(g::text), (hashint4(g::int) % 1000000) / 1000.0::float8
      FROM generate_series($first, $last) g"
  [ "$rows" -le 1000000 ] || echo "   $last rows"
done
psql -X -q -c "VACUUM ANALYZE demo"

query="SELECT * FROM demo ORDER BY k OFFSET $rows"

# "FIRST MEDIAN" in ms: the first run of a session, then the median of
# $runs more, each an EXPLAIN (ANALYZE, TIMING OFF)'s Execution Time;
# each run's time on stderr as it comes
first_and_median_ms() {
  local settings=$1
  {
    echo "$settings"
    for i in $(seq 0 "$runs"); do
      echo "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $query;"
    done
  } | psql -X -At -q | grep --line-buffered -o '"Execution Time": [0-9.]*' \
    | awk '{print $3; printf "   %s ms\n", $3 > "/dev/stderr"; fflush()}' > "$PGSERVER_DIR/times"
  echo "$(head -1 "$PGSERVER_DIR/times") $(tail -n +2 "$PGSERVER_DIR/times" | sort -n \
    | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
}
step "timing $query: PostgreSQL's Sort, $((runs + 1)) runs"
read -r native_first native < <(first_and_median_ms "SET gpusort.enabled = off;")
step "timing it with GpuSort, $((runs + 1)) runs"
read -r gpusort_first gpusort < <(first_and_median_ms "")

step "PostgreSQL's plan: EXPLAIN ANALYZE (TIMING OFF) in a session that has sorted once"
psql -X -q <<SQL
SET gpusort.enabled = off;
SELECT count(*) AS warm_up FROM ($query) s \\g /dev/null
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query;
SQL
step "GpuSort's plan: EXPLAIN ANALYZE in a session that has sorted once"
plan=$(psql -X -q <<SQL
SELECT count(*) AS warm_up FROM ($query) s \\g /dev/null
EXPLAIN (ANALYZE, COSTS OFF) $query;
SQL
)
echo "$plan"
engine=$(echo "$plan" | sed -n 's/^ *Sort Engine: //p' | head -1)
explain_ms=$(echo "$plan" | sed -n 's/^ *Execution Time: \([0-9.]*\) ms/\1/p')

settings=$(psql -X -At -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name)
  FROM pg_settings WHERE name IN ('work_mem', 'max_parallel_workers_per_gather', 'jit',
                                 'gpusort.engine', 'gpusort.max_memory', 'gpusort.threads')")
echo "== $query"
echo "settings (all defaults): $settings"
awk -v n="$native" -v g="$gpusort" -v nf="$native_first" -v gf="$gpusort_first" \
    -v e="${engine:-none: the plan has no GpuSort}" -v x="$explain_ms" -v runs="$runs" 'BEGIN {
  printf "PostgreSQL Sort:    %10.1f ms   (median of %d; the first run of its session: %.1f ms)\n", n, runs, nf;
  printf "GpuSort:            %10.1f ms   (median of %d; the first run of its session: %.1f ms)\n", g, runs, gf;
  printf "speed-up:           %10.2fx\n", n / g;
  printf "GpuSort engine:     %s\n", e;
  printf "EXPLAIN ANALYZE above says %.1f ms for GpuSort: it reads the clock for every row\n", x;
  printf "of every node, which the timed runs (EXPLAIN (ANALYZE, TIMING OFF)) do not.\n";
  printf "A session'\''s first sort pays for fresh memory (the kernel zeroes new pages).\n" }'
step "done"

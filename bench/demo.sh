#!/bin/bash
# bench/demo.sh: set up everything and show gpusort at work.
#
# Installs the build dependencies (as root, on Debian/Ubuntu), builds and
# installs gpusort, starts a throwaway server with gpusort preloaded, fills
# a table of DEMO_ROWS rows (default 2,000,000), shows the plan, and times
# `SELECT * FROM demo ORDER BY k OFFSET n` with PostgreSQL's own Sort and
# with GpuSort: the median of DEMO_RUNS runs (default 3) each, in the same
# session on the same data.  Uses the GPU when one is usable, else the CPU
# engine.  The server and its data are removed at the end.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=${DEMO_ROWS:-2000000}
runs=${DEMO_RUNS:-3}

if [ "$(id -u)" = 0 ]; then "$root/test/install-deps.sh"; fi
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
echo "== building gpusort"
make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG"
make -C "$root" -s PG_CONFIG="$PG_CONFIG" install

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start /tmp/gpusort-demo "shared_preload_libraries = 'gpusort'" \
  "work_mem = '1GB'" "max_parallel_workers_per_gather = 0" "jit = off"

psql -X -q -c "CREATE EXTENSION gpusort"
psql -X -c "SELECT * FROM gpusort_info()"
engine=cpu
psql -X -At -c "SELECT engines FROM gpusort_info()" | grep -q gpu && engine=gpu
echo "== sorting with gpusort.engine = $engine"

echo "== creating demo($rows rows: k int8, pad text, f float8)"
psql -X -q <<SQL
CREATE TABLE demo AS
  SELECT (hashint8(g) & 1099511627775)::int8 AS k,
         md5(g::text) AS pad,
         (hashint4(g::int) % 1000000) / 1000.0::float8 AS f
    FROM generate_series(1, $rows) g;
VACUUM ANALYZE demo;
SQL

query="SELECT * FROM demo ORDER BY k OFFSET $rows"
echo "== the plan"
psql -X -c "SET gpusort.engine = $engine" -c "EXPLAIN (ANALYZE, COSTS OFF) $query"

# median execution time of $runs runs in one session (after one warm-up)
median_ms() {
  local settings=$1
  {
    echo "$settings"
    for i in $(seq 0 "$runs"); do
      echo "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $query;"
    done
  } | psql -X -At -q | grep -o '"Execution Time": [0-9.]*' | awk '{print $3}' \
    | tail -n "$runs" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
native=$(median_ms "SET gpusort.enabled = off;")
gpusort=$(median_ms "SET gpusort.engine = $engine;")
echo "== $query"
awk -v n="$native" -v g="$gpusort" -v e="$engine" 'BEGIN {
  printf "native Sort:        %10.1f ms\n", n;
  printf "GpuSort (%s):      %10.1f ms\n", e, g;
  printf "speed-up:           %10.2fx\n", n / g }'

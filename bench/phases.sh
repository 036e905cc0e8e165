#!/bin/bash
# bench/phases.sh: where the time of a GpuSort goes, for the text and
# numeric queries of the benchmark, without EXPLAIN ANALYZE's per-row
# instrumentation: each query runs plainly, twice, with the backend's
# DEBUG1 line of each sort (load, encode, key build, sort, refine, check and
# comparator times) and psql's total time.  The scan alone and an int8 sort
# on the same table are the baselines.
#
#   bench/phases.sh [ROWS]      (against the server of $PGHOST / $PGUSER;
#                                builds and installs gpusort first)
set -euo pipefail
rows=${1:-10000000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
make -C "$root" -s install >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP TABLE IF EXISTS phases_t;
CREATE TABLE phases_t AS
  SELECT i::int8 AS id, md5(random()::text) AS pad,
         (random() * 1e6)::numeric(12,2) AS num, (random() * 1e18)::int8 AS r
    FROM generate_series(1, $rows) i;
VACUUM (FREEZE, ANALYZE) phases_t;
SQL
run() {
  psql -X -q <<SQL 2>&1 | grep -v '^$' | sed 's/^DEBUG:  //'
LOAD 'gpusort';
SET max_parallel_workers_per_gather = 0;
SET gpusort.engine = ${ENGINE:-gpu};
SET gpusort.min_rows = 0;
$2
\\timing on
SET client_min_messages = debug1;
SELECT * FROM phases_t ORDER BY $1 OFFSET $rows;
SELECT * FROM phases_t ORDER BY $1 OFFSET $rows;
SQL
}
lscpu 2>/dev/null | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\))' || true
echo "== scan alone"
psql -X -q -c '\timing on' -c "SELECT * FROM phases_t OFFSET $rows"
echo "== ORDER BY r"
run 'r' ''
for q in 'pad COLLATE "C"' 'pad COLLATE "en_US"' 'pad COLLATE "und-x-icu"' 'num'; do
  for overlap in on off; do
    echo "== ORDER BY $q, gpusort.key_overlap = $overlap"
    run "$q" "SET gpusort.key_overlap = $overlap;"
  done
done
echo "== ORDER BY pad COLLATE \"und-x-icu\", gpusort.key_overlap = off, gpusort.threads = 15"
run 'pad COLLATE "und-x-icu"' 'SET gpusort.key_overlap = off; SET gpusort.threads = 15;'

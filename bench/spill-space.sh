#!/bin/bash
# bench/spill-space.sh: what a sort that outgrows its budget costs in
# temporary space and in reads of large values, GpuSort against
# PostgreSQL's Sort on the same rows and the same budget (work_mem for
# Sort, gpusort.max_memory for GpuSort), on a throwaway server
# (bench/pgserver.sh), serial plans.
#
#   bench/spill-space.sh [--rows N] [--budgets "1MB 8MB ..."]
#
# 1. Temporary space.  Table space_N(id int8, k int8, pad text) with a
#    32-character pad (default 1M rows), SELECT * FROM space_N ORDER BY k,
#    id OFFSET N under each budget (default "1MB 16MB": merge passes, one
#    merge).  Prints each sort's Disk (Sort's, its tapes' size at the end;
#    GpuSort's Disk Used, its runs' peak), GpuSort's runs and merge passes,
#    and the ratio.
# 2. Large values.  Table huge(id int, v text COLLATE a libc en_US.UTF-8
#    where there is one): 2,000 md5 strings and four values of 105 to
#    120 MB stored out of line, ORDER BY v under a 64 kB budget, and
#    ORDER BY id as the control.  Prints each sort's execution time and
#    shared buffers (the TOAST table's pages each sort read, with the
#    table's own).
# Builds and installs gpusort itself (bench/build.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=1000000 budgets="1MB 16MB"
while [ $# -gt 0 ]; do
  case $1 in
    --rows) rows=$2; shift 2 ;;
    --budgets) budgets=$2; shift 2 ;;
    *) echo "usage: $0 [--rows N] [--budgets \"1MB 16MB\"]" >&2; exit 2 ;;
  esac
done
source "$root/bench/build.sh"
source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-spill-space}" "shared_preload_libraries = 'gpusort'" \
  "jit = off" "max_parallel_workers_per_gather = 0"
psql -X -q -c "CREATE EXTENSION gpusort" \
  -c "CREATE UNLOGGED TABLE space_$rows AS SELECT g::int8 AS id, hashint8(g) AS k, md5(g::text) AS pad FROM generate_series(1, $rows) g" \
  -c "VACUUM ANALYZE space_$rows"

# EXPLAIN ANALYZE of $2 with the settings $1, its lines matching $3, joined
explain() {
  psql -X -At -c "$1" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) $2" | grep -E "$3" | tr -s ' ' | tr '\n' ' '
}

echo "== temporary space: $rows rows, SELECT * FROM space_$rows ORDER BY k, id"
printf '%-8s %12s %14s %6s %7s %6s\n' budget "Sort kB" "GpuSort kB" runs passes ratio
for budget in $budgets; do
  q="SELECT * FROM space_$rows ORDER BY k, id OFFSET $rows"
  native=$(explain "SET gpusort.enabled = off; SET work_mem = '$budget';" "$q" 'Sort Method')
  gpusort=$(explain "SET gpusort.max_memory = '$budget';" "$q" 'Runs Written:|Merge Passes|Disk Used')
  n_kb=$(sed -n 's/.*Disk: \([0-9]*\)kB.*/\1/p' <<< "$native")
  g_kb=$(sed -n 's/.*Disk Used: \([0-9]*\) kB.*/\1/p' <<< "$gpusort")
  runs=$(sed -n 's/.*Runs Written: \([0-9]*\).*/\1/p' <<< "$gpusort")
  passes=$(sed -n 's/.*Merge Passes: \([0-9]*\).*/\1/p' <<< "$gpusort")
  printf '%-8s %12s %14s %6s %7s %6s\n' "$budget" "${n_kb:-in memory}" "${g_kb:-in memory}" \
    "${runs:-0}" "${passes:-0}" \
    "$( [ -n "$n_kb" ] && [ -n "$g_kb" ] && awk -v g="$g_kb" -v n="$n_kb" 'BEGIN { printf "%.2f", g / n }' || echo -)"
done

collate=$(psql -X -At -c "SELECT quote_ident(collname) FROM pg_collation WHERE collprovider = 'c' AND collcollate ~* '^en_US\.utf-?8$' LIMIT 1")
psql -X -q -c "CREATE UNLOGGED TABLE huge (id int, v text ${collate:+COLLATE $collate})" \
  -c "INSERT INTO huge SELECT g, md5(g::text) FROM generate_series(1, 2000) g" \
  -c "INSERT INTO huge SELECT 100000 + i, repeat(md5(i::text), (100 + 5 * i) * 1024 * 1024 / 32) FROM generate_series(1, 4) i" \
  -c "VACUUM ANALYZE huge"
echo
echo "== large values: 2,000 rows and 4 of 105 to 120 MB, a 64 kB budget, collation ${collate:-default}"
for order in id v; do
  q="SELECT left(v, 8), length(v) FROM (SELECT * FROM huge ORDER BY $order OFFSET 0) s"
  for s in "SET gpusort.enabled = off; SET work_mem = '64kB';" \
           "SET gpusort.max_memory = '64kB'; SET gpusort.min_rows = 0;"; do
    label=GpuSort; [[ $s == *"enabled = off"* ]] && label=Sort
    echo "ORDER BY $order, $label: $(explain "$s" "$q" '^ *(Sort|Custom Scan)|Runs Written|Merge Passes|Buffers: shared hit=[0-9]+, temp|Execution' | sed 's/ Buffers/; Buffers/g')"
  done
done

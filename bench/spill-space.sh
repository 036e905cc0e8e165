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
# 3. Random access.  A SCROLL cursor over space_N's (id, k) ORDER BY k,
#    id, read to its end, back and by position, under each budget of
#    --budgets and 64kB: the temporary files each sort wrote, in all (the
#    server log's, log_temp_files = 0: Sort merges onto one more tape of
#    its tapes' set, GpuSort into its runs' file), and the time.
# 4. A parallel load at small budgets.  space_N ORDER BY pad with two
#    workers, and serially, at 64kB, 256kB and 1MB: GpuSort's Memory Used
#    against its Memory Budget, and its runs.
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
  "jit = off" "max_parallel_workers_per_gather = 0" "log_temp_files = 0"
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

echo
echo "== random access: a SCROLL cursor over $rows rows of (id, k), ORDER BY k, id"
scroll="BEGIN; DECLARE c SCROLL CURSOR FOR SELECT id, k FROM space_$rows ORDER BY k, id;
MOVE FORWARD ALL IN c; FETCH BACKWARD 3 FROM c; FETCH ABSOLUTE $((rows / 2)) FROM c;
FETCH RELATIVE -2 FROM c; FETCH FIRST FROM c; COMMIT;"
# the sizes of the temporary files logged from byte $1 of the server log on, and how many
temp_files_kb() {
  tail -c +"$(( $1 + 1 ))" "$PGSERVER_DIR/server.log" |
    sed -n 's/.*temporary file: path "[^"]*", size \([0-9]*\).*/\1/p' |
    awk '{ kb += $1 / 1024; n++ } END { printf "%d kB in %d file(s)", kb, n }'
}
printf '%-8s %-24s %-24s %10s %10s %6s\n' budget "Sort wrote" "GpuSort wrote" "Sort ms" "GpuSort ms" same
for budget in 64kB $budgets; do
  out=() files=() ms=()
  for s in "SET gpusort.enabled = off; SET work_mem = '$budget';" "SET gpusort.max_memory = '$budget';"; do
    from=$(stat -c %s "$PGSERVER_DIR/server.log")
    start=$(date +%s%N)
    out+=("$(psql -X -q -At -c "$s" -c "$scroll" | md5sum)")
    ms+=($(( ($(date +%s%N) - start) / 1000000 )))
    sleep 0.2
    files+=("$(temp_files_kb "$from")")
  done
  printf '%-8s %-24s %-24s %10s %10s %6s\n' "$budget" "${files[0]}" "${files[1]}" "${ms[0]}" "${ms[1]}" \
    "$( [ "${out[0]}" = "${out[1]}" ] && echo yes || echo NO)"
done

echo
echo "== a parallel load at small budgets: $rows rows, SELECT * FROM space_$rows ORDER BY pad"
printf '%-8s %-28s %-28s\n' budget "serial: used / budget, runs" "2 workers: used / budget, runs"
par="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
for budget in 64kB 256kB 1MB; do
  cols=()
  for w in 0 2; do
    line=$(explain "$par SET max_parallel_workers_per_gather = $w; SET gpusort.max_memory = '$budget';" \
      "SELECT * FROM space_$rows ORDER BY pad OFFSET $rows" 'Memory Budget|Memory Used|Runs Written:')
    cols+=("$(sed -n 's/.*Memory Budget: \([0-9]*\) kB.*Memory Used: \([0-9]*\) kB.*Runs Written: \([0-9]*\).*/\2 kB \/ \1 kB, \3 runs/p' <<< "$line")")
  done
  printf '%-8s %-28s %-28s\n' "$budget" "${cols[0]}" "${cols[1]}"
done

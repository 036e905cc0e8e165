#!/bin/bash
# test/gpu/admission.sh: GPU admission on the GPU host, where a request that
# does not fit must not hold up those behind it that do.
#
# The service's budget is 1% of the GPU (gpusort.service_gpu_memory_percent
# = 1: 1.4 GB of an H200, 0.8 GB of an H100).  Sort A, of 40M int8 keys
# (about 1 GB reserved; for an H100 GPUSORT_ADMISSION_ROWS=20000000), holds
# its reservation through its load and five more seconds of a busy kernel
# (gpusort.inject_fault = 'gpu_busy').  Sort B, the same, comes next: it
# cannot fit beside A and waits (gpusort.service_max_wait = 60s).  Sort C,
# of 100K rows, comes last and fits: it must be admitted at once and end on
# the GPU within three seconds, while A still runs, rather than queue
# behind B.  B then sorts on the GPU once A is done (gpusort_stat's time
# queued shows its wait).  All three give PostgreSQL's Sort's rows.
#
# Uses the server of pg-on-device.sh (source .device/pg-on-device.sh
# first), started again with gpusort preloaded (pg_restart); gpusort must
# be installed.
#
#   test/gpu/admission.sh [OUTDIR]
set -uo pipefail
out=${1:-${OUT:-/tmp/gpusort-out}/admission}
rows=${GPUSORT_ADMISSION_ROWS:-40000000}
mkdir -p "$out"
status=0
fail() { echo "FAIL: $*"; status=1; }
now_ms() { date +%s%3N; }

PG_EXTRA_OPTS="-c shared_preload_libraries=gpusort -c gpusort.service_gpu_memory_percent=1" \
  pg_restart || exit 1
psql -X -q -c "DROP TABLE IF EXISTS adm_big, adm_small" \
  -c "CREATE TABLE adm_big AS SELECT (random() * 1e12)::int8 AS k FROM generate_series(1, $rows)" \
  -c "CREATE TABLE adm_small AS SELECT (random() * 1e12)::int8 AS k FROM generate_series(1, 100000)" \
  -c "ANALYZE adm_big, adm_small"
psql -X -q -c "DROP EXTENSION IF EXISTS gpusort" -c "CREATE EXTENSION gpusort"
psql -X -At -c "SELECT 'budget ' || pg_size_pretty(memory_budget) FROM gpusort_gpus"
queued="SELECT value FROM gpusort_stat WHERE what = 'time_ms' AND detail = 'queued'"
queued_before=$(psql -X -At -c "$queued")
session="SET gpusort.engine = gpu; SET gpusort.min_rows = 0; SET gpusort.gpu_min_rows = 0;
SET max_parallel_workers_per_gather = 0; SET gpusort.service_max_wait = '60s';"
explain="EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)"

t0=$(now_ms)
psql -X -q -At -c "$session SET gpusort.inject_fault = 'gpu_busy';" \
  -c "$explain SELECT k FROM adm_big ORDER BY k" > "$out/a.txt" 2>&1 &
a=$!
sleep 1
psql -X -q -At -c "$session" -c "$explain SELECT k FROM adm_big ORDER BY k" > "$out/b.txt" 2>&1 &
b=$!
sleep 1
tc=$(now_ms)
psql -X -q -At -c "$session" -c "$explain SELECT k FROM adm_small ORDER BY k" > "$out/c.txt" 2>&1
c_ms=$(( $(now_ms) - tc ))
kill -0 $a 2>/dev/null && a_running=1 || a_running=0
wait $a; wait $b
queued_ms=$(( $(psql -X -At -c "$queued") - queued_before ))
echo "time queued, A, B and C together: $queued_ms ms"
[ "$queued_ms" -ge 2000 ] || fail "B never waited for room ($queued_ms ms queued): nothing shown"
echo "A: $(grep 'Sort Engine' "$out/a.txt"), $(( $(now_ms) - t0 )) ms in all"
echo "B: $(grep 'Sort Engine' "$out/b.txt")"
echo "C: $(grep 'Sort Engine' "$out/c.txt"), $c_ms ms, A still running at its end: $a_running"
grep -q "Sort Engine: GPU" "$out/a.txt" || fail "A did not sort on the GPU: $(cat "$out/a.txt")"
grep -q "Sort Engine: GPU" "$out/c.txt" || fail "C did not sort on the GPU: $(cat "$out/c.txt")"
[ "$c_ms" -lt 3000 ] || fail "C took $c_ms ms: it waited behind B"
[ $a_running = 1 ] || fail "A had ended before C did: nothing shown"
grep -q "Sort Engine: GPU" "$out/b.txt" || echo "note: B did not sort on the GPU: $(grep -E 'Engine|Fallback' "$out/b.txt")"

# the rows, against PostgreSQL's Sort
for t in adm_big adm_small; do
  # each key weighed by its position: any other order gives another sum
  q="SELECT sum(((k % 1000003) * (rn % 1000003))::numeric)
       FROM (SELECT k, row_number() OVER () AS rn FROM (SELECT k FROM $t ORDER BY k) s) w"
  g=$(psql -X -q -At -c "$session" -c "$q")
  n=$(psql -X -q -At -c "SET gpusort.enabled = off" -c "$q")
  [ "$g" = "$n" ] && echo "$t: same rows as PostgreSQL's Sort" || fail "$t: rows differ from PostgreSQL's Sort"
done
psql -X -q -c "DROP TABLE adm_big, adm_small"
[ $status = 0 ] && echo "== admission: passed" || echo "== admission: FAILED"
exit $status

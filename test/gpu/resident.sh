#!/bin/bash
# test/gpu/resident.sh: the GPU service as a good resident, on the GPU host.
#
# While a sort holds the GPU for five seconds (gpusort.inject_fault =
# 'gpu_busy': a real kernel keeps the sort's stream busy, so the service
# waits for the GPU all that time), another session runs what waits for a
# ProcSignal barrier that every process must absorb: CREATE and DROP
# DATABASE, CREATE, ALTER DATABASE SET TABLESPACE and DROP TABLESPACE.
# Each must return within a second, while the GPU sort is still running;
# the sort must then finish on the GPU (EXPLAIN ANALYZE: Sort Engine: GPU)
# with the same rows in the same order as PostgreSQL's own Sort.  Where the
# server names its wait events (17 on), the service must show
# GpuSortServiceGpu meanwhile.  Last, a fast shutdown during such a sort
# gives the sort up: it waits only for the kernel that is running (no
# kernel can be stopped half way; this one has 3.5 of its 5 seconds left,
# a real sort's kernels take milliseconds), not for the rest of the sort.
#
# Uses the server of pg-on-device.sh (source .device/pg-on-device.sh
# first), started again with gpusort preloaded (pg_restart); gpusort must
# be installed.
#
#   test/gpu/resident.sh [OUTDIR]
set -uo pipefail
out=${1:-${OUT:-/tmp/gpusort-out}/resident}
mkdir -p "$out"
status=0
fail() { echo "FAIL: $*"; status=1; }
now_ms() { date +%s%3N; }

# the server of pg-on-device.sh, started again with gpusort preloaded
server_opts="-c shared_preload_libraries=gpusort -c allow_in_place_tablespaces=on"
PG_EXTRA_OPTS=$server_opts pg_restart || exit 1
psql -X -q -c "DROP TABLE IF EXISTS resident_t" \
  -c "CREATE TABLE resident_t AS SELECT (random() * 1e9)::int8 AS k, g AS id FROM generate_series(1, 1000000) g"
major=$(psql -X -At -c "SHOW server_version_num" | cut -c1-2)
gpu_session="SET gpusort.engine = gpu; SET gpusort.min_rows = 0; SET gpusort.gpu_min_rows = 0;
SET max_parallel_workers_per_gather = 0; SET gpusort.inject_fault = 'gpu_busy';"

# the GPU sort that holds the GPU, in the background
psql -X -At -c "$gpu_session" \
  -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT k, id FROM resident_t ORDER BY k, id" \
  > "$out/busy-explain.txt" 2>&1 &
sorter=$!
sleep 1.5
kill -0 $sorter 2>/dev/null || fail "the busy GPU sort ended within 1.5 s"
if [ "$major" -ge 17 ]; then
  wait_event=$(psql -X -At -c "SELECT wait_event FROM pg_stat_activity WHERE backend_type = 'gpusort GPU service'")
  echo "service wait event during the GPU sort: $wait_event"
  [ "$wait_event" = GpuSortServiceGpu ] || fail "the service's wait event is '$wait_event', not GpuSortServiceGpu"
fi
for stmt in "CREATE DATABASE resident_db" "DROP DATABASE resident_db" \
            "CREATE TABLESPACE resident_ts LOCATION ''" "CREATE DATABASE resident_db2" \
            "ALTER DATABASE resident_db2 SET TABLESPACE resident_ts" "DROP DATABASE resident_db2" \
            "DROP TABLESPACE resident_ts"; do
  t0=$(now_ms)
  timeout 20 psql -X -q -c "$stmt" || fail "$stmt failed or took 20 s"
  ms=$(( $(now_ms) - t0 ))
  echo "$stmt: $ms ms"
  [ "$ms" -lt 1000 ] || fail "$stmt took $ms ms during a GPU sort"
done
kill -0 $sorter 2>/dev/null || fail "the GPU sort had ended before the barriers were absorbed: nothing shown"
wait $sorter
cat "$out/busy-explain.txt"
grep -q "Sort Engine: GPU" "$out/busy-explain.txt" || fail "the busy sort did not finish on the GPU"

# the same sort's rows against PostgreSQL's own Sort
psql -X -q -At -c "$gpu_session" -c "SELECT md5(string_agg(k || ':' || id, ',')) FROM (SELECT k, id FROM resident_t ORDER BY k, id) s" \
  > "$out/gpu.md5"
psql -X -q -At -c "SET gpusort.enabled = off" -c "SELECT md5(string_agg(k || ':' || id, ',')) FROM (SELECT k, id FROM resident_t ORDER BY k, id) s" \
  > "$out/native.md5"
cmp -s "$out/gpu.md5" "$out/native.md5" && echo "rows: same as PostgreSQL's Sort" \
  || fail "the GPU sort's rows differ from PostgreSQL's Sort"

# a fast shutdown while the GPU is busy
psql -X -At -c "$gpu_session" -c "SELECT count(*) FROM (SELECT k FROM resident_t ORDER BY k) s" \
  > "$out/shutdown-sort.txt" 2>&1 &
sorter=$!
sleep 1.5
t0=$(now_ms)
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast -w stop" > /dev/null
ms=$(( $(now_ms) - t0 ))
wait $sorter
echo "fast shutdown during a GPU sort: $ms ms"
[ "$ms" -lt 6000 ] || fail "a fast shutdown waited $ms ms for the GPU"
PG_EXTRA_OPTS=$server_opts pg_restart || exit 1
psql -X -q -c "DROP TABLE resident_t"
grep -E "PANIC|server process .* was terminated|leak" /tmp/pg-"$PG_MAJOR".log | head -5 \
  && fail "the server log shows a crash or a leak"

[ $status = 0 ] && echo "== resident: passed" || echo "== resident: FAILED"
exit $status

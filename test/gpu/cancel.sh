#!/bin/bash
# test/gpu/cancel.sh: cancellation on the GPU host, without Perl's IPC::Run
# (which test/t/005_cancel.pl needs and the GPU host lacks).  One session
# sorts N times on the GPU with a statement_timeout landing in each phase
# in turn (gpusort.inject_fault delays the phase), then sorts normally; the
# session's GPU memory (nvidia-smi, per process) after the cancels must
# equal that after a first normal sort; after every cancel the session must
# hold no pinned memory and no large host blocks (gpusort_backend_memory()),
# and its host and pinned caches must end as they began; and the server must have
# logged no leak or crash.  Uses the server of $PGHOST/$PGUSER (source
# .device/pg-on-device.sh first); gpusort must be installed.
#
#   test/gpu/cancel.sh [ROUNDS]
set -uo pipefail
rounds=${1:-10}
psql -X -q -c "DROP EXTENSION IF EXISTS gpusort" -c "CREATE EXTENSION gpusort" -c "DROP TABLE IF EXISTS cancel_t" \
  -c "CREATE TABLE cancel_t AS SELECT (random() * 1e9)::int8 AS k, md5(g::text) AS t FROM generate_series(1, 2000000) g"
{
  echo "LOAD 'gpusort'; SET gpusort.engine = gpu; SET gpusort.min_rows = 0; SET max_parallel_workers_per_gather = 0;"
  echo "SELECT count(*) FROM (SELECT k FROM cancel_t ORDER BY k) s;"
  echo "SELECT count(*) FROM (SELECT t FROM cancel_t ORDER BY t COLLATE \"C\") s;"
  echo "SELECT 'pid ' || pg_backend_pid();"
  mem="SELECT 'mem ' || host_in_use || ' ' || host_cached || ' ' || pinned_in_use || ' ' || pinned_cached FROM gpusort_backend_memory();"
  echo "$mem"
  echo "SELECT pg_sleep(3);"          # sampled: baseline after one sort
  for i in $(seq 1 "$rounds"); do
    for phase in load encode sort resolve emit; do
      echo "SET gpusort.inject_fault = 'delay:$phase:5000'; SET statement_timeout = '1500ms';"
      echo "SELECT count(*) FROM (SELECT t FROM cancel_t ORDER BY t COLLATE \"C\") s;"
      echo "RESET statement_timeout; RESET gpusort.inject_fault;"
      echo "$mem"
    done
  done
  echo "SELECT count(*) FROM (SELECT k FROM cancel_t ORDER BY k) s;"
  echo "SELECT count(*) FROM (SELECT t FROM cancel_t ORDER BY t COLLATE \"C\") s;"
  echo "$mem"
  echo "SELECT pg_sleep(3);"          # sampled: after the cancels
} > /tmp/cancel.sql
psql -X -At -f /tmp/cancel.sql > /tmp/cancel.out 2>&1 &
client=$!
pid=
for _ in $(seq 1 60); do
  pid=$(grep -o '^pid [0-9]*' /tmp/cancel.out | cut -d' ' -f2); [ -n "$pid" ] && break; sleep 0.5
done
gpu_mem() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | awk -F', ' -v p="$pid" '$1 == p {print $2}'; }
sleep 1.5; before=$(gpu_mem)
# wait for the last sleep: the line count of "canceling" reaches 5 * rounds
while kill -0 $client 2>/dev/null; do
  n=$(grep -c 'canceling statement due to statement timeout' /tmp/cancel.out)
  [ "$n" -ge $((5 * rounds)) ] && [ "$(grep -c '^2000000$' /tmp/cancel.out)" -ge 4 ] && break
  sleep 0.5
done
sleep 1.5; after=$(gpu_mem)
wait $client
cancels=$(grep -c 'canceling statement due to statement timeout' /tmp/cancel.out)
alive=$(psql -X -At -c "SELECT count(*) FROM (SELECT k FROM cancel_t ORDER BY k) s" 2>&1)
# mem lines: host_in_use host_cached pinned_in_use pinned_cached
mem_first=$(grep '^mem ' /tmp/cancel.out | head -1)
mem_last=$(grep '^mem ' /tmp/cancel.out | tail -1)
held=$(grep '^mem ' /tmp/cancel.out | awk '$2 != 0 || $4 != 0' | wc -l)
echo "cancels: $cancels of $((5 * rounds)); backend GPU memory before ${before:-?} MiB, after ${after:-?} MiB; server after: $alive rows sorted"
echo "host/pinned memory (host_in_use host_cached pinned_in_use pinned_cached): before the cancels: ${mem_first#mem }; after: ${mem_last#mem }; samples with memory still held: $held of $(grep -c '^mem ' /tmp/cancel.out)"
status=0
[ "$(grep -c '^mem ' /tmp/cancel.out)" -eq $((5 * rounds + 2)) ] || { echo "FAIL: memory samples missing"; status=1; }
[ "$held" -eq 0 ] || { echo "FAIL: pinned or host memory held after a sort"; status=1; }
# the same two sorts before and after the cancels: the caches end as they began
[ "$(echo "$mem_first" | cut -d' ' -f3,5)" = "$(echo "$mem_last" | cut -d' ' -f3,5)" ] || { echo "FAIL: host or pinned cache not back to its size"; status=1; }
[ "$cancels" -eq $((5 * rounds)) ] || { echo "FAIL: not every sort was cancelled"; status=1; }
[ "$alive" = 2000000 ] || { echo "FAIL: server"; status=1; }
[ -n "$before" ] && [ "$before" != "$after" ] && { echo "FAIL: GPU memory not back to baseline"; status=1; }
grep -iE 'leak|PANIC|terminated by signal' /tmp/pg.log 2>/dev/null | head -3 && { echo "FAIL: server log"; status=1; }
exit $status

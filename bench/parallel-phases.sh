#!/bin/bash
# bench/parallel-phases.sh: where a 10M-row sort spends its time, serial
# and parallel GpuSort, without EXPLAIN ANALYZE's per-row instrumentation:
# the phases come from gpusort's DEBUG1 lines (the parallel load's Gather
# and what is left to move after it; the sort's load, encode and sort),
# three runs in one session each, then a parallel count(*) of the same
# table.  For each mode of $PHASES_MODES (default both): dynamic shared
# memory in /dev/shm (dev-shm), and min_dynamic_shared_memory = 20GB, the
# server's main shared memory (min-dsm).  $PHASES_ORDERS (default "k")
# lists the queries, comma-separated: k, fk (ORDER BY f, k), padC (ORDER BY
# pad COLLATE "C").  Needs a GPU host (bench/build.sh: builds, installs).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/bench/build.sh"
source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
declare -A order_by=([k]="k" [fk]="f, k" [padC]='pad COLLATE "C"')
for mode in ${PHASES_MODES:-dev-shm min-dsm}; do
  extra=(); [ $mode = min-dsm ] && extra=("min_dynamic_shared_memory = '20GB'")
  pgserver_start /tmp/gpusort-phases "shared_preload_libraries = 'gpusort'" "work_mem = '8GB'" "jit = off" \
     "max_worker_processes = 24" "max_parallel_workers = 16" "shared_buffers = '16GB'" "${extra[@]}"
  psql -X -q -c "CREATE EXTENSION gpusort"
  (cd "$root" && python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('t', 10000000, 16, None)")
  psql -X -q -c "ALTER TABLE t_10000000 SET (parallel_workers = 8)"
  for q in ${PHASES_ORDERS:-k}; do
    q=${q//,/ }
    for name in $q; do
      for workers in 0 8; do
        echo "== $mode, ORDER BY ${order_by[$name]}, max_parallel_workers_per_gather = $workers"
        psql -X -At <<SQL 2>&1 | grep -E "parallel load|records sorted|^Time|^[0-9]+$" | sed 's/^/  /'
SET gpusort.max_memory = '32GB'; SET max_parallel_workers_per_gather = $workers; SET gpusort.engine = gpu;
SET client_min_messages = debug1;
\timing on
SELECT * FROM t_10000000 ORDER BY ${order_by[$name]} OFFSET 10000000;
SELECT * FROM t_10000000 ORDER BY ${order_by[$name]} OFFSET 10000000;
SELECT * FROM t_10000000 ORDER BY ${order_by[$name]} OFFSET 10000000;
SELECT count(*) FROM t_10000000;
SQL
      done
    done
  done
  pgserver_stop
done

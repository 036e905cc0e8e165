#!/bin/bash
# the whole parallel sort at 10M rows (all four settings), then pgbench at 48 clients, 60 s on and off
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
nvidia-smi -L; nproc; git log --oneline -1 2>/dev/null
timeout 300 bench/parallel.sh --rows 10000000 --runs 3 --out $OUT/par10m > $OUT/par10m.log 2>&1; echo "parallel rc=$?"
grep -v '^\s*{' $OUT/par10m.log | tail -30
PGBENCH_CLIENTS=48 PGBENCH_DURATION=60 PGBENCH_ROWS=4000000 PGBENCH_SPAN=2000000 GPUSORT_TEST_USER=pgrun \
  timeout 280 test/gpu/pgbench.sh $OUT/pgbench48 > $OUT/pgbench48.log 2>&1; echo "pgbench rc=$?"
tail -12 $OUT/pgbench48.log

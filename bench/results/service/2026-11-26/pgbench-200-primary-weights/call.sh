#!/bin/bash
# pgbench at 200 clients, gpusort on then off, 120 s each: ASCII keys from primary weights (HEAD)
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
nvidia-smi -L; nproc
PGBENCH_CLIENTS=200 PGBENCH_DURATION=120 PGBENCH_ROWS=4000000 PGBENCH_SPAN=2000000 GPUSORT_TEST_USER=pgrun \
  timeout 560 test/gpu/pgbench.sh $OUT/pgbench > $OUT/pgbench.log 2>&1; echo "pgbench rc=$?"
tail -40 $OUT/pgbench.log

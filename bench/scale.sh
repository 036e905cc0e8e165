#!/bin/bash
# bench/scale.sh: the scaling benchmark (bench/scale.py) on a
# throwaway server.
#
#   bench/scale.sh [scale.py options]
#     e.g. bench/scale.sh --rows 100000,300000 --settings native,cpu --runs 2
#
# Builds and installs gpusort, starts a server of its own (bench/pgserver.sh)
# with gpusort preloaded, work_mem 8GB, jit off, no parallel workers but
# room for 16 (settings may ask for them) and shared_buffers 4GB, and runs
# bench/scale.py, which writes scale.json, scale.md, scale-chart.png and
# scale-per-row.png under --out (default bench/out/scale).
# Unlike bench/run.sh it sets no gpusort.max_memory: gpusort's defaults are
# what the scaling targets are about.  Without a GPU, pass --settings
# native,cpu.  The server's directory is $BENCH_DIR (default
# /tmp/gpusort-scale); its tables go with it.
#
#   bench/scale.sh series [series.py options]
# runs bench/series.py on the same server instead: one connection's
# statements one by one, with the backend's and the kernel's memory counters.
#
# On the GPU host (test/gpu/README.md: test/gpu/prepare.sh here first, then
# carry its folder, .device or $GPUSORT_DEVICE_DIR, along):
#   source "${GPUSORT_DEVICE_DIR:-.device}/pg-on-device.sh" && bench/scale.sh --out $OUT/scale ...
# bench/build.sh builds and installs gpusort for that PostgreSQL
# (GPUSORT_NO_BUILD=1: use the installed one) and runs the servers as pgrun.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/bench/build.sh"

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-scale}" "shared_preload_libraries = 'gpusort'" \
  "work_mem = '8GB'" "jit = off" "max_parallel_workers_per_gather = 0" \
  "shared_buffers = '4GB'" "max_worker_processes = 24" "max_parallel_workers = 16"
psql -X -q -c "CREATE EXTENSION gpusort" -c "SELECT * FROM gpusort_info()"
program=scale.py
[ "${1:-}" = series ] && { program=series.py; shift; }
cd "$root" && PYTHONUNBUFFERED=1 python3 "bench/$program" "$@"

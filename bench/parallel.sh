#!/bin/bash
# bench/parallel.sh: parallel GpuSort against PostgreSQL's serial and
# parallel Sort (bench/parallel.py) on a throwaway server.
#
#   bench/parallel.sh [parallel.py options]
#     e.g. bench/parallel.sh --rows 10000000,100000000 --out $OUT/parallel
#
# Builds and installs gpusort (bench/build.sh), starts a server of its own
# with gpusort preloaded, 16 worker processes, shared_buffers
# $BENCH_SHARED_BUFFERS (16GB) and jit off, and runs bench/parallel.py.  A
# parallel GpuSort's rows lie in dynamic shared memory, which is /dev/shm:
# where that has less than 24 GB free, the server takes
# min_dynamic_shared_memory = $BENCH_MIN_DSM (20GB; 0 for none) in its main
# shared memory instead, and says so.  The server's directory is
# $BENCH_DIR (default /tmp/gpusort-parallel); its tables go with it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/bench/build.sh"

extra=()
shm_free_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
echo "/dev/shm: ${shm_free_kb:-?} kB free"
min_dsm=${BENCH_MIN_DSM:-20GB}
if [ "$min_dsm" != 0 ] && { [ -z "$shm_free_kb" ] || [ "$shm_free_kb" -lt $((24 * 1024 * 1024)) ]; }; then
  echo "/dev/shm is small: min_dynamic_shared_memory = $min_dsm"
  extra+=("min_dynamic_shared_memory = '$min_dsm'")
fi

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-parallel}" "shared_preload_libraries = 'gpusort'" \
  "work_mem = '8GB'" "jit = off" "max_worker_processes = 24" "max_parallel_workers = 16" \
  "shared_buffers = '${BENCH_SHARED_BUFFERS:-16GB}'" "${extra[@]}"
psql -X -q -c "CREATE EXTENSION gpusort" -c "SELECT * FROM gpusort_info()"
cd "$root" && PYTHONUNBUFFERED=1 python3 bench/parallel.py "$@"

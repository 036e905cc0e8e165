#!/bin/bash
# bench/shard.sh: the sharding benchmark (bench/shard.py) on throwaway
# servers of one host.
#
#   bench/shard.sh [shard.py options]
#     e.g. bench/shard.sh --rows 200000 --settings native,cpu --runs 1
#
# Builds and installs gpusort, starts SHARDS (default 4) shard servers and
# one coordinator (bench/pgserver.sh), all with gpusort preloaded, jit off
# and no parallel workers, and runs bench/shard.py, which loads the same
# rows into the shards (behind postgres_fdw foreign partitions on the
# coordinator) and into one table of the coordinator itself, the single
# server they are measured against, and writes shard.json and shard.md
# under --out (default bench/out/shard).  Every setting's work_mem (8GB)
# and gpusort settings reach the shards through the foreign servers'
# libpq options; the servers' own configuration only sizes their memory:
# shared_buffers COORD_SHARED_BUFFERS (default 4GB, it holds the single
# server's table) and SHARD_SHARED_BUFFERS (default 1GB each).  With the
# defaults five servers hold 8 GB of shared buffers; the shards sort one
# after another (Merge Append starts its inputs in turn), each keeping its
# sorted part until the coordinator has read it: on the GPU host (128 GB)
# 40M rows fit several times over.  Each server has its own GPU service on
# the same GPU; their budgets (gpusort.service_gpu_memory_percent) are
# SHARD_GPU_PERCENT (default 15) a shard and COORD_GPU_PERCENT (default
# 30), 90 % of the device in all.  Without a GPU, pass --settings
# native,cpu.  The servers' directories are under $BENCH_DIR (default
# /tmp/gpusort-shard), their ports from $PGSERVER_PORT (default 54340) up.
#
# On the GPU host (test/gpu/README.md: test/gpu/prepare.sh here first, then
# carry its folder, .device or $GPUSORT_DEVICE_DIR, along):
#   source "${GPUSORT_DEVICE_DIR:-.device}/pg-on-device.sh" && bench/shard.sh --out $OUT/shard ...
# bench/build.sh builds and installs gpusort for that PostgreSQL
# (GPUSORT_NO_BUILD=1: use the installed one) and runs the servers as pgrun.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/bench/build.sh"

source "$root/bench/pgserver.sh"
base=${BENCH_DIR:-/tmp/gpusort-shard}
trap 'pgserver_stop_all; rmdir "$base" 2>/dev/null || true' EXIT
port=${PGSERVER_PORT:-54340}
common=("shared_preload_libraries = 'gpusort'" "jit = off" "max_parallel_workers_per_gather = 0"
        "max_connections = 30")
shards=()
for i in $(seq 1 "${SHARDS:-4}"); do
  PGSERVER_PORT=$((port + i)) pgserver_start "$base/shard$i" "${common[@]}" \
    "shared_buffers = '${SHARD_SHARED_BUFFERS:-1GB}'" \
    "gpusort.service_gpu_memory_percent = ${SHARD_GPU_PERCENT:-15}"
  shards+=("$base/shard$i:$((port + i))")
done
# the coordinator last: PGHOST and PGPORT are then its
PGSERVER_PORT=$port pgserver_start "$base/coordinator" "${common[@]}" \
  "shared_buffers = '${COORD_SHARED_BUFFERS:-4GB}'" \
  "gpusort.service_gpu_memory_percent = ${COORD_GPU_PERCENT:-30}"
psql -X -q -c "CREATE EXTENSION gpusort" -c "SELECT * FROM gpusort_info()"
cd "$root" && PYTHONUNBUFFERED=1 python3 bench/shard.py --shards "$(IFS=,; echo "${shards[*]}")" "$@"

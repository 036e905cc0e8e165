#!/bin/bash
# bench/run.sh: the benchmark of gpusort against PostgreSQL's own Sort.
#
#   bench/run.sh [bench.py options]     e.g. --rows 1000000,10000000 --runs 3
#
# Builds and installs gpusort, starts a throwaway server (work_mem 8GB, jit
# off, gpusort preloaded, gpusort.max_memory 32GB) and runs bench/bench.py,
# which writes results.md, results.json and chart.png under --out (default
# bench/out).  Tables are built in the throwaway server and go with it.
# Without a GPU, pass --settings native,native-par8,cpu.  --queries text (or
# --groups main,dist,text) adds ORDER BY text in the database's collation
# (en_US.UTF-8: pgserver.sh initializes the server with it where the locale
# is installed, test/install-deps.sh installs it), in "C" and in ICU, and
# ORDER BY numeric; the slow ones run --slow-runs times (default 1), e.g.
#   bench/run.sh --rows 10000000 --queries text --settings native,cpu,gpu
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG"
make -C "$root" -s PG_CONFIG="$PG_CONFIG" install

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-bench}" "shared_preload_libraries = 'gpusort'" \
  "work_mem = '8GB'" "jit = off" "max_parallel_workers_per_gather = 0" \
  "max_worker_processes = 16" "max_parallel_workers = 16" \
  "gpusort.max_memory = '32GB'" "shared_buffers = '4GB'"
psql -X -q -c "CREATE EXTENSION gpusort" -c "SELECT * FROM gpusort_info()"
cd "$root" && python3 bench/bench.py "$@"

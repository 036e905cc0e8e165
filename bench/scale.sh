#!/bin/bash
# bench/scale.sh: the scaling benchmark (bench/scale.py) on a
# throwaway server.
#
#   bench/scale.sh [scale.py options]
#     e.g. bench/scale.sh --rows 100000,300000 --settings native,cpu --runs 2
#
# Builds and installs gpusort, starts a server of its own (bench/pgserver.sh)
# with gpusort preloaded, work_mem 8GB, jit off, no parallel workers and
# shared_buffers 4GB, and runs bench/scale.py, which writes scale.json,
# scale.md and scale-chart.png under --out (default bench/out/scale).
# Unlike bench/run.sh it sets no gpusort.max_memory: gpusort's defaults are
# what the scaling targets are about.  Without a GPU, pass --settings
# native,cpu.  The server's directory is $BENCH_DIR (default
# /tmp/gpusort-scale); its tables go with it.
#
# On the GPU host (see ../shared/device/README.md; test/gpu/prepare.sh here
# first, then carry .device along):
#   source .device/pg-on-device.sh && bench/scale.sh --out $OUT/scale ...
# That PostgreSQL lives under /opt/pg and the server runs as user pgrun
# (commands there run as root, which PostgreSQL refuses), and gpusort's
# build needs the ICU headers brought in .device/debs: this script does
# both, as test/gpu/device-run.sh does.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
if [[ $PG_CONFIG == /opt/pg/* ]]; then
  # the GPU host, after pg-on-device.sh
  export GPUSORT_TEST_USER=${GPUSORT_TEST_USER:-pgrun}
  [ -d /opt/pg/usr/include/unicode ] || for deb in "$root"/.device/debs/libicu-dev_*.deb; do
    [ -f "$deb" ] && dpkg -x "$deb" /opt/pg; done
  [ -d /opt/pg/usr/include/unicode ] && export CPATH=/opt/pg/usr/include${CPATH:+:$CPATH}
fi
make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG"
make -C "$root" -s PG_CONFIG="$PG_CONFIG" install

source "$root/bench/pgserver.sh"
trap pgserver_stop EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-scale}" "shared_preload_libraries = 'gpusort'" \
  "work_mem = '8GB'" "jit = off" "max_parallel_workers_per_gather = 0" \
  "shared_buffers = '4GB'"
psql -X -q -c "CREATE EXTENSION gpusort" -c "SELECT * FROM gpusort_info()"
cd "$root" && PYTHONUNBUFFERED=1 python3 bench/scale.py "$@"

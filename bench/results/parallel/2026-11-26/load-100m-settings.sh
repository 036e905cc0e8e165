#!/bin/bash
# what bounds the 100M parallel load: the leader's fresh arena memory (host_cache) or its key threads
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
libdir=$($PG_CONFIG --pkglibdir)
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
make -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-b.log 2>&1 && make -s PG_CONFIG=$PG_CONFIG install >/dev/null || { tail -30 /tmp/build-b.log; exit 1; }
PG_EXTRA_OPTS="-c shared_preload_libraries=gpusort -c shared_buffers=16GB -c work_mem=8GB -c max_worker_processes=24 -c max_parallel_workers=16" pg_restart
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpusort"
n=100000000
[ "$(psql -X -At -c "SELECT count(*) > 0 FROM t_$n" 2>/dev/null)" = t ] || {
  python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('t', $n, 16, None)"
  psql -X -q -c "ALTER TABLE t_$n SET (parallel_workers = 8)"; }
echo "ready after $(( $(date +%s) - t0 )) s"
measure() { # label settings rounds
  local label=$1 settings=$2 rounds=$3
  {
    echo "SET max_parallel_workers_per_gather = 8; SET gpusort.engine = gpu; SET gpusort.max_memory = '32GB'; $settings"
    echo "SELECT count(*) FROM t_$n; SELECT * FROM t_$n ORDER BY k OFFSET $n;"
    echo "SET client_min_messages = debug1;"
    echo '\timing on'
    for r in $(seq $rounds); do
      echo "\\echo COUNT"; echo "SELECT count(*) FROM t_$n;"
      echo "\\echo SORT"; echo "SELECT * FROM t_$n ORDER BY k OFFSET $n;"
    done
  } | psql -X -At 2>&1 | grep -E "^COUNT|^SORT|parallel load|records sorted|^Time|ERROR" | sed "s/^/$label $n: /"
}
measure b "" 3
measure b-cache16 "SET gpusort.host_cache = '16GB';" 3
measure b-kt15 "SET gpusort.key_threads = 15;" 3
measure b-cache16-kt15 "SET gpusort.host_cache = '16GB'; SET gpusort.key_threads = 15;" 3
echo "done after $(( $(date +%s) - t0 )) s"

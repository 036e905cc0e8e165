#!/bin/bash
# keys encoded after a parallel load (a, c75ef66) against as its chunks arrive (b, f03be35):
# alternated on one server and one 10M-row table, ORDER BY k and ORDER BY f, k, 8 workers
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
libdir=$($PG_CONFIG --pkglibdir)
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
make -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-b.log 2>&1 && make -s PG_CONFIG=$PG_CONFIG install >/dev/null || { tail -30 /tmp/build-b.log; exit 1; }
cp gpusort.so /tmp/gpusort-b.so
rm -rf /tmp/a && cp -a . /tmp/a && cp .device/variant-a/* /tmp/a/src/ \
  && make -C /tmp/a -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-a.log 2>&1 || { tail -30 /tmp/build-a.log; exit 1; }
cp /tmp/a/gpusort.so /tmp/gpusort-a.so
cmp -s /tmp/gpusort-a.so /tmp/gpusort-b.so && echo "WARNING: the two builds are the same"
base="-c shared_preload_libraries=gpusort -c shared_buffers=16GB -c work_mem=8GB -c max_worker_processes=24 -c max_parallel_workers=16"
use() {
  cp /tmp/gpusort-$1.so "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  PG_EXTRA_OPTS="$base" pg_restart
}
use b
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpusort"
n=10000000
[ "$(psql -X -At -c "SELECT count(*) > 0 FROM t_$n" 2>/dev/null)" = t ] || {
  python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('t', $n, 16, None)"
  psql -X -q -c "ALTER TABLE t_$n SET (parallel_workers = 8)"; }
echo "ready after $(( $(date +%s) - t0 )) s"
for v in a b a b; do
  use $v
  for q in "k" "f, k"; do
    {
      echo "SET max_parallel_workers_per_gather = 8; SET gpusort.engine = gpu; SET gpusort.max_memory = '32GB';"
      echo "SELECT * FROM t_$n ORDER BY $q OFFSET $n;"
      echo "SET client_min_messages = debug1;"
      echo '\timing on'
      for r in 1 2 3 4 5; do echo "SELECT * FROM t_$n ORDER BY $q OFFSET $n;"; done
    } | psql -X -At 2>&1 | grep -E "records sorted|^Time|ERROR" | sed -e "s/^/$v [$q]: /" -e 's/DEBUG:  gpusort: //' | cut -c1-260
  done
done
echo "done after $(( $(date +%s) - t0 )) s"

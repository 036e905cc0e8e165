#!/bin/bash
# the load against a parallel count(*): 1 MB chunks (a) against HEAD's 4 MB (b), alternated on one server, 10M and 100M rows;
# then the whole regression suite and fuzzing with parallel plans forced, on the GPU
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
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
for n in 10000000 100000000; do
  python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('t', $n, 16, None)"
  psql -X -q -c "ALTER TABLE t_$n SET (parallel_workers = 8)"
done
echo "tables after $(( $(date +%s) - t0 )) s"
measure() { # label rows rounds
  local label=$1 n=$2 rounds=$3
  {
    echo "SET max_parallel_workers_per_gather = 8; SET gpusort.engine = gpu; SET gpusort.max_memory = '32GB';"
    echo "SELECT count(*) FROM t_$n; SELECT * FROM t_$n ORDER BY k OFFSET $n;"
    echo "SET client_min_messages = debug1;"
    echo '\timing on'
    for r in $(seq $rounds); do
      echo "\\echo COUNT"; echo "SELECT count(*) FROM t_$n;"
      echo "\\echo SORT"; echo "SELECT * FROM t_$n ORDER BY k OFFSET $n;"
    done
  } | psql -X -At 2>&1 | grep -E "^COUNT|^SORT|parallel load|^Time" | sed "s/^/$label $n: /"
}
for v in a b a b; do
  use $v
  measure $v 10000000 7
  measure $v 100000000 3
done
echo "load done after $(( $(date +%s) - t0 )) s"
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
make -s PG_CONFIG=$PG_CONFIG install >/dev/null
GPUSORT_PARALLEL=1 GPUSORT_SKIP_KERNEL=1 GPUSORT_TEST_USER=pgrun timeout $(( 590 - ($(date +%s) - t0) )) test/gpu/run.sh /tmp/gt > $OUT/gpu-suite-parallel.log 2>&1; echo "gpu suite (parallel) rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "sorts in the|fuzz|passed|FAIL|failed" $OUT/gpu-suite-parallel.log | head -8
cp /tmp/gt/regression.diffs $OUT/gpu-regression.diffs 2>/dev/null
echo "done after $(( $(date +%s) - t0 )) s"

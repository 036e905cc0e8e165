#!/bin/bash
# parallel load against a parallel count(*): HEAD fdccdae (a) and the tuple array grown by mremap (b),
# alternated on one server and the same tables, 10M and 100M rows of t; native serial and parallel sorts at 10M for the ratio
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nproc; nvidia-smi -L; uname -r
libdir=$($PG_CONFIG --pkglibdir)
make -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-b.log 2>&1 || { tail -30 /tmp/build-b.log; exit 1; }
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
make -s PG_CONFIG=$PG_CONFIG install >/dev/null
cp gpusort.so /tmp/gpusort-b.so
rm -rf /tmp/a && cp -a . /tmp/a && cp .device/variant-a/*.c .device/variant-a/*.h /tmp/a/src/ \
  && make -C /tmp/a -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-a.log 2>&1 || { tail -30 /tmp/build-a.log; exit 1; }
cp /tmp/a/gpusort.so /tmp/gpusort-a.so
cmp -s /tmp/gpusort-a.so /tmp/gpusort-b.so && echo "WARNING: the two builds are the same"
echo "built after $(( $(date +%s) - t0 )) s"
base="-c shared_preload_libraries=gpusort -c shared_buffers=16GB -c work_mem=8GB -c max_worker_processes=24 -c max_parallel_workers=16"
use() { # variant, extra options
  # a new file, not the loaded one overwritten: its processes map it
  cp /tmp/gpusort-$1.so "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  PG_EXTRA_OPTS="$base ${2:-}" pg_restart
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
native() { # label workers
  {
    echo "SET max_parallel_workers_per_gather = $2; SET gpusort.enabled = off; SET work_mem = '8GB';"
    echo '\timing on'
    for r in 1 2 3; do echo "\echo SORT"; echo "SELECT * FROM t_10000000 ORDER BY k OFFSET 10000000;"; done
  } | psql -X -At 2>&1 | grep -E "^SORT|^Time|ERROR" | sed "s/^/$1 10000000: /"
}
native native 0
native native-par 8
echo "done after $(( $(date +%s) - t0 )) s"

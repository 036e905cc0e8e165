#!/bin/bash
# bench/parallel-ab.sh: a parallel GpuSort's load or whole sort, or a
# serial one at gpusort's defaults, for one build of gpusort or two
# alternated on one server and the same tables, on the GPU host, so that
# the two builds' figures differ by the builds alone, not by the tables,
# the order or the host's drift.  bench/results/parallel.md holds what it
# measured.
#
#   git archive -o "$GPUSORT_DEVICE_DIR/base.tar" BASE_COMMIT      (here)
#   source "${GPUSORT_DEVICE_DIR:-.device}/pg-on-device.sh" && \
#     bench/parallel-ab.sh [options] > $OUT/load-ab.log                 (there)
#
#   --base BASE.tar   the older build, from `git archive`; with it the two
#                     builds run in the order a (BASE), b (this tree), a, b,
#                     with a restart at each switch; without it, b only
#   --mode load       (default) a parallel count(*) and the sort, in pairs;
#                     gpusort's DEBUG1 "parallel load" line gives each
#                     worker's load (bench/load_medians.py prints medians)
#   --mode sort       ORDER BY k and ORDER BY f, k, five statements each
#   --mode serial     bench/scale.py's query on its table s_N
#                     (k int8, f float8): SELECT * FROM s_N ORDER BY k
#                     OFFSET N, serial, at gpusort's default settings (as
#                     bench/scale.sh runs it), --rounds statements in one
#                     session, then the scan (the same without ORDER BY,
#                     the floor) there, then --rounds statements on fresh
#                     connections (bench/serial_medians.py prints medians)
#   --rows "N ..."    table sizes (default "10000000 100000000")
#   --rounds "R ..."  pairs per size and turn (default "7 3")
#   --sql SQL         SET commands for every session of both builds, e.g.
#                     "SET gpusort.max_memory = '512MB';" for a sort that
#                     spills and merges its runs
#   --setting L:SQL   also run build b with these SET commands, labelled L
#                     (repeatable), e.g. 'b-cache16:SET gpusort.host_cache = '\''16GB'\'';'
#   --server-opts O   extra server options for a second turn of each build,
#                     e.g. "-c min_dynamic_shared_memory=20GB" (first size only)
#   --native          then PostgreSQL's own sort of the first size, serial and
#                     with 8 workers, three statements each
#
# The table is t_N(k int8, pad text, f float8) from bench/scale.py with
# parallel_workers = 8 (s_N for --mode serial); sorts run with 8 workers a
# Gather, gpusort.engine = gpu and gpusort.max_memory = 32GB.
# --turns K runs the builds' turns K times (default 2: a b a b).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base_tar= mode=load rows="10000000 100000000" rounds="7 3" server_opts= native= turns=2 sql=
settings=()
while [ $# -gt 0 ]; do
  case $1 in
    --base) base_tar=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --turns) turns=$2; shift 2 ;;
    --setting) settings+=("$2"); shift 2 ;;
    --server-opts) server_opts=$2; shift 2 ;;
    --sql) sql=$2; shift 2 ;;
    --native) native=1; shift ;;
    *) echo "usage: $0 [--base BASE.tar] [--mode load|sort|serial] [--turns K] [--rows ...] [--rounds ...] [--sql SQL] [--setting L:SQL] [--server-opts O] [--native]" >&2; exit 2 ;;
  esac
done
: "${PG_CONFIG:?source pg-on-device.sh first (test/gpu/README.md)}"
t0=$(date +%s)
nproc; nvidia-smi -L 2>/dev/null
libdir=$($PG_CONFIG --pkglibdir)
su pgrun -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
make -s -j"$(nproc)" PG_CONFIG=$PG_CONFIG >/tmp/build-b.log 2>&1 && make -s PG_CONFIG=$PG_CONFIG install >/dev/null \
  || { tail -30 /tmp/build-b.log; exit 1; }
cp gpusort.so /tmp/gpusort-b.so
builds=b
if [ -n "$base_tar" ]; then
  rm -rf /tmp/gpusort-a && mkdir -p /tmp/gpusort-a && tar -xf "$base_tar" -C /tmp/gpusort-a \
    && make -C /tmp/gpusort-a -s -j"$(nproc)" PG_CONFIG=$PG_CONFIG >/tmp/build-a.log 2>&1 \
    || { tail -30 /tmp/build-a.log; exit 1; }
  cp /tmp/gpusort-a/gpusort.so /tmp/gpusort-a.so
  cmp -s /tmp/gpusort-a.so /tmp/gpusort-b.so && echo "WARNING: the two builds are the same"
  builds=$(for _ in $(seq "$turns"); do echo -n "a b "; done)
fi
echo "built after $(( $(date +%s) - t0 )) s"
server="-c shared_preload_libraries=gpusort -c shared_buffers=16GB -c work_mem=8GB -c max_worker_processes=24 -c max_parallel_workers=16"
use() { # build, extra server options
  # a new file, not the loaded one overwritten: running processes map it
  cp /tmp/gpusort-$1.so "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  PG_EXTRA_OPTS="$server ${2:-}" pg_restart
}
use b
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpusort"
shape=t
[ $mode = serial ] && shape=s
for n in $rows; do
  [ "$(psql -X -At -c "SELECT count(*) > 0 FROM ${shape}_$n" 2>/dev/null)" = t ] || {
    python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('$shape', $n, 16, None)"
    psql -X -q -c "ALTER TABLE ${shape}_$n SET (parallel_workers = 8)"; }
done
echo "tables after $(( $(date +%s) - t0 )) s"
set_sql="SET max_parallel_workers_per_gather = 8; SET gpusort.engine = gpu; SET gpusort.max_memory = '32GB';"
measure() { # label rows rounds extra-SQL
  local label=$1 n=$2 r=$3 extra=${4:-} q
  if [ $mode = load ]; then
    {
      echo "$set_sql $extra"
      echo "SELECT count(*) FROM t_$n; SELECT * FROM t_$n ORDER BY k OFFSET $n;"
      echo "SET client_min_messages = debug1;"
      echo '\timing on'
      for _ in $(seq "$r"); do
        echo "\\echo COUNT"; echo "SELECT count(*) FROM t_$n;"
        echo "\\echo SORT"; echo "SELECT * FROM t_$n ORDER BY k OFFSET $n;"
      done
    } | psql -X -At 2>&1 | grep -E "^COUNT|^SORT|parallel load|records sorted|^Time|ERROR" | sed "s/^/$label $n: /"
  elif [ $mode = serial ]; then
    q="SELECT * FROM s_$n ORDER BY k OFFSET $n;"
    {
      echo "SET max_parallel_workers_per_gather = 0; $extra"
      echo "$q"
      echo "SET client_min_messages = debug1;"
      echo '\timing on'
      for _ in $(seq "$r"); do echo "$q"; done
      echo '\echo SCAN'; echo "SELECT * FROM s_$n OFFSET $n;"
    } | psql -X -At 2>&1 | grep -E "records sorted|^SCAN|^Time|ERROR" | sed -e "s/^/$label warm: /" -e 's/DEBUG:  gpusort: //' | cut -c1-260
    for _ in $(seq "$r"); do
      printf 'SET max_parallel_workers_per_gather = 0; %s\nSET client_min_messages = debug1;\n\\timing on\n%s\n' "$extra" "$q" \
        | psql -X -At 2>&1 | grep -E "records sorted|^Time|ERROR" | sed -e "s/^/$label fresh: /" -e 's/DEBUG:  gpusort: //' | cut -c1-260
    done
  else
    for q in "k" "f, k"; do
      {
        echo "$set_sql $extra"
        echo "SELECT * FROM t_$n ORDER BY $q OFFSET $n;"
        echo "SET client_min_messages = debug1;"
        echo '\timing on'
        for _ in $(seq "$r"); do echo "SELECT * FROM t_$n ORDER BY $q OFFSET $n;"; done
      } | psql -X -At 2>&1 | grep -E "records sorted|^Time|ERROR" | sed -e "s/^/$label [$q]: /" -e 's/DEBUG:  gpusort: //' | cut -c1-260
    done
  fi
}
measure_all() { # label extra-SQL
  local i=1 n r
  for n in $rows; do
    r=$(echo $rounds | cut -d' ' -f$i); i=$((i + 1))
    measure "$1" "$n" "${r:-3}" "${2:-}"
  done
}
for v in $builds; do
  use $v
  measure_all $v "$sql"
done
for s in ${settings[@]+"${settings[@]}"}; do
  measure_all "${s%%:*}" "$sql ${s#*:}"
done
if [ -n "$server_opts" ]; then
  for v in $(echo $builds | tr ' ' '\n' | sort -u); do
    use $v "$server_opts"
    measure $v-opts "${rows%% *}" "${rounds%% *}" "$sql"
  done
fi
if [ -n "$native" ]; then
  n=${rows%% *}
  for w in 0 8; do
    label=native; [ $w = 0 ] || label=native-par
    {
      echo "SET max_parallel_workers_per_gather = $w; SET gpusort.enabled = off; SET work_mem = '8GB';"
      echo '\timing on'
      for _ in 1 2 3; do echo "\echo SORT"; echo "SELECT * FROM t_$n ORDER BY k OFFSET $n;"; done
    } | psql -X -At 2>&1 | grep -E "^SORT|^Time|ERROR" | sed "s/^/$label $n: /"
  done
fi
echo "done after $(( $(date +%s) - t0 )) s"

#!/bin/bash
# bench/local-ab.sh: two builds of gpusort alternated on one local server
# and one table, on a machine without a GPU (the CPU engine), for a change
# whose effect shows in a spilling sort's phases.  Not for absolute figures
# (those come from the GPU host: bench/parallel-ab.sh); for whether a
# change moves a phase, on the same rows, server and machine.
#
#   bench/local-ab.sh BASE_COMMIT [ROWS [BUDGET]]     (as root)
#
# Builds BASE_COMMIT (a) and the working tree (b) against the machine's
# PostgreSQL (PG_CONFIG, default Debian's 15), starts a server of its own
# as the user postgres in /tmp/gpusort-local-ab, and makes s(k int8, f
# float8) of ROWS rows (default 5000000), as bench/scale.py's s.  Then, in
# the order a b a b, each build with the server restarted:
#   - three EXPLAIN ANALYZE of SELECT * FROM s ORDER BY k OFFSET ROWS under
#     gpusort.max_memory = BUDGET (default 128MB), whose Load and Emit Time
#     it prints;
#   - five of the statement itself, timed by psql, and two of the scan
#     (the same without ORDER BY), the floor.
# It installs each build into PostgreSQL's library directory in turn, and
# the working tree's at the end: never while another test uses that
# installation.
set -uo pipefail

base=${1:?usage: bench/local-ab.sh BASE_COMMIT [ROWS [BUDGET]]}
n=${2:-5000000}
budget=${3:-128MB}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($PG_CONFIG --bindir)
libdir=$($PG_CONFIG --pkglibdir)
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/gpusort-local-ab
as() { runuser -u postgres -- "$@"; }

rm -rf "$work" && mkdir -p "$work/a" "$work/b"
git -C "$root" archive "$base" | tar -x -C "$work/a"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -c) | tar -x -C "$work/b"
for v in a b; do
  make -C "$work/$v" -s -j"$(nproc)" USE_CUDA=0 >"$work/build-$v.log" 2>&1 \
    || { tail -20 "$work/build-$v.log"; exit 1; }
done
echo "a: $(git -C "$root" rev-parse --short "$base"), b: the working tree of $(git -C "$root" rev-parse --short HEAD); $(nproc) CPUs"

mkdir -p "$work/srv" && chown postgres "$work/srv"
as "$bindir/initdb" -D "$work/srv/data" -A trust -U postgres >/dev/null
cat >> "$work/srv/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$work/srv'
port = 54391
shared_preload_libraries = 'gpusort'
jit = off
max_parallel_workers_per_gather = 0
shared_buffers = '1GB'
EOF
export PGHOST=$work/srv PGPORT=54391 PGUSER=postgres
use() {
  # a new file, not the loaded one overwritten: running processes map it
  cp "$work/$1/gpusort.so" "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  as "$bindir/pg_ctl" -D "$work/srv/data" -m fast stop >/dev/null 2>&1
  as "$bindir/pg_ctl" -D "$work/srv/data" -l "$work/srv/log" -w start >/dev/null
}
use b
psql -X -q -c "CREATE EXTENSION gpusort" \
  -c "CREATE UNLOGGED TABLE s AS SELECT hashint8extended(g, 42) k, (hashint8extended(g, 7) & 9007199254740991)::float8 / 9007199254740992 f FROM generate_series(1, $n) g" \
  -c "VACUUM ANALYZE s"

q="SELECT * FROM s ORDER BY k OFFSET $n;"
for turn in a b a b; do
  use $turn
  {
    echo "SET gpusort.max_memory = '$budget'; $q"
    for _ in 1 2 3; do echo "EXPLAIN (ANALYZE, COSTS OFF) $q"; done
  } | psql -X -At 2>&1 | grep -E "Runs Written:|Merge Threads|Load Time|Emit Time|ERROR" \
    | sed -e 's/^ *//' | paste -d' ' - - - - | sed "s/^/$turn explain: /"
  {
    echo "SET gpusort.max_memory = '$budget';"
    echo '\timing on'
    for _ in 1 2 3 4 5; do echo "$q"; done
    echo '\echo SCAN'
    for _ in 1 2; do echo "SELECT * FROM s OFFSET $n;"; done
  } | psql -X -At 2>&1 | grep -E "^Time|^SCAN|ERROR" | sed -e 's/^Time: //' -e 's/ ms.*//' \
    | tr '\n' ' ' | sed -e 's/SCAN/ scan:/' -e "s/^/$turn statement (ms): /"
  echo
done
as "$bindir/pg_ctl" -D "$work/srv/data" -m fast stop >/dev/null
make -C "$root" -s USE_CUDA=0 install >/dev/null 2>&1

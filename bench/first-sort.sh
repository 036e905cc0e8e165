#!/bin/bash
# bench/first-sort.sh: what a fresh connection's first sort costs, against
# a warm session's and against PostgreSQL's Sort, on a throwaway server
# (bench/pgserver.sh) with gpusort at its default settings, serial plans.
#
#   bench/first-sort.sh [--rows N] [--turns K] [--base BASE.tar]
#
# Table t_N(k int8, pad text, f float8) from bench/scale.py (default 3M
# rows); query SELECT * FROM t_N ORDER BY k OFFSET N.  Each turn restarts
# the server, reads the table once, then runs the query on 5 fresh
# connections with gpusort and 5 with gpusort.enabled = off, each the
# connection's only statement, then 6 times in one session (the first of
# them is that session's first sort).  With --base (a `git archive` of
# another commit) that tree is built too and the two builds take turns on
# the same server and table, a (BASE) then b (this tree), K turns each
# (default 3); otherwise K turns of this tree.  Prints one line per
# statement, "BUILD fresh|warm gpusort|native MS", then the medians.
# Builds and installs gpusort itself (bench/build.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=3000000 turns=3 base_tar=
while [ $# -gt 0 ]; do
  case $1 in
    --rows) rows=$2; shift 2 ;;
    --turns) turns=$2; shift 2 ;;
    --base) base_tar=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    *) echo "usage: $0 [--rows N] [--turns K] [--base BASE.tar]" >&2; exit 2 ;;
  esac
done
source "$root/bench/build.sh"
libdir=$("$PG_CONFIG" --pkglibdir)
work=$(mktemp -d /tmp/gpusort-first-sort.XXXXXX)
cp "$root/gpusort.so" "$work/b.so"
builds=b
if [ -n "$base_tar" ]; then
  mkdir -p "$work/a" && tar -xf "$base_tar" -C "$work/a"
  make -C "$work/a" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" > "$work/build-a.log" 2>&1 \
    || { tail -20 "$work/build-a.log"; exit 1; }
  cp "$work/a/gpusort.so" "$work/a.so"
  builds="a b"
fi

source "$root/bench/pgserver.sh"
cleanup() {
  pgserver_stop
  # this tree's build, installed again
  cp "$work/b.so" "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  rm -rf "$work"
}
trap cleanup EXIT
pgserver_start "${BENCH_DIR:-/tmp/gpusort-first-sort}" "shared_preload_libraries = 'gpusort'" \
  "work_mem = '1GB'" "jit = off" "max_parallel_workers_per_gather = 0"
psql -X -q -c "CREATE EXTENSION gpusort"
(cd "$root" && python3 -c "import sys; sys.path.insert(0, 'bench'); import scale; scale.make_table('t', $rows, $(nproc), None)") > /dev/null
query="SELECT * FROM t_$rows ORDER BY k OFFSET $rows"

# one statement's time in ms, on a connection of its own
timed() {
  psql -X -At -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
# install a build: a new file, not the loaded one overwritten
use() {
  cp "$work/$1.so" "$libdir/gpusort.so.new" && mv -f "$libdir/gpusort.so.new" "$libdir/gpusort.so"
  _pgserver_as "$PGSERVER_BIN/pg_ctl" -D "$PGSERVER_DIR/data" -l "$PGSERVER_DIR/server.log" \
    -m fast -w restart > /dev/null
}
{
  for _ in $(seq "$turns"); do
    for b in $builds; do
      use "$b"
      psql -X -At -c "SELECT count(*) FROM t_$rows" > /dev/null
      for _ in 1 2 3 4 5; do
        echo "$b fresh gpusort $(timed)"
        echo "$b fresh native $(PGOPTIONS='-c gpusort.enabled=off' timed)"
      done
      psql -X -At -c '\timing on' -c "$query" -c "$query" -c "$query" -c "$query" \
          -c "$query" -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' \
        | awk -v b="$b" '{print b, (NR == 1 ? "first" : "warm"), "gpusort", $1}'
    done
  done
} | tee "$work/times"
echo "== medians (ms): fresh connections, the first sort of a session, the warm session's other sorts"
awk '{k = $1 " " $2 " " $3; v[k] = v[k] " " $4} END {for (k in v) print k, v[k]}' "$work/times" | sort \
  | while read -r b kind what rest; do
      echo "$b $kind $what $(echo "$rest" | tr ' ' '\n' | sort -n \
        | awk '{a[NR] = $1} END {printf "%.0f (%d samples)", a[int((NR + 1) / 2)], NR}')"
    done

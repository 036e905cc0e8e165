#!/bin/bash
# bench/trees.sh: the same sorts on several trees of gpusort in one call,
# each tree with a server of its own and all the servers up at once, their
# samples interleaved (bench/trees.py), so that a change that must not make
# gpusort slower is measured against the trees before it under the same
# noise: a restructuring's merges one by one, say.
#
#   git archive -o .device/tree-NAME.tar COMMIT          (here, for each)
#   source .device/pg-on-device.sh && \
#     bench/trees.sh NAME=.device/tree-NAME.tar ... head=. [trees.py options]
#
# A tree given as "." is this checkout.  Each tree is unpacked under
# $TREES_DIR/NAME (default /tmp/gpusort-trees), gets a copy of the
# PostgreSQL installation that PG_CONFIG names (Debian's is relocatable),
# and builds and installs its gpusort there, the trees' builds at once;
# then a server of its own starts for each (bench/pgserver.sh, the same
# settings as bench/scale.sh, and gpusort.service_gpu_memory_percent
# shared out so that every tree's GPU service fits on the card), and
# bench/trees.py runs the statements.  Results go to --out (default
# $OUT/trees, else bench/out/trees).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GPUSORT_NO_BUILD=1 source "$root/bench/build.sh"  # PG_CONFIG and the server user; each tree builds below
dir=${TREES_DIR:-/tmp/gpusort-trees}
trees=()
while [ $# -gt 0 ] && [[ $1 == *=* ]] && [[ $1 != --* ]]; do
  trees+=("$1")
  shift
done
[ ${#trees[@]} -ge 1 ] || { echo "usage: $0 NAME=TREE.tar|. ... [trees.py options]" >&2; exit 2; }
pg_prefix=$("$PG_CONFIG" --bindir)
pg_prefix=${pg_prefix%/usr/lib/postgresql/*}
rm -rf "$dir" && mkdir -p "$dir"
jobs=$(( $(nproc) / ${#trees[@]} ))
[ $jobs -ge 1 ] || jobs=1
pids=()
for t in "${trees[@]}"; do
  name=${t%%=*} src=${t#*=}
  mkdir -p "$dir/$name/src"
  if [ "$src" = . ]; then
    (cd "$root" && tar --exclude=./.device --exclude=./bench/out --exclude=./.git -cf - .) \
      | tar -xf - -C "$dir/$name/src"
  else
    tar -xf "$src" -C "$dir/$name/src"
  fi
  cp -a "$pg_prefix" "$dir/$name/pg"
  cfg=$dir/$name/pg/${PG_CONFIG#$pg_prefix/}
  ( cd "$dir/$name/src" && make -s -j$jobs PG_CONFIG="$cfg" && make -s PG_CONFIG="$cfg" install ) \
    > "$dir/$name/build.log" 2>&1 &
  pids+=($!)
done
i=0
for t in "${trees[@]}"; do
  wait "${pids[$i]}" || { echo "trees: building ${t%%=*} failed:" >&2; tail -20 "$dir/${t%%=*}/build.log" >&2; exit 1; }
  i=$((i + 1))
done
echo "trees: built ${#trees[@]} trees ($(date +%T))"

source "$root/bench/pgserver.sh"
trap pgserver_stop_all EXIT
percent=$(( 90 / ${#trees[@]} ))
[ $percent -ge 1 ] || percent=1
servers=
port=54400
for t in "${trees[@]}"; do
  name=${t%%=*}
  cfg=$dir/$name/pg/${PG_CONFIG#$pg_prefix/}
  PGSERVER_BIN=$("$cfg" --bindir)
  PGSERVER_PORT=$port pgserver_start "$dir/$name/server" "shared_preload_libraries = 'gpusort'" \
    "work_mem = '8GB'" "jit = off" "max_parallel_workers_per_gather = 0" \
    "shared_buffers = '4GB'" "max_worker_processes = 24" "max_parallel_workers = 16" \
    "gpusort.service_gpu_memory_percent = $percent"
  servers+="${servers:+,}$name=$dir/$name/server:$port"
  port=$((port + 1))
done
out_default=${OUT:-$root/bench/out}/trees
args=("$@")
[[ " $* " == *" --out "* ]] || args+=(--out "$out_default")
cd "$root" && PYTHONUNBUFFERED=1 python3 bench/trees.py --servers "$servers" "${args[@]}"

#!/bin/bash
# test/gpu/compare.sh: the scaling benchmark (bench/scale.sh) for two trees
# of gpusort on the same host, one after the other, so that a change that
# must not make gpusort slower (a restructuring, say) is measured against
# the tree it started from in the same call.
#
#   git archive -o .device/base.tar BASE_COMMIT                  (here)
#   source .device/pg-on-device.sh && \
#     test/gpu/compare.sh .device/base.tar [scale.py options]   (there)
#
# The base tree is unpacked under /tmp/gpusort-base and shares this tree's
# .device; each tree builds and installs its own gpusort, starts its own
# server and builds its own tables (bench/scale.sh), the base first.  Each
# tree's scale.md, scale.json and log go to $OUT/compare-base and
# $OUT/compare-head, and the two scale.md tables are printed one after the
# other.  COMPARE_ORDER="head base" runs this tree first, to see what
# the order does to the figures.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/gpusort-out}
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 BASE.tar [scale.py options]" >&2; exit 2; }
base_tar=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
base=/tmp/gpusort-base
rm -rf "$base" && mkdir -p "$base" && tar -xf "$base_tar" -C "$base" || exit 1
ln -s "$root/.device" "$base/.device"
status=0
for tree in ${COMPARE_ORDER:-base head}; do
  dir=$root
  [ $tree = base ] && dir=$base
  echo "== $tree ($(date +%T))"
  (cd "$dir" && make -s clean > /dev/null 2>&1
   bench/scale.sh "$@" --out "$out/compare-$tree") > "$out/compare-$tree.log" 2>&1 \
    || { status=1; tail -20 "$out/compare-$tree.log"; }
  cat "$out/compare-$tree/scale.md" 2>/dev/null
done
exit $status

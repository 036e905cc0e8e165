#!/bin/bash
# test/gpu/package.sh: the GPU suite against gpusort as Debian packages it,
# on the GPU test host (test/gpu/README.md), without building gpusort.
#
#   here:   GPUSORT_PKG_CUDA=1 GPUSORT_PKG_OUT=DIR .ci/package.sh, in a
#           Debian 12 chroot with non-free (test/chroot.sh), and DIR's
#           postgresql-15-gpusort and libcudart .debs copied to
#           .device/pkg-15/
#   there:  source .device/pg-on-device.sh && test/gpu/package.sh [DEBDIR]
#
# DEBDIR (default .device/pkg-$PG_MAJOR) holds postgresql-NN-gpusort_*.deb,
# built with Debian's CUDA toolkit, and the libcudart package it depends
# on.  With the PostgreSQL that pg-on-device.sh unpacked and started (its
# PG_CONFIG, PATH, LD_LIBRARY_PATH and pg_restart), this script:
#
#  1. unpacks both packages (dpkg-deb -x): gpusort.so goes to pg_config's
#     pkglibdir, the control and SQL files to its extension directory, and
#     libcudart.so.* to a directory of their own (/opt/gpusort-cudart,
#     GPUSORT_CUDART_DIR) put first on LD_LIBRARY_PATH, which pg_restart
#     and the test servers inherit: the host's own CUDA has another
#     runtime, and the package's must be the one loaded;
#  2. checks that the installed gpusort.so is the package's (cmp) and that
#     it finds that libcudart (ldd);
#  3. restarts the server with gpusort preloaded, waits for its GPU service
#     to see a GPU, and checks that it says it was built with CUDA, lists
#     the GPUs, loaded the package's libcudart, and that a sort with
#     gpusort.engine = gpu was done by the GPU (gpusort_stat); then
#     restarts the server as it was, without gpusort;
#  4. runs test/gpu/run.sh's regression suite with gpusort.engine = gpu
#     against the installed package, as test/gpu/RESULTS.md's GPU suite
#     runs: GPUSORT_SKIP_BUILD=1, so nothing is built or installed from
#     the tree, and without the kernel tests and the CPU radix test, which
#     compile the tree's sources, and without the fuzzing round
#     (GPUSORT_SKIP_FUZZ=0 adds it); run.sh counts from the server's log
#     which engine did each sort and fails unless the GPU did;
#  5. checks that the installed gpusort.so is still the package's.
#
# Logs go to $OUT/package (OUT defaults to /tmp/gpusort-out).  The exit
# status is 0 only if every step passed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
debdir=${1:-$root/.device/pkg-${PG_MAJOR:-15}}
cudart_dir=${GPUSORT_CUDART_DIR:-/opt/gpusort-cudart}
out=${OUT:-/tmp/gpusort-out}/package
mkdir -p "$out"
status=0

die() { echo "package.sh: $*" >&2; echo "== package test FAILED"; exit 1; }

[ -n "${PG_CONFIG:-}" ] && [ -x "$PG_CONFIG" ] && declare -F pg_restart >/dev/null \
  || die "source .device/pg-on-device.sh first (PG_CONFIG and pg_restart)"
major=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pkgdeb=$(ls "$debdir"/postgresql-"$major"-gpusort_*.deb 2>/dev/null | head -1)
cudartdeb=$(ls "$debdir"/libcudart*.deb 2>/dev/null | head -1)
[ -n "$pkgdeb" ] || die "no postgresql-$major-gpusort_*.deb in $debdir"
[ -n "$cudartdeb" ] || die "no libcudart*.deb in $debdir"
echo "== $(basename "$pkgdeb") and $(basename "$cudartdeb") on $("$PG_CONFIG" --version)"
dpkg-deb -f "$pkgdeb" Depends Description | grep -E '^Depends|engines in this build' | sed 's/^ */   /'

# --- 1. unpack ---------------------------------------------------------------
pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
x=$(mktemp -d /tmp/gpusort-pkg.XXXXXX)
trap 'rm -rf "$x"' EXIT
dpkg-deb -x "$pkgdeb" "$x/pkg" || die "dpkg-deb -x $pkgdeb failed"
dpkg-deb -x "$cudartdeb" "$x/cudart" || die "dpkg-deb -x $cudartdeb failed"
so=$x/pkg/usr/lib/postgresql/$major/lib/gpusort.so
[ -f "$so" ] || die "$(basename "$pkgdeb") has no usr/lib/postgresql/$major/lib/gpusort.so"
# the library by rename, not in place: a process that has the old one
# mapped keeps it whole
install -m 755 "$so" "$pkglibdir/gpusort.so.new" && mv -f "$pkglibdir/gpusort.so.new" "$pkglibdir/gpusort.so" \
  || die "cannot install gpusort.so in $pkglibdir"
install -m 644 "$x"/pkg/usr/share/postgresql/"$major"/extension/gpusort* "$extdir"/ \
  || die "cannot install the control and SQL files in $extdir"
rm -rf "$cudart_dir"
mkdir -p "$cudart_dir"
cp -a "$x"/cudart/usr/lib/*/libcudart.so.* "$cudart_dir"/ || die "$(basename "$cudartdeb") has no libcudart.so.*"
chmod 755 "$cudart_dir"
case ":${LD_LIBRARY_PATH:-}:" in
  *":$cudart_dir:"*) ;;
  *) export LD_LIBRARY_PATH=$cudart_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
echo "installed: gpusort.so in $pkglibdir, $(cd "$x/pkg/usr/share/postgresql/$major/extension" && ls | wc -l) files in $extdir, $(cd "$cudart_dir" && ls | tr '\n' ' ')in $cudart_dir"

# --- 2. the files PostgreSQL loads are the package's ---------------------------------
cmp "$so" "$pkglibdir/gpusort.so" || die "$pkglibdir/gpusort.so is not the package's"
for f in "$x"/pkg/usr/share/postgresql/"$major"/extension/*; do
  cmp "$f" "$extdir/$(basename "$f")" || die "$extdir/$(basename "$f") is not the package's"
done
ldd "$pkglibdir/gpusort.so" > "$out/ldd.txt" 2>&1
grep -E 'libcudart|not found' "$out/ldd.txt" | sed 's/^\s*/   ldd: /'
grep -q 'not found' "$out/ldd.txt" && die "gpusort.so lacks libraries (ldd above)"
grep -q "libcudart.so.* => $cudart_dir/" "$out/ldd.txt" \
  || die "gpusort.so does not find the package's libcudart in $cudart_dir"
echo "gpusort.so, gpusort.control and the SQL files are the package's; libcudart from $cudart_dir"

# --- 3. the server, gpusort preloaded ------------------------------------------
echo "== the server with gpusort preloaded"
saved_opts=${PG_EXTRA_OPTS:-}
export PG_EXTRA_OPTS="$saved_opts -c shared_preload_libraries=gpusort"
pg_restart || die "the server did not start with the package's gpusort preloaded"
psql=(psql -X -v ON_ERROR_STOP=1 -d postgres)
"${psql[@]}" -q -c 'DROP EXTENSION IF EXISTS gpusort' -c 'CREATE EXTENSION gpusort' \
  || die "CREATE EXTENSION gpusort failed"
# the GPU service opens the GPUs after the server starts
for i in $(seq 60); do
  [ "$("${psql[@]}" -At -c 'SELECT count(*) FROM gpusort_gpus' 2>/dev/null)" -gt 0 ] 2>/dev/null && break
  sleep 0.5
done
"${psql[@]}" -c 'SELECT version, build, engines FROM gpusort_info()' \
  -c 'SELECT device, name, memory_total FROM gpusort_gpus' 2>&1 | tee "$out/server.txt"
build=$("${psql[@]}" -At -c 'SELECT build FROM gpusort_info()')
ngpus=$("${psql[@]}" -At -c 'SELECT count(*) FROM gpusort_gpus')
[ "$build" = CUDA ] || { echo "FAIL: the package's gpusort is not built with CUDA ($build)"; status=1; }
[ "${ngpus:-0}" -gt 0 ] || { echo "FAIL: the GPU service lists no GPU"; status=1; }
# which libcudart the server's processes loaded
postgres=$(readlink -f "$("$PG_CONFIG" --bindir)/postgres")
loaded=$(for p in /proc/[0-9]*; do
  [ "$(readlink "$p/exe" 2>/dev/null)" = "$postgres" ] || continue
  awk '$6 ~ /libcudart/ { print $6 }' "$p/maps" 2>/dev/null
done | sort -u)
echo "libcudart loaded by the server: ${loaded:-none}"
case $loaded in
  "$cudart_dir"/*) ;;
  *) echo "FAIL: the server did not load the package's libcudart"; status=1 ;;
esac
gpu_sorts=$("${psql[@]}" -Atq <<'SQL' 2>&1 | tee "$out/sort.txt" | tail -1
SET gpusort.engine = gpu;
SET gpusort.min_rows = 0;
SET gpusort.gpu_min_rows = 0;
CREATE TEMP TABLE stat_before AS SELECT what, detail, value FROM gpusort_stat WHERE what = 'sorts';
SELECT count(*), sum(k) FROM (SELECT (g * 7919) % 1000003 AS k FROM generate_series(1::int8, 2000000) g ORDER BY k OFFSET 0) s;
SELECT coalesce(sum(a.value - b.value), 0) FROM gpusort_stat a JOIN stat_before b USING (what, detail)
 WHERE a.what = 'sorts' AND a.detail = 'GPU';
SQL
)
echo "sorts by the GPU in the server: $gpu_sorts"
[ "$gpu_sorts" = 1 ] || { echo "FAIL: the GPU did not do the server's sort"; cat "$out/sort.txt"; status=1; }
"${psql[@]}" -q -c 'DROP EXTENSION gpusort'
export PG_EXTRA_OPTS=$saved_opts
pg_restart || die "the server did not start again without gpusort"

# --- 4. the GPU suite, nothing built ----------------------------------------------
echo "== the GPU suite against the package (test/gpu/run.sh, GPUSORT_SKIP_BUILD=1)"
GPUSORT_SKIP_BUILD=1 GPUSORT_SKIP_RADIX=1 GPUSORT_SKIP_KERNEL=1 \
  GPUSORT_SKIP_FUZZ=${GPUSORT_SKIP_FUZZ:-1} GPUSORT_TEST_USER=${GPUSORT_TEST_USER:-pgrun} \
  test/gpu/run.sh "$out/suite" || status=1

# --- 5. still the package's ------------------------------------------------------
cmp "$so" "$pkglibdir/gpusort.so" || { echo "FAIL: $pkglibdir/gpusort.so changed during the suite"; status=1; }

[ $status = 0 ] && echo "== package test passed: the package's gpusort sorted on the GPU" \
  || echo "== package test FAILED"
exit $status

#!/bin/bash
# test/gpu/run.sh: the GPU host's test run.
#
# On a machine with an NVIDIA GPU and nvcc: builds gpusort with CUDA, runs
# the whole regression suite with gpusort.engine = gpu, then reads the
# regression server's log (each sort logs its engine at DEBUG1) to check
# that the GPU really did the sorts and never failed; then runs the kernel
# tests (CUDA side against the CPU engine, compute-sanitizer).
#
#   test/gpu/run.sh [OUTDIR]        (OUTDIR defaults to $OUT or test/gpu/out)
#
# On the project's GPU test host (test/gpu/README.md), start with
#   source .device/pg-on-device.sh && test/gpu/run.sh
# (export PG_MAJOR=17 before it for PostgreSQL 17).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-${OUT:-$root/test/gpu/out}}
mkdir -p "$out"
status=0

# the collation tests need the en_US, de_DE and sv_SE UTF-8 locales; a GPU
# host without them (and without network) can often compile them itself
for loc in en_US de_DE sv_SE; do
  if ! locale -a 2>/dev/null | grep -qi "^$loc\.utf-\?8$"; then
    localedef -i "$loc" -f UTF-8 "$loc.UTF-8" 2>/dev/null \
      && echo "compiled locale $loc.UTF-8" || echo "warning: no locale $loc.UTF-8"
  fi
done

echo "== regression suite, gpusort.engine = gpu"
GPUSORT_ENGINE=gpu GPUSORT_SKIP_TAP=${GPUSORT_SKIP_TAP:-1} GPUSORT_LOG_DIR="$out" \
GPUSORT_EXTRA_CONF="log_min_messages = debug1
gpusort.gpu_min_rows = 0" \
  "$root/test/run.sh" > "$out/regress.log" 2>&1 || status=1
tail -5 "$out/regress.log"
[ $status -eq 0 ] || { cp "$root/regression.diffs" "$out/" 2>/dev/null; echo "FAIL: regression suite"; }

log="$out/postmaster.log"
gpu=$(grep -c 'gpusort: .* sorted by GPU' "$log" 2>/dev/null || true)
cpu=$(grep -c 'gpusort: .* sorted by CPU' "$log" 2>/dev/null || true)
comparators=$(grep -c 'gpusort: .* sorted by PostgreSQL comparators' "$log" 2>/dev/null || true)
spilled=$(grep 'gpusort: .* sorted by' "$log" 2>/dev/null | grep -vc ' in 1 runs ' || true)
# injected faults (sql/150_reliability.sql) are not GPU failures
gpu_errors=$(grep 'gpusort: ' "$log" 2>/dev/null | grep -v '(injected fault)' | grep -Ec 'fallback: .*GPU( service)?:' || true)
echo "sorts in the regression suite: GPU $gpu, CPU $cpu, comparators $comparators; $spilled sorts wrote runs; GPU failures $gpu_errors"
grep 'gpusort: ' "$log" | grep 'sorted by CPU' | sed 's/.*gpusort: /  CPU: /; s/ (load .*//' | sort | uniq -c | sort -rn | head -10
if [ "${gpu:-0}" -eq 0 ] || [ "${gpu_errors:-0}" -ne 0 ]; then
  grep -E 'fallback: .*GPU( service)?:' "$log" | grep -v '(injected fault)' | head -5
  echo "FAIL: the GPU did not do the sorts"
  status=1
fi

if [ "${GPUSORT_SKIP_KERNEL:-0}" != 1 ] && [ -x "$root/test/gpu/kernel_test.sh" ]; then
  echo "== kernel tests"
  "$root/test/gpu/kernel_test.sh" > "$out/kernel_test.log" 2>&1 || { status=1; echo "FAIL: kernel tests"; }
  tail -15 "$out/kernel_test.log"
fi

[ $status -eq 0 ] && echo "== GPU tests passed" || echo "== GPU tests FAILED"
exit $status

#!/bin/bash
# test/gpu/kernel_test.sh: build and run the CUDA side's kernel tests.
#
# Builds test/gpu/kernel_test (cuda/*.cu with nvcc, src/engine/cpu_radix.c with
# gcc as the reference), runs the full test, then compute-sanitizer's
# memcheck and racecheck on the quick mode.  Exits non-zero on any failure.
#
#   [SANITIZER_TOOLS="memcheck racecheck"] [KERNEL_TEST_QUICK_ONLY=1] test/gpu/kernel_test.sh [BUILDDIR]
#
# GS_NVCCFLAGS_EXTRA: more nvcc flags (e.g. -Xptxas -v to see registers and spills).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-/tmp/gpusort_kernel_test}
source "$root/bench/cuda_program.sh"
SANITIZER=${SANITIZER:-$CUDA_HOME/bin/compute-sanitizer}
mkdir -p "$build"
status=0

echo "== build"
gcc -O2 -std=gnu11 -I"$root/src" -c "$root/src/engine/cpu_radix.c" -o "$build/cpu_radix.o" || exit 1
cuda_program "$build" kernel_test "$root/test/gpu/kernel_test.cu" || exit 1

if [ "${KERNEL_TEST_QUICK_ONLY:-0}" != 1 ]; then
  echo "== kernel_test"
  "$build/kernel_test" || status=1
fi

for tool in ${SANITIZER_TOOLS-memcheck racecheck}; do
  echo "== compute-sanitizer --tool $tool kernel_test --quick"
  "$SANITIZER" --tool $tool --error-exitcode 99 "$build/kernel_test" --quick > "$build/$tool.log" 2>&1
  rc=$?
  tail -3 "$build/$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$build/$tool.log" | tail -1
  if [ $rc -ne 0 ]; then
    echo "FAIL: $tool (exit $rc)"
    grep -m 20 -E "=========" "$build/$tool.log"
    status=1
  fi
done

[ $status -eq 0 ] && echo "== kernel tests passed" || echo "== kernel tests FAILED"
exit $status

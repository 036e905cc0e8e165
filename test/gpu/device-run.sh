#!/bin/bash
# test/gpu/device-run.sh: one call of the project's GPU host (device tool).
#
#   source .device/pg-on-device.sh && test/gpu/device-run.sh PHASE...
#
# PHASE: tests (test/gpu/run.sh: regression suite on the GPU engine and
# kernel tests), bench (bench/run.sh on 1M and 10M rows), text (the text and
# numeric queries at 10M rows, native against the GPU), dists (the
# distribution runs at 10M rows), kernel (bench/kernel_bench.sh), pgbench
# (test/gpu/pgbench.sh: 32 clients, gpusort on then off, 150 s each by
# default, within the device tool's 10 minutes).  Logs and
# results go to $OUT (the device tool brings them back).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/gpusort-out}
mkdir -p "$out"
cd "$root"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > "$out/gpu.txt" 2>&1
for phase in "$@"; do
  echo "== $phase ($(date +%T))"
  case $phase in
    tests)
      GPUSORT_TEST_USER=pgrun test/gpu/run.sh "$out/tests" ;;
    bench)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 1000000,10000000 --runs 3 \
        --distributions '' --out "$out/bench" > "$out/bench.log" 2>&1
      tail -25 "$out/bench.log" ;;
    text)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --slow-runs 2 \
        --settings native,gpu --queries text --out "$out/text" > "$out/text.log" 2>&1
      tail -25 "$out/text.log" ;;
    dists)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --settings native,cpu,gpu \
        --queries '[' --out "$out/dists" > "$out/dists.log" 2>&1
      tail -15 "$out/dists.log" ;;
    profile)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 2 --settings cpu,gpu \
        --distributions '' --queries 'order by k' --out "$out/profile" > "$out/profile.log" 2>&1
      tail -8 "$out/profile.log"
      python3 -c "import json; [print(r['setting'], r['median_ms'], json.dumps(r['gpusort'])) for r in json.load(open('$out/profile/results.json'))]" ;;
    pgbench)
      GPUSORT_TEST_USER=pgrun PGBENCH_DURATION=${PGBENCH_DURATION:-150} \
        test/gpu/pgbench.sh "$out/pgbench" > "$out/pgbench.log" 2>&1
      tail -20 "$out/pgbench.log" ;;
    kernel)
      bench/kernel_bench.sh > "$out/kernel_bench.log" 2>&1; tail -30 "$out/kernel_bench.log" ;;
  esac
done
echo "== done ($(date +%T))"

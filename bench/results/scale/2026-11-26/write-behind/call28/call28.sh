#!/bin/bash
# the regression suite and fuzzing on the GPU (gpusort.engine = gpu), serial plans, at HEAD
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
GPUSORT_SKIP_KERNEL=1 GPUSORT_TEST_USER=pgrun timeout 560 test/gpu/run.sh /tmp/gt > $OUT/gpu-suite.log 2>&1; echo "gpu suite rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "sorts in the|fuzz|passed|FAIL|failed|not ok" $OUT/gpu-suite.log | head -12

#!/bin/bash
# 1. the regression suite and fuzzing on the GPU (gpusort.engine = gpu), serial plans;
# 2. 50M rows of p under max_memory = 2GB: the tree before run files (824e334, logtape.c tapes)
#    against this one with write_behind off and on, one server, the table made once per build
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
GPUSORT_SKIP_KERNEL=1 GPUSORT_TEST_USER=pgrun timeout 300 test/gpu/run.sh /tmp/gt > $OUT/gpu-suite.log 2>&1; echo "gpu suite rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "sorts in the|fuzz|passed|FAIL|failed" $OUT/gpu-suite.log | head -8
left=$(( 585 - ($(date +%s) - t0) ))
rm -rf /tmp/old && cp -a .device/tree-824e334 /tmp/old && make -C /tmp/old -s -j16 PG_CONFIG=$PG_CONFIG >/tmp/build-old.log 2>&1 \
  && make -C /tmp/old -s PG_CONFIG=$PG_CONFIG install >/dev/null || { tail -20 /tmp/build-old.log; exit 1; }
GPUSORT_NO_BUILD=1 timeout $(( left / 2 )) bench/scale.sh --rows 50000000 --tables p --settings old \
  --define 'old:gpusort.engine=gpu,gpusort.max_memory=2GB' \
  --runs 2 --fresh-runs 1 --load-jobs 16 --out $OUT/old50p > $OUT/old50p.log 2>&1
echo "old rc=$? after $(( $(date +%s) - t0 )) s"
grep -v '^\s*[{}\[]' $OUT/old50p.log | grep "^| 50" 
left=$(( 585 - ($(date +%s) - t0) ))
timeout $left bench/scale.sh --rows 50000000 --tables p --settings wb,nowb \
  --define 'wb:gpusort.engine=gpu,gpusort.max_memory=2GB' \
  --define 'nowb:gpusort.engine=gpu,gpusort.max_memory=2GB,gpusort.write_behind=off' \
  --runs 2 --fresh-runs 1 --load-jobs 16 --out $OUT/new50p > $OUT/new50p.log 2>&1
echo "new rc=$? after $(( $(date +%s) - t0 )) s"
grep -v '^\s*[{}\[]' $OUT/new50p.log | grep "^| 50"

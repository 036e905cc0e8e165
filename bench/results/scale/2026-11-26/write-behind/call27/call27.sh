#!/bin/bash
# 300M rows of s at the default budget (the sort must spill): native, write behind on and off, fresh connections
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
timeout 585 bench/scale.sh --rows 300000000 --tables s --settings wb,nowb,native \
  --define 'wb:gpusort.engine=gpu' --define 'nowb:gpusort.engine=gpu,gpusort.write_behind=off' \
  --runs 0 --fresh-runs 1 --explain-settings '' --load-jobs 16 --out $OUT/s300 > $OUT/s300.log 2>&1
echo "rc=$? after $(( $(date +%s) - t0 )) s"
grep -h "s_300M\|^| 300" $OUT/s300.log

#!/bin/bash
# write behind with a room of an eighth: 50M rows of p under max_memory = 2GB
# (native, write_behind on and off), then 100M rows of p at the default budget (on and off)
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
timeout 300 bench/scale.sh --rows 50000000 --tables p --settings native,wb,nowb \
  --define 'wb:gpusort.engine=gpu,gpusort.max_memory=2GB' \
  --define 'nowb:gpusort.engine=gpu,gpusort.max_memory=2GB,gpusort.write_behind=off' \
  --runs 3 --fresh-runs 1 --load-jobs 16 --out $OUT/wb50p > $OUT/wb50p.log 2>&1
echo "50M rc=$? after $(( $(date +%s) - t0 )) s"
grep "^| 50" $OUT/wb50p.log
left=$(( 588 - ($(date +%s) - t0) ))
GPUSORT_NO_BUILD=1 timeout $left bench/scale.sh --rows 100000000 --tables p --settings wb,nowb \
  --define 'wb:gpusort.engine=gpu' \
  --define 'nowb:gpusort.engine=gpu,gpusort.write_behind=off' \
  --runs 1 --fresh-runs 1 --load-jobs 16 --out $OUT/wb100p > $OUT/wb100p.log 2>&1
echo "100M rc=$? after $(( $(date +%s) - t0 )) s"
grep "^| 100" $OUT/wb100p.log

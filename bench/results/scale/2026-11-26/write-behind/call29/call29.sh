#!/bin/bash
# write behind on and off under max_memory = 2GB, 50M rows of p (two or three runs): two rounds
# in opposite orders, three warm and one fresh statement each, at the final form
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
defs=(--define 'wb:gpusort.engine=gpu,gpusort.max_memory=2GB' --define 'nowb:gpusort.engine=gpu,gpusort.max_memory=2GB,gpusort.write_behind=off')
timeout 280 bench/scale.sh --rows 50000000 --tables p --settings wb,nowb "${defs[@]}" \
  --runs 3 --fresh-runs 1 --load-jobs 16 --out $OUT/round1 > $OUT/round1.log 2>&1
echo "round 1 rc=$? after $(( $(date +%s) - t0 )) s"
left=$(( 585 - ($(date +%s) - t0) ))
GPUSORT_NO_BUILD=1 timeout $left bench/scale.sh --rows 50000000 --tables p --settings nowb,wb "${defs[@]}" \
  --runs 3 --fresh-runs 1 --explain-settings '' --load-jobs 16 --out $OUT/round2 > $OUT/round2.log 2>&1
echo "round 2 rc=$? after $(( $(date +%s) - t0 )) s"
grep -h "p_50M" $OUT/round1.log $OUT/round2.log

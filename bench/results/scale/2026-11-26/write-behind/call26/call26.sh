#!/bin/bash
# (parts in all key threads, first batch with room) write behind on and off at the default budget, 100M rows of p: two rounds in
# opposite orders (wb then nowb, nowb then wb), three warm and one fresh statement each
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
defs=(--define 'wb:gpusort.engine=gpu' --define 'nowb:gpusort.engine=gpu,gpusort.write_behind=off')
timeout 290 bench/scale.sh --rows 100000000 --tables p --settings wb,nowb "${defs[@]}" \
  --runs 3 --fresh-runs 1 --explain-settings '' --load-jobs 16 --out $OUT/round1 > $OUT/round1.log 2>&1
echo "round 1 rc=$? after $(( $(date +%s) - t0 )) s"
left=$(( 588 - ($(date +%s) - t0) ))
GPUSORT_NO_BUILD=1 timeout $left bench/scale.sh --rows 100000000 --tables p --settings nowb,wb "${defs[@]}" \
  --runs 3 --fresh-runs 1 --explain-settings '' --load-jobs 16 --out $OUT/round2 > $OUT/round2.log 2>&1
echo "round 2 rc=$? after $(( $(date +%s) - t0 )) s"
grep -h "p_100M" $OUT/round1.log $OUT/round2.log

#!/bin/bash
# runs written behind the load, on and off, at the default budget: 100M rows of p
# (one run written at the default), native in the same run
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
timeout 580 bench/scale.sh --rows 100000000 --tables p --settings native,wb,nowb \
  --define 'wb:gpusort.engine=gpu' \
  --define 'nowb:gpusort.engine=gpu,gpusort.write_behind=off' \
  --runs 1 --fresh-runs 1 --load-jobs 16 --out $OUT/wb100p > $OUT/wb100p.log 2>&1
echo "scale rc=$? after $(( $(date +%s) - t0 )) s"
grep -v '^\s*[{}\[]' $OUT/wb100p.log | tail -40

#!/bin/bash
# runs written behind the load, on and off, in the same run: 50M rows of p
# under gpusort.max_memory = 2GB (two runs written), with native for ratios
set -uo pipefail
source .device/pg-on-device.sh >/dev/null 2>&1
t0=$(date +%s)
nvidia-smi -L; nproc
timeout 570 bench/scale.sh --rows 50000000 --tables p --settings native,wb,nowb \
  --define 'wb:gpusort.engine=gpu,gpusort.max_memory=2GB' \
  --define 'nowb:gpusort.engine=gpu,gpusort.max_memory=2GB,gpusort.write_behind=off' \
  --runs 2 --fresh-runs 1 --load-jobs 16 --out $OUT/wb50p > $OUT/wb50p.log 2>&1
echo "scale rc=$? after $(( $(date +%s) - t0 )) s"
grep -v '^\s*[{}\[]' $OUT/wb50p.log | tail -40

#!/bin/bash
# bench/split_check.sh: build and run the check of a sort split by key range
# through the CUDA engine's C interface (bench/split_check.cu), as the GPU
# service splits one: results compared with the unsplit sort, times printed.
#
#   bench/split_check.sh [N] [PARTS] [KEY_WORDS] [DISTINCT]
#
# With no arguments: a short series of checks (ties, several key widths,
# more parts than GPUs), then 100M one-word keys in two parts.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-/tmp/gpusort_split_check}
source "$root/bench/cuda_program.sh"
cuda_program "$build" split_check "$root/bench/split_check.cu"
if [ $# -gt 0 ]; then
  exec "$build/split_check" "$@"
fi
for args in "3000000 3 1 100000" "3000000 3 2 1000" "2000000 2 1 0" "1000 4 1 7" \
            "5000000 3 3 50000" "100000000 2 1 0"; do
  "$build/split_check" $args
done

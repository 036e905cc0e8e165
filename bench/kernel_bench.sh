#!/bin/bash
# bench/kernel_bench.sh: build and run the CUDA engine's kernel benchmark
# (bucket sort vs CUB radix sort), printing a markdown table.
#
#   bench/kernel_bench.sh [RUNS] [MAX_N] [WIDTHS]   (defaults: 5 runs, 100000000, 1234)
#
# KERNEL_BENCH_QUICK=1: uniform and float keys only, no end-to-end runs;
# GS_NVCCFLAGS_EXTRA: more nvcc flags (e.g. -Xptxas -v to see registers and spills).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-/tmp/gpusort_kernel_bench}
source "$root/bench/cuda_program.sh"
cuda_program "$build" kernel_bench "$root/bench/kernel_bench.cu"
"$build/kernel_bench" "${1:-5}" "${2:-100000000}" "${3:-1234}"

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
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
NVCCFLAGS="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden --expt-relaxed-constexpr -lineinfo -I$root/src -I$root/cuda ${GS_NVCCFLAGS_EXTRA:-}"
mkdir -p "$build"
for f in "$root"/cuda/*.cu; do
  $NVCC $NVCCFLAGS -c "$f" -o "$build/$(basename "$f" .cu).o"
done
$NVCC $NVCCFLAGS -c "$root/bench/kernel_bench.cu" -o "$build/kernel_bench.o"
$NVCC -o "$build/kernel_bench" "$build"/*.o -lcudart_static -ldl -lrt -lpthread
"$build/kernel_bench" "${1:-5}" "${2:-100000000}" "${3:-1234}"

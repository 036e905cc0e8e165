# bench/cuda_program.sh: sourced by the scripts that build a program of
# their own around the CUDA engine (bench/kernel_bench.sh,
# bench/split_check.sh, test/gpu/kernel_test.sh), so that all of them build
# it the same way as the extension's Makefile does: cuda/*.cu and the
# program's main file compiled by nvcc for the H100 (sm_90), linked with the
# static CUDA runtime and whatever objects the caller put in the build
# directory first.
#
#   source bench/cuda_program.sh
#   cuda_program BUILD_DIR NAME MAIN.cu      # builds BUILD_DIR/NAME
#
# CUDA_HOME, NVCC: the compiler (default /usr/local/cuda/bin/nvcc);
# GS_NVCCFLAGS_EXTRA: more nvcc flags (e.g. -Xptxas -v to see registers and
# spills).

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
_cuda_program_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

cuda_program() {
  local build=$1 name=$2 main=$3 f
  local flags="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC
    -Xcompiler -fvisibility=hidden --expt-relaxed-constexpr -lineinfo
    -I$_cuda_program_root/src -I$_cuda_program_root/cuda ${GS_NVCCFLAGS_EXTRA:-}"
  mkdir -p "$build"
  for f in "$_cuda_program_root"/cuda/*.cu "$main"; do
    # shellcheck disable=SC2086
    "$NVCC" $flags -c "$f" -o "$build/$(basename "$f" .cu).o" || return 1
  done
  "$NVCC" -o "$build/$name" "$build"/*.o -lcudart_static -ldl -lrt -lpthread
}

# gpusort: PGXS build.
#
# src/*.c and src/*/*.c are compiled with PostgreSQL's own flags.  When nvcc is found
# ($(CUDA_HOME)/bin/nvcc, CUDA_HOME defaulting to /usr/local/cuda), cuda/*.cu
# are compiled for sm_80 and sm_90 (plus PTX for newer GPUs) and the CUDA
# runtime is linked statically, so that the same gpusort.so loads, and falls
# back to its CPU engine, on a machine that has no GPU or driver.  `make
# USE_CUDA=0` builds a CPU-only extension even where nvcc exists.
# CUDART=shared links the runtime's shared library instead (libcudart.so, as
# Debian's package does with Debian's CUDA toolkit: debian/rules), and
# NVCC_CCBIN names the host compiler nvcc is to use (Debian's cuda-g++).

MODULE_big = gpusort
EXTENSION  = gpusort
DATA       = $(wildcard sql/gpusort--*.sql)
PGFILEDESC = "gpusort - GPU sorting for PostgreSQL"

SRCS = $(wildcard src/*.c src/*/*.c)
OBJS = $(SRCS:.c=.o)

# pg_regress suite: test/sql/<name>.sql against test/expected/<name>.out,
# run by test/run.sh against a server it starts itself (sql/ holds the
# install scripts alone).
REGRESS = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/[0-9]*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=gpusort

# Debian's PGXS wants LLVM bitcode for every object and has no rule for .cu.
override with_llvm = no

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
USE_CUDA  ?= $(shell test -x $(NVCC) && echo 1 || echo 0)
# Ampere (A100: sm_80's code also runs on 8.6 and 8.9) and Hopper (H100,
# H200), and Hopper's PTX for the driver to compile for later GPUs; CUDA
# 11.8 is the oldest toolkit that knows sm_90
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
CUDART    ?= static
CUDA_LIBDIR ?= $(CUDA_HOME)/lib64

ifeq ($(USE_CUDA),1)
CU_SRCS  = $(wildcard cuda/*.cu)
OBJS    += $(CU_SRCS:.cu=.o)
PG_CPPFLAGS += -DGPUSORT_USE_CUDA
ifeq ($(CUDART),shared)
SHLIB_LINK  += $(if $(CUDA_LIBDIR),-L$(CUDA_LIBDIR)) -lcudart -lstdc++
else
SHLIB_LINK  += $(if $(CUDA_LIBDIR),-L$(CUDA_LIBDIR)) -lcudart_static -ldl -lrt -lpthread -lstdc++
endif
endif

PG_CPPFLAGS += -I$(srcdir)/src -I$(srcdir)/cuda
PG_CFLAGS   += -std=gnu11

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Warning options of the compiler PostgreSQL was built with that this one
# does not know (19 from sid, built by a newer gcc, on an older host:
# test/gpu/README.md) are left out, rather than stopping the build.
UNKNOWN_WARNINGS := $(shell LC_ALL=C $(CC) $(CFLAGS) -c -x c /dev/null -o /dev/null 2>&1 | \
	sed -n "s/.*unrecognized command-line option '\(-W[^']*\)'.*/\1/p")
override CFLAGS := $(filter-out $(UNKNOWN_WARNINGS),$(CFLAGS))

NVCCFLAGS ?= -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -fPIC -Xcompiler -fvisibility=hidden \
             --expt-relaxed-constexpr -lineinfo
override NVCCFLAGS += $(if $(NVCC_CCBIN),-ccbin $(NVCC_CCBIN))

cuda/%.o: cuda/%.cu $(wildcard cuda/*.h) $(wildcard cuda/*.cuh)
	$(NVCC) $(NVCCFLAGS) -Isrc -Icuda -c $< -o $@

$(OBJS): $(wildcard src/*/*.h) $(wildcard cuda/*.h)

.PHONY: test
test:
	test/run.sh

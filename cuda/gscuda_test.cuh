/*-------------------------------------------------------------------------
 *
 * gscuda_test.cuh
 *	  What of the CUDA side only its kernel tests (test/gpu/kernel_test.cu)
 *	  and benchmarks (bench/kernel_bench.cu) call: no part of the
 *	  extension's interface (gscuda_api.h), and not exported by gpusort.so.
 *
 * The tests and benchmarks build programs of their own from cuda/*.cu
 * (bench/cuda_program.sh), so they reach these functions though the
 * library hides them.  The files that define them (gscuda_api.cu,
 * gscuda_dispatch.cu) include this header too, so that the compiler holds
 * the declarations to the definitions; nothing else of cuda/ or src/ does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_TEST_CUH
#define GSCUDA_TEST_CUH

#include <stddef.h>
#include <stdint.h>

#include "gscuda_common.cuh"
#include "gscuda_types.h"

extern "C"
{

/*
 * The bucket sort treats buckets of more than `records` records as too
 * large for shared memory (0: the default, a tile), so that small inputs
 * exercise its second level and its radix fallback (gscuda_api.cu).
 */
void		gscuda_set_bucket_limit(size_t records);

/*
 * gscuda_sort_finish_start() and gscuda_sort_finish_wait() (gscuda_api.h)
 * in one call: sort all submitted records and give the permutation and the
 * stats (gscuda_api.cu).
 */
int			gscuda_sort_finish(GsCudaSort *sort, size_t nrecords,
							   const uint32_t **perm, GsCudaStats *stats,
							   char *errbuf, size_t errlen);

}

namespace gs
{

/*
 * Sort n records (keys: n * key_words words on the device, scrambled on
 * return) into perm (n indexes on the device), on ctx.stream, with memory
 * from ctx.mem, to time the algorithms on data already on the device
 * (gscuda_dispatch.cu).  Checks for presorted input first.  Returns 0, or
 * 1/2 when the input was found in order/reversed.
 */
int			sort_on_device(const GsContext &ctx, int key_words, GsCudaAlgorithm algorithm,
						   uint64_t *keys, size_t n, uint32_t *perm);

}								/* namespace gs */

#endif							/* GSCUDA_TEST_CUH */

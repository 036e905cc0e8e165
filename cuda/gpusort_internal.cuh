/*-------------------------------------------------------------------------
 *
 * gpusort_internal.cuh
 *	  C++ entry points of the CUDA engine below its C interface, for the
 *	  kernel benchmark (bench/kernel_bench.cu), which times the algorithms
 *	  on data already on the device.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_INTERNAL_CUH
#define GPUSORT_INTERNAL_CUH

#include "gs_common.cuh"

namespace gs
{

/* Which algorithm GSCUDA_ALGO_AUTO means for keys of key_words words. */
GsCudaAlgorithm resolve_algorithm(GsCudaAlgorithm algorithm, int key_words);

/*
 * Sort n records (keys: n * key_words words on the device, scrambled on
 * return) into perm (n indexes on the device), on ctx.stream, with memory
 * from ctx.mem.  Checks for presorted input first.  Returns 0, or 1/2 when
 * the input was found in order/reversed.  Throws GsError.
 */
int			sort_on_device(const GsContext &ctx, int key_words, GsCudaAlgorithm algorithm,
						   uint64_t *keys, size_t n, uint32_t *perm);

}								/* namespace gs */

#endif							/* GPUSORT_INTERNAL_CUH */

/*-------------------------------------------------------------------------
 *
 * gscuda_pipeline_kernels.cuh
 *	  The pipeline's own kernels, beside the algorithms': the mapping of a
 *	  sorted permutation through the caller's source indexes, and the
 *	  busy kernel of the GSCUDA_FAULT_BUSY test fault.
 *
 * gscuda_pipeline.cu launches both on a sort's stream; nothing else uses
 * them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_PIPELINE_KERNELS_CUH
#define GSCUDA_PIPELINE_KERNELS_CUH

#include "gscuda_common.cuh"

namespace gs
{
/* GSCUDA_FAULT_BUSY (tests only): the stream is busy for ns nanoseconds. */
static __global__ void
busy_kernel(unsigned long long ns)
{
	unsigned long long start,
				now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do
	{
		__nanosleep(1000000);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

/* out[k] = index[perm[k]]: sorted positions to the caller's source indexes. */
static __global__ void
gather_index_kernel(const uint32_t *perm, const uint32_t *index, size_t n, uint32_t *out)
{
	for (size_t k = blockIdx.x * (size_t) blockDim.x + threadIdx.x; k < n;
		 k += (size_t) gridDim.x * blockDim.x)
		out[k] = index[perm[k]];
}

}								/* namespace gs */

#endif							/* GSCUDA_PIPELINE_KERNELS_CUH */

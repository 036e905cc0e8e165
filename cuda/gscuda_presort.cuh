/*-------------------------------------------------------------------------
 *
 * gscuda_presort.cuh
 *	  The presorted check of the CUDA side: a scan of the records as they
 *	  arrive, and the permutation of input found already in order.
 *
 * presort_scan() looks at a range of records as chunks arrive: whether each
 * record is >= (not ascending) or < (not strictly descending) its
 * predecessor, and which bits of each key word differ from record 0's.  The
 * latter lets every radix pass skip bits that are equal in all keys (the
 * high bytes of small integers, the pad of short keys).  Once all records
 * are in, presorted_direction() says whether the input is in order or
 * exactly reversed, and fill_presorted() then writes the permutation
 * without sorting.  The pipeline (gscuda_pipeline.cu) scans each chunk on
 * arrival; sort_on_device (gscuda_dispatch.cu) scans all at once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_PRESORT_CUH
#define GS_PRESORT_CUH

#include "gscuda_common.cuh"

namespace gs
{

/* What presort_scan() accumulates over all records of a sort. */
struct PresortStats
{
	unsigned int not_ascending;		/* some record < its predecessor */
	unsigned int not_descending;	/* some record >= its predecessor */
	uint64_t	diff[GSCUDA_MAX_KEY_WORDS];	/* bits != record 0's */
};

template <int N>
static __global__ void
presort_kernel(const Key<N> *keys, size_t begin, size_t end, PresortStats *stats)
{
	unsigned	not_asc = 0;
	unsigned	not_desc = 0;
	uint64_t	diff[N];
	const Key<N> first = keys[0];

#pragma unroll
	for (int w = 0; w < N; w++)
		diff[w] = 0;

	for (size_t r = begin + blockIdx.x * (size_t) blockDim.x + threadIdx.x; r < end;
		 r += (size_t) gridDim.x * blockDim.x)
	{
		Key<N>		cur = keys[r];

#pragma unroll
		for (int w = 0; w < N; w++)
			diff[w] |= cur.w[w] ^ first.w[w];
		if (r > 0)
		{
			Key<N>		prev = keys[r - 1];

			if (key_less(cur, prev))
				not_asc = 1;
			else
				not_desc = 1;
		}
	}

	/* reduce within the warp, then one atomic per warp */
	not_asc = __any_sync(0xFFFFFFFFu, not_asc);
	not_desc = __any_sync(0xFFFFFFFFu, not_desc);
#pragma unroll
	for (int w = 0; w < N; w++)
	{
		for (int off = 16; off > 0; off >>= 1)
			diff[w] |= __shfl_xor_sync(0xFFFFFFFFu, diff[w], off);
	}
	if ((threadIdx.x & 31) == 0)
	{
		if (not_asc)
			atomicOr(&stats->not_ascending, 1u);
		if (not_desc)
			atomicOr(&stats->not_descending, 1u);
#pragma unroll
		for (int w = 0; w < N; w++)
		{
			if (diff[w])
				atomicOr((unsigned long long *) &stats->diff[w], (unsigned long long) diff[w]);
		}
	}
}

/* Scan records [begin, end) (record begin-1 must be on the device too). */
inline void
presort_scan(const GsContext &ctx, int key_words, const uint64_t *keys,
			 size_t begin, size_t end, PresortStats *stats)
{
	const int	threads = 256;
	unsigned	blocks;

	if (end <= begin)
		return;
	blocks = div_up(end - begin, threads * 8);
	if (blocks > 4096)
		blocks = 4096;
	with_key_words(key_words, [&](auto width) {
		constexpr int N = decltype(width)::value;

		presort_kernel<N><<<blocks, threads, 0, ctx.stream>>>((const Key<N> *) keys, begin, end, stats);
	});
	check_launch(ctx, "presort_kernel");
}

/* perm = identity (direction 1) or reversed (direction 2). */
static __global__ void
fill_presorted_kernel(uint32_t *perm, size_t n, int direction)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		perm[i] = (uint32_t) (direction == 1 ? i : n - 1 - i);
}

inline void
fill_presorted(const GsContext &ctx, uint32_t *perm, size_t n, int direction)
{
	unsigned	blocks = div_up(n, 256 * 4);

	if (n == 0)
		return;
	if (blocks > 65535)
		blocks = 65535;
	fill_presorted_kernel<<<blocks, 256, 0, ctx.stream>>>(perm, n, direction);
	check_launch(ctx, "fill_presorted_kernel");
}

/* 1: in order, 2: strictly descending, 0: neither. */
inline int
presorted_direction(const PresortStats &st, size_t n)
{
	if (n < 2 || !st.not_ascending)
		return 1;
	if (!st.not_descending)
		return 2;
	return 0;
}

}								/* namespace gs */

#endif							/* GS_PRESORT_CUH */

/*-------------------------------------------------------------------------
 *
 * gscuda_dispatch.cu
 *	  Algorithm dispatch of the CUDA side (declared in gscuda_dispatch.cuh):
 *	  the choice between the bucket sort and the radix sort, their memory
 *	  needs, and the one place where their kernels are instantiated.
 *
 * As CUB's device/ dispatch sits above its agents and block primitives,
 * this file sits above the algorithms: gscuda_bucket_sort.cuh (which
 * includes its kernels, gscuda_bucket_sort_kernels.cuh, and through them
 * its block sort, gscuda_block_key_sort.cuh), gscuda_radix_sort.cuh and
 * gscuda_presort.cuh.  It turns the run-time key width into their
 * template argument (with_key_words) and knows nothing of chunks,
 * streams or pinned memory: those belong to the pipeline above it
 * (gscuda_pipeline.cu), which calls the choice and the memory needs
 * (resolve_algorithm, algorithm_resident_bytes, algorithm_finish_bytes,
 * bucket_tile_size, bucket_sample_count) and the sorts (sort_tiles as
 * chunks arrive, then finish_buckets or radix_sort).  The C interface
 * (gscuda_api.cu) sets the kernel tests' bucket limit (set_bucket_limit),
 * and the kernel benchmark (bench/kernel_bench.cu) times the algorithms
 * on data already on the device (sort_on_device).
 *
 *-------------------------------------------------------------------------
 */
#include "gscuda_dispatch.cuh"
#include "gscuda_presort.cuh"
#include "gscuda_radix_sort.cuh"
#include "gscuda_bucket_sort.cuh"
#include "gscuda_test.cuh"

namespace gs
{

GsCudaAlgorithm
resolve_algorithm(GsCudaAlgorithm algorithm, int key_words)
{
	if (algorithm != GSCUDA_ALGO_AUTO)
		return algorithm;
	/*
	 * bench/results/kernel.md, on an H100: for one-word keys the CUB radix
	 * sort is faster (its 8-bit passes beat two shared-memory sorts); for
	 * wider keys the bucket sort is, counted as a sort inside the executor
	 * sees it: its tile sorts run while the chunks arrive, and what is left
	 * after the last chunk takes less time than the radix sort's one pass
	 * per key word (10M and 100M records).
	 */
	return key_words == 1 ? GSCUDA_ALGO_RADIX : GSCUDA_ALGO_BUCKET;
}

size_t
algorithm_resident_bytes(GsCudaAlgorithm algorithm, int key_words)
{
	/* sorted tiles (keys and indexes), and their samples */
	if (algorithm == GSCUDA_ALGO_BUCKET)
		return key_words * sizeof(uint64_t) + sizeof(uint32_t) +
			(key_words * sizeof(uint64_t) + sizeof(uint32_t)) / GS_SAMPLE_STEP + 1;
	return 0;
}

size_t
algorithm_finish_bytes(GsCudaAlgorithm algorithm, int key_words, size_t n)
{
	/* bucket indexes, the sample order and more, a sub-bucket byte a record */
	if (algorithm == GSCUDA_ALGO_BUCKET)
		return n * (sizeof(uint32_t) * 3 + sizeof(uint64_t) * 2 / GS_SAMPLE_STEP +
					sizeof(uint8_t)) + (64 << 20);
	/* values twice, word keys twice (once for one word), CUB temp */
	return n * (2 * sizeof(uint32_t) + (key_words == 1 ? 1 : 2) * sizeof(uint64_t)) +
		n / 8 + (64 << 20);
}

size_t
bucket_tile_size(int key_words)
{
	return bucket_tile_records(key_words);
}

size_t
bucket_sample_count(int key_words, size_t records)
{
	return (size_t) div_up(records, bucket_tile_records(key_words)) *
		bucket_tile_samples(key_words);
}

void
sort_tiles(const GsContext &ctx, int key_words, const uint64_t *keys, size_t n,
		   size_t tile_begin, size_t tile_end, uint64_t *tkeys, uint32_t *tidx,
		   uint64_t *skeys, uint32_t *sidx)
{
	with_key_words(key_words, [&](auto width) {
		bucket_sort_tiles<decltype(width)::value>(ctx, keys, n, tile_begin, tile_end,
												  tkeys, tidx, skeys, sidx);
	});
}

void
finish_buckets(const GsContext &ctx, int key_words, uint64_t *keys, size_t n,
			   uint64_t *tkeys, uint32_t *tidx, uint64_t *skeys, uint32_t *sidx,
			   const uint64_t *diff, uint32_t *perm)
{
	with_key_words(key_words, [&](auto width) {
		bucket_sort_finish<decltype(width)::value>(ctx, keys, n, tkeys, tidx, skeys, sidx,
												   diff, perm);
	});
}

void
radix_sort(const GsContext &ctx, int key_words, uint64_t *keys, size_t n,
		   const uint64_t *diff, uint32_t *perm)
{
	radix_sort_values(ctx, keys, key_words, n, nullptr, perm, diff, true);
}

void
set_bucket_limit(size_t records)
{
	bucket_limit_override = records;
}

int
sort_on_device(const GsContext &ctx, int key_words, GsCudaAlgorithm algorithm,
			   uint64_t *keys, size_t n, uint32_t *perm)
{
	DevBuf<PresortStats> dstats(ctx.mem, 1);
	PresortStats st;
	int			direction;

	if (n == 0)
		return 1;
	if (n >= ((size_t) 1 << 32) - 1)
		fail("sorts of 2^32 records or more are not supported");
	phase_mark(ctx, "presorted check");
	GS_CHECK(cudaMemsetAsync(dstats.get(), 0, sizeof(PresortStats), ctx.stream));
	presort_scan(ctx, key_words, keys, 0, n, dstats.get());
	copy_to_pageable(&st, dstats.get(), sizeof(st), ctx.stream);
	direction = presorted_direction(st, n);
	if (direction)
	{
		fill_presorted(ctx, perm, n, direction);
		return direction;
	}
	if (resolve_algorithm(algorithm, key_words) == GSCUDA_ALGO_RADIX)
		radix_sort(ctx, key_words, keys, n, st.diff, perm);
	else
	{
		size_t		nsamples = bucket_sample_count(key_words, n);
		DevBuf<uint64_t> tkeys(ctx.mem, n * key_words);
		DevBuf<uint32_t> tidx(ctx.mem, n);
		DevBuf<uint64_t> skeys(ctx.mem, nsamples * key_words);
		DevBuf<uint32_t> sidx(ctx.mem, nsamples);

		phase_mark(ctx, "tile sort");
		sort_tiles(ctx, key_words, keys, n, 0, div_up(n, bucket_tile_records(key_words)),
				   tkeys.get(), tidx.get(), skeys.get(), sidx.get());
		finish_buckets(ctx, key_words, keys, n, tkeys.get(), tidx.get(), skeys.get(),
					   sidx.get(), st.diff, perm);
	}
	return 0;
}

}								/* namespace gs */

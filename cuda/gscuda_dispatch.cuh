/*-------------------------------------------------------------------------
 *
 * gscuda_dispatch.cuh
 *	  Algorithm dispatch of the CUDA side: which algorithm sorts, what it
 *	  costs in device memory, and the run-time key width turned into the
 *	  kernels' template argument.
 *
 * Everything here is host code with no template in its interface, so that
 * only gscuda_dispatch.cu includes the algorithms (gscuda_bucket_sort.cuh,
 * gscuda_radix_sort.cuh) and compiles their kernels, once.  The pipeline
 * (gscuda_pipeline.cu) calls these as chunks arrive and when a sort
 * finishes.  gscuda_dispatch.cu also defines sort_on_device(), which only
 * the kernel benchmark calls, to time the algorithms on data already on
 * the device: gscuda_test.cuh declares it.  Every function throws GsError
 * (gscuda_common.cuh) on failure.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_DISPATCH_CUH
#define GSCUDA_DISPATCH_CUH

#include "gscuda_common.cuh"

namespace gs
{

/* Which algorithm GSCUDA_ALGO_AUTO means for keys of key_words words. */
GsCudaAlgorithm resolve_algorithm(GsCudaAlgorithm algorithm, int key_words);

/*
 * Device bytes per record that a resolved algorithm holds beside the keys
 * while chunks arrive (the bucket sort's sorted tiles and samples), and the
 * further bytes its finish needs for n records (an estimate).
 */
size_t		algorithm_resident_bytes(GsCudaAlgorithm algorithm, int key_words);
size_t		algorithm_finish_bytes(GsCudaAlgorithm algorithm, int key_words, size_t n);

/* The bucket sort's records per tile, and its samples for `records` records. */
size_t		bucket_tile_size(int key_words);
size_t		bucket_sample_count(int key_words, size_t records);

/*
 * The bucket sort in two steps: sort tiles [tile_begin, tile_end) of keys
 * (n records) into tkeys/tidx and their samples into skeys/sidx, as chunks
 * arrive; then, once every tile is sorted, the rest of it, which writes
 * the permutation into perm (possibly tidx itself).  diff: the bits of
 * each key word that vary (gscuda_presort.cuh).
 */
void		sort_tiles(const GsContext &ctx, int key_words, const uint64_t *keys, size_t n,
					   size_t tile_begin, size_t tile_end, uint64_t *tkeys, uint32_t *tidx,
					   uint64_t *skeys, uint32_t *sidx);
void		finish_buckets(const GsContext &ctx, int key_words, uint64_t *keys, size_t n,
						   uint64_t *tkeys, uint32_t *tidx, uint64_t *skeys, uint32_t *sidx,
						   const uint64_t *diff, uint32_t *perm);

/* The radix sort of n records into perm; keys come out scrambled. */
void		radix_sort(const GsContext &ctx, int key_words, uint64_t *keys, size_t n,
					   const uint64_t *diff, uint32_t *perm);

/*
 * Tests only (gscuda_set_bucket_limit): the bucket sort treats buckets of
 * more than `records` records as too large for a block (0: a tile).
 */
void		set_bucket_limit(size_t records);

}								/* namespace gs */

#endif							/* GSCUDA_DISPATCH_CUH */

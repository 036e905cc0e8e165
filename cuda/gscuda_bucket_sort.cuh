/*-------------------------------------------------------------------------
 *
 * gscuda_bucket_sort.cuh
 *	  GPU BUCKET SORT: deterministic sample sort of key-index records
 *	  (Dehne & Zaboli, "Parallel sorting for GPUs", section 4), for Hopper.
 *
 * Steps (the paper's numbering):
 *	1-2. tile_sort_kernel: each block sorts a tile of TILE records in shared
 *		 memory (BlockKeySort, gscuda_block_key_sort.cuh) and
 *	3.	 writes SAMPLES equidistant records of it as samples.
 *	4.	 the samples are sorted (radix_sort_values, CUB) and
 *	5.	 B-1 equidistant ones become the global splitters
 *		 (pick_splitters_kernel).
 *	6.	 locate_kernel: binary search of every splitter in every sorted tile
 *		 gives the size of each (tile, bucket) piece, stored bucket-major
 *		 ("column-major" in the paper's figure 1);
 *	7.	 cub::DeviceScan::ExclusiveSum over that matrix gives each piece's
 *		 place in the output;
 *	8.	 relocate_kernel moves the pieces there (ranges of consecutive records,
 *		 so the writes coalesce), and bucket_starts_kernel takes each
 *		 bucket's start from the scan;
 *	9.	 bucket_sort_kernel sorts each bucket in shared memory with the same
 *		 block sort and writes the indexes of the permutation.
 *
 * Records are ordered by (key, index), which makes them all distinct: the
 * splitters are records, so a tie range is cut between buckets like any
 * other range of records, and a bucket holds at most n/B + n/SAMPLES' records
 * whatever the distribution (all-equal input included).  The block sorts
 * themselves only compare keys: tiles are loaded in index order, and a
 * bucket is the concatenation of its pieces in tile order, each piece
 * sorted, so equal keys already come in index order and a stable sort by key
 * yields (key, index) order.
 *
 * Bucket sizes.  The deterministic bound holds for any number of buckets
 * B: a bucket holds at most n/B + n/SAMPLES records.  For B up to SAMPLES
 * (the paper's choice, B = s) the buckets are all close to n/B; this
 * implementation takes many more buckets, so that they fit a block, and
 * then most are close to n/B but some reach the n/SAMPLES part of the
 * bound: a tile's samples sit at fixed ranks of it, so the samples of all
 * tiles come in clusters (every tile's first record, every tile's 33rd,
 * ...) that are far apart near the ends of the key range.  The number of
 * buckets is also capped (GS_MAX_BUCKETS: the locate and relocate kernels
 * keep per-bucket arrays in shared memory, and the count matrix grows as
 * tiles x buckets), so above about 25M records all buckets outgrow a tile;
 * choose_buckets() then makes few coarse ones.
 *
 * Second level.  A bucket larger than a block is split again
 * (split_count_kernel, split_move_kernel): its own sub-splitters come
 * from a sample of its records (bucket_samples_kernel,
 * pick_sub_splitters_kernel; see split_buckets); a count pass finds
 * each record's sub-bucket by binary search, keeps it (a byte a record)
 * and counts the records of each (sub-bucket, slice); and a move pass,
 * after a scan of those counts, scatters the records stably (ranks by
 * sub-bucket number from cub::BlockRadixRankMatch) so that every
 * sub-bucket is contiguous and in its original order.  Sub-buckets are
 * then sorted like buckets (their bounds from sub_bucket_bounds_kernel).
 * Whatever still does not fit a block (the sub-splitters come from a
 * sample, so now and then a sub-bucket overflows) is sorted by the CUB
 * radix sort (sort_large_ranges), all such ranges together: they are key
 * ranges in order, so sorting their union by (key, index) sorts each one
 * in place.
 *
 * Tiles can be sorted as soon as their records are on the device
 * (bucket_sort_tiles), which gscuda_sort_submit() does chunk by chunk;
 * bucket_sort_finish() does steps 4-9.
 *
 * Files.  As CUB keeps its block primitives (cub/block/...) apart from
 * device-level dispatch, the bucket sort is three headers:
 * gscuda_block_key_sort.cuh, the block sort (BlockKeySort, the block and tile
 * shape BucketShape and the device helpers they use);
 * gscuda_bucket_sort_kernels.cuh, the kernels named above and the structs they
 * share with the host (SplitBucket, SplitSlice); and this file, the host
 * side: sizing (bucket_tile_records, choose_buckets, ...), the launches,
 * split_buckets, bucket_sort_tiles and bucket_sort_finish.  Each includes
 * the one before it; the engine's dispatch (gscuda_dispatch.cu) includes
 * only this one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_BUCKET_SORT_CUH
#define GS_BUCKET_SORT_CUH

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <cub/device/device_scan.cuh>

#include "gscuda_common.cuh"
#include "gscuda_radix_sort.cuh"
#include "gscuda_bucket_sort_kernels.cuh"

namespace gs
{

/*
 * Tests only (gscuda_set_bucket_limit): treat buckets larger than this as
 * too large for a block, so that small inputs take the second level and
 * the radix fallback.  0: the tile size.
 */
inline size_t bucket_limit_override = 0;

/*
 * Let kernel use bytes of dynamic shared memory (over 48 KB needs the
 * opt-in).  Once per kernel and device: the tile sort is launched for
 * every chunk, and the attribute call is not free.  The attribute belongs
 * to the current device, so the GPU service, which sorts on several, must
 * set it on each; set on one only, the other's launches fail with "invalid
 * argument".
 */
template <typename Kernel>
inline void
allow_smem(Kernel kernel, size_t bytes)
{
	static std::map<std::pair<int, const void *>, size_t> allowed;
	int			device = 0;

	GS_CHECK(cudaGetDevice(&device));

	size_t	   &done = allowed[std::make_pair(device, (const void *) kernel)];

	if (bytes > 48 * 1024 && bytes > done)
	{
		GS_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
									  (int) bytes));
		done = bytes;
	}
}

/* Records per tile of the bucket sort of key_words-word keys. */
inline size_t
bucket_tile_records(int key_words)
{
	(void) key_words;			/* the same tile for every width */
	return BucketShape<1>::TILE;
}

/* Samples per tile. */
inline size_t
bucket_tile_samples(int key_words)
{
	return bucket_tile_records(key_words) / GS_SAMPLE_STEP;
}

/*
 * Steps 1-3 for tiles [tile_begin, tile_end) of records[0..n): tkeys/tidx
 * hold n records, skeys/sidx SAMPLES per tile.
 */
template <int N>
void
bucket_sort_tiles(const GsContext &ctx, const uint64_t *keys, size_t n,
				  size_t tile_begin, size_t tile_end,
				  uint64_t *tkeys, uint32_t *tidx, uint64_t *skeys, uint32_t *sidx)
{
	size_t		smem = sizeof(typename BlockKeySort<N>::Storage);

	if (tile_end <= tile_begin)
		return;
	allow_smem(tile_sort_kernel<N>, smem);
	tile_sort_kernel<N><<<(unsigned) (tile_end - tile_begin), BucketShape<N>::THREADS, smem,
		ctx.stream>>>((const Key<N> *) keys, n, tile_begin, (Key<N> *) tkeys, tidx,
					  (Key<N> *) skeys, sidx);
	check_launch(ctx, "tile_sort_kernel");
}

/* Records a bucket (or sub-bucket) should hold on average: 3/4 of a tile. */
inline size_t
bucket_fill(size_t limit)
{
	return std::max(limit * 3 / 4, (size_t) 1);
}

/*
 * How many buckets.  If GS_MAX_BUCKETS buckets of bucket_fill() records
 * hold the input (the locate and relocate kernels keep per-bucket arrays in
 * shared memory), that many: every bucket is then sorted by one block,
 * nearly full, and the quarter of slack absorbs the deviation of the
 * sample sort.  Otherwise every bucket goes through the second level, and
 * few coarse buckets are better: a tile's piece of a bucket is then about
 * 16 records, so the relocation writes in runs instead of scattering
 * single records, and each bucket still fits GS_MAX_SUBBUCKETS
 * sub-buckets.  Never more buckets than samples.
 */
inline int
choose_buckets(size_t n, size_t tile, size_t nsamples)
{
	size_t		fill = bucket_fill(tile);
	size_t		b = div_up(n, fill);

	if (b > GS_MAX_BUCKETS)
		b = std::min(std::max(tile / 16, (size_t) div_up(n, tile / 2 * GS_MAX_SUBBUCKETS)),
					 (size_t) GS_MAX_BUCKETS);
	if (b > nsamples)
		b = nsamples;
	return b < 1 ? 1 : (int) b;
}

/* Sort the segments [seg_start[j], seg_end[j]) of at most limit records. */
template <int N>
void
sort_segments(const GsContext &ctx, const Key<N> *keys, const uint32_t *idx,
			  const uint32_t *seg_start, const uint32_t *seg_end, size_t nsegs, int limit,
			  uint32_t *perm)
{
	size_t		smem = sizeof(typename BlockKeySort<N>::Storage);

	if (nsegs == 0)
		return;
	allow_smem(bucket_sort_kernel<N>, smem);
	bucket_sort_kernel<N><<<(unsigned) nsegs, BucketShape<N>::THREADS, smem, ctx.stream>>>(
		keys, idx, seg_start, seg_end, limit, perm);
	check_launch(ctx, "bucket_sort_kernel");
}

/*
 * Sort the given ranges of keys/idx (key ranges in order) with the radix
 * sort and write their indexes into perm at the same positions.  idx may
 * be perm.  Synchronizes the stream (the host vectors must outlive the
 * copy).
 */
inline void
sort_large_ranges(const GsContext &ctx, uint64_t *keys, int key_words, const uint32_t *idx,
				  const std::vector<uint32_t> &starts, const std::vector<uint32_t> &lens,
				  const uint64_t *diff, uint32_t *perm)
{
	size_t		nr = starts.size();
	size_t		large = 0;
	std::vector<uint32_t> host(3 * nr);

	if (nr == 0)
		return;
	for (size_t r = 0; r < nr; r++)
	{
		host[r] = starts[r];
		host[nr + r] = lens[r];
		host[2 * nr + r] = (uint32_t) large;
		large += lens[r];
	}
	{
		DevBuf<uint32_t> ranges(ctx.mem, 3 * nr);
		DevBuf<uint32_t> positions(ctx.mem, large);
		DevBuf<uint32_t> sorted(ctx.mem, large);

		GS_CHECK(cudaMemcpyAsync(ranges.get(), host.data(), 3 * nr * sizeof(uint32_t),
								 cudaMemcpyHostToDevice, ctx.stream));
		large_positions_kernel<<<(unsigned) nr, 256, 0, ctx.stream>>>(
			ranges.get(), ranges.get() + nr, ranges.get() + 2 * nr, positions.get());
		check_launch(ctx, "large_positions_kernel");
		radix_sort_values(ctx, keys, key_words, large, positions.get(), sorted.get(), diff,
						  false);
		/* through a copy: idx may be perm */
		large_gather_kernel<<<stream_blocks(large), 256, 0, ctx.stream>>>(
			sorted.get(), idx, large, sorted.get());
		check_launch(ctx, "large_gather_kernel");
		large_scatter_kernel<<<stream_blocks(large), 256, 0, ctx.stream>>>(
			positions.get(), sorted.get(), large, perm);
		check_launch(ctx, "large_scatter_kernel");
		GS_CHECK(wait_stream(ctx.stream));
	}
}

/*
 * Samples per sub-bucket when a bucket is split (oversampling), and how
 * full a sub-bucket should be on average, in tenths of the limit: with 128
 * samples a sub-bucket's size deviates by about 1/11 from the average, so
 * one of 8/10 of a tile overflows about 3 deviations out (a few in a
 * thousand, and then to the radix sort).  Fuller blocks sort faster: on the
 * H100, 100M records, 128 samples and 8/10 took the sub-bucket sort from
 * 3.20 to 2.92 ms against 64 and 7/10, for 0.05 ms more sample sorting.
 */
#define GS_SPLIT_OVERSAMPLING 128
#define GS_SPLIT_FILL_TENTHS 8

/*
 * The second level for the buckets larger than `limit` records: split
 * (see the file header) into tkeys/perm at the same positions, sort the
 * sub-buckets, and give what is still too large to the radix sort.  large
 * lists the buckets (numbers into host_bstart).
 *
 * The sub-splitters come from the bucket's own records, not from the
 * tiles' samples: a tile's samples sit at fixed ranks of it, so the
 * samples of all tiles come in clusters (every tile's first, every tile's
 * 33rd, ...), and the part of a bucket between two clusters holds no
 * sample.  Equidistant records of the bucket array are a fair sample: the
 * array is the bucket's pieces of every tile one after the other.  They
 * are sorted by (key, index) for all split buckets at once (the buckets
 * are key ranges in order, so each one's samples stay together).
 */
template <int N>
void
split_buckets(const GsContext &ctx, Key<N> *bkeys, const uint32_t *bidx,
			  const std::vector<uint32_t> &host_bstart, const std::vector<int> &large,
			  Key<N> *tkeys, int limit, const uint64_t *diff, uint32_t *perm)
{
	constexpr size_t TILE = BucketShape<N>::TILE;
	std::vector<SplitBucket> buckets;
	std::vector<SplitSlice> slices;
	std::vector<uint32_t> sub_bucket,
				sub_number,
				unsplit_start,
				unsplit_len,
				large_start,
				large_len;
	uint32_t	ncounts = 0,
				compact = 0,
				nsplitters = 0,
				nsamples = 0;

	for (int j : large)
	{
		uint32_t	start = host_bstart[j];
		uint32_t	size = host_bstart[j + 1] - start;
		size_t		fill = std::max((size_t) limit * GS_SPLIT_FILL_TENTHS / 10, (size_t) 1);
		size_t		nsub = std::min((size_t) div_up(size, fill), (size_t) GS_MAX_SUBBUCKETS);
		SplitBucket b;

		if (nsub < 2)
		{
			unsplit_start.push_back(start);
			unsplit_len.push_back(size);
			continue;
		}
		b.start = start;
		b.size = size;
		b.nsub = (uint32_t) nsub;
		b.first_sample = nsamples;
		b.nsamples = (uint32_t) std::min((size_t) size, nsub * GS_SPLIT_OVERSAMPLING);
		b.first_splitter = nsplitters;
		b.first_count = ncounts;
		b.nslices = div_up(size, TILE);
		b.compact = compact;
		for (uint32_t c = 0; c < b.nslices; c++)
			slices.push_back({(uint32_t) buckets.size(), c, (uint32_t) (start + c * TILE),
							  (uint32_t) std::min((size_t) size - c * TILE, TILE)});
		for (uint32_t q = 0; q < b.nsub; q++)
		{
			sub_bucket.push_back((uint32_t) buckets.size());
			sub_number.push_back(q);
		}
		nsamples += b.nsamples;
		nsplitters += b.nsub - 1;
		ncounts += b.nsub * b.nslices;
		compact += size;
		buckets.push_back(b);
	}

	if (!buckets.empty())
	{
		size_t		nsubs = sub_bucket.size();
		DevBuf<SplitBucket> dbuckets(ctx.mem, buckets.size());
		DevBuf<SplitSlice> dslices(ctx.mem, slices.size());
		DevBuf<uint32_t> samples(ctx.mem, nsamples);
		DevBuf<uint32_t> sorted_samples(ctx.mem, nsamples);
		DevBuf<uint32_t> dsubs(ctx.mem, 2 * nsubs);
		DevBuf<Key<N>> sub_keys(ctx.mem, nsplitters);
		DevBuf<uint32_t> sub_idx(ctx.mem, nsplitters);
		DevBuf<uint8_t> sub_of(ctx.mem, compact);
		DevBuf<uint32_t> counts(ctx.mem, ncounts);
		DevBuf<uint32_t> offs(ctx.mem, ncounts);
		DevBuf<uint32_t> seg(ctx.mem, 2 * nsubs);
		DevBuf<unsigned char> scan_temp;
		size_t		scan_bytes = 0;
		std::vector<uint32_t> host_seg(2 * nsubs);

		phase_mark(ctx, "split");
		sub_bucket.insert(sub_bucket.end(), sub_number.begin(), sub_number.end());
		GS_CHECK(cudaMemcpyAsync(dbuckets.get(), buckets.data(),
								 buckets.size() * sizeof(SplitBucket),
								 cudaMemcpyHostToDevice, ctx.stream));
		GS_CHECK(cudaMemcpyAsync(dslices.get(), slices.data(), slices.size() * sizeof(SplitSlice),
								 cudaMemcpyHostToDevice, ctx.stream));
		GS_CHECK(cudaMemcpyAsync(dsubs.get(), sub_bucket.data(), 2 * nsubs * sizeof(uint32_t),
								 cudaMemcpyHostToDevice, ctx.stream));
		bucket_samples_kernel<<<(unsigned) buckets.size(), 256, 0, ctx.stream>>>(
			dbuckets.get(), samples.get());
		check_launch(ctx, "bucket_samples_kernel");
		radix_sort_values(ctx, (uint64_t *) bkeys, N, nsamples, samples.get(),
						  sorted_samples.get(), diff, false);
		pick_sub_splitters_kernel<N><<<(unsigned) buckets.size(), 256, 0, ctx.stream>>>(
			dbuckets.get(), sorted_samples.get(), bkeys, bidx, sub_keys.get(), sub_idx.get());
		check_launch(ctx, "pick_sub_splitters_kernel");

		split_count_kernel<N><<<(unsigned) slices.size(), GS_SPLIT_THREADS, 0, ctx.stream>>>(
			bkeys, bidx, dbuckets.get(), dslices.get(), sub_keys.get(), sub_idx.get(),
			sub_of.get(), counts.get());
		check_launch(ctx, "split_count_kernel");
		GS_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), offs.get(),
											   ncounts, ctx.stream));
		scan_temp.allocate(ctx.mem, scan_bytes);
		GS_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, counts.get(),
											   offs.get(), ncounts, ctx.stream));
		check_launch(ctx, "cub::DeviceScan::ExclusiveSum");
		split_move_kernel<N><<<(unsigned) slices.size(), GS_SPLIT_THREADS, 0, ctx.stream>>>(
			bkeys, bidx, dbuckets.get(), dslices.get(), sub_of.get(), offs.get(), tkeys, perm);
		check_launch(ctx, "split_move_kernel");
		sub_bucket_bounds_kernel<<<div_up(nsubs, 256), 256, 0, ctx.stream>>>(
			dbuckets.get(), dsubs.get(), dsubs.get() + nsubs, nsubs, counts.get(), offs.get(),
			seg.get(), seg.get() + nsubs);
		check_launch(ctx, "sub_bucket_bounds_kernel");

		phase_mark(ctx, "sub-bucket sort");
		sort_segments<N>(ctx, tkeys, perm, seg.get(), seg.get() + nsubs, nsubs, limit, perm);

		/* sub-buckets still too large (the host decides: sync) */
		copy_to_pageable(host_seg.data(), seg.get(), 2 * nsubs * sizeof(uint32_t), ctx.stream);
		for (size_t q = 0; q < nsubs; q++)
		{
			uint32_t	size = host_seg[nsubs + q] - host_seg[q];

			if (size > (uint32_t) limit)
			{
				large_start.push_back(host_seg[q]);
				large_len.push_back(size);
			}
		}
		phase_mark(ctx, "large ranges");
		sort_large_ranges(ctx, (uint64_t *) tkeys, N, perm, large_start, large_len, diff, perm);
	}
	sort_large_ranges(ctx, (uint64_t *) bkeys, N, bidx, unsplit_start, unsplit_len, diff, perm);
}

/*
 * Steps 4-9, once every tile is sorted.  keys (n records) is dead by now and
 * serves as the bucket array; perm (n indexes) may be tidx.  diff: the bits
 * of each word that vary over all records (from presort_scan).
 */
template <int N>
void
bucket_sort_finish(const GsContext &ctx, uint64_t *keys, size_t n,
				   uint64_t *tkeys, uint32_t *tidx, uint64_t *skeys, uint32_t *sidx,
				   const uint64_t *diff, uint32_t *perm)
{
	constexpr size_t TILE = BucketShape<N>::TILE;
	constexpr size_t SAMPLES = BucketShape<N>::SAMPLES;
	size_t		ntiles = div_up(n, TILE);
	size_t		nsamples_all = ntiles * SAMPLES;
	size_t		nsamples = (n / TILE) * SAMPLES + div_up(n % TILE, GS_SAMPLE_STEP);
	int			nbuckets = choose_buckets(n, TILE, nsamples);
	int			limit = (int) TILE;
	DevBuf<uint32_t> sample_order(ctx.mem, nsamples_all);
	DevBuf<Key<N>> spl_keys(ctx.mem, nbuckets);
	DevBuf<uint32_t> spl_idx(ctx.mem, nbuckets);
	DevBuf<uint32_t> cnt(ctx.mem, ntiles * nbuckets);
	DevBuf<uint32_t> offs(ctx.mem, ntiles * nbuckets);
	DevBuf<uint32_t> bidx(ctx.mem, n);
	DevBuf<uint32_t> bstart(ctx.mem, nbuckets + 1);
	DevBuf<unsigned char> scan_temp;
	size_t		scan_bytes = 0;
	Key<N>	   *bkeys = (Key<N> *) keys;
	std::vector<uint32_t> host_bstart(nbuckets + 1);
	std::vector<int> large;

	if (n == 0)
		return;
	if (bucket_limit_override > 0 && bucket_limit_override < TILE)
		limit = (int) std::max(bucket_limit_override, (size_t) 2);

	/* 4-5: sort the samples by (key, index), pick the splitters */
	phase_mark(ctx, "samples");
	radix_sort_values(ctx, skeys, N, nsamples_all, nullptr, sample_order.get(), diff, false);
	if (nbuckets > 1)
	{
		pick_splitters_kernel<N><<<div_up(nbuckets, 256), 256, 0, ctx.stream>>>(
			(const Key<N> *) skeys, sidx, sample_order.get(), nsamples, nbuckets,
			spl_keys.get(), spl_idx.get());
		check_launch(ctx, "pick_splitters_kernel");
	}

	/* 6: pieces per (bucket, tile) */
	phase_mark(ctx, "locate");
	locate_kernel<N><<<(unsigned) ntiles, 512, 0, ctx.stream>>>(
		(const Key<N> *) tkeys, tidx, n, ntiles, nbuckets, spl_keys.get(), spl_idx.get(),
		cnt.get());
	check_launch(ctx, "locate_kernel");

	/* 7: where each piece goes */
	phase_mark(ctx, "scan");
	GS_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, cnt.get(), offs.get(),
										   (uint32_t) (ntiles * nbuckets), ctx.stream));
	scan_temp.allocate(ctx.mem, scan_bytes);
	GS_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, cnt.get(), offs.get(),
										   (uint32_t) (ntiles * nbuckets), ctx.stream));
	check_launch(ctx, "cub::DeviceScan::ExclusiveSum");

	/* 8: move the pieces */
	phase_mark(ctx, "relocate");
	relocate_kernel<N><<<(unsigned) ntiles, 512, 0, ctx.stream>>>(
		(const Key<N> *) tkeys, tidx, n, ntiles, nbuckets, cnt.get(), offs.get(),
		bkeys, bidx.get());
	check_launch(ctx, "relocate_kernel");

	bucket_starts_kernel<<<div_up(nbuckets + 1, 256), 256, 0, ctx.stream>>>(
		offs.get(), ntiles, nbuckets, n, bstart.get());
	check_launch(ctx, "bucket_starts_kernel");

	/* 9: sort the buckets that fit a block */
	phase_mark(ctx, "bucket sort");
	sort_segments<N>(ctx, bkeys, bidx.get(), bstart.get(), bstart.get() + 1, nbuckets, limit,
					 perm);

	/* ... and split the others (the host decides: sync) */
	copy_to_pageable(host_bstart.data(), bstart.get(), (nbuckets + 1) * sizeof(uint32_t),
					 ctx.stream);
	for (int j = 0; j < nbuckets; j++)
	{
		if (host_bstart[j + 1] - host_bstart[j] > (uint32_t) limit)
			large.push_back(j);
	}
	if (!large.empty())
		split_buckets<N>(ctx, bkeys, bidx.get(), host_bstart, large, (Key<N> *) tkeys, limit,
						 diff, perm);
	phase_mark(ctx, "end");
}

}								/* namespace gs */

#endif							/* GS_BUCKET_SORT_CUH */

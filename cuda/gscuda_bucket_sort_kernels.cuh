/*-------------------------------------------------------------------------
 *
 * gscuda_bucket_sort_kernels.cuh
 *	  The kernels of the GPU bucket sort, and the structs they share with
 *	  the host.
 *
 * The steps are those described at the head of gscuda_bucket_sort.cuh: their
 * kernels are tile_sort_kernel (steps 1-3), pick_splitters_kernel (5),
 * locate_kernel (6), relocate_kernel and bucket_starts_kernel (8) and
 * bucket_sort_kernel (9); steps 4 and 7 are CUB's device-wide sort and
 * scan.  For the second level, bucket_samples_kernel and
 * pick_sub_splitters_kernel take a split bucket's sub-splitters from its
 * records, split_count_kernel and split_move_kernel split it, and
 * sub_bucket_bounds_kernel gives the sub-buckets' bounds; for the ranges
 * still too large for a block, large_positions_kernel, large_gather_kernel
 * and large_scatter_kernel are the index and permutation steps around the
 * radix sort.  The tile and bucket sorts run the block primitive of
 * gscuda_block_key_sort.cuh (BlockKeySort); the others are searches, scans and
 * moves of their own.
 *
 * SplitBucket and SplitSlice describe the second level's work:
 * split_buckets() (gscuda_bucket_sort.cuh) fills them on the host and the split
 * kernels read them.  GS_MAX_BUCKETS and GS_MAX_SUBBUCKETS are here since
 * they size the kernels' shared memory; the host sizes the buckets by
 * them.  Nothing here launches anything: gscuda_bucket_sort.cuh chooses the
 * grids, the shared memory and the stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_BUCKET_SORT_KERNELS_CUH
#define GS_BUCKET_SORT_KERNELS_CUH

#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_scan.cuh>

#include "gscuda_common.cuh"
#include "gscuda_block_key_sort.cuh"

namespace gs
{

/* Most buckets the locate and relocate kernels handle (shared memory). */
#define GS_MAX_BUCKETS 4096
/* Most sub-buckets a bucket is split into at the second level. */
#define GS_MAX_SUBBUCKETS 256

/*
 * Steps 1-3: sort tiles tile_begin.. of records[0..n) into tkeys/tidx and
 * write SAMPLES samples per tile (the max key where a tile is short).
 */
template <int N>
__global__ void __launch_bounds__(BucketShape<N>::THREADS)
tile_sort_kernel(const Key<N> *keys, size_t n, size_t tile_begin,
				 Key<N> *tkeys, uint32_t *tidx, Key<N> *skeys, uint32_t *sidx)
{
	using Sorter = BlockKeySort<N>;
	constexpr int ITEMS = Sorter::ITEMS;
	constexpr int TILE = Sorter::TILE;
	extern __shared__ __align__(16) unsigned char smem[];
	typename Sorter::Storage &storage = *reinterpret_cast<typename Sorter::Storage *>(smem);
	size_t		tile = tile_begin + blockIdx.x;
	size_t		base = tile * TILE;
	int			valid = (int) (n - base < (size_t) TILE ? n - base : TILE);
	uint32_t	pos[ITEMS];
	bool		striped;

	Sorter::sort(storage, keys + base, valid, pos, &striped);

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			r = rank_of<N>(threadIdx.x, i, striped);
		Key<N>		k = key_max<N>();

		if (r < valid)
		{
			k = keys[base + pos[i]];
			tkeys[base + r] = k;
			tidx[base + r] = (uint32_t) (base + pos[i]);
		}
		if (r % GS_SAMPLE_STEP == 0)
		{
			size_t		s = tile * BucketShape<N>::SAMPLES + r / GS_SAMPLE_STEP;

			skeys[s] = k;
			sidx[s] = r < valid ? (uint32_t) (base + pos[i]) : GS_PAD_INDEX;
		}
	}
}

/* Step 5: splitter j-1 (j = 1..B-1) is the sample of rank j*nsamples/B. */
template <int N>
static __global__ void
pick_splitters_kernel(const Key<N> *skeys, const uint32_t *sidx, const uint32_t *order,
					  size_t nsamples, int nbuckets, Key<N> *spl_keys, uint32_t *spl_idx)
{
	int			j = blockIdx.x * blockDim.x + threadIdx.x + 1;

	if (j < nbuckets)
	{
		uint32_t	s = order[(size_t) j * nsamples / nbuckets];

		spl_keys[j - 1] = skeys[s];
		spl_idx[j - 1] = sidx[s];
	}
}
/*
 * Step 6: in tile i, the piece of bucket j is [pos_j, pos_j+1), pos_j the
 * number of records below splitter j-1.  Stored bucket-major: cnt[j*m + i].
 */
template <int N>
__global__ void __launch_bounds__(512)
locate_kernel(const Key<N> *tkeys, const uint32_t *tidx, size_t n, size_t ntiles,
			  int nbuckets, const Key<N> *spl_keys, const uint32_t *spl_idx,
			  uint32_t *cnt)
{
	constexpr int TILE = BucketShape<N>::TILE;
	__shared__ uint32_t pos[GS_MAX_BUCKETS + 1];
	size_t		tile = blockIdx.x;
	size_t		base = tile * TILE;
	int			valid = (int) (n - base < (size_t) TILE ? n - base : TILE);

	for (int j = threadIdx.x; j < nbuckets - 1; j += blockDim.x)
	{
		Key<N>		sk = spl_keys[j];
		uint32_t	si = spl_idx[j];
		int			lo = 0,
					hi = valid;

		while (lo < hi)
		{
			int			mid = (lo + hi) >> 1;

			if (record_less(tkeys[base + mid], tidx[base + mid], sk, si))
				lo = mid + 1;
			else
				hi = mid;
		}
		pos[j + 1] = lo;
	}
	if (threadIdx.x == 0)
	{
		pos[0] = 0;
		pos[nbuckets] = valid;
	}
	__syncthreads();
	for (int j = threadIdx.x; j < nbuckets; j += blockDim.x)
		cnt[(size_t) j * ntiles + tile] = pos[j + 1] - pos[j];
}

/*
 * Step 8: move every piece of tile i to its place: offs[j*m + i] is where
 * the piece of bucket j starts; the piece starts at pos_j in the tile, pos
 * being the exclusive scan of the tile's counts.
 */
template <int N>
__global__ void __launch_bounds__(512)
relocate_kernel(const Key<N> *tkeys, const uint32_t *tidx, size_t n, size_t ntiles,
				int nbuckets, const uint32_t *cnt, const uint32_t *offs,
				Key<N> *bkeys, uint32_t *bidx)
{
	constexpr int TILE = BucketShape<N>::TILE;
	constexpr int THREADS = 512;
	constexpr int PER_THREAD = GS_MAX_BUCKETS / THREADS;
	using Scan = cub::BlockScan<uint32_t, THREADS>;
	__shared__ typename Scan::TempStorage scan_temp;
	__shared__ uint32_t pos[GS_MAX_BUCKETS];
	__shared__ uint32_t dest[GS_MAX_BUCKETS];
	size_t		tile = blockIdx.x;
	size_t		base = tile * TILE;
	int			valid = (int) (n - base < (size_t) TILE ? n - base : TILE);
	uint32_t	c[PER_THREAD];

#pragma unroll
	for (int i = 0; i < PER_THREAD; i++)
	{
		int			j = threadIdx.x * PER_THREAD + i;

		c[i] = j < nbuckets ? cnt[(size_t) j * ntiles + tile] : 0;
	}
	Scan(scan_temp).ExclusiveSum(c, c);
#pragma unroll
	for (int i = 0; i < PER_THREAD; i++)
	{
		int			j = threadIdx.x * PER_THREAD + i;

		if (j < nbuckets)
		{
			pos[j] = c[i];
			dest[j] = offs[(size_t) j * ntiles + tile];
		}
	}
	__syncthreads();

	for (int p = threadIdx.x; p < valid; p += THREADS)
	{
		/* the last bucket whose piece starts at or before p */
		int			lo = 0,
					hi = nbuckets - 1;

		while (lo < hi)
		{
			int			mid = (lo + hi + 1) >> 1;

			if (pos[mid] <= (uint32_t) p)
				lo = mid;
			else
				hi = mid - 1;
		}
		{
			size_t		d = dest[lo] + (p - pos[lo]);

			bkeys[d] = tkeys[base + p];
			bidx[d] = tidx[base + p];
		}
	}
}

/* bstart[j] = first record of bucket j; bstart[B] = n. */
static __global__ void
bucket_starts_kernel(const uint32_t *offs, size_t ntiles, int nbuckets, size_t n,
					 uint32_t *bstart)
{
	int			j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < nbuckets)
		bstart[j] = offs[(size_t) j * ntiles];
	else if (j == nbuckets)
		bstart[j] = (uint32_t) n;
}

/*
 * Step 9: sort segment j, [seg_start[j], seg_end[j]) of keys/idx, in
 * shared memory if it holds at most `limit` records (<= TILE), and write
 * the indexes of the permutation there.  idx may be perm: a block reads all
 * of its segment before it writes.
 */
template <int N>
__global__ void __launch_bounds__(BucketShape<N>::THREADS)
bucket_sort_kernel(const Key<N> *keys, const uint32_t *idx, const uint32_t *seg_start,
				   const uint32_t *seg_end, int limit, uint32_t *perm)
{
	using Sorter = BlockKeySort<N>;
	constexpr int ITEMS = Sorter::ITEMS;
	extern __shared__ __align__(16) unsigned char smem[];
	typename Sorter::Storage &storage = *reinterpret_cast<typename Sorter::Storage *>(smem);
	size_t		start = seg_start[blockIdx.x];
	int			size = (int) (seg_end[blockIdx.x] - start);
	uint32_t	pos[ITEMS];
	uint32_t	out[ITEMS];
	bool		striped;

	if (size == 0 || size > limit)
		return;
	Sorter::sort(storage, keys + start, size, pos, &striped);
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		if (rank_of<N>(threadIdx.x, i, striped) < size)
			out[i] = idx[start + pos[i]];
	}
	__syncthreads();
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			r = rank_of<N>(threadIdx.x, i, striped);

		if (r < size)
			perm[start + r] = out[i];
	}
}

/* A bucket split at the second level. */
struct SplitBucket
{
	uint32_t	start;			/* first record */
	uint32_t	size;
	uint32_t	nsub;			/* sub-buckets (2..GS_MAX_SUBBUCKETS) */
	uint32_t	first_sample;	/* its samples in the sample arrays */
	uint32_t	nsamples;
	uint32_t	first_splitter; /* its nsub-1 sub-splitters in sub_keys/sub_idx */
	uint32_t	first_count;	/* its nsub x nslices counts, sub-bucket-major */
	uint32_t	nslices;
	uint32_t	compact;		/* records of the split buckets before it */
};

/* A block's share of a split bucket: at most a tile of records. */
struct SplitSlice
{
	uint32_t	bucket;			/* index into the SplitBucket array */
	uint32_t	ordinal;		/* slice number within the bucket */
	uint32_t	start;
	uint32_t	len;
};

/* Positions of the samples of each split bucket: equidistant records. */
static __global__ void
bucket_samples_kernel(const SplitBucket *buckets, uint32_t *positions)
{
	const SplitBucket bucket = buckets[blockIdx.x];

	for (uint32_t q = threadIdx.x; q < bucket.nsamples; q += blockDim.x)
		positions[bucket.first_sample + q] =
			bucket.start + (uint32_t) ((uint64_t) q * bucket.size / bucket.nsamples);
}

/*
 * Sub-splitter m (1..nsub-1) of each split bucket: its sample of rank
 * m * nsamples / nsub (sorted: sample positions in (key, index) order).
 */
template <int N>
static __global__ void
pick_sub_splitters_kernel(const SplitBucket *buckets, const uint32_t *sorted,
						  const Key<N> *keys, const uint32_t *idx,
						  Key<N> *sub_keys, uint32_t *sub_idx)
{
	const SplitBucket bucket = buckets[blockIdx.x];

	for (uint32_t m = threadIdx.x + 1; m < bucket.nsub; m += blockDim.x)
	{
		uint32_t	p = sorted[bucket.first_sample +
							   (uint32_t) ((uint64_t) m * bucket.nsamples / bucket.nsub)];

		sub_keys[bucket.first_splitter + m - 1] = keys[p];
		sub_idx[bucket.first_splitter + m - 1] = idx[p];
	}
}

/* Threads of a split_count_kernel or split_move_kernel block (a slice: TILE records of a bucket). */
#define GS_SPLIT_THREADS 512

static_assert(GS_MAX_SUBBUCKETS <= 256 && GS_MAX_SUBBUCKETS <= GS_SPLIT_THREADS,
			  "a sub-bucket number is one byte (one 8-bit digit), and a count one per thread");

/*
 * The sub-bucket bytes of a slice's records (sub_of holds a byte for each
 * record of the split buckets, by its position among them).
 */
template <typename Byte>
__device__ __forceinline__ Byte *
slice_sub_bytes(Byte *sub_of, const SplitBucket &bucket, const SplitSlice &slice)
{
	return sub_of + bucket.compact + (slice.start - bucket.start);
}

/*
 * Second level, the count pass over one slice: each record's sub-bucket,
 * into sub_of (a byte a record, by position among the split buckets'
 * records, so that the move need not search again), and the number of
 * records per sub-bucket into counts (sub-bucket-major, a column per
 * slice).
 *
 * Two blocks per SM: the binary searches are chains of dependent loads,
 * and more warps hide them (H100, 100M one-word records: split phase 3.17
 * ms with one block per SM, 2.95 with two).
 */
template <int N>
__global__ void __launch_bounds__(GS_SPLIT_THREADS, 2)
split_count_kernel(const Key<N> *keys, const uint32_t *idx, const SplitBucket *buckets,
				   const SplitSlice *slices, const Key<N> *sub_keys, const uint32_t *sub_idx,
				   uint8_t *sub_of, uint32_t *counts)
{
	constexpr int THREADS = GS_SPLIT_THREADS;
	constexpr int ITEMS = BucketShape<N>::TILE / THREADS;
	/*
	 * GROUP records are searched in lockstep, so that their loads from
	 * global memory, and then their shared-memory probes, are in flight
	 * together rather than one record's after another's (a search is a
	 * chain of dependent loads); GROUP shrinks as keys widen, to stay
	 * within the registers.
	 */
	constexpr int GROUP = N == 1 ? 8 : N == 2 ? 4 : 2;
	__shared__ Key<N> spl_keys[GS_MAX_SUBBUCKETS - 1];
	__shared__ uint32_t spl_idx[GS_MAX_SUBBUCKETS - 1];
	__shared__ uint32_t hist[GS_MAX_SUBBUCKETS];
	const SplitSlice slice = slices[blockIdx.x];
	const SplitBucket bucket = buckets[slice.bucket];
	const int	t = threadIdx.x;
	const int	nspl = (int) bucket.nsub - 1;
	uint8_t    *slice_sub_of = slice_sub_bytes(sub_of, bucket, slice);
	int			span = 1;

	static_assert(ITEMS % GROUP == 0, "groups divide a thread's records");

	for (int q = t; q < nspl; q += THREADS)
	{
		spl_keys[q] = sub_keys[bucket.first_splitter + q];
		spl_idx[q] = sub_idx[bucket.first_splitter + q];
	}
	if (t < GS_MAX_SUBBUCKETS)
		hist[t] = 0;
	__syncthreads();

	/* the number of sub-splitters <= the record: fixed-step binary search */
	while (span <= nspl)
		span <<= 1;
#pragma unroll
	for (int g = 0; g < ITEMS; g += GROUP)
	{
		Key<N>		k[GROUP];
		uint32_t	ki[GROUP];
		int			found[GROUP];

#pragma unroll
		for (int j = 0; j < GROUP; j++)
		{
			int			p = warp_striped_position<ITEMS>(t, g + j);

			found[j] = 0;
			if (p < (int) slice.len)
			{
				k[j] = keys[slice.start + p];
				ki[j] = idx[slice.start + p];
			}
		}
		for (int step = span >> 1; step > 0; step >>= 1)
		{
#pragma unroll
			for (int j = 0; j < GROUP; j++)
			{
				int			probe = found[j] + step - 1;

				if (probe < nspl && !record_less(k[j], ki[j], spl_keys[probe], spl_idx[probe]))
					found[j] += step;
			}
		}
#pragma unroll
		for (int j = 0; j < GROUP; j++)
		{
			int			p = warp_striped_position<ITEMS>(t, g + j);
			const bool	real = p < (int) slice.len;

			/*
			 * A warp's records are consecutive ones of the bucket, mostly
			 * of one or two sub-buckets: one atomic per distinct
			 * sub-bucket, not 32 on one address.
			 */
			unsigned	same = __match_any_sync(0xFFFFFFFFu, real ? found[j] : -1);

			if (real)
				slice_sub_of[p] = (uint8_t) found[j];
			if (real && (t & 31) == __ffs(same) - 1)
				atomicAdd(&hist[found[j]], (uint32_t) __popc(same));
		}
	}
	__syncthreads();
	for (int b = t; b < (int) bucket.nsub; b += THREADS)
		counts[bucket.first_count + (size_t) b * bucket.nslices + slice.ordinal] = hist[b];
}

/*
 * Second level, the move of one slice: its records to out_keys/out_idx, at
 * the same positions as in keys/idx but grouped by sub-bucket (sub_of, from
 * the count pass, says which), keeping their order within each (offs: the
 * exclusive scan of the counts).  The records are ranked by sub-bucket in
 * one pass of cub::BlockRadixRankMatch (at most 256 sub-buckets: one 8-bit
 * digit), whose ranks are stable for records read warp-striped, and then
 * written in rank order, so that each sub-bucket's records are written as
 * one run.  Two blocks per SM, as measured for the count pass.
 */
template <int N>
__global__ void __launch_bounds__(GS_SPLIT_THREADS, 2)
split_move_kernel(const Key<N> *keys, const uint32_t *idx, const SplitBucket *buckets,
				  const SplitSlice *slices, const uint8_t *sub_of, const uint32_t *offs,
				  Key<N> *out_keys, uint32_t *out_idx)
{
	constexpr int THREADS = GS_SPLIT_THREADS;
	constexpr int TILE = BucketShape<N>::TILE;
	constexpr int ITEMS = TILE / THREADS;
	using RankMatch = cub::BlockRadixRankMatch<THREADS, 8, false>;
	/* the first rank of each sub-bucket */
	__shared__ uint32_t first[GS_MAX_SUBBUCKETS];
	__shared__ union
	{
		typename RankMatch::TempStorage rank;
		struct
		{
			uint16_t	pos[TILE];
			uint8_t		sub[TILE];
		}			by_rank;
	}			temp;
	const SplitSlice slice = slices[blockIdx.x];
	const SplitBucket bucket = buckets[slice.bucket];
	const int	t = threadIdx.x;
	const uint8_t *slice_sub_of = slice_sub_bytes(sub_of, bucket, slice);
	uint32_t	sub[ITEMS];
	int			rank[ITEMS];
	int			first_rank[RankMatch::BINS_TRACKED_PER_THREAD];

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			p = warp_striped_position<ITEMS>(t, i);

		/* padding: sub-bucket 0, ranked but never moved */
		sub[i] = p < (int) slice.len ? slice_sub_of[p] : 0;
	}

	/*
	 * Stable ranks by sub-bucket.  A record's place in its sub-bucket's run
	 * is its rank minus the sub-bucket's first rank, which padding (ranked
	 * after every real record of its digit) does not change.
	 */
	RankMatch(temp.rank).RankKeys(sub, rank, cub::BFEDigitExtractor<uint32_t>(0, 8), first_rank);
	__syncthreads();			/* the ranking's counters share memory with by_rank */
	if (t < GS_MAX_SUBBUCKETS)
		first[t] = first_rank[0];
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		temp.by_rank.pos[rank[i]] = (uint16_t) warp_striped_position<ITEMS>(t, i);
		temp.by_rank.sub[rank[i]] = (uint8_t) sub[i];
	}
	__syncthreads();

	/* in rank order: consecutive threads write consecutive records of a run */
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			r = i * THREADS + t;
		int			p = temp.by_rank.pos[r];

		if (p < (int) slice.len)
		{
			uint32_t	b = temp.by_rank.sub[r];
			size_t		dest = (size_t) bucket.start - bucket.compact +
				offs[bucket.first_count + (size_t) b * bucket.nslices + slice.ordinal] +
				(r - first[b]);

			out_keys[dest] = keys[slice.start + p];
			out_idx[dest] = idx[slice.start + p];
		}
	}
}

/* Where sub-bucket q of the split buckets starts and ends. */
static __global__ void
sub_bucket_bounds_kernel(const SplitBucket *buckets, const uint32_t *sub_bucket,
						 const uint32_t *sub_number, size_t nsubs, const uint32_t *counts,
						 const uint32_t *offs, uint32_t *seg_start, uint32_t *seg_end)
{
	size_t		q = blockIdx.x * (size_t) blockDim.x + threadIdx.x;

	if (q < nsubs)
	{
		const SplitBucket bucket = buckets[sub_bucket[q]];
		size_t		first = bucket.first_count + (size_t) sub_number[q] * bucket.nslices;
		size_t		last = first + bucket.nslices - 1;
		uint32_t	bias = bucket.start - bucket.compact;

		seg_start[q] = bias + offs[first];
		seg_end[q] = bias + offs[last] + counts[last];
	}
}

/* The positions of the records of the ranges too large for a block. */
static __global__ void
large_positions_kernel(const uint32_t *range_start, const uint32_t *range_len,
					   const uint32_t *range_out, uint32_t *positions)
{
	uint32_t	start = range_start[blockIdx.x];
	uint32_t	len = range_len[blockIdx.x];
	uint32_t	out = range_out[blockIdx.x];

	for (uint32_t q = threadIdx.x; q < len; q += blockDim.x)
		positions[out + q] = start + q;
}

/* out[q] = idx[sorted_positions[q]] */
static __global__ void
large_gather_kernel(const uint32_t *sorted_positions, const uint32_t *idx, size_t count,
					uint32_t *out)
{
	for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < count;
		 q += (size_t) gridDim.x * blockDim.x)
		out[q] = idx[sorted_positions[q]];
}

/* perm[positions[q]] = values[q] */
static __global__ void
large_scatter_kernel(const uint32_t *positions, const uint32_t *values, size_t count,
					 uint32_t *perm)
{
	for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < count;
		 q += (size_t) gridDim.x * blockDim.x)
		perm[positions[q]] = values[q];
}

}								/* namespace gs */

#endif							/* GS_BUCKET_SORT_KERNELS_CUH */

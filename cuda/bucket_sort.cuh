/*-------------------------------------------------------------------------
 *
 * bucket_sort.cuh
 *	  GPU BUCKET SORT: deterministic sample sort of key-index records
 *	  (Dehne & Zaboli, "Parallel sorting for GPUs", section 4), for Hopper.
 *
 * Steps (the paper's numbering):
 *	1-2. tile_sort_kernel: each block sorts a tile of TILE records in shared
 *		 memory (cub::BlockRadixSort for one-word keys, over only the bits
 *		 that vary in the tile; cub::BlockMergeSort for wider keys) and
 *	3.	 writes SAMPLES equidistant records of it as samples.
 *	4.	 the samples are sorted (radix_sort_values, CUB) and
 *	5.	 B-1 equidistant ones become the global splitters.
 *	6.	 locate_kernel: binary search of every splitter in every sorted tile
 *		 gives the size of each (tile, bucket) piece, stored bucket-major
 *		 ("column-major" in the paper's figure 1);
 *	7.	 cub::DeviceScan::ExclusiveSum over that matrix gives each piece's
 *		 place in the output;
 *	8.	 relocate_kernel moves the pieces there (runs of consecutive records,
 *		 so the writes coalesce);
 *	9.	 bucket_sort_kernel sorts each bucket in shared memory with the same
 *		 block sort and writes the indexes of the permutation.
 *
 * Records are ordered by (key, index), which makes them all distinct: the
 * splitters are records, so a run of equal keys is cut between buckets like
 * any other run, and a bucket holds at most n/B + n/SAMPLES' records
 * whatever the distribution (all-equal input included).  The block sorts
 * themselves only compare keys: tiles are loaded in index order, and a
 * bucket is the concatenation of its pieces in tile order, each piece
 * sorted, so equal keys already come in index order and a stable sort by key
 * yields (key, index) order.
 *
 * A bucket larger than a tile (possible when n is so large that the number
 * of buckets is capped, see choose_buckets) is sorted instead by the CUB
 * radix sort, all such buckets together: they are key ranges in order, so
 * sorting their union by (key, index) sorts each one in place.
 *
 * Tiles can be sorted as soon as their records are on the device
 * (bucket_sort_tiles), which gscuda_sort_submit() does chunk by chunk;
 * bucket_sort_finish() does steps 4-9.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_BUCKET_SORT_CUH
#define GS_BUCKET_SORT_CUH

#include <vector>

#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gs_common.cuh"
#include "radix_sort.cuh"

namespace gs
{

/* Most buckets the locate and relocate kernels handle (shared memory). */
#define GS_MAX_BUCKETS 4096

/*
 * The block sort of a tile or a bucket.  One-word keys: radix sort of the
 * bits that vary, output striped (thread t holds ranks t, t+THREADS, ...,
 * so stores coalesce).  Wider keys: merge sort, which costs log2(TILE)
 * merge steps instead of 64*N/RADIX_BITS digit passes, output blocked.
 */
template <int N>
struct BlockSorter
{
	static constexpr int THREADS = 512;
	static constexpr int ITEMS = 8;
	static constexpr int TILE = THREADS * ITEMS;
	static constexpr bool STRIPED = false;
	static constexpr bool USES_BITS = false;

	struct KeyLess
	{
		__device__ __forceinline__ bool operator()(const Key<N> &a, const Key<N> &b) const
		{
			return key_less(a, b);
		}
	};
	using Sort = cub::BlockMergeSort<Key<N>, THREADS, ITEMS, uint32_t>;
	using TempStorage = typename Sort::TempStorage;

	static __device__ __forceinline__ void
	sort(TempStorage &temp, Key<N> (&keys)[ITEMS], uint32_t (&idx)[ITEMS], int, int)
	{
		Sort(temp).StableSort(keys, idx, KeyLess());
	}
};

template <>
struct BlockSorter<1>
{
	static constexpr int THREADS = 512;
	static constexpr int ITEMS = 16;
	static constexpr int TILE = THREADS * ITEMS;
	static constexpr bool STRIPED = true;
	static constexpr bool USES_BITS = true;

	using Sort = cub::BlockRadixSort<uint64_t, THREADS, ITEMS, uint32_t, 5>;
	using TempStorage = typename Sort::TempStorage;

	static __device__ __forceinline__ void
	sort(TempStorage &temp, Key<1> (&keys)[ITEMS], uint32_t (&idx)[ITEMS],
		 int begin_bit, int end_bit)
	{
		uint64_t	k[ITEMS];

#pragma unroll
		for (int i = 0; i < ITEMS; i++)
			k[i] = keys[i].w[0];
		Sort(temp).SortBlockedToStriped(k, idx, begin_bit, end_bit);
#pragma unroll
		for (int i = 0; i < ITEMS; i++)
			keys[i].w[0] = k[i];
	}
};

/* Records between two samples of a tile. */
#define GS_SAMPLE_STEP 32

template <int N>
struct BucketShape
{
	using Sorter = BlockSorter<N>;
	static constexpr int TILE = Sorter::TILE;
	static constexpr int SAMPLES = TILE / GS_SAMPLE_STEP;	/* per tile */
};

/* Position in the block of item i of thread t after the block sort. */
template <int N>
__device__ __forceinline__ int
sorted_position(int t, int i)
{
	return BlockSorter<N>::STRIPED ? i * BlockSorter<N>::THREADS + t
		: t * BlockSorter<N>::ITEMS + i;
}

/* Load records [base, base+valid) blocked, padding with the max key. */
template <int N>
__device__ __forceinline__ void
load_blocked(const Key<N> *keys, const uint32_t *idx_in, size_t base, int valid,
			 uint32_t first_index, Key<N> (&k)[BlockSorter<N>::ITEMS],
			 uint32_t (&v)[BlockSorter<N>::ITEMS])
{
	constexpr int ITEMS = BlockSorter<N>::ITEMS;
	int			first = threadIdx.x * ITEMS;

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			p = first + i;

		if (p < valid)
		{
			k[i] = keys[base + p];
			v[i] = idx_in ? idx_in[base + p] : first_index + (uint32_t) p;
		}
		else
		{
			k[i] = key_max<N>();
			v[i] = GS_PAD_INDEX;
		}
	}
}

/*
 * Steps 1-3: sort tiles tile_begin.. of records[0..n) into tkeys/tidx and
 * write SAMPLES samples per tile (the max key where a tile is short).
 */
template <int N>
__global__ void __launch_bounds__(BlockSorter<N>::THREADS)
tile_sort_kernel(const Key<N> *keys, size_t n, size_t tile_begin,
				 Key<N> *tkeys, uint32_t *tidx, Key<N> *skeys, uint32_t *sidx)
{
	using Sorter = BlockSorter<N>;
	constexpr int ITEMS = Sorter::ITEMS;
	constexpr int TILE = Sorter::TILE;
	extern __shared__ __align__(16) unsigned char smem[];
	typename Sorter::TempStorage &temp = *reinterpret_cast<typename Sorter::TempStorage *>(smem);
	__shared__ unsigned long long tile_diff;
	size_t		tile = tile_begin + blockIdx.x;
	size_t		base = tile * TILE;
	int			valid = (int) (n - base < (size_t) TILE ? n - base : TILE);
	Key<N>		k[ITEMS];
	uint32_t	v[ITEMS];
	int			begin_bit = 0,
				end_bit = 64;

	load_blocked<N>(keys, nullptr, base, valid, (uint32_t) base, k, v);

	if (Sorter::USES_BITS)
	{
		/* sort only the bits in which the tile's keys differ */
		uint64_t	first = keys[base].w[0];
		uint64_t	diff = 0;

		if (threadIdx.x == 0)
			tile_diff = 0;
		__syncthreads();
#pragma unroll
		for (int i = 0; i < ITEMS; i++)
		{
			if ((int) threadIdx.x * ITEMS + i < valid)
				diff |= k[i].w[0] ^ first;
		}
		for (int off = 16; off > 0; off >>= 1)
			diff |= __shfl_xor_sync(0xFFFFFFFFu, diff, off);
		if ((threadIdx.x & 31) == 0 && diff)
			atomicOr(&tile_diff, (unsigned long long) diff);
		__syncthreads();
		diff_bit_range(tile_diff, &begin_bit, &end_bit);
		if (end_bit == 0)
			end_bit = 1;		/* all keys equal: a stable no-op pass */
		/*
		 * The padding (all ones) sorts after the real keys in any bit range,
		 * and after equal ones because it comes last and the sort is stable.
		 */
	}

	Sorter::sort(temp, k, v, begin_bit, end_bit);

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			p = sorted_position<N>(threadIdx.x, i);

		if (p < valid)
		{
			tkeys[base + p] = k[i];
			tidx[base + p] = v[i];
		}
		if (p % GS_SAMPLE_STEP == 0)
		{
			size_t		s = tile * BucketShape<N>::SAMPLES + p / GS_SAMPLE_STEP;

			skeys[s] = p < valid ? k[i] : key_max<N>();
			sidx[s] = p < valid ? v[i] : GS_PAD_INDEX;
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
 * Step 9: sort bucket j in shared memory (if it fits a tile) and write the
 * indexes.  A bucket between splitters of equal key holds only that key,
 * already in index order, and is copied.
 */
template <int N>
__global__ void __launch_bounds__(BlockSorter<N>::THREADS)
bucket_sort_kernel(const Key<N> *bkeys, const uint32_t *bidx, const uint32_t *bstart,
				   int nbuckets, const Key<N> *spl_keys, uint32_t *perm)
{
	using Sorter = BlockSorter<N>;
	constexpr int ITEMS = Sorter::ITEMS;
	constexpr int TILE = Sorter::TILE;
	extern __shared__ __align__(16) unsigned char smem[];
	typename Sorter::TempStorage &temp = *reinterpret_cast<typename Sorter::TempStorage *>(smem);
	int			j = blockIdx.x;
	size_t		start = bstart[j];
	int			size = (int) (bstart[j + 1] - start);
	Key<N>		k[ITEMS];
	uint32_t	v[ITEMS];
	Key<N>		lo = j > 0 ? spl_keys[j - 1] : Key<N>{};
	Key<N>		hi = j < nbuckets - 1 ? spl_keys[j] : key_max<N>();
	bool		one_key = key_equal(lo, hi);

	if (size == 0 || size > TILE)
		return;

	load_blocked<N>(bkeys, bidx, start, size, 0, k, v);
	if (one_key)
	{
#pragma unroll
		for (int i = 0; i < ITEMS; i++)
		{
			int			p = threadIdx.x * ITEMS + i;

			if (p < size)
				perm[start + p] = v[i];
		}
		return;
	}

	{
		int			begin_bit = 0,
					end_bit = 64;

		/* every key of the bucket shares the bits above lo ^ hi's top bit */
		if (Sorter::USES_BITS)
		{
			diff_bit_range(lo.w[0] ^ hi.w[0], &begin_bit, &end_bit);
			begin_bit = 0;
		}
		Sorter::sort(temp, k, v, begin_bit, end_bit);
	}
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			p = sorted_position<N>(threadIdx.x, i);

		if (p < size)
			perm[start + p] = v[i];
	}
}

/* The positions of the records of the buckets too large for a block. */
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

static __global__ void
large_scatter_kernel(const uint32_t *positions, const uint32_t *sorted_positions,
					 const uint32_t *bidx, size_t count, uint32_t *perm)
{
	for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < count;
		 q += (size_t) gridDim.x * blockDim.x)
		perm[positions[q]] = bidx[sorted_positions[q]];
}

template <typename Kernel>
inline void
allow_smem(Kernel kernel, size_t bytes)
{
	if (bytes > 48 * 1024)
		GS_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
									  (int) bytes));
}

/* Records per tile of the bucket sort of key_words-word keys. */
inline size_t
bucket_tile_records(int key_words)
{
	return key_words == 1 ? BucketShape<1>::TILE : BucketShape<2>::TILE;
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
	using Sorter = BlockSorter<N>;
	size_t		smem = sizeof(typename Sorter::TempStorage);

	if (tile_end <= tile_begin)
		return;
	allow_smem(tile_sort_kernel<N>, smem);
	tile_sort_kernel<N><<<(unsigned) (tile_end - tile_begin), Sorter::THREADS, smem, ctx.stream>>>(
		(const Key<N> *) keys, n, tile_begin, (Key<N> *) tkeys, tidx,
		(Key<N> *) skeys, sidx);
	check_launch(ctx, "tile_sort_kernel");
}

/*
 * How many buckets: enough that the average bucket fills half a tile (the
 * slack absorbs the deviation of sample sort), at most GS_MAX_BUCKETS (the
 * locate and relocate kernels hold per-bucket arrays in shared memory) and
 * the number of samples.
 */
inline int
choose_buckets(size_t n, size_t tile, size_t nsamples)
{
	size_t		b = div_up(n, tile / 2);

	if (b > GS_MAX_BUCKETS)
		b = GS_MAX_BUCKETS;
	if (b > nsamples)
		b = nsamples;
	return b < 1 ? 1 : (int) b;
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
	using Sorter = BlockSorter<N>;
	constexpr size_t TILE = BucketShape<N>::TILE;
	constexpr size_t SAMPLES = BucketShape<N>::SAMPLES;
	size_t		ntiles = div_up(n, TILE);
	size_t		nsamples_all = ntiles * SAMPLES;
	size_t		nsamples = (n / TILE) * SAMPLES + div_up(n % TILE, GS_SAMPLE_STEP);
	int			nbuckets = choose_buckets(n, TILE, nsamples);
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

	if (n == 0)
		return;

	/* 4-5: sort the samples by (key, index), pick the splitters */
	radix_sort_values(ctx, skeys, N, nsamples_all, nullptr, sample_order.get(), diff, false);
	if (nbuckets > 1)
	{
		pick_splitters_kernel<N><<<div_up(nbuckets, 256), 256, 0, ctx.stream>>>(
			(const Key<N> *) skeys, sidx, sample_order.get(), nsamples, nbuckets,
			spl_keys.get(), spl_idx.get());
		check_launch(ctx, "pick_splitters_kernel");
	}

	/* 6: pieces per (bucket, tile) */
	locate_kernel<N><<<(unsigned) ntiles, 512, 0, ctx.stream>>>(
		(const Key<N> *) tkeys, tidx, n, ntiles, nbuckets, spl_keys.get(), spl_idx.get(),
		cnt.get());
	check_launch(ctx, "locate_kernel");

	/* 7: where each piece goes */
	GS_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, cnt.get(), offs.get(),
										   (uint32_t) (ntiles * nbuckets), ctx.stream));
	scan_temp.allocate(ctx.mem, scan_bytes);
	GS_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, cnt.get(), offs.get(),
										   (uint32_t) (ntiles * nbuckets), ctx.stream));
	check_launch(ctx, "cub::DeviceScan::ExclusiveSum");

	/* 8: move the pieces */
	relocate_kernel<N><<<(unsigned) ntiles, 512, 0, ctx.stream>>>(
		(const Key<N> *) tkeys, tidx, n, ntiles, nbuckets, cnt.get(), offs.get(),
		bkeys, bidx.get());
	check_launch(ctx, "relocate_kernel");

	bucket_starts_kernel<<<div_up(nbuckets + 1, 256), 256, 0, ctx.stream>>>(
		offs.get(), ntiles, nbuckets, n, bstart.get());
	check_launch(ctx, "bucket_starts_kernel");

	/* 9: sort the buckets that fit a block */
	{
		size_t		smem = sizeof(typename Sorter::TempStorage);

		allow_smem(bucket_sort_kernel<N>, smem);
		bucket_sort_kernel<N><<<nbuckets, Sorter::THREADS, smem, ctx.stream>>>(
			bkeys, bidx.get(), bstart.get(), nbuckets, spl_keys.get(), perm);
		check_launch(ctx, "bucket_sort_kernel");
	}

	/* ... and the others with the radix sort (the host decides: sync) */
	GS_CHECK(cudaMemcpyAsync(host_bstart.data(), bstart.get(),
							 (nbuckets + 1) * sizeof(uint32_t),
							 cudaMemcpyDeviceToHost, ctx.stream));
	GS_CHECK(cudaStreamSynchronize(ctx.stream));
	{
		std::vector<uint32_t> rstart, rlen, rout;
		size_t		large = 0;

		for (int j = 0; j < nbuckets; j++)
		{
			uint32_t	size = host_bstart[j + 1] - host_bstart[j];

			if (size > TILE)
			{
				rstart.push_back(host_bstart[j]);
				rlen.push_back(size);
				rout.push_back((uint32_t) large);
				large += size;
			}
		}
		if (large > 0)
		{
			size_t		nr = rstart.size();
			DevBuf<uint32_t> ranges(ctx.mem, 3 * nr);
			DevBuf<uint32_t> positions(ctx.mem, large);
			DevBuf<uint32_t> sorted(ctx.mem, large);

			rstart.insert(rstart.end(), rlen.begin(), rlen.end());
			rstart.insert(rstart.end(), rout.begin(), rout.end());
			GS_CHECK(cudaMemcpyAsync(ranges.get(), rstart.data(), 3 * nr * sizeof(uint32_t),
									 cudaMemcpyHostToDevice, ctx.stream));
			large_positions_kernel<<<(unsigned) nr, 256, 0, ctx.stream>>>(
				ranges.get(), ranges.get() + nr, ranges.get() + 2 * nr, positions.get());
			check_launch(ctx, "large_positions_kernel");
			radix_sort_values(ctx, keys, N, large, positions.get(), sorted.get(), diff, false);
			large_scatter_kernel<<<stream_blocks(large), 256, 0, ctx.stream>>>(
				positions.get(), sorted.get(), bidx.get(), large, perm);
			check_launch(ctx, "large_scatter_kernel");
			/* the host vectors must outlive the copy */
			GS_CHECK(cudaStreamSynchronize(ctx.stream));
		}
	}
}

}								/* namespace gs */

#endif							/* GS_BUCKET_SORT_CUH */

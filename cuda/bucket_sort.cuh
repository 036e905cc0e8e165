/*-------------------------------------------------------------------------
 *
 * bucket_sort.cuh
 *	  GPU BUCKET SORT: deterministic sample sort of key-index records
 *	  (Dehne & Zaboli, "Parallel sorting for GPUs", section 4), for Hopper.
 *
 * Steps (the paper's numbering):
 *	1-2. tile_sort_kernel: each block sorts a tile of TILE records in shared
 *		 memory (BlockKeySort, below) and
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
 * The block sort (BlockKeySort) sorts a tile or a bucket in shared memory
 * by rounds of 32-bit digits taken from the bits in which the block's keys
 * differ: one round when those bits decide the order (random keys, keys
 * of up to 32 varying bits), another for the runs of equal digits whose
 * keys differ further on.  Each round is a radix sort of 8-bit digits
 * ranked with cub::BlockRadixRankMatch, and only the digits and 16-bit
 * positions pass through shared memory, so wide keys cost little more than
 * one-word keys.
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
 * from a sample of its records (see split_buckets); a count pass finds
 * each record's sub-bucket by binary search, keeps it (a byte a record)
 * and counts the records of each (sub-bucket, chunk); and a move pass,
 * after a scan of those counts, scatters the records stably (ranks by
 * sub-bucket number from cub::BlockRadixRankMatch) so that every
 * sub-bucket is contiguous and in its original order.  Sub-buckets are
 * then sorted like buckets.  Whatever still does not fit a block (the
 * sub-splitters come from a sample, so now and then a sub-bucket
 * overflows) is sorted by the CUB radix sort, all such ranges together:
 * they are key ranges in order, so sorting their union by (key, index)
 * sorts each one in place.
 *
 * Tiles can be sorted as soon as their records are on the device
 * (bucket_sort_tiles), which gscuda_sort_submit() does chunk by chunk;
 * bucket_sort_finish() does steps 4-9.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_BUCKET_SORT_CUH
#define GS_BUCKET_SORT_CUH

#include <algorithm>
#include <map>
#include <vector>

#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gs_common.cuh"
#include "radix_sort.cuh"

namespace gs
{

/* Most buckets the locate and relocate kernels handle (shared memory). */
#define GS_MAX_BUCKETS 4096
/* Most sub-buckets a bucket is split into at the second level. */
#define GS_MAX_SUBBUCKETS 256
/* Records between two samples of a tile. */
#define GS_SAMPLE_STEP 32

/*
 * Tests only (gscuda_set_bucket_limit): treat buckets larger than this as
 * too large for a block, so that small inputs take the second level and
 * the radix fallback.  0: the tile size.
 */
inline size_t bucket_limit_override = 0;

/*
 * Block and tile shape: 512 threads of 16 records each, whatever the key
 * width, since the block sort keeps only 32-bit digits of the keys and
 * 16-bit positions in shared memory (the keys themselves stay in global
 * memory, where the tile was just read, and are re-read through the cache).
 * Measured on the H100 (bench/results/kernel.md): one block of 512 threads
 * with up to 128 registers each per SM sorts faster than two blocks held
 * to 64 registers (which spill) or one of 1024 threads.
 */
template <int N>
struct BucketShape
{
	static constexpr int THREADS = 512;
	static constexpr int ITEMS = 16;
	static constexpr int TILE = THREADS * ITEMS;
	static constexpr int SAMPLES = TILE / GS_SAMPLE_STEP;	/* per tile */
};

/* Rank held in item i of thread t after a block sort. */
template <int N>
__device__ __forceinline__ int
rank_of(int t, int i, bool striped)
{
	return striped ? i * BucketShape<N>::THREADS + t : t * BucketShape<N>::ITEMS + i;
}

/*
 * Where item i of thread t (ITEMS items per thread) is read from:
 * warp-striped, the order in which cub::BlockRadixRankMatch's ranks are
 * stable, and in which a warp's loads coalesce.
 */
template <int ITEMS>
__device__ __forceinline__ int
warp_striped_position(int t, int i)
{
	return (t >> 5) * 32 * ITEMS + i * 32 + (t & 31);
}

/*
 * Bits of an N-word key are numbered as one string in sort order: bit 0
 * is the most significant bit of word 0, bit 64N-1 the least significant
 * of word N-1.  key_bits() returns `width` (1..32) bits of k starting at
 * bit `start`, as an unsigned number (bits past the key's end read as 0).
 * k points to memory (global or shared): the word is chosen at run time.
 */
template <int N>
__device__ __forceinline__ uint32_t
key_bits(const uint64_t *k, int start, int width)
{
	int			w = start >> 6;
	int			off = start & 63;
	uint64_t	bits = 0;

	if (w < N)
	{
		bits = k[w] << off;
		if (off != 0 && w + 1 < N)
			bits |= k[w + 1] >> (64 - off);
	}
	return (uint32_t) (bits >> (64 - width));
}

/* The first bit at or after `from` that is set in diff (64N if none). */
template <int N>
__device__ __forceinline__ int
next_set_bit(const uint64_t *diff, int from)
{
	for (int w = from >> 6; w < N; w++)
	{
		uint64_t	m = diff[w];

		if (w == (from >> 6))
			m &= ~(uint64_t) 0 >> (from & 63);
		if (m)
			return w * 64 + __clzll((long long) m);
	}
	return 64 * N;
}

/*
 * Stable sort of up to TILE records in shared memory by key: an MSD radix
 * sort by rounds, each round an LSD radix sort of 32-bit digits
 * (sort_digits, below).
 *
 * Round one sorts the 32 bits that start at the highest bit in which the
 * block's keys differ (bits that are equal in the whole block are never
 * looked at).  Keys that differ only below those bits now sit next to each
 * other in index order; if there are none (always when at most 32 bits
 * vary, and for random keys, where two records of a tile agree on 32
 * varying bits with a probability of about 1%), the block is sorted.
 * Otherwise each run of records with equal digits gets its number, and the
 * next round sorts every record by (run number, the next varying bits of
 * its key), as many bits as the run number leaves room for (at least 19).
 * Each round is stable over index order, so equal keys stay in index
 * order and the result is the (key, index) order.  A round moves on by at
 * least 19 bits, so there are at most 1 + (64N - 32) / 19 rounds (rounded
 * up: 3 for one-word keys, 13 for four), and the last ones only for keys
 * that agree on long stretches of varying bits; in practice one or two
 * (float keys in [0, 1), whose leading bits are nearly all equal, take two
 * in most tiles and cost 5-10% more than random keys).
 *
 * The previous block sort, a cub::BlockRadixSort of whole 64-bit keys (13
 * passes of 5-bit digits moving 8-byte keys, and a merge sort of the whole
 * keys when they were wider), took 2.3 times as long for a tile of 8-byte
 * keys (bench/results/kernel.md).  Fewer, wider passes do not pay: three
 * passes of 10 bits (30-bit digits) or of 11 took 10% and 40% longer on
 * the H100, the ranking's counters growing 4 and 8 times and spilling.
 */
template <int N>
struct BlockKeySort
{
	using Shape = BucketShape<N>;
	static constexpr int THREADS = Shape::THREADS;
	static constexpr int ITEMS = Shape::ITEMS;
	static constexpr int TILE = Shape::TILE;
	static constexpr int DIGIT_BITS = 32;
	static constexpr int RADIX_BITS = 8;
	using RankMatch = cub::BlockRadixRankMatch<THREADS, RADIX_BITS, false>;
	using Scan = cub::BlockScan<uint32_t, THREADS>;

	/* the radix sort: ranking, and the exchange of digits and positions */
	struct RadixStorage
	{
		typename RankMatch::TempStorage rank;
		uint32_t	digits[TILE];
		uint16_t	pos[TILE];
	};

	/*
	 * Stable LSD radix sort of the block's (digit, position) pairs, given
	 * in the input arrangement, by bits [begin_bit, end_bit) of the
	 * digits, 8 bits a pass: cub::BlockRadixRankMatch ranks each pass
	 * (warp-private counters and __match_any_sync, as CUB's onesweep
	 * device sort does; 4 passes for 32 bits where cub::BlockRadixSort's
	 * ranking takes 7 of 5 bits), and the pairs are exchanged through
	 * shared memory.  They come back striped (item i of thread t has rank
	 * i * THREADS + t).
	 */
	static __device__ void
	sort_digits(RadixStorage &m, uint32_t (&digit)[ITEMS], uint16_t (&at)[ITEMS],
				int begin_bit, int end_bit)
	{
		const int	t = threadIdx.x;

		for (int bit = begin_bit; bit < end_bit; bit += RADIX_BITS)
		{
			const bool	last = bit + RADIX_BITS >= end_bit;
			int			rank[ITEMS];

			/* its first barrier orders the previous pass's reads before our writes */
			RankMatch(m.rank).RankKeys(digit, rank,
									   cub::BFEDigitExtractor<uint32_t>(bit, min(RADIX_BITS, end_bit - bit)));
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				m.digits[rank[i]] = digit[i];
				m.pos[rank[i]] = at[i];
			}
			__syncthreads();
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				int			r = last ? i * THREADS + t : warp_striped_position<ITEMS>(t, i);

				digit[i] = m.digits[r];
				at[i] = m.pos[r];
			}
		}
	}

	static_assert(TILE <= 65536, "positions are 16-bit");

	/* a round's result in rank order, and each record's run number */
	struct Ranked
	{
		uint32_t	digits[TILE];
		uint16_t	pos[TILE];
		uint16_t	run_of[TILE];	/* by position */
	};

	struct Storage
	{
		union
		{
			RadixStorage radix;
			Ranked		ranked;
		}			temp;
		typename Scan::TempStorage scan;
		uint64_t	diff[N];
	};

	/*
	 * Sort records [0, valid) of keys (1 <= valid <= TILE; keys points to
	 * device memory).  On return pos[i] is the position in keys of the
	 * record of rank rank_of<N>(threadIdx.x, i, *striped); ranks >= valid
	 * hold padding.
	 */
	static __device__ void
	sort(Storage &s, const Key<N> *keys, int valid, uint32_t (&pos)[ITEMS], bool *striped)
	{
		const int	t = threadIdx.x;
		int			start,
					run_bits = 0;
		uint32_t	nruns = 1;
		uint32_t	digit[ITEMS];
		uint16_t	at[ITEMS];

		/* which bits differ from record 0's, per word */
		if (t < N)
			s.diff[t] = 0;
		__syncthreads();
		{
			const Key<N> first = keys[0];
			uint64_t	d[N];

#pragma unroll
			for (int w = 0; w < N; w++)
				d[w] = 0;
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				int			p = warp_striped_position<ITEMS>(t, i);

				if (p < valid)
				{
					const Key<N> k = keys[p];

#pragma unroll
					for (int w = 0; w < N; w++)
						d[w] |= k.w[w] ^ first.w[w];
				}
			}
#pragma unroll
			for (int w = 0; w < N; w++)
			{
				for (int off = 16; off > 0; off >>= 1)
					d[w] |= __shfl_xor_sync(0xFFFFFFFFu, d[w], off);
				if ((t & 31) == 0 && d[w])
					atomicOr((unsigned long long *) &s.diff[w], (unsigned long long) d[w]);
			}
		}
		__syncthreads();

		start = next_set_bit<N>(s.diff, 0);
		if (start >= 64 * N)
		{
			/* all keys equal: index order is the order */
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
				pos[i] = t * ITEMS + i;
			*striped = false;
			return;
		}

		for (;;)
		{
			const int	width = DIGIT_BITS - run_bits;
			const int	next = start + width;
			const bool	last_round = next_set_bit<N>(s.diff, next) >= 64 * N;
			uint32_t	varying = key_bits<N>(s.diff, start, width);
			int			begin_bit,
						end_bit;
			bool		tie = false;

			if (run_bits > 0)
				varying |= ((1u << run_bits) - 1) << width;

			/* the digits: (run number, the next `width` bits of the key) */
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				int			p = warp_striped_position<ITEMS>(t, i);

				at[i] = (uint16_t) p;
				/* padding: all ones sorts after every record, and stably last */
				digit[i] = ~0u;
				if (p < valid)
				{
					digit[i] = key_bits<N>(keys[p].w, start, width);
					if (run_bits > 0)
						digit[i] |= (uint32_t) s.temp.ranked.run_of[p] << width;
				}
			}
			diff_bit_range(varying, &begin_bit, &end_bit);
			__syncthreads();	/* run_of shares memory with the radix sort */
			sort_digits(s.temp.radix, digit, at, begin_bit, end_bit);
			if (last_round)
				break;

			/* do records with equal digits have different keys? */
			__syncthreads();
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				s.temp.ranked.digits[i * THREADS + t] = digit[i];
				s.temp.ranked.pos[i * THREADS + t] = at[i];
			}
			__syncthreads();
#pragma unroll
			for (int i = 0; i < ITEMS; i++)
			{
				int			r = i * THREADS + t;

				if (r > 0 && r < valid && s.temp.ranked.digits[r - 1] == digit[i] &&
					!key_equal(keys[s.temp.ranked.pos[r - 1]], keys[at[i]]))
					tie = true;
			}
			if (!__syncthreads_or(tie))
				break;

			/* number the runs of equal digits in rank order */
			{
				uint32_t	run[ITEMS];

#pragma unroll
				for (int i = 0; i < ITEMS; i++)
				{
					int			r = t * ITEMS + i;

					run[i] = r < valid &&
						(r == 0 || s.temp.ranked.digits[r] != s.temp.ranked.digits[r - 1]);
				}
				Scan(s.scan).InclusiveSum(run, run, nruns);
#pragma unroll
				for (int i = 0; i < ITEMS; i++)
				{
					int			r = t * ITEMS + i;

					if (r < valid)
						s.temp.ranked.run_of[s.temp.ranked.pos[r]] = (uint16_t) (run[i] - 1);
				}
			}
			__syncthreads();
			run_bits = 32 - __clz((int) (nruns - 1));
			start = next_set_bit<N>(s.diff, next);
		}

#pragma unroll
		for (int i = 0; i < ITEMS; i++)
			pos[i] = at[i];
		*striped = true;
	}
};

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
	uint32_t	first_count;	/* its nsub x nchunks counts, sub-bucket-major */
	uint32_t	nchunks;
	uint32_t	compact;		/* records of the split buckets before it */
};

/* A block's share of a split bucket: at most a tile of records. */
struct SplitChunk
{
	uint32_t	bucket;			/* index into the SplitBucket array */
	uint32_t	ordinal;		/* chunk number within the bucket */
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

/* Threads of a split_count_kernel or split_move_kernel block (a chunk is a tile of records). */
#define GS_SPLIT_THREADS 512

static_assert(GS_MAX_SUBBUCKETS <= 256 && GS_MAX_SUBBUCKETS <= GS_SPLIT_THREADS,
			  "a sub-bucket number is one byte (one 8-bit digit), and a count one per thread");

/*
 * The sub-bucket bytes of a chunk's records (sub_of holds a byte for each
 * record of the split buckets, by its position among them).
 */
template <typename Byte>
__device__ __forceinline__ Byte *
chunk_sub_bytes(Byte *sub_of, const SplitBucket &bucket, const SplitChunk &chunk)
{
	return sub_of + bucket.compact + (chunk.start - bucket.start);
}

/*
 * Second level, the count pass over one chunk: each record's sub-bucket,
 * into sub_of (a byte a record, by position among the split buckets'
 * records, so that the move need not search again), and the number of
 * records per sub-bucket into counts (sub-bucket-major, a column per
 * chunk).
 *
 * Two blocks per SM: the binary searches are chains of dependent loads,
 * and more warps hide them (H100, 100M one-word records: split phase 3.17
 * ms with one block per SM, 2.95 with two).
 */
template <int N>
__global__ void __launch_bounds__(GS_SPLIT_THREADS, 2)
split_count_kernel(const Key<N> *keys, const uint32_t *idx, const SplitBucket *buckets,
				   const SplitChunk *chunks, const Key<N> *sub_keys, const uint32_t *sub_idx,
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
	const SplitChunk chunk = chunks[blockIdx.x];
	const SplitBucket bucket = buckets[chunk.bucket];
	const int	t = threadIdx.x;
	const int	nspl = (int) bucket.nsub - 1;
	uint8_t    *chunk_sub_of = chunk_sub_bytes(sub_of, bucket, chunk);
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
			if (p < (int) chunk.len)
			{
				k[j] = keys[chunk.start + p];
				ki[j] = idx[chunk.start + p];
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
			const bool	real = p < (int) chunk.len;

			/*
			 * A warp's records are consecutive ones of the bucket, mostly
			 * of one or two sub-buckets: one atomic per distinct
			 * sub-bucket, not 32 on one address.
			 */
			unsigned	same = __match_any_sync(0xFFFFFFFFu, real ? found[j] : -1);

			if (real)
				chunk_sub_of[p] = (uint8_t) found[j];
			if (real && (t & 31) == __ffs(same) - 1)
				atomicAdd(&hist[found[j]], (uint32_t) __popc(same));
		}
	}
	__syncthreads();
	for (int b = t; b < (int) bucket.nsub; b += THREADS)
		counts[bucket.first_count + (size_t) b * bucket.nchunks + chunk.ordinal] = hist[b];
}

/*
 * Second level, the move of one chunk: its records to out_keys/out_idx, at
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
				  const SplitChunk *chunks, const uint8_t *sub_of, const uint32_t *offs,
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
	const SplitChunk chunk = chunks[blockIdx.x];
	const SplitBucket bucket = buckets[chunk.bucket];
	const int	t = threadIdx.x;
	const uint8_t *chunk_sub_of = chunk_sub_bytes(sub_of, bucket, chunk);
	uint32_t	sub[ITEMS];
	int			rank[ITEMS];
	int			first_rank[RankMatch::BINS_TRACKED_PER_THREAD];

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
	{
		int			p = warp_striped_position<ITEMS>(t, i);

		/* padding: sub-bucket 0, ranked but never moved */
		sub[i] = p < (int) chunk.len ? chunk_sub_of[p] : 0;
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

		if (p < (int) chunk.len)
		{
			uint32_t	b = temp.by_rank.sub[r];
			size_t		dest = (size_t) bucket.start - bucket.compact +
				offs[bucket.first_count + (size_t) b * bucket.nchunks + chunk.ordinal] +
				(r - first[b]);

			out_keys[dest] = keys[chunk.start + p];
			out_idx[dest] = idx[chunk.start + p];
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
		size_t		first = bucket.first_count + (size_t) sub_number[q] * bucket.nchunks;
		size_t		last = first + bucket.nchunks - 1;
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

/*
 * Let kernel use bytes of dynamic shared memory (over 48 KB needs the
 * opt-in).  Once per kernel and process: the tile sort is launched for
 * every chunk, and the attribute call is not free.
 */
template <typename Kernel>
inline void
allow_smem(Kernel kernel, size_t bytes)
{
	static std::map<const void *, size_t> allowed;
	size_t	   &done = allowed[(const void *) kernel];

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
		GS_CHECK(cudaStreamSynchronize(ctx.stream));
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
	std::vector<SplitChunk> chunks;
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
		b.nchunks = div_up(size, TILE);
		b.compact = compact;
		for (uint32_t c = 0; c < b.nchunks; c++)
			chunks.push_back({(uint32_t) buckets.size(), c, (uint32_t) (start + c * TILE),
							  (uint32_t) std::min((size_t) size - c * TILE, TILE)});
		for (uint32_t q = 0; q < b.nsub; q++)
		{
			sub_bucket.push_back((uint32_t) buckets.size());
			sub_number.push_back(q);
		}
		nsamples += b.nsamples;
		nsplitters += b.nsub - 1;
		ncounts += b.nsub * b.nchunks;
		compact += size;
		buckets.push_back(b);
	}

	if (!buckets.empty())
	{
		size_t		nsubs = sub_bucket.size();
		DevBuf<SplitBucket> dbuckets(ctx.mem, buckets.size());
		DevBuf<SplitChunk> dchunks(ctx.mem, chunks.size());
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
		GS_CHECK(cudaMemcpyAsync(dchunks.get(), chunks.data(), chunks.size() * sizeof(SplitChunk),
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

		split_count_kernel<N><<<(unsigned) chunks.size(), GS_SPLIT_THREADS, 0, ctx.stream>>>(
			bkeys, bidx, dbuckets.get(), dchunks.get(), sub_keys.get(), sub_idx.get(),
			sub_of.get(), counts.get());
		check_launch(ctx, "split_count_kernel");
		GS_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), offs.get(),
											   ncounts, ctx.stream));
		scan_temp.allocate(ctx.mem, scan_bytes);
		GS_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, counts.get(),
											   offs.get(), ncounts, ctx.stream));
		check_launch(ctx, "cub::DeviceScan::ExclusiveSum");
		split_move_kernel<N><<<(unsigned) chunks.size(), GS_SPLIT_THREADS, 0, ctx.stream>>>(
			bkeys, bidx, dbuckets.get(), dchunks.get(), sub_of.get(), offs.get(), tkeys, perm);
		check_launch(ctx, "split_move_kernel");
		sub_bucket_bounds_kernel<<<div_up(nsubs, 256), 256, 0, ctx.stream>>>(
			dbuckets.get(), dsubs.get(), dsubs.get() + nsubs, nsubs, counts.get(), offs.get(),
			seg.get(), seg.get() + nsubs);
		check_launch(ctx, "sub_bucket_bounds_kernel");

		phase_mark(ctx, "sub-bucket sort");
		sort_segments<N>(ctx, tkeys, perm, seg.get(), seg.get() + nsubs, nsubs, limit, perm);

		/* sub-buckets still too large (the host decides: sync) */
		GS_CHECK(cudaMemcpyAsync(host_seg.data(), seg.get(), 2 * nsubs * sizeof(uint32_t),
								 cudaMemcpyDeviceToHost, ctx.stream));
		GS_CHECK(cudaStreamSynchronize(ctx.stream));
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
	GS_CHECK(cudaMemcpyAsync(host_bstart.data(), bstart.get(),
							 (nbuckets + 1) * sizeof(uint32_t),
							 cudaMemcpyDeviceToHost, ctx.stream));
	GS_CHECK(cudaStreamSynchronize(ctx.stream));
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

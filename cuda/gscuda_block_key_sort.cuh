/*-------------------------------------------------------------------------
 *
 * gscuda_block_key_sort.cuh
 *	  BlockKeySort: the block-level sort of the GPU bucket sort, which sorts
 *	  a tile or a bucket of key-index records in shared memory.
 *
 * The block sort (BlockKeySort) sorts a tile or a bucket in shared memory
 * by rounds of 32-bit digits taken from the bits in which the block's keys
 * differ: one round when those bits decide the order (random keys, keys
 * of up to 32 varying bits), another for the ranges of equal digits whose
 * keys differ further on.  Each round is a radix sort of 8-bit digits
 * ranked with cub::BlockRadixRankMatch, and only the digits and 16-bit
 * positions pass through shared memory, so wide keys cost little more than
 * one-word keys.
 *
 * This is the bucket sort's block primitive, kept apart from its kernels
 * as CUB keeps its block primitives (cub/block/...) apart from
 * device-level dispatch: it knows nothing of where a tile lies in the
 * input, of samples or of buckets, and holds nothing host-side.
 * gscuda_bucket_sort_kernels.cuh runs it in tile_sort_kernel and
 * bucket_sort_kernel (blocks of BucketShape<N>::THREADS threads with
 * sizeof(BlockKeySort<N>::Storage) bytes of dynamic shared memory) and
 * reads its result through rank_of<N>(); gscuda_bucket_sort.cuh launches those
 * kernels and describes the whole algorithm.  BucketShape, the block and
 * tile shape the block sort is built for, lives here with it, and so does
 * the bucket sort's sample step (GS_SAMPLE_STEP), from which BucketShape
 * gives the samples per tile, so that the tile's shape is defined in one
 * place.  warp_striped_position() serves the second level's kernels too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_BLOCK_KEY_SORT_CUH
#define GS_BLOCK_KEY_SORT_CUH

#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_scan.cuh>

#include "gscuda_common.cuh"

namespace gs
{

/* Records between two samples of a tile. */
#define GS_SAMPLE_STEP 32

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
 * Otherwise each range of records with equal digits gets its number, and the
 * next round sorts every record by (range number, the next varying bits of
 * its key), as many bits as the range number leaves room for (at least 19).
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

	/* a round's result in rank order, and each record's range number */
	struct Ranked
	{
		uint32_t	digits[TILE];
		uint16_t	pos[TILE];
		uint16_t	range_of[TILE];	/* by position */
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
					range_bits = 0;
		uint32_t	nranges = 1;
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
			const int	width = DIGIT_BITS - range_bits;
			const int	next = start + width;
			const bool	last_round = next_set_bit<N>(s.diff, next) >= 64 * N;
			uint32_t	varying = key_bits<N>(s.diff, start, width);
			int			begin_bit,
						end_bit;
			bool		tie = false;

			if (range_bits > 0)
				varying |= ((1u << range_bits) - 1) << width;

			/* the digits: (range number, the next `width` bits of the key) */
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
					if (range_bits > 0)
						digit[i] |= (uint32_t) s.temp.ranked.range_of[p] << width;
				}
			}
			diff_bit_range(varying, &begin_bit, &end_bit);
			__syncthreads();	/* range_of shares memory with the radix sort */
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

			/* number the ranges of equal digits in rank order */
			{
				uint32_t	range[ITEMS];

#pragma unroll
				for (int i = 0; i < ITEMS; i++)
				{
					int			r = t * ITEMS + i;

					range[i] = r < valid &&
						(r == 0 || s.temp.ranked.digits[r] != s.temp.ranked.digits[r - 1]);
				}
				Scan(s.scan).InclusiveSum(range, range, nranges);
#pragma unroll
				for (int i = 0; i < ITEMS; i++)
				{
					int			r = t * ITEMS + i;

					if (r < valid)
						s.temp.ranked.range_of[s.temp.ranked.pos[r]] = (uint16_t) (range[i] - 1);
				}
			}
			__syncthreads();
			range_bits = 32 - __clz((int) (nranges - 1));
			start = next_set_bit<N>(s.diff, next);
		}

#pragma unroll
		for (int i = 0; i < ITEMS; i++)
			pos[i] = at[i];
		*striped = true;
	}
};

}								/* namespace gs */

#endif							/* GS_BLOCK_KEY_SORT_CUH */

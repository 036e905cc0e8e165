/*-------------------------------------------------------------------------
 *
 * radix_sort.cuh
 *	  The presorted check and the CUB radix sort of key-index records.
 *
 * presort_scan() looks at a range of records as chunks arrive: whether each
 * record is >= (not ascending) or < (not strictly descending) its
 * predecessor, and which bits of each key word differ from record 0's.  The
 * latter lets every radix pass skip bits that are equal in all keys (the
 * high bytes of small integers, the pad of short keys), as the CPU engine
 * skips constant digits.
 *
 * radix_sort_values() sorts a list of record positions by the records'
 * keys: least significant word first, one cub::DeviceRadixSort::SortPairs
 * per word that varies (uint64 key, uint32 position), over only the bits
 * that vary.  Every pass is stable and the list starts in index order, so
 * ties come out in index order: the (key, index) order of the contract.
 * One instantiation of SortPairs serves every key width, which keeps the
 * compilation short.  The bucket sort uses it too, for its samples and for
 * buckets too large for shared memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_RADIX_SORT_CUH
#define GS_RADIX_SORT_CUH

#include <cub/device/device_radix_sort.cuh>

#include "gs_common.cuh"

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

/* out[q] = word w of the record at position vals[q] (or q). */
static __global__ void
gather_word_kernel(const uint64_t *keys, int key_words, int w,
				   const uint32_t *vals, size_t count, uint64_t *out)
{
	for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < count;
		 q += (size_t) gridDim.x * blockDim.x)
	{
		size_t		r = vals ? vals[q] : q;

		out[q] = keys[r * key_words + w];
	}
}

static __global__ void
iota_kernel(uint32_t *out, size_t count)
{
	for (size_t q = blockIdx.x * (size_t) blockDim.x + threadIdx.x; q < count;
		 q += (size_t) gridDim.x * blockDim.x)
		out[q] = (uint32_t) q;
}

inline unsigned
stream_blocks(size_t count)
{
	unsigned	blocks = div_up(count, 256 * 4);

	return blocks == 0 ? 1 : (blocks > 65535 ? 65535 : blocks);
}

/*
 * Sort the positions vals_in[0..count) (NULL: 0..count-1, in that order) of
 * records keys (key_words words each) stably by key into vals_out.  diff[w]
 * holds the bits of word w that may differ (NULL: all).  If keys_scratch is
 * true, key_words is 1 and vals_in is NULL, keys is used as a sort buffer
 * and comes out scrambled (saves a copy).
 */
inline void
radix_sort_values(const GsContext &ctx, uint64_t *keys, int key_words, size_t count,
				  const uint32_t *vals_in, uint32_t *vals_out,
				  const uint64_t *diff, bool keys_scratch)
{
	bool		use_keys_as_buffer = keys_scratch && key_words == 1 && vals_in == nullptr;
	DevBuf<uint64_t> key_a, key_b;
	DevBuf<uint32_t> val_a, temp_vals;
	DevBuf<unsigned char> temp;
	size_t		temp_bytes = 0;
	uint32_t   *cur_vals;
	bool		sorted_any = false;

	if (count == 0)
		return;
	if (count >= ((size_t) 1 << 32))
		fail("sorts of 2^32 records or more are not supported");

	/* the values ping-pong between val_a and vals_out */
	val_a.allocate(ctx.mem, count);
	if (vals_in)
		GS_CHECK(cudaMemcpyAsync(val_a.get(), vals_in, count * sizeof(uint32_t),
								 cudaMemcpyDeviceToDevice, ctx.stream));
	else
	{
		iota_kernel<<<stream_blocks(count), 256, 0, ctx.stream>>>(val_a.get(), count);
		check_launch(ctx, "iota_kernel");
	}
	cur_vals = val_a.get();

	if (!use_keys_as_buffer)
		key_a.allocate(ctx.mem, count);
	key_b.allocate(ctx.mem, count);
	GS_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes,
											 (uint64_t *) nullptr, (uint64_t *) nullptr,
											 (uint32_t *) nullptr, (uint32_t *) nullptr,
											 (uint32_t) count, 0, 64, ctx.stream));
	temp.allocate(ctx.mem, temp_bytes);

	for (int w = key_words - 1; w >= 0; w--)
	{
		int			begin_bit = 0,
					end_bit = 64;
		uint64_t   *word_keys;

		if (diff)
		{
			diff_bit_range(diff[w], &begin_bit, &end_bit);
			if (end_bit == 0)
				continue;		/* this word is equal in every key */
		}
		if (use_keys_as_buffer)
			word_keys = keys;
		else
		{
			gather_word_kernel<<<stream_blocks(count), 256, 0, ctx.stream>>>(
				keys, key_words, w, sorted_any || vals_in ? cur_vals : nullptr,
				count, key_a.get());
			check_launch(ctx, "gather_word_kernel");
			word_keys = key_a.get();
		}

		{
			uint32_t   *alt_vals = cur_vals == val_a.get() ? vals_out : val_a.get();
			cub::DoubleBuffer<uint64_t> kbuf(word_keys, key_b.get());
			cub::DoubleBuffer<uint32_t> vbuf(cur_vals, alt_vals);
			size_t		bytes = temp_bytes;

			GS_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, kbuf, vbuf,
													 (uint32_t) count, begin_bit, end_bit,
													 ctx.stream));
			check_launch(ctx, "cub::DeviceRadixSort::SortPairs");
			cur_vals = vbuf.Current();
		}
		sorted_any = true;
	}

	if (cur_vals != vals_out)
		GS_CHECK(cudaMemcpyAsync(vals_out, cur_vals, count * sizeof(uint32_t),
								 cudaMemcpyDeviceToDevice, ctx.stream));
}

}								/* namespace gs */

#endif							/* GS_RADIX_SORT_CUH */

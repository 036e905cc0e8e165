/*-------------------------------------------------------------------------
 *
 * gscuda_radix_sort.cuh
 *	  The CUB radix sort of key-index records: the engine's radix algorithm,
 *	  and the bucket sort's sort of its samples and of buckets too large for
 *	  a block.
 *
 * radix_sort_values() sorts a list of record positions by the records'
 * keys: least significant word first, one cub::DeviceRadixSort::SortPairs
 * per word that varies (uint64 key, uint32 position), over only the bits
 * that vary (gscuda_presort.cuh's scan finds them, as the CPU engine skips
 * constant digits).  Every pass is stable and the list starts in index
 * order, so ties come out in index order: the (key, index) order of the
 * contract.  One instantiation of SortPairs serves every key width, which
 * keeps the compilation short.  gscuda_dispatch.cu and gscuda_bucket_sort.cuh call
 * it; the kernel benchmark (bench/kernel_bench.cu) uses its iota_kernel.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_RADIX_SORT_CUH
#define GS_RADIX_SORT_CUH

#include <cub/device/device_radix_sort.cuh>

#include "gscuda_common.cuh"

namespace gs
{

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

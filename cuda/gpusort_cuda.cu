/*-------------------------------------------------------------------------
 *
 * gpusort_cuda.cu
 *	  The C interface of the CUDA engine (gpusort_cuda.h): CUDA start-up,
 *	  pinned chunk buffers, the chunk pipeline, memory limits, fault
 *	  injection, statistics.  The algorithms live in bucket_sort.cuh (which
 *	  includes its kernels, bucket_sort_kernels.cuh, and its block sort,
 *	  block_key_sort.cuh) and radix_sort.cuh.
 *
 * Pipeline.  Each submitted chunk is copied to the device on the sort's own
 * stream (from its pinned chunk buffer, or piece by piece from the caller's
 * registered memory as the pieces arrive), scanned for order
 * (presort_scan), and, for the bucket sort, every tile whose records have
 * all arrived is sorted at once: the copies and the tile sorts run while
 * the caller encodes the next chunk.  The device key array grows (doubling)
 * when more records arrive than expected.  finish waits for the scan,
 * answers presorted input without sorting, runs the rest of the algorithm,
 * and copies the permutation into a pinned buffer, or keeps it on the
 * device for the caller to download into its registered memory.  finish
 * comes in two steps, start (everything queued on the stream) and wait, so
 * that the parts of a split sort work at once, each on its own stream.
 *
 * Source indexes.  A sort that carries them (the parts of a split sort)
 * ships a pinned chunk of uint32 source indexes with each chunk of keys
 * into a device array beside the keys; once sorted, its permutation of
 * positions is mapped through that array on the device (gather_index_kernel),
 * so that the result, kept there for the caller to download, is already in
 * the caller's record numbers and no pass over it runs on the host.
 *
 * Errors.  Every CUDA call is checked, every launch followed by
 * cudaGetLastError; internally an error is a GsError exception, caught by
 * each extern "C" function, which fills errbuf and returns non-zero.  Device
 * memory is stream-ordered (cudaMallocAsync) and always freed by
 * gscuda_sort_end, which also trims the memory pool so that the device's
 * free memory returns to what it was.  No static constructor touches CUDA.
 *
 *-------------------------------------------------------------------------
 */
#include <atomic>
#include <map>
#include <new>
#include <string.h>
#include <unordered_map>
#include <vector>

#include "gpusort_cuda.h"
#include "gs_common.cuh"
#include "radix_sort.cuh"
#include "bucket_sort.cuh"
#include "gpusort_internal.cuh"

#define GS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace gs;

/*
 * Per-process CUDA state.  The GPU service opens each device it is allowed
 * with gscuda_init() and points each sort's calls at its device with
 * gscuda_select_device(); the process is single-threaded, so "the current
 * device" is one variable.
 */
#define GSCUDA_MAX_DEVICES 16
static int	cuda_init_state = 0;	/* 1: some device is ready */
static int	device_state[GSCUDA_MAX_DEVICES];	/* 0 untried, 1 ready, -1 failed */
static char device_error[GSCUDA_MAX_DEVICES][256];
static char device_name[GSCUDA_MAX_DEVICES][256];
static int	cuda_device = 0;
static int	cuda_device_count_cached = -2;	/* -2: not asked yet */
static char cuda_count_error[256];

/* the fault armed for the next sort */
static std::atomic<int> armed_fault(GSCUDA_FAULT_NONE);

/* a sticky error (or GSCUDA_FAULT_LOST): no sort of this process uses CUDA */
static bool cuda_lost = false;
static char cuda_lost_error[256];

static void
set_error(char *errbuf, size_t errlen, const char *msg)
{
	if (errbuf && errlen > 0)
	{
		strncpy(errbuf, msg, errlen - 1);
		errbuf[errlen - 1] = '\0';
	}
}

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

/* Tile records and samples per tile of the bucket sort. */
static size_t
samples_for(int key_words, size_t records)
{
	return (size_t) div_up(records, bucket_tile_records(key_words)) *
		bucket_tile_samples(key_words);
}

static void
sort_tiles(const GsContext &ctx, int key_words, const uint64_t *keys, size_t n,
		   size_t tile_begin, size_t tile_end, uint64_t *tkeys, uint32_t *tidx,
		   uint64_t *skeys, uint32_t *sidx)
{
	with_key_words(key_words, [&](auto width) {
		bucket_sort_tiles<decltype(width)::value>(ctx, keys, n, tile_begin, tile_end,
												  tkeys, tidx, skeys, sidx);
	});
}

static void
finish_buckets(const GsContext &ctx, int key_words, uint64_t *keys, size_t n,
			   uint64_t *tkeys, uint32_t *tidx, uint64_t *skeys, uint32_t *sidx,
			   const uint64_t *diff, uint32_t *perm)
{
	with_key_words(key_words, [&](auto width) {
		bucket_sort_finish<decltype(width)::value>(ctx, keys, n, tkeys, tidx, skeys, sidx,
												   diff, perm);
	});
}

/* 1: in order, 2: strictly descending, 0: neither. */
static int
presorted_direction(const PresortStats &st, size_t n)
{
	if (n < 2 || !st.not_ascending)
		return 1;
	if (!st.not_descending)
		return 2;
	return 0;
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
		radix_sort_values(ctx, keys, key_words, n, nullptr, perm, st.diff, true);
	else
	{
		size_t		nsamples = samples_for(key_words, n);
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

/* One sort in progress. */
/*
 * Pinned host memory kept for the next sort of this process.  Pinning is
 * slow (the pages are faulted in and locked: tens of milliseconds for the
 * keys of 10M records), and a backend that sorts once tends to sort again,
 * so buffers go back to this cache at the end of a sort, up to
 * pinned_cache_limit bytes (gpusort.pinned_cache); the rest is freed.
 * Backends are single-threaded: no locking.
 */
static std::multimap<size_t, void *> pinned_free_list;
static std::unordered_map<void *, size_t> pinned_sizes;
static size_t pinned_cached = 0;
static size_t pinned_cache_limit = (size_t) 512 << 20;

static void
pinned_trim(size_t limit)
{
	while (pinned_cached > limit && !pinned_free_list.empty())
	{
		auto		largest = std::prev(pinned_free_list.end());

		pinned_cached -= largest->first;
		pinned_sizes.erase(largest->second);
		(void) cudaFreeHost(largest->second);
		pinned_free_list.erase(largest);
	}
}

/* A pinned buffer of at least `bytes`: a cached one if it is not too big. */
static void *
pinned_alloc(size_t bytes)
{
	auto		it = pinned_free_list.lower_bound(bytes);
	void	   *p = nullptr;

	if (it != pinned_free_list.end() && it->first <= 2 * bytes)
	{
		p = it->second;
		pinned_cached -= it->first;
		pinned_free_list.erase(it);
		return p;
	}
	if (cudaMallocHost(&p, bytes) != cudaSuccess)
	{
		/* maybe the cache holds what the system is missing */
		(void) cudaGetLastError();
		pinned_trim(0);
		GS_CHECK(cudaMallocHost(&p, bytes));
	}
	pinned_sizes[p] = bytes;
	return p;
}

static void
pinned_release(void *p)
{
	auto		it = pinned_sizes.find(p);

	if (it == pinned_sizes.end())
		return;
	if (!cuda_lost && pinned_cached + it->second <= pinned_cache_limit)
	{
		pinned_free_list.insert({it->second, p});
		pinned_cached += it->second;
	}
	else
	{
		pinned_sizes.erase(it);
		(void) cudaFreeHost(p);
	}
}

GS_EXPORT void
gscuda_set_pinned_cache(size_t bytes)
{
	pinned_cache_limit = bytes;
	pinned_trim(bytes);
}

GS_EXPORT void
gscuda_set_wait_hook(GsCudaWaitHook hook)
{
	wait_hook = hook;
}

/* The GPU is gone for this process: remember why, keep no pinned cache. */
static void
mark_lost(const char *what, cudaError_t err)
{
	if (!cuda_lost)
		snprintf(cuda_lost_error, sizeof(cuda_lost_error), "GPU lost: %s: %s",
				 what, cudaGetErrorString(err));
	cuda_lost = true;
	pinned_trim(0);
}

[[noreturn]] static void
lose_device(const char *what, cudaError_t err)
{
	mark_lost(what, err);
	fail(cuda_lost_error);
}

/*
 * After a failed call: is the context still usable?  A sticky error (an
 * illegal address, a device fallen off the bus) comes back from every later
 * call; an ordinary one is returned once.
 */
static void
probe_lost(void)
{
	cudaError_t err;

	if (cuda_lost || cuda_init_state != 1)
		return;
	(void) cudaGetLastError();
	if (cudaDeviceSynchronize() == cudaSuccess)
		return;
	(void) cudaGetLastError();
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess)
		mark_lost("sticky error", err);
}

struct GsCudaSort
{
	int			key_words = 1;
	size_t		chunk_records = 0;
	size_t		expected_records = 0;
	GsCudaAlgorithm algorithm = GSCUDA_ALGO_RADIX;	/* resolved */
	int			fault = GSCUDA_FAULT_NONE;

	GsMemory	mem;
	GsContext	ctx;
	cudaStream_t stream = nullptr;

	/* pinned chunk buffers, allocated in slabs */
	std::vector<uint64_t *> chunks;
	std::vector<void *> slabs;
	size_t		slab_chunks = 1;

	/* source indexes (gscuda_sort_carry_index): pinned chunks, device array */
	bool		carry_index = false;
	std::vector<uint32_t *> index_chunks;
	std::vector<void *> index_slabs;
	DevBuf<uint32_t> src_index;

	/* what has arrived on the device */
	size_t		submitted_records = 0;
	size_t		next_chunk = 0;
	bool		uploading = false;	/* next_chunk came by gscuda_sort_upload */
	cudaEvent_t copied = nullptr;	/* recorded after the latest upload or
									 * download */
	size_t		capacity = 0;	/* records the device arrays hold */
	DevBuf<uint64_t> keys;
	DevBuf<PresortStats> presort;

	/* bucket sort: tiles sorted as chunks arrive */
	DevBuf<uint64_t> tkeys;
	DevBuf<uint32_t> tidx;
	DevBuf<uint64_t> skeys;
	DevBuf<uint32_t> sidx;
	size_t		tiles_sorted = 0;

	/* timing */
	std::vector<cudaEvent_t> events;	/* pairs around each chunk copy */
	cudaEvent_t sort_start = nullptr,
				sort_end = nullptr,
				d2h_start = nullptr,
				d2h_end = nullptr;

	/* finish_start done, finish_wait not yet */
	bool		finishing = false;
	int			direction = 0;	/* presorted_direction() of the finishing sort */

	/* the result */
	bool		keep_perm = false;	/* on the device, for gscuda_sort_download */
	DevBuf<uint32_t> device_perm;	/* the kept permutation, unless the bucket
									 * sort's tidx holds it */
	const uint32_t *kept_perm = nullptr;
	size_t		kept_records = 0;
	uint32_t   *host_perm = nullptr;
	PresortStats *host_presort = nullptr;

	bool		bucket() const { return algorithm == GSCUDA_ALGO_BUCKET; }
};

static void
make_event(cudaEvent_t *ev)
{
	GS_CHECK(cudaEventCreate(ev));
}

/* Free everything; never throws. */
static void
release_sort(GsCudaSort *sort)
{
	if (sort->stream)
	{
		if (cudaStreamSynchronize(sort->stream) != cudaSuccess)
			(void) cudaGetLastError();
	}
	sort->keys.reset();
	sort->src_index.reset();
	sort->device_perm.reset();
	sort->kept_perm = nullptr;
	sort->presort.reset();
	sort->tkeys.reset();
	sort->tidx.reset();
	sort->skeys.reset();
	sort->sidx.reset();
	for (cudaEvent_t ev : sort->events)
		(void) cudaEventDestroy(ev);
	sort->events.clear();
	for (cudaEvent_t *ev : {&sort->sort_start, &sort->sort_end, &sort->d2h_start, &sort->d2h_end,
							&sort->copied})
	{
		if (*ev)
			(void) cudaEventDestroy(*ev);
		*ev = nullptr;
	}
	for (void *slab : sort->slabs)
		pinned_release(slab);
	sort->slabs.clear();
	sort->chunks.clear();
	for (void *slab : sort->index_slabs)
		pinned_release(slab);
	sort->index_slabs.clear();
	sort->index_chunks.clear();
	if (sort->host_perm)
		pinned_release(sort->host_perm);
	sort->host_perm = nullptr;
	if (sort->host_presort)
		pinned_release(sort->host_presort);
	sort->host_presort = nullptr;
	if (sort->stream)
	{
		cudaMemPool_t pool;

		if (cudaStreamSynchronize(sort->stream) != cudaSuccess)
			(void) cudaGetLastError();
		(void) cudaStreamDestroy(sort->stream);
		sort->stream = nullptr;
		/* give the freed device memory back, so that others see it free */
		if (cudaDeviceGetDefaultMemPool(&pool, cuda_device) == cudaSuccess)
			(void) cudaMemPoolTrimTo(pool, 0);
	}
	(void) cudaGetLastError();
}

/*
 * Device bytes of a record's number in its request, where the sort carries
 * them (gscuda_sort_carry_index): the one figure for what such a sort holds
 * (resident_bytes_per_record) and for what the service counts for the
 * numbers it sends (gscuda_sort_index_bytes).
 */
static const size_t index_bytes_per_record = sizeof(uint32_t);

/* Device bytes per record the sort holds while chunks arrive. */
static size_t
resident_bytes_per_record(const GsCudaSort *sort)
{
	size_t		b = sort->key_words * sizeof(uint64_t);

	if (sort->bucket())
		b += sort->key_words * sizeof(uint64_t) + sizeof(uint32_t) +
			(sort->key_words * sizeof(uint64_t) + sizeof(uint32_t)) / GS_SAMPLE_STEP + 1;
	if (sort->carry_index)
		b += index_bytes_per_record;
	return b;
}

/* Further device bytes finish needs for n records (estimate, no fallback). */
static size_t
finish_bytes(const GsCudaSort *sort, size_t n)
{
	/* bucket indexes, the sample order and more, a sub-bucket byte a record */
	if (sort->bucket())
		return n * (sizeof(uint32_t) * 3 + sizeof(uint64_t) * 2 / GS_SAMPLE_STEP +
					sizeof(uint8_t)) + (64 << 20);
	/* values twice, word keys twice (once for one word), CUB temp */
	return n * (2 * sizeof(uint32_t) + (sort->key_words == 1 ? 1 : 2) * sizeof(uint64_t)) +
		n / 8 + (64 << 20);
}

/* Fail unless bytes more fit under the limit and in the device's free memory. */
static void
check_room(const GsCudaSort *sort, size_t bytes)
{
	size_t		free_bytes = 0,
				total_bytes = 0;
	char		buf[200];

	if (sort->mem.limit != 0 && sort->mem.used + bytes > sort->mem.limit)
	{
		snprintf(buf, sizeof(buf), "sort needs about %zu MB of GPU memory, over its limit of %zu MB",
				 (sort->mem.used + bytes) >> 20, sort->mem.limit >> 20);
		fail(buf);
	}
	GS_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
	if (bytes + (256 << 20) > free_bytes)
	{
		snprintf(buf, sizeof(buf), "sort needs about %zu MB more GPU memory, %zu MB free",
				 bytes >> 20, free_bytes >> 20);
		fail(buf);
	}
}

/* Make the device arrays hold at least records records (keeping content). */
static void
ensure_capacity(GsCudaSort *sort, size_t records)
{
	size_t		cap;
	int			kw = sort->key_words;

	if (records <= sort->capacity)
		return;
	cap = sort->capacity * 2;
	if (cap < records)
		cap = records;
	if (cap < sort->expected_records)
		cap = sort->expected_records;
	/* whole chunks, whole tiles */
	cap = (size_t) div_up(cap, sort->chunk_records) * sort->chunk_records;
	if (sort->bucket())
		cap = (size_t) div_up(cap, bucket_tile_records(kw)) * bucket_tile_records(kw);
	check_room(sort, (cap - sort->capacity) * resident_bytes_per_record(sort));

	{
		DevBuf<uint64_t> keys(&sort->mem, cap * kw);

		if (sort->submitted_records)
			GS_CHECK(cudaMemcpyAsync(keys.get(), sort->keys.get(),
									 sort->submitted_records * kw * sizeof(uint64_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
		sort->keys.swap(keys);
	}
	if (sort->carry_index)
	{
		DevBuf<uint32_t> index(&sort->mem, cap);

		if (sort->submitted_records)
			GS_CHECK(cudaMemcpyAsync(index.get(), sort->src_index.get(),
									 sort->submitted_records * sizeof(uint32_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
		sort->src_index.swap(index);
	}
	if (sort->bucket())
	{
		size_t		tile = bucket_tile_records(kw);
		size_t		sorted = sort->tiles_sorted * tile;
		size_t		nsamples = samples_for(kw, cap);
		size_t		sorted_samples = sort->tiles_sorted * bucket_tile_samples(kw);
		DevBuf<uint64_t> tkeys(&sort->mem, cap * kw);
		DevBuf<uint32_t> tidx(&sort->mem, cap);
		DevBuf<uint64_t> skeys(&sort->mem, nsamples * kw);
		DevBuf<uint32_t> sidx(&sort->mem, nsamples);

		if (sorted)
		{
			GS_CHECK(cudaMemcpyAsync(tkeys.get(), sort->tkeys.get(), sorted * kw * sizeof(uint64_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
			GS_CHECK(cudaMemcpyAsync(tidx.get(), sort->tidx.get(), sorted * sizeof(uint32_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
			GS_CHECK(cudaMemcpyAsync(skeys.get(), sort->skeys.get(),
									 sorted_samples * kw * sizeof(uint64_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
			GS_CHECK(cudaMemcpyAsync(sidx.get(), sort->sidx.get(),
									 sorted_samples * sizeof(uint32_t),
									 cudaMemcpyDeviceToDevice, sort->stream));
		}
		sort->tkeys.swap(tkeys);
		sort->tidx.swap(tidx);
		sort->skeys.swap(skeys);
		sort->sidx.swap(sidx);
	}
	sort->capacity = cap;
}

/* Copy chunk chunkno (nrecords records) to the device and start on it. */
static void
submit_chunk(GsCudaSort *sort, size_t chunkno, size_t nrecords)
{
	size_t		start = chunkno * sort->chunk_records;
	size_t		end = start + nrecords;
	int			kw = sort->key_words;
	cudaEvent_t ev[2];
	bool		uploaded = sort->uploading && chunkno == sort->next_chunk;

	if (!uploaded && (chunkno >= sort->chunks.size() || sort->chunks[chunkno] == nullptr))
		fail("chunk submitted before its buffer was requested");
	if (sort->carry_index && nrecords > 0 &&
		(chunkno >= sort->index_chunks.size() || sort->index_chunks[chunkno] == nullptr))
		fail("chunk submitted before its source indexes were written");
	if (nrecords > sort->chunk_records)
		fail("chunk holds more records than chunk_records");
	if (chunkno != sort->next_chunk || start != sort->submitted_records)
		fail("chunks must be submitted in order, all full but the last");
	if (end >= ((size_t) 1 << 32) - 1)
		fail("sorts of 2^32 records or more are not supported");
	if (sort->fault == GSCUDA_FAULT_LOST && chunkno > 0)
		lose_device("device lost after the first chunk (injected fault)",
					cudaErrorDevicesUnavailable);
	sort->uploading = false;
	if (nrecords == 0)
	{
		sort->next_chunk++;
		return;
	}

	ensure_capacity(sort, end);
	if (!uploaded || sort->carry_index)
	{
		make_event(&ev[0]);
		sort->events.push_back(ev[0]);
		make_event(&ev[1]);
		sort->events.push_back(ev[1]);

		GS_CHECK(cudaEventRecord(ev[0], sort->stream));
		if (sort->fault == GSCUDA_FAULT_H2D)
			fail("cudaMemcpyAsync to the device (injected fault)", cudaErrorInvalidValue);
		if (!uploaded)
			GS_CHECK(cudaMemcpyAsync(sort->keys.get() + start * kw, sort->chunks[chunkno],
									 nrecords * kw * sizeof(uint64_t), cudaMemcpyHostToDevice,
									 sort->stream));
		if (sort->carry_index)
			GS_CHECK(cudaMemcpyAsync(sort->src_index.get() + start, sort->index_chunks[chunkno],
									 nrecords * sizeof(uint32_t), cudaMemcpyHostToDevice,
									 sort->stream));
		GS_CHECK(cudaEventRecord(ev[1], sort->stream));
	}

	presort_scan(sort->ctx, kw, sort->keys.get(), start, end, sort->presort.get());
	sort->submitted_records = end;
	sort->next_chunk++;

	/* the bucket sort's tiles whose records have all arrived */
	if (sort->bucket() && nrecords == sort->chunk_records)
	{
		size_t		complete = end / bucket_tile_records(kw);

		if (complete > sort->tiles_sorted)
		{
			sort_tiles(sort->ctx, kw, sort->keys.get(), end, sort->tiles_sorted, complete,
					   sort->tkeys.get(), sort->tidx.get(), sort->skeys.get(), sort->sidx.get());
			sort->tiles_sorted = complete;
		}
	}
}

/*
 * Copy nwords words of chunk chunkno, from word word_offset on, from src
 * (registered host memory) to the device, where the chunk's keys go.  The
 * chunk is the next one to be submitted; its device room is made before its
 * first piece arrives, so that no later growth moves pieces already there.
 */
static void
upload_piece(GsCudaSort *sort, size_t chunkno, size_t word_offset,
			 const uint64_t *src, size_t nwords)
{
	size_t		start = chunkno * sort->chunk_records;
	int			kw = sort->key_words;
	cudaEvent_t ev[2];

	if (chunkno != sort->next_chunk || start != sort->submitted_records)
		fail("keys uploaded for a chunk other than the next one");
	if (word_offset + nwords > sort->chunk_records * kw)
		fail("keys uploaded beyond the end of their chunk");
	if (start >= ((size_t) 1 << 32) - 1)
		fail("sorts of 2^32 records or more are not supported");
	ensure_capacity(sort, start + sort->chunk_records);
	sort->uploading = true;
	if (nwords == 0)
		return;

	make_event(&ev[0]);
	sort->events.push_back(ev[0]);
	make_event(&ev[1]);
	sort->events.push_back(ev[1]);
	if (sort->copied == nullptr)
		make_event(&sort->copied);
	GS_CHECK(cudaEventRecord(ev[0], sort->stream));
	if (sort->fault == GSCUDA_FAULT_H2D)
		fail("cudaMemcpyAsync to the device (injected fault)", cudaErrorInvalidValue);
	GS_CHECK(cudaMemcpyAsync(sort->keys.get() + start * kw + word_offset, src,
							 nwords * sizeof(uint64_t), cudaMemcpyHostToDevice, sort->stream));
	GS_CHECK(cudaEventRecord(ev[1], sort->stream));
	GS_CHECK(cudaEventRecord(sort->copied, sort->stream));
}

/* Copy indexes [first, first + n) of a kept permutation to dst. */
static void
download_piece(GsCudaSort *sort, size_t first, size_t n, uint32_t *dst)
{
	if (sort->kept_perm == nullptr)
		fail("no permutation kept on the device");
	if (first + n > sort->kept_records)
		fail("download beyond the end of the permutation");
	if (sort->fault == GSCUDA_FAULT_D2H)
		fail("cudaMemcpyAsync to the host (injected fault)", cudaErrorInvalidValue);
	if (n == 0)
		return;
	if (sort->copied == nullptr)
		make_event(&sort->copied);
	GS_CHECK(cudaMemcpyAsync(dst, sort->kept_perm + first, n * sizeof(uint32_t),
							 cudaMemcpyDeviceToHost, sort->stream));
	GS_CHECK(cudaEventRecord(sort->copied, sort->stream));
}

static float
elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float		ms = 0;

	GS_CHECK(cudaEventElapsedTime(&ms, a, b));
	return ms;
}

/* gpu_busy (tests only): the stream is busy for ns nanoseconds. */
static __global__ void
busy_kernel(unsigned long long ns)
{
	unsigned long long start,
				now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do
	{
		__nanosleep(1000000);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

/* out[k] = index[perm[k]]: sorted positions to the caller's source indexes. */
static __global__ void
gather_index_kernel(const uint32_t *perm, const uint32_t *index, size_t n, uint32_t *out)
{
	for (size_t k = blockIdx.x * (size_t) blockDim.x + threadIdx.x; k < n;
		 k += (size_t) gridDim.x * blockDim.x)
		out[k] = index[perm[k]];
}

/*
 * The first half of finish: submit what is left, sort, map the permutation
 * through the source indexes if the sort carries them, and queue its copy
 * to pinned memory unless it stays on the device.  Everything is queued on
 * the sort's stream; the host waits only for the presorted check (and
 * inside the bucket sort), so that the caller can start the next sort of a
 * split while this one runs.  finish_wait() completes it.
 */
static void
finish_start(GsCudaSort *sort, size_t n)
{
	int			kw = sort->key_words;
	int			direction;
	uint32_t   *perm;

	if (sort->finishing)
		fail("the sort is already finishing");
	/* the last chunks, if the caller filled but did not submit them */
	while (sort->submitted_records < n)
	{
		size_t		c = sort->next_chunk;
		size_t		left = n - sort->submitted_records;

		submit_chunk(sort, c, left < sort->chunk_records ? left : sort->chunk_records);
	}
	if (sort->submitted_records != n)
		fail("more records were submitted than the sort was asked to finish");
	if (sort->fault == GSCUDA_FAULT_LOST)
		lose_device("device lost after the first chunk (injected fault)",
					cudaErrorDevicesUnavailable);

	make_event(&sort->sort_start);
	make_event(&sort->sort_end);
	make_event(&sort->d2h_start);
	make_event(&sort->d2h_end);
	GS_CHECK(cudaEventRecord(sort->sort_start, sort->stream));

	if (n > 0)
	{
		GS_CHECK(cudaMemcpyAsync(sort->host_presort, sort->presort.get(), sizeof(PresortStats),
								 cudaMemcpyDeviceToHost, sort->stream));
		GS_CHECK(wait_stream(sort->stream));
	}
	if (sort->fault == GSCUDA_FAULT_KERNEL)
		fail("kernel execution (injected fault)", cudaErrorLaunchFailure);
	if (sort->fault == GSCUDA_FAULT_BUSY)
	{
		busy_kernel<<<1, 1, 0, sort->stream>>>((unsigned long long) GSCUDA_BUSY_MS * 1000000);
		check_launch(sort->ctx, "busy_kernel");
	}
	direction = presorted_direction(*sort->host_presort, n);

	/* the mapping through source indexes takes one more array of n */
	if (direction)
		check_room(sort, n * sizeof(uint32_t) * (sort->carry_index ? 2 : 1));
	else
		check_room(sort, finish_bytes(sort, n));

	sort->device_perm.reset();
	if (sort->bucket() && n > 0)
		perm = sort->tidx.get();	/* dead once the buckets are filled */
	else
	{
		sort->device_perm.allocate(&sort->mem, n);
		perm = sort->device_perm.get();
	}

	if (n == 0)
		;
	else if (direction)
		fill_presorted(sort->ctx, perm, n, direction);
	else if (sort->bucket())
	{
		size_t		ntiles = div_up(n, bucket_tile_records(kw));

		sort_tiles(sort->ctx, kw, sort->keys.get(), n, sort->tiles_sorted, ntiles,
				   sort->tkeys.get(), sort->tidx.get(), sort->skeys.get(), sort->sidx.get());
		sort->tiles_sorted = ntiles;
		finish_buckets(sort->ctx, kw, sort->keys.get(), n, sort->tkeys.get(),
					   sort->tidx.get(), sort->skeys.get(), sort->sidx.get(),
					   sort->host_presort->diff, perm);
	}
	else
		radix_sort_values(sort->ctx, sort->keys.get(), kw, n, nullptr, perm,
						  sort->host_presort->diff, true);
	if (!sort->carry_index)
		GS_CHECK(cudaEventRecord(sort->sort_end, sort->stream));

	/*
	 * Positions to source indexes.  The positions' array, unless it is the
	 * bucket sort's tidx, and the source indexes are dead afterwards: freed
	 * in stream order.
	 */
	if (sort->carry_index)
	{
		if (n > 0)
		{
			DevBuf<uint32_t> mapped(&sort->mem, n);

			gather_index_kernel<<<stream_blocks(n), 256, 0, sort->stream>>>(
				perm, sort->src_index.get(), n, mapped.get());
			check_launch(sort->ctx, "gather_index_kernel");
			sort->device_perm.swap(mapped);
			perm = sort->device_perm.get();
		}
		sort->src_index.reset();
		GS_CHECK(cudaEventRecord(sort->sort_end, sort->stream));
	}

	/* the permutation: kept on the device, or into pinned memory */
	if (sort->host_perm)
		pinned_release(sort->host_perm);
	sort->host_perm = nullptr;
	GS_CHECK(cudaEventRecord(sort->d2h_start, sort->stream));
	if (sort->keep_perm)
	{
		sort->kept_perm = perm;
		sort->kept_records = n;
	}
	else
	{
		sort->host_perm = (uint32_t *) pinned_alloc((n > 0 ? n : 1) * sizeof(uint32_t));
		if (sort->fault == GSCUDA_FAULT_D2H)
			fail("cudaMemcpyAsync to the host (injected fault)", cudaErrorInvalidValue);
		if (n > 0)
			GS_CHECK(cudaMemcpyAsync(sort->host_perm, perm, n * sizeof(uint32_t),
									 cudaMemcpyDeviceToHost, sort->stream));
	}
	GS_CHECK(cudaEventRecord(sort->d2h_end, sort->stream));
	sort->direction = direction;
	sort->finishing = true;
}

/* The second half of finish: wait for what finish_start queued. */
static void
finish_wait(GsCudaSort *sort, const uint32_t **perm_out, GsCudaStats *stats)
{
	double		h2d = 0;

	if (!sort->finishing)
		fail("the sort's finish was not started");
	sort->finishing = false;
	GS_CHECK(wait_stream(sort->stream));
	if (!sort->keep_perm)
		sort->device_perm.reset();	/* copied out: give its memory back */

	for (size_t i = 0; i + 1 < sort->events.size(); i += 2)
		h2d += elapsed_ms(sort->events[i], sort->events[i + 1]);
	if (stats)
	{
		memset(stats, 0, sizeof(*stats));
		snprintf(stats->algorithm, sizeof(stats->algorithm), "%s",
				 sort->direction ? "presorted" :
				 sort->bucket() ? "bucket sort" : "radix sort");
		stats->h2d_ms = h2d;
		stats->sort_ms = elapsed_ms(sort->sort_start, sort->sort_end);
		stats->d2h_ms = elapsed_ms(sort->d2h_start, sort->d2h_end);
		stats->device_bytes = sort->mem.peak;
		stats->presorted = sort->direction;
	}
	*perm_out = sort->host_perm;
}

/* ---------- the C interface ---------- */

static void
init_cuda(int device)
{
	int			count = 0;
	cudaDeviceProp prop;

	GS_CHECK(cudaGetDeviceCount(&count));
	if (device < 0 || device >= count)
	{
		char		buf[128];

		snprintf(buf, sizeof(buf), "no CUDA device %d (%d found)", device, count);
		fail(buf);
	}
	GS_CHECK(cudaSetDevice(device));
	GS_CHECK(cudaFree(0));		/* create the context now */
	GS_CHECK(cudaGetDeviceProperties(&prop, device));
	if (prop.major < 9)
	{
		char		buf[400];

		snprintf(buf, sizeof(buf), "%s has compute capability %d.%d; gpusort is built for 9.0",
				 prop.name, prop.major, prop.minor);
		fail(buf);
	}
	snprintf(device_name[device], sizeof(device_name[device]), "%s", prop.name);
	cuda_device = device;
}

GS_EXPORT int
gscuda_init(int device, char *name, size_t namelen, size_t *free_bytes,
			size_t *total_bytes, char *errbuf, size_t errlen)
{
	try
	{
		if (device < 0 || device >= GSCUDA_MAX_DEVICES)
			fail("device number out of range");
		if (device_state[device] == 0)
		{
			try
			{
				init_cuda(device);
				device_state[device] = 1;
				cuda_init_state = 1;
			}
			catch (const GsError &e)
			{
				snprintf(device_error[device], sizeof(device_error[device]), "%s",
						 e.message.c_str());
				device_state[device] = -1;
			}
		}
		if (device_state[device] < 0)
		{
			set_error(errbuf, errlen, device_error[device]);
			return 1;
		}
		if (name && namelen > 0)
			set_error(name, namelen, device_name[device]);
		if (free_bytes || total_bytes)
		{
			size_t		f = 0,
						t = 0;

			GS_CHECK(cudaSetDevice(device));
			GS_CHECK(cudaMemGetInfo(&f, &t));
			GS_CHECK(cudaSetDevice(cuda_device));
			if (free_bytes)
				*free_bytes = f;
			if (total_bytes)
				*total_bytes = t;
		}
		return 0;
	}
	catch (const GsError &e)
	{
		set_error(errbuf, errlen, e.message.c_str());
	}
	catch (...)
	{
		set_error(errbuf, errlen, "unexpected error in gscuda_init");
	}
	return 1;
}

GS_EXPORT int
gscuda_select_device(int device)
{
	if (device < 0 || device >= GSCUDA_MAX_DEVICES || device_state[device] != 1)
		return 1;
	if (device != cuda_device && cudaSetDevice(device) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return 1;
	}
	cuda_device = device;
	return 0;
}

GS_EXPORT size_t
gscuda_sort_bytes(int key_words, GsCudaAlgorithm algorithm, size_t nrecords)
{
	GsCudaSort	probe;

	probe.key_words = key_words < 1 ? 1 : (key_words > GSCUDA_MAX_KEY_WORDS ?
										   GSCUDA_MAX_KEY_WORDS : key_words);
	probe.algorithm = resolve_algorithm(algorithm, probe.key_words);
	return nrecords * resident_bytes_per_record(&probe) + finish_bytes(&probe, nrecords);
}

GS_EXPORT size_t
gscuda_sort_index_bytes(size_t nrecords)
{
	return nrecords * index_bytes_per_record;
}

GS_EXPORT void
gscuda_sort_set_mem_limit(GsCudaSort *sort, size_t mem_limit)
{
	if (sort)
		sort->mem.limit = mem_limit;
}

GS_EXPORT size_t
gscuda_sort_memory(GsCudaSort *sort)
{
	return sort ? sort->mem.peak : 0;
}

GS_EXPORT int
gscuda_device_count(char *errbuf, size_t errlen)
{
	if (cuda_device_count_cached == -2)
	{
		int			count = 0;
		cudaError_t err = cudaGetDeviceCount(&count);

		if (err != cudaSuccess)
		{
			(void) cudaGetLastError();
			snprintf(cuda_count_error, sizeof(cuda_count_error), "cudaGetDeviceCount: %s",
					 cudaGetErrorString(err));
			cuda_device_count_cached = -1;
		}
		else
			cuda_device_count_cached = count;
	}
	if (cuda_device_count_cached < 0)
		set_error(errbuf, errlen, cuda_count_error);
	return cuda_device_count_cached;
}

GS_EXPORT void
gscuda_set_fault(GsCudaFault fault)
{
	armed_fault.store((int) fault);
}

GS_EXPORT void
gscuda_set_bucket_limit(size_t records)
{
	bucket_limit_override = records;
}

GS_EXPORT int
gscuda_lost(char *errbuf, size_t errlen)
{
	if (!cuda_lost)
		return 0;
	set_error(errbuf, errlen, cuda_lost_error);
	return 1;
}

GS_EXPORT GsCudaSort *
gscuda_sort_begin(int key_words, size_t chunk_records, size_t expected_records,
				  GsCudaAlgorithm algorithm, size_t mem_limit, char *errbuf, size_t errlen)
{
	GsCudaSort *sort = nullptr;

	try
	{
		int			fault = armed_fault.exchange(GSCUDA_FAULT_NONE);

		if (cuda_lost)
			fail(cuda_lost_error);
		if (fault == GSCUDA_FAULT_INIT)
			fail("CUDA initialization (injected fault)", cudaErrorInitializationError);
		if (cuda_init_state == 0 && gscuda_init(0, nullptr, 0, nullptr, nullptr, errbuf, errlen) != 0)
			return nullptr;
		if (device_state[cuda_device] != 1)
			fail(device_error[cuda_device]);
		if (key_words < 1 || key_words > GSCUDA_MAX_KEY_WORDS)
			fail("key_words must be 1 to 4");
		if (chunk_records == 0 || (chunk_records & (chunk_records - 1)) != 0)
			fail("chunk_records must be a power of two");
		if (algorithm < GSCUDA_ALGO_AUTO || algorithm > GSCUDA_ALGO_RADIX)
			fail("unknown algorithm");
		GS_CHECK(cudaSetDevice(cuda_device));

		sort = new GsCudaSort();
		sort->key_words = key_words;
		sort->chunk_records = chunk_records;
		sort->expected_records = expected_records;
		sort->algorithm = resolve_algorithm(algorithm, key_words);
		sort->fault = fault;
		{
			size_t		chunk_bytes = chunk_records * key_words * sizeof(uint64_t);
			size_t		slab = ((size_t) 16 << 20) / chunk_bytes;

			sort->slab_chunks = slab < 1 ? 1 : (slab > 64 ? 64 : slab);
		}
		GS_CHECK(cudaStreamCreateWithFlags(&sort->stream, cudaStreamNonBlocking));
		sort->mem.limit = mem_limit;
		sort->mem.fault = fault;
		sort->mem.stream = sort->stream;
		sort->ctx.stream = sort->stream;
		sort->ctx.mem = &sort->mem;
		sort->ctx.fault = fault;
		/* from the pinned cache: a sort of the service's is one of many */
		sort->host_presort = (PresortStats *) pinned_alloc(sizeof(PresortStats));
		memset(sort->host_presort, 0, sizeof(PresortStats));
		sort->presort.allocate(&sort->mem, 1);
		GS_CHECK(cudaMemsetAsync(sort->presort.get(), 0, sizeof(PresortStats), sort->stream));
		if (expected_records > 0)
		{
			/* fail now rather than after the data has been produced */
			check_room(sort, expected_records *
					   resident_bytes_per_record(sort) + finish_bytes(sort, expected_records));
			ensure_capacity(sort, expected_records);
		}
		return sort;
	}
	catch (const GsError &e)
	{
		set_error(errbuf, errlen, e.message.c_str());
	}
	catch (const std::bad_alloc &)
	{
		set_error(errbuf, errlen, "out of host memory");
	}
	catch (...)
	{
		set_error(errbuf, errlen, "unexpected error in gscuda_sort_begin");
	}
	if (sort)
	{
		release_sort(sort);
		delete sort;
	}
	return nullptr;
}

/*
 * Pinned buffer chunkno of chunk_bytes among chunks: allocated with the
 * others of its slab (slab_chunks chunks) the first time one is asked for.
 */
template <typename T>
static T *
slab_chunk(GsCudaSort *sort, std::vector<T *> &chunks, std::vector<void *> &slabs,
		   size_t chunkno, size_t chunk_bytes)
{
	if (chunkno >= chunks.size() || chunks[chunkno] == nullptr)
	{
		size_t		first = chunkno - chunkno % sort->slab_chunks;
		void	   *slab = nullptr;

		if (chunks.size() < first + sort->slab_chunks)
			chunks.resize(first + sort->slab_chunks, nullptr);
		slab = pinned_alloc(chunk_bytes * sort->slab_chunks);
		slabs.push_back(slab);
		for (size_t i = 0; i < sort->slab_chunks; i++)
			chunks[first + i] = (T *) ((char *) slab + i * chunk_bytes);
	}
	return chunks[chunkno];
}

GS_EXPORT uint64_t *
gscuda_sort_chunk(GsCudaSort *sort, size_t chunkno, char *errbuf, size_t errlen)
{
	try
	{
		if (sort == nullptr)
			fail("no sort");
		return slab_chunk(sort, sort->chunks, sort->slabs, chunkno,
						  sort->chunk_records * sort->key_words * sizeof(uint64_t));
	}
	catch (const GsError &e)
	{
		set_error(errbuf, errlen, e.message.c_str());
	}
	catch (...)
	{
		set_error(errbuf, errlen, "out of pinned host memory");
	}
	return nullptr;
}

GS_EXPORT uint32_t *
gscuda_sort_index_chunk(GsCudaSort *sort, size_t chunkno, char *errbuf, size_t errlen)
{
	try
	{
		if (sort == nullptr)
			fail("no sort");
		if (!sort->carry_index)
			fail("the sort carries no source indexes");
		return slab_chunk(sort, sort->index_chunks, sort->index_slabs, chunkno,
						  sort->chunk_records * sizeof(uint32_t));
	}
	catch (const GsError &e)
	{
		set_error(errbuf, errlen, e.message.c_str());
	}
	catch (...)
	{
		set_error(errbuf, errlen, "out of pinned host memory");
	}
	return nullptr;
}

/*
 * One step of a sort, called from C: 0 if it went through; otherwise 1,
 * with the error's message in errbuf, after probing whether the error was
 * sticky (probe_lost), so that no later sort of the process uses a lost
 * context.  C++ exceptions never cross into the caller.
 */
template <typename Step>
static int
run_sort_step(GsCudaSort *sort, const char *what, char *errbuf, size_t errlen, Step step)
{
	try
	{
		if (sort == nullptr)
			fail("no sort");
		step();
		return 0;
	}
	catch (const GsError &e)
	{
		set_error(errbuf, errlen, e.message.c_str());
		probe_lost();
	}
	catch (...)
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "unexpected error in %s", what);
		set_error(errbuf, errlen, msg);
	}
	return 1;
}

GS_EXPORT int
gscuda_sort_carry_index(GsCudaSort *sort, char *errbuf, size_t errlen)
{
	return run_sort_step(sort, "gscuda_sort_carry_index", errbuf, errlen, [&] {
		if (sort->carry_index)
			return;
		if (sort->next_chunk != 0 || sort->uploading)
			fail("source indexes must be asked for before the first chunk");
		/* the device array of what capacity the sort already has, then grows with it */
		check_room(sort, sort->capacity * sizeof(uint32_t));
		sort->src_index.allocate(&sort->mem, sort->capacity);
		sort->carry_index = true;
	});
}

GS_EXPORT int
gscuda_sort_submit(GsCudaSort *sort, size_t chunkno, size_t nrecords,
				   char *errbuf, size_t errlen)
{
	return run_sort_step(sort, "gscuda_sort_submit", errbuf, errlen,
						 [&] { submit_chunk(sort, chunkno, nrecords); });
}

GS_EXPORT int
gscuda_sort_upload(GsCudaSort *sort, size_t chunkno, size_t word_offset,
				   const uint64_t *src, size_t nwords, char *errbuf, size_t errlen)
{
	return run_sort_step(sort, "gscuda_sort_upload", errbuf, errlen,
						 [&] { upload_piece(sort, chunkno, word_offset, src, nwords); });
}

GS_EXPORT void
gscuda_sort_keep_permutation(GsCudaSort *sort)
{
	if (sort)
		sort->keep_perm = true;
}

GS_EXPORT int
gscuda_sort_download(GsCudaSort *sort, size_t first, size_t n, uint32_t *dst,
					 char *errbuf, size_t errlen)
{
	return run_sort_step(sort, "gscuda_sort_download", errbuf, errlen,
						 [&] { download_piece(sort, first, n, dst); });
}

GS_EXPORT int
gscuda_sort_wait_copies(GsCudaSort *sort, char *errbuf, size_t errlen)
{
	return run_sort_step(sort, "gscuda_sort_wait_copies", errbuf, errlen, [&] {
		if (sort->copied)
			GS_CHECK(wait_event(sort->copied));
	});
}

GS_EXPORT int
gscuda_register_host(void *p, size_t bytes, char *errbuf, size_t errlen)
{
	cudaError_t err;

	if (cuda_lost)
	{
		set_error(errbuf, errlen, cuda_lost_error);
		return 1;
	}
	err = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
	if (err != cudaSuccess)
	{
		set_error(errbuf, errlen, cudaGetErrorString(err));
		(void) cudaGetLastError();
		return 1;
	}
	return 0;
}

/* After a failed step of finish: leave nothing running. */
static int
finish_failed(GsCudaSort *sort)
{
	if (sort)
	{
		sort->finishing = false;
		/* nothing may touch the caller's buffers after the error is returned */
		if (sort->stream && cudaStreamSynchronize(sort->stream) != cudaSuccess)
			(void) cudaGetLastError();
	}
	return 1;
}

GS_EXPORT int
gscuda_sort_finish_start(GsCudaSort *sort, size_t nrecords, char *errbuf, size_t errlen)
{
	if (run_sort_step(sort, "gscuda_sort_finish_start", errbuf, errlen,
					  [&] { finish_start(sort, nrecords); }) == 0)
		return 0;
	return finish_failed(sort);
}

GS_EXPORT int
gscuda_sort_finish_wait(GsCudaSort *sort, const uint32_t **perm, GsCudaStats *stats,
						char *errbuf, size_t errlen)
{
	if (run_sort_step(sort, "gscuda_sort_finish_wait", errbuf, errlen,
					  [&] { finish_wait(sort, perm, stats); }) == 0)
		return 0;
	return finish_failed(sort);
}

GS_EXPORT int
gscuda_sort_finish(GsCudaSort *sort, size_t nrecords, const uint32_t **perm,
				   GsCudaStats *stats, char *errbuf, size_t errlen)
{
	if (gscuda_sort_finish_start(sort, nrecords, errbuf, errlen) != 0)
		return 1;
	return gscuda_sort_finish_wait(sort, perm, stats, errbuf, errlen);
}

GS_EXPORT void
gscuda_sort_end(GsCudaSort *sort)
{
	if (sort == nullptr)
		return;
	try
	{
		release_sort(sort);
	}
	catch (...)
	{
	}
	delete sort;
}

/*-------------------------------------------------------------------------
 *
 * gscuda_pipeline.cu
 *	  The sort pipeline of the CUDA side (declared in gscuda_pipeline.cuh):
 *	  a sort's stream, pinned chunk buffers, chunk uploads, device arrays
 *	  and memory limits, the presorted check, finish and statistics.
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
 * positions is mapped through that array on the device (gather_index_kernel,
 * gscuda_pipeline_kernels.cuh), so that the result, kept there for the
 * caller to download, is already in the caller's record numbers and no
 * pass over it runs on the host.
 *
 * Layers.  Below the pipeline: the algorithms, reached only through their
 * dispatch (gscuda_dispatch.cuh), and the per-process state, pinned cache
 * included (gscuda_device.cuh).  Above it: the C interface (gscuda_api.cu),
 * which calls, for a sort, begin_sort and end_sort; its memory, sort_bytes,
 * sort_index_bytes, set_mem_limit, peak_memory; its chunks, key_chunk,
 * index_chunk, carry_index, submit_chunk, upload_piece; its permutation
 * kept on the device, keep_permutation, download_piece, wait_copies; and
 * its finish, finish_start, finish_wait, stop_finish.
 * Errors are GsError exceptions; device memory is stream-ordered
 * (cudaMallocAsync) and always freed by end_sort, which also trims the
 * memory pool so that the device's free memory returns to what it was.
 *
 *-------------------------------------------------------------------------
 */
#include <new>
#include <string.h>
#include <vector>

#include "gscuda_pipeline.cuh"
#include "gscuda_device.cuh"
#include "gscuda_dispatch.cuh"
#include "gscuda_pipeline_kernels.cuh"
#include "gscuda_presort.cuh"

using namespace gs;

/* One sort in progress. */
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

namespace gs
{

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
		if (cudaStreamSynchronize(sort->stream) != cudaSuccess)
			(void) cudaGetLastError();
		(void) cudaStreamDestroy(sort->stream);
		sort->stream = nullptr;
		/* give the freed device memory back, so that others see it free */
		trim_device_pool();
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
	size_t		b = sort->key_words * sizeof(uint64_t) +
		algorithm_resident_bytes(sort->algorithm, sort->key_words);

	if (sort->carry_index)
		b += index_bytes_per_record;
	return b;
}

/* Further device bytes finish needs for n records (estimate, no fallback). */
static size_t
finish_bytes(const GsCudaSort *sort, size_t n)
{
	return algorithm_finish_bytes(sort->algorithm, sort->key_words, n);
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
		cap = (size_t) div_up(cap, bucket_tile_size(kw)) * bucket_tile_size(kw);
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
		size_t		tile = bucket_tile_size(kw);
		size_t		sorted = sort->tiles_sorted * tile;
		size_t		nsamples = bucket_sample_count(kw, cap);
		size_t		sorted_samples = bucket_sample_count(kw, sorted);
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
void
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
		size_t		complete = end / bucket_tile_size(kw);

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
void
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
void
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

/*
 * The first half of finish: submit what is left, sort, map the permutation
 * through the source indexes if the sort carries them, and queue its copy
 * to pinned memory unless it stays on the device.  Everything is queued on
 * the sort's stream; the host waits only for the presorted check (and
 * inside the bucket sort), so that the caller can start the next sort of a
 * split while this one runs.  finish_wait() completes it.
 */
void
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
		size_t		ntiles = div_up(n, bucket_tile_size(kw));

		sort_tiles(sort->ctx, kw, sort->keys.get(), n, sort->tiles_sorted, ntiles,
				   sort->tkeys.get(), sort->tidx.get(), sort->skeys.get(), sort->sidx.get());
		sort->tiles_sorted = ntiles;
		finish_buckets(sort->ctx, kw, sort->keys.get(), n, sort->tkeys.get(),
					   sort->tidx.get(), sort->skeys.get(), sort->sidx.get(),
					   sort->host_presort->diff, perm);
	}
	else
		radix_sort(sort->ctx, kw, sort->keys.get(), n, sort->host_presort->diff, perm);
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
void
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


/* ---------- begin, end, memory ---------- */

GsCudaSort *
begin_sort(int key_words, size_t chunk_records, size_t expected_records,
		   GsCudaAlgorithm algorithm, size_t mem_limit, int fault)
{
	GsCudaSort *sort = new GsCudaSort();

	try
	{
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
	catch (...)
	{
		release_sort(sort);
		delete sort;
		throw;
	}
}

void
end_sort(GsCudaSort *sort)
{
	try
	{
		release_sort(sort);
	}
	catch (...)
	{
	}
	delete sort;
}

size_t
sort_bytes(int key_words, GsCudaAlgorithm algorithm, size_t nrecords)
{
	GsCudaSort	probe;

	probe.key_words = key_words < 1 ? 1 : (key_words > GSCUDA_MAX_KEY_WORDS ?
										   GSCUDA_MAX_KEY_WORDS : key_words);
	probe.algorithm = resolve_algorithm(algorithm, probe.key_words);
	return nrecords * resident_bytes_per_record(&probe) + finish_bytes(&probe, nrecords);
}

size_t
sort_index_bytes(size_t nrecords)
{
	return nrecords * index_bytes_per_record;
}

void
set_mem_limit(GsCudaSort *sort, size_t mem_limit)
{
	sort->mem.limit = mem_limit;
}

size_t
peak_memory(const GsCudaSort *sort)
{
	return sort->mem.peak;
}

/* ---------- chunk buffers ---------- */

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

uint64_t *
key_chunk(GsCudaSort *sort, size_t chunkno)
{
	return slab_chunk(sort, sort->chunks, sort->slabs, chunkno,
					  sort->chunk_records * sort->key_words * sizeof(uint64_t));
}

uint32_t *
index_chunk(GsCudaSort *sort, size_t chunkno)
{
	if (!sort->carry_index)
		fail("the sort carries no source indexes");
	return slab_chunk(sort, sort->index_chunks, sort->index_slabs, chunkno,
					  sort->chunk_records * sizeof(uint32_t));
}

void
carry_index(GsCudaSort *sort)
{
	if (sort->carry_index)
		return;
	if (sort->next_chunk != 0 || sort->uploading)
		fail("source indexes must be asked for before the first chunk");
	/* the device array of what capacity the sort already has, then grows with it */
	check_room(sort, sort->capacity * sizeof(uint32_t));
	sort->src_index.allocate(&sort->mem, sort->capacity);
	sort->carry_index = true;
}

void
keep_permutation(GsCudaSort *sort)
{
	sort->keep_perm = true;
}

void
wait_copies(GsCudaSort *sort)
{
	if (sort->copied)
		GS_CHECK(wait_event(sort->copied));
}

void
stop_finish(GsCudaSort *sort)
{
	sort->finishing = false;
	/* nothing may touch the caller's buffers after the error is returned */
	if (sort->stream && cudaStreamSynchronize(sort->stream) != cudaSuccess)
		(void) cudaGetLastError();
}

}								/* namespace gs */

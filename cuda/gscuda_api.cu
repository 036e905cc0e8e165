/*-------------------------------------------------------------------------
 *
 * gscuda_api.cu
 *	  The C interface of the CUDA side (gscuda_api.h): each extern "C"
 *	  function checks its arguments, calls the layer below, and turns a
 *	  failure into a return code and a message in the caller's errbuf.
 *
 * The GPU service (service_worker.c) calls them, and the kernel tests and
 * benchmarks (test/gpu/, bench/) do too:
 *	- devices: gscuda_init, gscuda_select_device, gscuda_device_count,
 *	  gscuda_lost, gscuda_register_host, and the process's settings
 *	  gscuda_set_pinned_cache, gscuda_set_wait_hook, gscuda_set_fault,
 *	  gscuda_set_bucket_limit;
 *	- a sort's memory: gscuda_sort_bytes, gscuda_sort_index_bytes,
 *	  gscuda_sort_memory, gscuda_sort_set_mem_limit;
 *	- a sort: gscuda_sort_begin, gscuda_sort_keep_permutation,
 *	  gscuda_sort_carry_index, gscuda_sort_chunk, gscuda_sort_index_chunk,
 *	  gscuda_sort_upload, gscuda_sort_submit, gscuda_sort_wait_copies,
 *	  gscuda_sort_finish (or gscuda_sort_finish_start and
 *	  gscuda_sort_finish_wait, for the parts of a split sort),
 *	  gscuda_sort_download, gscuda_sort_end.
 *
 * The engine's layers, as CUB arranges its own (device-level dispatch over
 * agents and kernels over block primitives):
 *
 *	gscuda_api.cu		this file: the C interface, the only exported symbols;
 *						and the tests' own calls (gscuda_test.cuh), not exported
 *	gscuda_pipeline.cu	one sort: stream, pinned chunks, uploads, finish
 *	gscuda_device.cu	per-process state: devices, lost context, faults,
 *						pinned host cache
 *	gscuda_dispatch.cu	algorithm choice, memory needs, key-width dispatch
 *	gscuda_presort.cuh, gscuda_radix_sort.cuh, gscuda_bucket_sort.cuh
 *						the algorithms' host side and launches
 *	gscuda_pipeline_kernels.cuh, gscuda_bucket_sort_kernels.cuh
 *						kernels
 *	gscuda_block_key_sort.cuh	the bucket sort's block primitive
 *	gscuda_common.cuh		keys, errors, waits, the device memory account
 *	gscuda_types.h, gscuda_faults.h	types, limits and fault codes, plain C:
 *						this interface's and gscuda_common.cuh's, src/'s too
 *
 * Internally an error is a GsError exception (gscuda_common.cuh); none crosses
 * into C.  A failed step of a sort also probes whether the error left the
 * CUDA context unusable (probe_lost), so that no later sort of the process
 * uses a lost GPU.  The library is built with -fvisibility=hidden: only
 * these functions (GS_EXPORT) are visible to src/.
 *
 *-------------------------------------------------------------------------
 */
#include <new>
#include <string.h>

#include "gscuda_api.h"
#include "gscuda_device.cuh"
#include "gscuda_dispatch.cuh"
#include "gscuda_pipeline.cuh"
#include "gscuda_test.cuh"

#define GS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace gs;

static void
set_error(char *errbuf, size_t errlen, const char *msg)
{
	if (errbuf && errlen > 0)
	{
		strncpy(errbuf, msg, errlen - 1);
		errbuf[errlen - 1] = '\0';
	}
}

/* ---------- devices and process settings ---------- */

GS_EXPORT int
gscuda_init(int device, char *name, size_t namelen, size_t *free_bytes,
			size_t *total_bytes, char *errbuf, size_t errlen)
{
	try
	{
		open_device(device);
		describe_device(device, name, namelen, free_bytes, total_bytes);
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
	return use_device(device) ? 0 : 1;
}

GS_EXPORT int
gscuda_device_count(char *errbuf, size_t errlen)
{
	const char *error = nullptr;
	int			count = count_devices(&error);

	if (count < 0)
		set_error(errbuf, errlen, error);
	return count;
}

GS_EXPORT void
gscuda_set_pinned_cache(size_t bytes)
{
	set_pinned_cache(bytes);
}

GS_EXPORT void
gscuda_set_wait_hook(GsCudaWaitHook hook)
{
	wait_hook = hook;
}

GS_EXPORT void
gscuda_set_fault(GsCudaFault fault)
{
	arm_fault((int) fault);
}

GS_EXPORT int
gscuda_lost(char *errbuf, size_t errlen)
{
	if (!device_lost())
		return 0;
	set_error(errbuf, errlen, lost_error());
	return 1;
}

GS_EXPORT int
gscuda_register_host(void *p, size_t bytes, char *errbuf, size_t errlen)
{
	cudaError_t err;

	if (device_lost())
	{
		set_error(errbuf, errlen, lost_error());
		return 1;
	}
	err = register_host_memory(p, bytes);
	if (err != cudaSuccess)
	{
		set_error(errbuf, errlen, cudaGetErrorString(err));
		return 1;
	}
	return 0;
}

GS_EXPORT size_t
gscuda_sort_bytes(int key_words, GsCudaAlgorithm algorithm, size_t nrecords)
{
	return sort_bytes(key_words, algorithm, nrecords);
}

GS_EXPORT size_t
gscuda_sort_index_bytes(size_t nrecords)
{
	return sort_index_bytes(nrecords);
}

/* ---------- a sort ---------- */

GS_EXPORT GsCudaSort *
gscuda_sort_begin(int key_words, size_t chunk_records, size_t expected_records,
				  GsCudaAlgorithm algorithm, size_t mem_limit, char *errbuf, size_t errlen)
{
	try
	{
		int			fault = take_armed_fault();

		if (device_lost())
			fail(lost_error());
		if (fault == GSCUDA_FAULT_INIT)
			fail("CUDA initialization (injected fault)", cudaErrorInitializationError);
		if (!any_device_open())
			open_device(0);
		check_current_device();
		if (key_words < 1 || key_words > GSCUDA_MAX_KEY_WORDS)
			fail("key_words must be 1 to 4");
		if (chunk_records == 0 || (chunk_records & (chunk_records - 1)) != 0)
			fail("chunk_records must be a power of two");
		if (algorithm < GSCUDA_ALGO_AUTO || algorithm > GSCUDA_ALGO_RADIX)
			fail("unknown algorithm");
		select_current_device();
		return begin_sort(key_words, chunk_records, expected_records, algorithm,
						  mem_limit, fault);
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
	return nullptr;
}

GS_EXPORT void
gscuda_sort_end(GsCudaSort *sort)
{
	if (sort)
		end_sort(sort);
}

GS_EXPORT void
gscuda_sort_set_mem_limit(GsCudaSort *sort, size_t mem_limit)
{
	if (sort)
		set_mem_limit(sort, mem_limit);
}

GS_EXPORT size_t
gscuda_sort_memory(GsCudaSort *sort)
{
	return sort ? peak_memory(sort) : 0;
}

GS_EXPORT void
gscuda_sort_keep_permutation(GsCudaSort *sort)
{
	if (sort)
		keep_permutation(sort);
}

/* A pinned chunk buffer of the sort's, or NULL with the reason in errbuf. */
template <typename T, typename Get>
static T *
chunk_buffer(GsCudaSort *sort, char *errbuf, size_t errlen, Get get)
{
	try
	{
		if (sort == nullptr)
			fail("no sort");
		return get();
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

GS_EXPORT uint64_t *
gscuda_sort_chunk(GsCudaSort *sort, size_t chunkno, char *errbuf, size_t errlen)
{
	return chunk_buffer<uint64_t>(sort, errbuf, errlen,
								  [&] { return key_chunk(sort, chunkno); });
}

GS_EXPORT uint32_t *
gscuda_sort_index_chunk(GsCudaSort *sort, size_t chunkno, char *errbuf, size_t errlen)
{
	return chunk_buffer<uint32_t>(sort, errbuf, errlen,
								  [&] { return index_chunk(sort, chunkno); });
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
	return run_sort_step(sort, "gscuda_sort_carry_index", errbuf, errlen,
						 [&] { carry_index(sort); });
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
	return run_sort_step(sort, "gscuda_sort_wait_copies", errbuf, errlen,
						 [&] { wait_copies(sort); });
}

GS_EXPORT int
gscuda_sort_finish_start(GsCudaSort *sort, size_t nrecords, char *errbuf, size_t errlen)
{
	if (run_sort_step(sort, "gscuda_sort_finish_start", errbuf, errlen,
					  [&] { finish_start(sort, nrecords); }) == 0)
		return 0;
	if (sort)
		stop_finish(sort);
	return 1;
}

GS_EXPORT int
gscuda_sort_finish_wait(GsCudaSort *sort, const uint32_t **perm, GsCudaStats *stats,
						char *errbuf, size_t errlen)
{
	if (run_sort_step(sort, "gscuda_sort_finish_wait", errbuf, errlen,
					  [&] { finish_wait(sort, perm, stats); }) == 0)
		return 0;
	if (sort)
		stop_finish(sort);
	return 1;
}

/* ---------- the tests' own (gscuda_test.cuh) ---------- */

/*
 * These two are C functions by their declarations in gscuda_test.cuh, and
 * not GS_EXPORT: gpusort.so hides them.
 */

void
gscuda_set_bucket_limit(size_t records)
{
	set_bucket_limit(records);
}

int
gscuda_sort_finish(GsCudaSort *sort, size_t nrecords, const uint32_t **perm,
				   GsCudaStats *stats, char *errbuf, size_t errlen)
{
	if (gscuda_sort_finish_start(sort, nrecords, errbuf, errlen) != 0)
		return 1;
	return gscuda_sort_finish_wait(sort, perm, stats, errbuf, errlen);
}

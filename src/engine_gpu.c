/*-------------------------------------------------------------------------
 *
 * engine_gpu.c
 *	  The GPU sort engine: the engine interface of engine.h over the CUDA
 *	  code in cuda/ (GPU BUCKET SORT or CUB radix sort).
 *
 * CUDA is initialized lazily, by the first sort that chooses the GPU (or by
 * gpusort_info()), in a backend or parallel worker: never in the postmaster
 * and never while planning.  A backend that found no usable GPU remembers
 * it, so later plans leave their sorts to PostgreSQL (gpusort.engine =
 * auto) and later sorts go straight to the CPU engine.
 *
 * What the CUDA side allocates (device memory, pinned host buffers) is not
 * palloc'd; a reset callback on the sort's memory context releases it, so an
 * error or a cancel anywhere in the query cannot leak it.
 *
 * In a build without CUDA every entry point reports the GPU unavailable.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "engine.h"
#include "faults.h"
#include "gpusort.h"

#ifdef GPUSORT_USE_CUDA
#include "gpusort_cuda.h"

typedef struct GpuEngine
{
	SortEngine	base;
	GsCudaSort *sort;
	MemoryContextCallback release;
} GpuEngine;

/* per-process state of CUDA */
static enum
{
	CUDA_UNTRIED,
	CUDA_READY,
	CUDA_FAILED
}			cuda_state = CUDA_UNTRIED;
static char cuda_device_name[64];
static char cuda_failure[256];
static size_t cuda_total_bytes;

/* Initialize CUDA once per process; false with *why if no GPU is usable. */
static bool
cuda_ready(char **why)
{
	if (cuda_state == CUDA_UNTRIED)
	{
		size_t		free_bytes;

		Assert(IsUnderPostmaster || !IsPostmasterEnvironment);
		if (gscuda_init(gpusort_gpu_device, cuda_device_name, sizeof(cuda_device_name),
						&free_bytes, &cuda_total_bytes,
						cuda_failure, sizeof(cuda_failure)) == 0)
			cuda_state = CUDA_READY;
		else
			cuda_state = CUDA_FAILED;
	}
	if (cuda_state == CUDA_FAILED && why)
		*why = psprintf("no usable GPU: %s", cuda_failure);
	return cuda_state == CUDA_READY;
}

/*
 * After a failure: if the process lost its GPU (a sticky error), later sorts
 * and plans of this backend count on no GPU.
 */
static void
gpu_check_lost(void)
{
	char		err[256];

	if (cuda_state == CUDA_READY && gscuda_lost(err, sizeof(err)))
	{
		cuda_state = CUDA_FAILED;
		strlcpy(cuda_failure, err, sizeof(cuda_failure));
	}
}

static void
gpu_engine_release(void *arg)
{
	GpuEngine  *gpu = (GpuEngine *) arg;

	if (gpu->sort)
	{
		gscuda_sort_end(gpu->sort);
		gpu->sort = NULL;
	}
}

static uint64 *
gpu_engine_chunk(SortEngine *engine, size_t chunkno, char **why)
{
	GpuEngine  *gpu = (GpuEngine *) engine;
	char		err[256];

	engine_reserve_chunk_slot(engine, chunkno);
	if (engine->keys.chunks[chunkno] == NULL)
	{
		uint64_t   *buf = gscuda_sort_chunk(gpu->sort, chunkno, err, sizeof(err));

		if (buf == NULL)
		{
			gpu_check_lost();
			*why = psprintf("GPU: %s", err);
			return NULL;
		}
		engine->keys.chunks[chunkno] = (uint64 *) buf;
	}
	return engine->keys.chunks[chunkno];
}

static bool
gpu_engine_submit(SortEngine *engine, size_t chunkno, size_t nrecords, char **why)
{
	GpuEngine  *gpu = (GpuEngine *) engine;
	char		err[256];

	if (gscuda_sort_submit(gpu->sort, chunkno, nrecords, err, sizeof(err)) != 0)
	{
		gpu_check_lost();
		*why = psprintf("GPU: %s", err);
		return false;
	}
	return true;
}

static bool
gpu_engine_sort(SortEngine *engine, size_t n, uint32 **perm, char **why)
{
	GpuEngine  *gpu = (GpuEngine *) engine;
	const uint32_t *result;
	GsCudaStats stats;
	char		err[256];

	memset(&stats, 0, sizeof(stats));
	if (engine->want_ties)
		gscuda_sort_want_ties(gpu->sort);
	if (gscuda_sort_finish(gpu->sort, n, &result, &stats, err, sizeof(err)) != 0)
	{
		gpu_check_lost();
		*why = psprintf("GPU: %s", err);
		return false;
	}
	strlcpy(engine->stats.algorithm, stats.algorithm, sizeof(engine->stats.algorithm));
	engine->stats.transfer_ms = stats.h2d_ms + stats.d2h_ms;
	engine->stats.device_sort_ms = stats.sort_ms;
	engine->stats.device_bytes = stats.device_bytes;
	{
		const uint8_t *ties;
		size_t		nties;

		engine->ties_known = engine->want_ties &&
			gscuda_sort_ties(gpu->sort, &ties, &nties) == 0;
		engine->ties = engine->ties_known ? ties : NULL;
		engine->nties = engine->ties_known ? nties : 0;
	}
	*perm = (uint32 *) result;
	return true;
}

static void
gpu_engine_end(SortEngine *engine)
{
	gpu_engine_release(engine);
}

static const SortEngineMethods gpu_engine_methods = {
	.chunk = gpu_engine_chunk,
	.submit = gpu_engine_submit,
	.sort = gpu_engine_sort,
	.end = gpu_engine_end,
};

SortEngine *
gpu_engine_begin(MemoryContext mcxt, int key_words, size_t expected_records,
				 char **why)
{
	GpuEngine  *gpu;
	char		err[256];

	if (!cuda_ready(why))
		return NULL;

	gpu = MemoryContextAllocZero(mcxt, sizeof(GpuEngine));
	gpu->base.methods = &gpu_engine_methods;
	gpu->base.mcxt = mcxt;
	gpu->base.keys.chunk_records = GPUSORT_CHUNK_RECORDS;
	gpu->base.keys.key_words = key_words;
	snprintf(gpu->base.stats.engine, sizeof(gpu->base.stats.engine),
			 "GPU: %s", cuda_device_name);

	/* released with the sort's memory, whatever ends the query */
	gpu->release.func = gpu_engine_release;
	gpu->release.arg = gpu;
	MemoryContextRegisterResetCallback(mcxt, &gpu->release);

	gscuda_set_pinned_cache((size_t) gpusort_pinned_cache_kb * 1024);
	gscuda_set_fault((GsCudaFault) gpusort_fault_gpu());	/* tests only */
	gpu->sort = gscuda_sort_begin(key_words, GPUSORT_CHUNK_RECORDS,
								  expected_records,
								  (GsCudaAlgorithm) gpusort_gpu_algorithm,
								  (size_t) gpusort_gpu_memory_kb * 1024,
								  err, sizeof(err));
	if (gpu->sort == NULL)
	{
		gpu_check_lost();
		*why = psprintf("GPU: %s", err);
		return NULL;
	}
	return &gpu->base;
}

bool
gpu_engine_available(char **why)
{
	return cuda_ready(why);
}

/* Has this process already paid for starting CUDA (successfully)? */
bool
gpu_engine_initialized(void)
{
	return cuda_state == CUDA_READY;
}

void
gpu_engine_describe(StringInfo buf)
{
	char		err[256];
	int			ndevices;

	if (!cuda_ready(NULL))
	{
		appendStringInfo(buf, "no usable GPU (%s)", cuda_failure);
		return;
	}
	ndevices = gscuda_device_count(err, sizeof(err));
	appendStringInfo(buf, "%d GPU%s; sorting on device %d: %s, %zu MB",
					 ndevices, ndevices == 1 ? "" : "s", gpusort_gpu_device,
					 cuda_device_name, cuda_total_bytes / (1024 * 1024));
}

/*
 * Whether a plan may count on a GPU, without initializing CUDA: false once
 * this process failed to initialize it, otherwise whether the NVIDIA driver
 * shows a device.
 */
bool
gpusort_gpu_maybe_present(void)
{
	static int	device_node = -1;

	if (cuda_state != CUDA_UNTRIED)
		return cuda_state == CUDA_READY;
	if (device_node < 0)
		device_node = (access("/dev/nvidiactl", F_OK) == 0 &&
					   access("/dev/nvidia0", F_OK) == 0) ? 1 : 0;
	return device_node == 1;
}

/* pinned host memory this backend holds for GPU sorts, and keeps cached */
void
gpu_engine_pinned_memory(Size *in_use, Size *cached)
{
	size_t		used;
	size_t		kept;

	gscuda_pinned_usage(&used, &kept);
	*in_use = used;
	*cached = kept;
}

#else							/* !GPUSORT_USE_CUDA */

SortEngine *
gpu_engine_begin(MemoryContext mcxt, int key_words, size_t expected_records,
				 char **why)
{
	*why = pstrdup("gpusort was built without CUDA");
	return NULL;
}

bool
gpu_engine_initialized(void)
{
	return false;
}

bool
gpu_engine_available(char **why)
{
	if (why)
		*why = pstrdup("gpusort was built without CUDA");
	return false;
}

void
gpu_engine_describe(StringInfo buf)
{
	appendStringInfoString(buf, "built without CUDA");
}

bool
gpusort_gpu_maybe_present(void)
{
	return false;
}

void
gpu_engine_pinned_memory(Size *in_use, Size *cached)
{
	*in_use = *cached = 0;
}

#endif							/* GPUSORT_USE_CUDA */

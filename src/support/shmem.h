/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  gpusort's extension-wide shared memory (shmem.c): what the sorts of
 *	  all backends share, apart from the GPU service (service.h).
 *
 * It holds the host memory all GpuSorts hold against
 * gpusort.server_memory (sort_budget.c), the sorts whose pool threads run
 * (threadpool.c), and the counters of the view gpusort_stat (stat.c),
 * with what they count (ServiceFallback, and SortEngineKind of
 * sort_stats.h), so that stat.c reads them here and shmem.c needs nothing
 * of it.
 * It exists only when gpusort is in shared_preload_libraries; loaded any
 * other way, gpusort_shared stays NULL and there is no server budget, no
 * count of other sorts' threads, and nothing counted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SHMEM_H
#define GPUSORT_SHMEM_H

#include "postgres.h"

#include "port/atomics.h"

#include "support/sort_stats.h"

/* Why a sort that wanted the GPU ran on the CPU. */
typedef enum ServiceFallback
{
	FALLBACK_NO_SERVICE = 0,	/* not preloaded, or the worker is down */
	FALLBACK_NO_DEVICE,			/* the service found no usable GPU */
	FALLBACK_QUEUE_FULL,		/* no request entry free */
	FALLBACK_WAIT,				/* no GPU memory within gpusort.service_max_wait */
	FALLBACK_TOO_LARGE,			/* more than the budget of any GPU */
	FALLBACK_GPU_ERROR,			/* the device failed the sort */
	FALLBACK_SERVICE_LOST,		/* the service exited during the sort */
	FALLBACK_SMALL,				/* below gpusort.gpu_min_rows */
	FALLBACK_CANCELLED,			/* the query was cancelled during the sort */
	NUM_SERVICE_FALLBACKS
} ServiceFallback;

typedef struct GpuSortShared
{
	/* host memory the GpuSorts of all backends hold now (sort_budget.c) */
	pg_atomic_uint64 sort_memory_held;
	/* the most it has been since the server started */
	pg_atomic_uint64 sort_memory_peak;

	/* sorts of the server whose pool threads are running (threadpool.c) */
	pg_atomic_uint32 sorts_with_threads;

	/* counters (gpusort_stat) */
	pg_atomic_uint64 sorts[NUM_SORT_ENGINES];
	pg_atomic_uint64 rows[NUM_SORT_ENGINES];
	pg_atomic_uint64 fallbacks[NUM_SERVICE_FALLBACKS];
	pg_atomic_uint64 runs_for_backend_budget;
	pg_atomic_uint64 runs_for_server_budget;
} GpuSortShared;

extern GpuSortShared *gpusort_shared;	/* NULL unless preloaded */

extern void gpusort_shmem_init(void);

#endif							/* GPUSORT_SHMEM_H */

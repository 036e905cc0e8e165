/*-------------------------------------------------------------------------
 *
 * stat.h
 *	  The server-wide counters of gpusort's sorts, which the view
 *	  gpusort_stat shows (stat.c): sorts and rows by the engine that
 *	  ordered them, why sorts that wanted the GPU ran on the CPU, and the
 *	  runs written because of each memory budget.
 *
 * The counters live in the extension's shared memory (shmem.h); loaded
 * without shared_preload_libraries, nothing is counted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_STAT_H
#define GPUSORT_STAT_H

#include "postgres.h"

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

/* The engine that ordered a sort. */
typedef enum StatEngineKind
{
	STAT_ENGINE_GPU = 0,
	STAT_ENGINE_CPU,
	STAT_ENGINE_COMPARATORS,
	NUM_STAT_ENGINES
} StatEngineKind;

extern void stat_count_fallback(ServiceFallback reason);
extern void stat_count_sort(StatEngineKind engine, uint64 rows);
extern void stat_count_run(bool for_server_budget);

#endif							/* GPUSORT_STAT_H */

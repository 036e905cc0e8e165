/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  gpusort's extension-wide shared memory (shmem.c): what the sorts of
 *	  all backends share, apart from the GPU service (service.h).
 *
 * It holds the host memory all GpuSorts hold against
 * gpusort.server_memory (sort_memory.c), the sorts whose pool threads run
 * (threadpool.c), and the counters of the view gpusort_stat (stat.c),
 * with what they count (ServiceFallback, IndexBuildLeft, and SortEngineKind of
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
#include "storage/spin.h"

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

/*
 * Why gpusort left a btree index build to PostgreSQL's own (index_build.c),
 * or that it took it.
 */
typedef enum IndexBuildLeft
{
	INDEX_BUILD_TAKEN = -1,		/* gpusort sorts it */
	INDEX_LEFT_DISABLED = 0,	/* gpusort.enabled is off */
	INDEX_LEFT_SETTING,			/* gpusort.index_builds is off */
	INDEX_LEFT_LATER_XACT,		/* built in a later transaction than its
								 * storage: CONCURRENTLY */
	INDEX_LEFT_CATALOG,			/* a system catalog's index */
	INDEX_LEFT_SMALL,			/* below gpusort.min_rows */
	INDEX_LEFT_NO_KEY,			/* no key for its first column */
	INDEX_LEFT_CHEAP,			/* auto: comparisons too cheap to repay it */
	INDEX_LEFT_PARALLEL,		/* auto: PostgreSQL's build would have
								 * maintenance workers */
	INDEX_LEFT_PARALLEL_MODE,	/* in parallel mode: no subtransaction for
								 * a fallback */
	INDEX_LEFT_FALLBACK,		/* gpusort's scan or sort failed: the
								 * fallback to PostgreSQL's build */
	NUM_INDEX_LEFT
} IndexBuildLeft;

/*
 * What the GpuSorts of one role's sessions hold together (sort_memory.c),
 * which gpusort.role_memory bounds: a slot for each role with a session
 * whose sorts are counted, free again when its last such session ends.
 */
#define GPUSORT_ROLE_SLOTS	256

typedef struct GpuSortRoleMemory
{
	Oid			role;			/* InvalidOid: free (under roles_lock) */
	int			backends;		/* sessions counted here (under roles_lock) */
	pg_atomic_uint64 held;
} GpuSortRoleMemory;

typedef struct GpuSortShared
{
	/* host memory the GpuSorts of all backends hold now (sort_memory.c) */
	pg_atomic_uint64 sort_memory_held;
	/* the most it has been since the server started */
	pg_atomic_uint64 sort_memory_peak;
	/* what each role's sessions hold of it (sort_memory.c) */
	slock_t		roles_lock;
	GpuSortRoleMemory roles[GPUSORT_ROLE_SLOTS];

	/* sorts of the server whose pool threads are running (threadpool.c) */
	pg_atomic_uint32 sorts_with_threads;

	/* counters (gpusort_stat) */
	pg_atomic_uint64 sorts[NUM_SORT_ENGINES];
	pg_atomic_uint64 rows[NUM_SORT_ENGINES];
	pg_atomic_uint64 fallbacks[NUM_SERVICE_FALLBACKS];
	pg_atomic_uint64 runs_for_backend_budget;
	pg_atomic_uint64 runs_for_server_budget;
	pg_atomic_uint64 index_builds[NUM_SORT_ENGINES];
	pg_atomic_uint64 index_builds_left[NUM_INDEX_LEFT];
} GpuSortShared;

extern GpuSortShared *gpusort_shared;	/* NULL unless preloaded */

extern void gpusort_shmem_init(void);

#endif							/* GPUSORT_SHMEM_H */

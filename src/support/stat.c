/*-------------------------------------------------------------------------
 *
 * stat.c
 *	  The server-wide counters of gpusort's sorts (stat.h), in the
 *	  extension's shared memory (shmem.h), which the view gpusort_stat
 *	  shows (views.c).
 *
 * The sort module counts sorts and runs (stat_count_sort, stat_count_run:
 * sort.c), the engines count fallbacks from the GPU (stat_count_fallback:
 * engine_chain.c, engine_gpu.c); the GPU service counts what it moved and
 * how long requests waited, in its own shared memory (service.h); the
 * index builds count theirs (stat_count_index_build,
 * stat_count_index_build_left: index_build.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "support/shmem.h"
#include "support/stat.h"

void
stat_count_fallback(ServiceFallback reason)
{
	if (gpusort_shared)
		pg_atomic_fetch_add_u64(&gpusort_shared->fallbacks[reason], 1);
}

void
stat_count_sort(SortEngineKind engine, uint64 rows)
{
	if (gpusort_shared)
	{
		pg_atomic_fetch_add_u64(&gpusort_shared->sorts[engine], 1);
		pg_atomic_fetch_add_u64(&gpusort_shared->rows[engine], rows);
	}
}

/* A sorted run was written: because of which budget (sort_memory.c)? */
void
stat_count_run(bool for_server_budget)
{
	if (gpusort_shared)
		pg_atomic_fetch_add_u64(for_server_budget ?
								&gpusort_shared->runs_for_server_budget :
								&gpusort_shared->runs_for_backend_budget, 1);
}

/* An index build that gpusort sorted, by the engine that ordered it */
void
stat_count_index_build(SortEngineKind engine)
{
	if (gpusort_shared && engine >= 0 && engine < NUM_SORT_ENGINES)
		pg_atomic_fetch_add_u64(&gpusort_shared->index_builds[engine], 1);
}

/* An index build left to PostgreSQL's own, by why */
void
stat_count_index_build_left(IndexBuildLeft why)
{
	if (gpusort_shared && why >= 0 && why < NUM_INDEX_LEFT)
		pg_atomic_fetch_add_u64(&gpusort_shared->index_builds_left[why], 1);
}

/*-------------------------------------------------------------------------
 *
 * stat.h
 *	  The server-wide counters of gpusort's sorts, which the view
 *	  gpusort_stat shows (stat.c): sorts and rows by the engine that
 *	  ordered them, why sorts that wanted the GPU ran on the CPU, the
 *	  runs written because of each memory budget, and the btree index
 *	  builds gpusort took (by engine) or left to PostgreSQL (by why).
 *
 * The counters live in the extension's shared memory (shmem.h); loaded
 * without shared_preload_libraries, nothing is counted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_STAT_H
#define GPUSORT_STAT_H

#include "postgres.h"

#include "support/shmem.h"			/* ServiceFallback, IndexBuildLeft */
#include "support/sort_stats.h"		/* SortEngineKind */

extern void stat_count_fallback(ServiceFallback reason);
extern void stat_count_sort(SortEngineKind engine, uint64 rows);
extern void stat_count_run(bool for_server_budget);
extern void stat_count_index_build(SortEngineKind engine);
extern void stat_count_index_build_left(IndexBuildLeft why);

/* why an index build was left to PostgreSQL, as gpusort_stat and DEBUG1 say */
static inline const char *
index_build_left_name(IndexBuildLeft why)
{
	switch (why)
	{
		case INDEX_LEFT_DISABLED:
			return "gpusort.enabled is off";
		case INDEX_LEFT_SETTING:
			return "gpusort.index_builds is off";
		case INDEX_LEFT_LATER_XACT:
			return "built in a later transaction (CONCURRENTLY)";
		case INDEX_LEFT_CATALOG:
			return "a system catalog's index";
		case INDEX_LEFT_SMALL:
			return "below gpusort.min_rows";
		case INDEX_LEFT_NO_KEY:
			return "no key for its first column";
		case INDEX_LEFT_CHEAP:
			return "comparisons too cheap (gpusort.index_builds = auto)";
		case INDEX_LEFT_PARALLEL:
			return "PostgreSQL's build has maintenance workers (gpusort.index_builds = auto)";
		case INDEX_LEFT_PARALLEL_MODE:
			return "in parallel mode (no subtransaction for a fallback)";
		case INDEX_LEFT_FALLBACK:
			return "fallback: an error in gpusort's scan or sort";
		case INDEX_BUILD_TAKEN:
		case NUM_INDEX_LEFT:
			break;
	}
	return "";
}

#endif							/* GPUSORT_STAT_H */

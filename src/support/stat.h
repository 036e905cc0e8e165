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

#include "support/shmem.h"			/* ServiceFallback */
#include "support/sort_stats.h"		/* SortEngineKind */

extern void stat_count_fallback(ServiceFallback reason);
extern void stat_count_sort(SortEngineKind engine, uint64 rows);
extern void stat_count_run(bool for_server_budget);

#endif							/* GPUSORT_STAT_H */

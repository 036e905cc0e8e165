/*-------------------------------------------------------------------------
 *
 * sort_runs.h
 *	  Sorted runs on temporary tapes, and their merge (sort_runs.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_RUNS_H
#define GPUSORT_SORT_RUNS_H

#include "postgres.h"

#include "executor/tuptable.h"

#include "sort_batch.h"

typedef struct SortRuns SortRuns;

extern SortRuns *runs_create(SortBatchShared *sh, MemoryContext cxt);
extern void runs_write_batch(SortRuns *runs, SortBatch *batch);
extern void runs_start_merge(SortRuns *runs, SortBatch *last, Size merge_memory,
							 bool random_access);
extern MinimalTuple runs_next(SortRuns *runs, bool forward);
extern void runs_markpos(SortRuns *runs);
extern void runs_restorepos(SortRuns *runs);
extern void runs_rewind(SortRuns *runs);
extern int	runs_written(SortRuns *runs);
extern int	runs_merge_passes(SortRuns *runs);
extern int64 runs_disk_kb(SortRuns *runs);
extern void runs_end(SortRuns *runs);

/* what one run needs of merge memory at the least, and what it profits from */
#define RUN_READ_BUFFER_MIN		((Size) 2 * BLCKSZ)
#define RUN_READ_BUFFER_MAX		((Size) 1024 * 1024)

#endif							/* GPUSORT_SORT_RUNS_H */

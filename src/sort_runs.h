/*-------------------------------------------------------------------------
 *
 * sort_runs.h
 *	  Sorted runs in temporary files, and their merge (sort_runs.c).
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
extern bool runs_write_batch(SortRuns *runs, SortBatch *batch, bool behind);
extern bool runs_write_done(SortRuns *runs);
extern void runs_finish_write(SortRuns *runs);
extern void runs_start_merge(SortRuns *runs, SortBatch *last, Size merge_memory,
							 bool random_access);
extern MinimalTuple runs_next(SortRuns *runs, bool forward);
extern void runs_markpos(SortRuns *runs);
extern void runs_restorepos(SortRuns *runs);
extern void runs_rewind(SortRuns *runs);
extern int	runs_written(SortRuns *runs);
extern int	runs_written_behind(SortRuns *runs);
extern int	runs_merge_passes(SortRuns *runs);
extern int64 runs_disk_kb(SortRuns *runs);
extern void runs_end(SortRuns *runs);

/* a smaller run is written by the backend, as the writer would gain little */
#define RUN_WRITE_BEHIND_MIN_RECORDS	((size_t) 128 * 1024)

/* what one run needs of merge memory at the least, and what it profits from */
#define RUN_READ_BUFFER_MIN		((Size) 2 * BLCKSZ)
#define RUN_READ_BUFFER_MAX		((Size) 1024 * 1024)

#endif							/* GPUSORT_SORT_RUNS_H */

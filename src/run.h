/*-------------------------------------------------------------------------
 *
 * run.h
 *	  Sorted runs in temporary files, and their merge: the interface that
 *	  sort.c uses.
 *
 * A run is a batch's tuples in sorted order, written to a temporary file
 * when the sort's input outgrows its memory (run_write.c), in the record
 * format of run_format.h, in a file of run_file.c.  The runs, and the last
 * batch held in memory, are merged on the way out (run_merge.c).  run.c
 * holds the sort's set of runs and what EXPLAIN reports of them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_H
#define GPUSORT_RUN_H

#include "postgres.h"

#include "executor/tuptable.h"

#include "batch.h"

typedef struct SortRuns SortRuns;

/* run.c */
extern SortRuns *runs_create(SortBatchShared *sh, MemoryContext cxt);
extern int	runs_written(SortRuns *runs);
extern int	runs_written_behind(SortRuns *runs);
extern int	runs_merge_passes(SortRuns *runs);
extern int	runs_merge_threads(SortRuns *runs);
extern int64 runs_disk_kb(SortRuns *runs);
extern void runs_end(SortRuns *runs);

/* run_write.c */
extern bool runs_write_batch(SortRuns *runs, SortBatch *batch, bool behind);
extern bool runs_write_done(SortRuns *runs);
extern void runs_finish_write(SortRuns *runs);

/* run_merge.c */
extern void runs_start_merge(SortRuns *runs, SortBatch *last, Size merge_memory,
							 bool random_access);
extern MinimalTuple runs_next(SortRuns *runs, bool forward);
extern void runs_markpos(SortRuns *runs);
extern void runs_restorepos(SortRuns *runs);
extern void runs_rewind(SortRuns *runs);

/* a smaller run is written by the backend, as the writer would gain little */
#define RUN_WRITE_BEHIND_MIN_RECORDS	((size_t) 128 * 1024)

/* what one run needs of merge memory at the least, and what it profits from */
#define RUN_READ_BUFFER_MIN		((Size) 2 * BLCKSZ)
#define RUN_READ_BUFFER_MAX		((Size) 1024 * 1024)

/*
 * A merge reads at least this many runs at once, however small the budget,
 * as tuplesort.c's MINORDER: fewer would make more passes, each writing
 * all the rows again, to save a few read buffers.
 */
#define RUN_MERGE_MIN_ORDER		6
#define RUN_MERGE_MIN_MEMORY	(RUN_MERGE_MIN_ORDER * RUN_READ_BUFFER_MIN)

#endif							/* GPUSORT_RUN_H */

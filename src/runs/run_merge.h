/*-------------------------------------------------------------------------
 *
 * run_merge.h
 *	  The merge of a sort's runs on the way out: the interface that sort.c
 *	  uses.
 *
 * The merges (run_merge.c, and run_merge_window.c under it) sit above the
 * runs' storage (run.h): they read the runs, write a merge pass's runs and
 * the random-access result through it, and own their own state and its
 * end.  sort.c ends the merge (runs_merge_end) before the runs (runs_end).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_MERGE_H
#define GPUSORT_RUN_MERGE_H

#include "postgres.h"

#include "executor/tuptable.h"

#include "batch/batch.h"
#include "runs/run.h"

typedef struct RunsMerge RunsMerge;

/*
 * What one run's read buffer takes of merge memory to count towards the
 * merge's order, and what it profits from; under the smallest budgets a
 * buffer may shrink to one block (RUN_READ_BUFFER_LEAST), as logtape.c's
 * tapes read a block at a time, so that a merge's least fits in 64 kB.
 */
#define RUN_READ_BUFFER_MIN		((Size) 2 * BLCKSZ)
#define RUN_READ_BUFFER_MAX		((Size) 1024 * 1024)
#define RUN_READ_BUFFER_LEAST	((Size) BLCKSZ)

/*
 * A merge reads at least this many runs at once, however small the budget,
 * as tuplesort.c's MINORDER: fewer would make more passes, each writing
 * all the rows again, to save a few read buffers.
 */
#define RUN_MERGE_MIN_ORDER		6
#define RUN_MERGE_MIN_MEMORY	(RUN_MERGE_MIN_ORDER * RUN_READ_BUFFER_LEAST)

extern RunsMerge *runs_merge_start(SortRuns *runs, SortBatch *last,
								   Size merge_memory, bool random_access);
extern MinimalTuple runs_merge_next(RunsMerge *rm, bool forward);
extern void runs_merge_markpos(RunsMerge *rm);
extern void runs_merge_restorepos(RunsMerge *rm);
extern void runs_merge_rewind(RunsMerge *rm);
extern int	runs_merge_passes(RunsMerge *rm);
extern int	runs_merge_threads(RunsMerge *rm);
extern void runs_merge_end(RunsMerge *rm);

#endif							/* GPUSORT_RUN_MERGE_H */

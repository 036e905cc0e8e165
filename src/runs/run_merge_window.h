/*-------------------------------------------------------------------------
 *
 * run_merge_window.h
 *	  The final merge in the pool threads (run_merge_window.c), which the
 *	  merge of run_merge.c starts where the keys alone decide.  sort.c sees
 *	  run_merge.h; the storage below (run.h) sees neither.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_MERGE_WINDOW_H
#define GPUSORT_RUN_MERGE_WINDOW_H

#include "postgres.h"

#include "batch/batch.h"
#include "runs/run.h"

typedef struct WindowMerge WindowMerge;

extern WindowMerge *window_merge_start(SortRuns *runs, SortBatch *last,
									   Size merge_memory);
extern int	window_merge_threads(WindowMerge *wm);
extern MinimalTuple window_merge_next(SortRuns *runs, WindowMerge *wm);
extern void window_merge_close(WindowMerge *wm);

#endif							/* GPUSORT_RUN_MERGE_WINDOW_H */

/*-------------------------------------------------------------------------
 *
 * sort.h
 *	  gpusort's sort module: what tuplesort.c is to nodeSort.c, sort.c is to
 *	  nodeGpuSort.c.
 *
 * The contract is tuplesort's: begin (the sort keys, random access or not;
 * the memory comes from the backend's budget, sort_budget.c), put tuples
 * (from a slot, MinimalTuples, or blocks of them; all are copied),
 * perform the sort, get tuples forward or (with random access) backward,
 * mark and restore a position, rewind, reset for a new input, end.
 * Tuples returned stay valid until the next call.
 *
 * The sort module keeps its own statistics (sort_stats.h), timing each
 * phase itself, the load included; the node reads them with one call,
 * gpusort_sort_get_stats(), as nodeSort.c reads tuplesort_get_stats().
 * They add up over the inputs the sort took since begin, so that a node
 * that sorts again on rescan resets its sort instead of ending it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_H
#define GPUSORT_SORT_H

#include "postgres.h"

#include "executor/tuptable.h"

#include "planner.h"
#include "sort_stats.h"

typedef struct Gpusortstate Gpusortstate;
struct TupleBlock;				/* batch.h */

extern Gpusortstate *gpusort_sort_begin(TupleDesc tupdesc, const GpuSortPlanInfo *info,
										double expected_rows, bool random_access,
										bool time_emit);
extern void gpusort_sort_puttupleslot(Gpusortstate *state, TupleTableSlot *slot);
extern void gpusort_sort_puttuple(Gpusortstate *state, MinimalTuple tuple);
extern int	gpusort_sort_putblocks(Gpusortstate *state, const struct TupleBlock *blocks,
								   int nblocks);
extern void gpusort_sort_performsort(Gpusortstate *state);
extern bool gpusort_sort_gettupleslot(Gpusortstate *state, bool forward,
									  TupleTableSlot *slot);
extern void gpusort_sort_markpos(Gpusortstate *state);
extern void gpusort_sort_restorepos(Gpusortstate *state);
extern bool gpusort_sort_rescan(Gpusortstate *state);
extern void gpusort_sort_reset(Gpusortstate *state);
extern const GpuSortStats *gpusort_sort_get_stats(Gpusortstate *state);
extern void gpusort_sort_end(Gpusortstate *state);

#endif							/* GPUSORT_SORT_H */

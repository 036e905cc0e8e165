/*-------------------------------------------------------------------------
 *
 * sort.h
 *	  gpusort's sort module: what tuplesort.c is to nodeSort.c, sort.c is to
 *	  nodeGpuSort.c.
 *
 * The contract is tuplesort's: begin with the sort's description (the
 * tuple descriptor; each key's column, ordering operator, collation and
 * nulls first, as tuplesort_begin_heap takes them; the planner's estimate
 * of the rows; random access or not), put tuples (from a slot,
 * MinimalTuples, or blocks of them; all are copied),
 * perform the sort, get tuples forward or (with random access) backward,
 * mark and restore a position, rewind, reset for a new input, end.
 * Tuples returned stay valid until the next call.
 *
 * Unlike tuplesort_begin_heap, begin takes no memory limit: the memory a
 * sort may hold is what the backend's budget (gpusort.max_memory), shared
 * by all of the backend's sorts, and the server's (gpusort.server_memory)
 * leave it at each step (sort_memory.c), not a fixed amount its caller
 * could know at begin; where gpusort.max_memory is -1, a sort may always
 * hold work_mem, as a Sort node may, or, begun with
 * GPUSORT_SORT_MAINTENANCE, maintenance_work_mem, as PostgreSQL's index
 * build may.
 *
 * This header is the one interface of the sort module for the executor
 * nodes and the index builds (index_build.c): they need nothing of the
 * module but it.  A parallel load's
 * workers form their tuples with gpusort_copy_slot_tuple (tuple_block.h),
 * as the sort's own load does, and the leader hands them in as
 * TupleBlocks.  The blocks in flight count in the budget, in a share of
 * the load's own (SortLoadShare), which counts the load's workers too.
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

#include "support/sort_stats.h"
#include "support/tuple_block.h"

typedef struct Sorter Sorter;

/* gpusort_sort_begin's options, as tuplesort's sortopt */
#define GPUSORT_SORT_RANDOMACCESS	(1 << 0)	/* backward scans, mark and
												 * restore, rewind */
#define GPUSORT_SORT_TIMED			(1 << 1)	/* time the tuples returned
												 * too (EXPLAIN ANALYZE with
												 * TIMING): two clock
												 * readings a tuple */
#define GPUSORT_SORT_MAINTENANCE	(1 << 2)	/* an index build's sort: it
												 * may hold
												 * maintenance_work_mem
												 * where a Sort node's may
												 * hold work_mem */

extern Sorter *gpusort_sort_begin(TupleDesc tupdesc, int nkeys,
										const AttrNumber *attNums,
										const Oid *sortOperators,
										const Oid *sortCollations,
										const bool *nullsFirstFlags,
										double expected_rows, int sortopt);
extern void gpusort_sort_puttupleslot(Sorter *state, TupleTableSlot *slot);
extern void gpusort_sort_puttuple(Sorter *state, MinimalTuple tuple);
extern int	gpusort_sort_putblocks(Sorter *state, const TupleBlock *blocks,
								   int nblocks);
extern void gpusort_sort_performsort(Sorter *state);
extern bool gpusort_sort_gettupleslot(Sorter *state, bool forward,
									  TupleTableSlot *slot);
extern void gpusort_sort_markpos(Sorter *state);
extern void gpusort_sort_restorepos(Sorter *state);
extern bool gpusort_sort_rescan(Sorter *state);
extern void gpusort_sort_reset(Sorter *state);
extern const GpuSortStats *gpusort_sort_get_stats(Sorter *state);
extern void gpusort_sort_end(Sorter *state);

extern bool gpusort_sort_column_has_key(Oid typid, Oid sortop, Oid collation);

/*
 * A parallel load's share of the budget, for the blocks of shared memory
 * that its workers fill and the leader puts into its sort: it lives as
 * long as the memory it was made in.
 */
typedef struct SortLoadShare SortLoadShare;

extern SortLoadShare *gpusort_sort_load_share(int workers);
extern void gpusort_sort_load_pair(SortLoadShare *share, Sorter *sort);
extern Size gpusort_sort_load_room(SortLoadShare *share);
extern Size gpusort_sort_load_reserve(SortLoadShare *share, Size want);
extern void gpusort_sort_load_hold(SortLoadShare *share, Size bytes);
extern Size gpusort_sort_load_held(const SortLoadShare *share);

#endif							/* GPUSORT_SORT_H */

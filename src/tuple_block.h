/*-------------------------------------------------------------------------
 *
 * tuple_block.h
 *	  Tuples formed in space the caller gives, and blocks of them put into
 *	  a sort at once (tuple_block.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_TUPLE_BLOCK_H
#define GPUSORT_TUPLE_BLOCK_H

#include "postgres.h"

#include "executor/tuptable.h"

/*
 * A block of MAXALIGNed MinimalTuples put into a sort at once (a parallel
 * load's chunk, nodeGpuSortLoad.c): tuple i lies at base + offsets[i], the
 * tuples downward from base + high, each right below the one before, and
 * the last at base + low.  So tuples [from, to) fill the span from
 * offsets[to - 1] up to offsets[from - 1] (high for the first), which the
 * sort's arena copies whole.
 */
typedef struct TupleBlock
{
	const char *base;
	const uint32 *offsets;
	uint32		ntuples;
	uint32		low;
	uint32		high;
} TupleBlock;

/*
 * Where gpusort_copy_slot_tuple forms a tuple: len bytes, or NULL if there
 * are none.  The sort's arena gives its own; a parallel load's worker
 * gives shared memory, so that the blocks it fills are TupleBlocks.
 */
typedef void *(*TupleSpaceFn) (void *arg, Size len);

extern MinimalTuple gpusort_copy_slot_tuple(TupleTableSlot *slot,
											TupleSpaceFn space, void *arg);

#endif							/* GPUSORT_TUPLE_BLOCK_H */

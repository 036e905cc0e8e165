/*-------------------------------------------------------------------------
 *
 * tuple_block.h
 *	  A tuple formed once, as a MinimalTuple, in space its caller gives:
 *	  the sort's arena (batch_load.c), or a parallel load's block of shared
 *	  memory (load_blocks.c), which the leader then puts into its sort
 *	  whole (TupleBlock).
 *
 * Both sides of a parallel load form their tuples here, so that the node
 * and the sort module share this header rather than one reaching into the
 * other.  gpusort_copy_slot_tuple is inline because it runs for every
 * tuple a sort takes: inlined into the arena's load, its space callback
 * is inlined too, and no tuple pays a call through the PLT for it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_TUPLE_BLOCK_H
#define GPUSORT_TUPLE_BLOCK_H

#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"

/*
 * A block of MAXALIGNed MinimalTuples put into a sort at once (a parallel
 * load's block, load_blocks.c): tuple i lies at base + offsets[i], the
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

/*
 * Form the slot's tuple as a MinimalTuple in space that space(arg, len)
 * gives, and return it; NULL if space gave none.
 */
static inline MinimalTuple
gpusort_copy_slot_tuple(TupleTableSlot *slot, TupleSpaceFn space, void *arg)
{
	MinimalTuple copy;
	bool		should_free;

	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		/* a heap tuple is a MinimalTuple behind a longer header */
		HeapTuple	htup = ExecFetchSlotHeapTuple(slot, false, &should_free);
		uint32		len = htup->t_len - MINIMAL_TUPLE_OFFSET;

		copy = space(arg, len);
		if (copy)
		{
			memcpy(copy, (char *) htup->t_data + MINIMAL_TUPLE_OFFSET, len);
			copy->t_len = len;
		}
		if (should_free)
			heap_freetuple(htup);
	}
	else if (TTS_IS_VIRTUAL(slot))
	{
		/* a projected row: form its MinimalTuple in place directly */
		TupleDesc	desc = slot->tts_tupleDescriptor;
		int			natts = desc->natts;
		bool		hasnull = false;
		Size		hoff;
		Size		data_len;

		slot_getallattrs(slot);
		for (int i = 0; i < natts && !hasnull; i++)
			hasnull = slot->tts_isnull[i];
		hoff = MAXALIGN(SizeofMinimalTupleHeader + (hasnull ? BITMAPLEN(natts) : 0));
		data_len = heap_compute_data_size(desc, slot->tts_values, slot->tts_isnull);
		copy = space(arg, hoff + data_len);
		if (copy)
		{
			memset(copy, 0, hoff + data_len);
			copy->t_len = hoff + data_len;
			HeapTupleHeaderSetNatts(copy, natts);
			copy->t_hoff = hoff + MINIMAL_TUPLE_OFFSET;
			heap_fill_tuple(desc, slot->tts_values, slot->tts_isnull,
							(char *) copy + hoff, data_len, &copy->t_infomask,
							hasnull ? copy->t_bits : NULL);
		}
	}
	else
	{
		MinimalTuple mtup = ExecFetchSlotMinimalTuple(slot, &should_free);

		copy = space(arg, mtup->t_len);
		if (copy)
			memcpy(copy, mtup, mtup->t_len);
		if (should_free)
			pfree(mtup);
	}
	return copy;
}

#endif							/* GPUSORT_TUPLE_BLOCK_H */

/*-------------------------------------------------------------------------
 *
 * tuple_block.c
 *	  A tuple formed once, as a MinimalTuple, in space its caller gives:
 *	  the sort's arena (batch_load.c), or a parallel load's block of shared
 *	  memory (nodeGpuSortLoad.c), which the leader then puts into its sort
 *	  whole (TupleBlock, tuple_block.h).
 *
 * Both sides of a parallel load form their tuples here, so that the node
 * and the sort module share this file rather than one reaching into the
 * other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"

#include "tuple_block.h"

/*
 * Form the slot's tuple as a MinimalTuple in space that space(arg, len)
 * gives, and return it; NULL if space gave none.
 */
MinimalTuple
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

/*-------------------------------------------------------------------------
 *
 * compare.c
 *	  PostgreSQL's own comparators (SortSupport) over a sort's tuples, on
 *	  every ORDER BY column in order: what decides where the normalized
 *	  keys cannot, in resolve (resolve.c, refine.c) and in the
 *	  merges of runs (run_merge.c, run_merge_window.c).
 *
 * Tuples are compared tuple against tuple (compare_tuples: the comparator
 * sort of batch_sort.c; compare_records, by record index: refine.c's
 * repair).  A record that is compared many times, as a merge's current
 * record is, has its datums taken once (compare_deform_tuple), detoasted
 * where they are stored out of line or compressed, and is compared by
 * them (compare_values: run_merge.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"

#include "resolve/compare.h"

/*
 * Compare tuples a and b on every ORDER BY column with PostgreSQL's
 * comparators: <0, 0, >0.
 */
int
compare_tuples(CompareContext *res, MinimalTuple a, MinimalTuple b)
{
	const KeyLayout *layout = res->layout;
	TupleTableSlot *sa = res->slot;
	TupleTableSlot *sb = res->slot2;
	int			r = 0;

	ExecStoreMinimalTuple(a, sa, false);
	ExecStoreMinimalTuple(b, sb, false);
	slot_getsomeattrs(sa, layout->max_attno);
	slot_getsomeattrs(sb, layout->max_attno);
	for (int c = 0; c < layout->ncols && r == 0; c++)
	{
		AttrNumber	attno = layout->cols[c].attno;

		r = ApplySortComparator(sa->tts_values[attno - 1], sa->tts_isnull[attno - 1],
								sb->tts_values[attno - 1], sb->tts_isnull[attno - 1],
								&res->ssup[c]);
	}
	ExecClearTuple(sa);
	ExecClearTuple(sb);
	return r;
}

/*
 * The ORDER BY columns' datums of tuple, in layout order, for
 * compare_values(): a value stored out of line or compressed is
 * detoasted into cxt (*detoasted_bytes counts it), the others point into
 * the tuple.  A record compared many times, as a merge's current record
 * is, is then detoasted once, where PostgreSQL's comparators detoast both
 * values at every comparison.
 */
void
compare_deform_tuple(CompareContext *res, MinimalTuple tuple, Datum *values,
					 bool *isnull, MemoryContext cxt, Size *detoasted_bytes)
{
	const KeyLayout *layout = res->layout;
	TupleTableSlot *slot = res->slot;

	ExecStoreMinimalTuple(tuple, slot, false);
	slot_getsomeattrs(slot, layout->max_attno);
	for (int c = 0; c < layout->ncols; c++)
	{
		AttrNumber	attno = layout->cols[c].attno;
		Datum		value = slot->tts_values[attno - 1];

		isnull[c] = slot->tts_isnull[attno - 1];
		if (!isnull[c] &&
			TupleDescAttr(slot->tts_tupleDescriptor, attno - 1)->attlen == -1 &&
			(VARATT_IS_EXTERNAL(DatumGetPointer(value)) ||
			 VARATT_IS_COMPRESSED(DatumGetPointer(value))))
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
			struct varlena *plain = detoast_attr((struct varlena *) DatumGetPointer(value));

			MemoryContextSwitchTo(oldcxt);
			*detoasted_bytes += VARSIZE(plain);
			value = PointerGetDatum(plain);
		}
		values[c] = value;
	}
	ExecClearTuple(slot);
}

/* Order of two records by the datums compare_deform_tuple() took. */
int
compare_values(CompareContext *res, const Datum *va, const bool *na,
					   const Datum *vb, const bool *nb)
{
	int			r = 0;

	for (int c = 0; c < res->layout->ncols && r == 0; c++)
		r = ApplySortComparator(va[c], na[c], vb[c], nb[c], &res->ssup[c]);
	return r;
}

/* The same for records a and b of res->tuples. */
int
compare_records(CompareContext *res, uint32 a, uint32 b)
{
	return compare_tuples(res, res->tuples[a], res->tuples[b]);
}

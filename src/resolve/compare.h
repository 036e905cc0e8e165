/*-------------------------------------------------------------------------
 *
 * compare.h
 *	  PostgreSQL's comparators over a sort's tuples (compare.c): the order
 *	  that the keys leave undecided, for resolve (resolve.c, refine.c) and
 *	  for the merges of runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_COMPARE_H
#define GPUSORT_COMPARE_H

#include "postgres.h"

#include "access/htup.h"
#include "executor/tuptable.h"
#include "utils/sortsupport.h"

#include "keys/keys.h"

/*
 * The sort's comparators, and what they compare: its records' tuples, or
 * their datums taken once (compare_deform_tuple).
 */
typedef struct CompareContext
{
	const KeyLayout *layout;
	SortSupport ssup;			/* one per ORDER BY column, prepared */
	SortSupport abbrev;			/* the same with abbreviation, where the
								 * type offers it (abbrev_converter set) */
	TupleTableSlot *slot;		/* a MinimalTuple slot to deform with */
	TupleTableSlot *slot2;		/* another, to compare two records */
	MinimalTuple *tuples;		/* tuple of each record index */
	const KeyInputs *inputs;	/* or NULL: each record's datums of the
								 * full key's columns, detoasted
								 * (batch_encode.c), which the comparators
								 * then take rather than detoast again */
} CompareContext;

extern int	compare_tuples(CompareContext *cmp, MinimalTuple a, MinimalTuple b);
extern int	compare_records(CompareContext *cmp, uint32 a, uint32 b);
extern void compare_deform_tuple(CompareContext *cmp, MinimalTuple tuple,
								 Datum *values, bool *isnull,
								 MemoryContext cxt, Size *detoasted_bytes);
extern int	compare_values(CompareContext *cmp, const Datum *va,
						   const bool *na, const Datum *vb, const bool *nb);

#endif							/* GPUSORT_COMPARE_H */

/*-------------------------------------------------------------------------
 *
 * tiebreak.h
 *	  The comparator pass: ordering records whose inexact keys are equal.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_TIEBREAK_H
#define GPUSORT_TIEBREAK_H

#include "postgres.h"

#include "access/htup.h"
#include "executor/tuptable.h"
#include "utils/sortsupport.h"

#include "keys.h"

/* What the pass needs to know of the sort. */
typedef struct Tiebreak
{
	const KeyLayout *layout;
	SortSupport ssup;			/* one per ORDER BY column, prepared */
	SortSupport abbrev;			/* the same with abbreviation, where the
								 * type offers it (abbrev_converter set) */
	TupleTableSlot *slot;		/* a MinimalTuple slot to deform with */
	MinimalTuple *tuples;		/* tuple of each record index */
} Tiebreak;

extern void gpusort_resolve_ties(Tiebreak *tb, const KeyStore *keys,
								 uint32 *perm, size_t n,
								 int64 *resolved);

#endif							/* GPUSORT_TIEBREAK_H */

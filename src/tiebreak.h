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

#include "engine.h"
#include "keys.h"
#include "keythreads.h"

/* What the pass needs to know of the sort. */
typedef struct Tiebreak
{
	const KeyLayout *layout;
	SortSupport ssup;			/* one per ORDER BY column, prepared */
	SortSupport abbrev;			/* the same with abbreviation, where the
								 * type offers it (abbrev_converter set) */
	TupleTableSlot *slot;		/* a MinimalTuple slot to deform with */
	TupleTableSlot *slot2;		/* another, to compare two records */
	MinimalTuple *tuples;		/* tuple of each record index */
} Tiebreak;

/* perm[start .. start + len - 1]: records known equal on columns < first_col */
typedef struct SortRun
{
	size_t		start;
	size_t		len;
	int			first_col;
} SortRun;

extern const uint8 *gpusort_equal_neighbours(KeyThreadPool *pool,
											 const SortEngine *engine,
											 const uint32 *perm, size_t n);
extern size_t gpusort_next_tie_run(const uint8 *ties, size_t n, size_t *start);
extern void gpusort_resolve_ties(Tiebreak *tb, KeyThreadPool *pool,
								 const SortEngine *engine, uint32 *perm,
								 size_t n, int64 *resolved);
extern void gpusort_sort_runs(Tiebreak *tb, uint32 *perm, const SortRun *runs,
							  size_t nruns, int64 *resolved);
extern int	gpusort_compare_records(Tiebreak *tb, uint32 a, uint32 b);
extern int	gpusort_compare_tuples(Tiebreak *tb, MinimalTuple a, MinimalTuple b);

#endif							/* GPUSORT_TIEBREAK_H */

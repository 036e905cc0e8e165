/*-------------------------------------------------------------------------
 *
 * resolve.h
 *	  The resolve stage: ordering the tie ranges that inexact keys leave,
 *	  with PostgreSQL's comparators (resolve.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RESOLVE_H
#define GPUSORT_RESOLVE_H

#include "postgres.h"

#include "access/htup.h"
#include "executor/tuptable.h"
#include "utils/sortsupport.h"

#include "engine.h"
#include "keys.h"
#include "threadpool.h"

/* What the resolve stage needs to know of the sort. */
typedef struct ResolveContext
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
} ResolveContext;

/* perm[start .. start + len - 1]: records known equal on columns < first_col */
typedef struct TieRange
{
	size_t		start;
	size_t		len;
	int			first_col;
} TieRange;

extern const uint8 *resolve_equal_neighbours(ThreadPool *pool,
											 const SortEngine *engine,
											 const uint32 *perm, size_t n);
extern size_t resolve_next_tie_range(const uint8 *ties, size_t n, size_t *start);
extern void resolve_ties(ResolveContext *res, ThreadPool *pool,
						 const SortEngine *engine, uint32 *perm, size_t n,
						 int64 *resolved);
extern void resolve_tie_ranges(ResolveContext *res, uint32 *perm,
							   const TieRange *ranges, size_t nranges,
							   int64 *resolved);
extern int	resolve_compare_records(ResolveContext *res, uint32 a, uint32 b);
extern void resolve_deform_tuple(ResolveContext *res, MinimalTuple tuple,
								 Datum *values, bool *isnull, MemoryContext cxt,
								 Size *detoasted_bytes);
extern int	resolve_compare_values(ResolveContext *res, const Datum *va,
								   const bool *na, const Datum *vb,
								   const bool *nb);

#endif							/* GPUSORT_RESOLVE_H */

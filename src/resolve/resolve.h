/*-------------------------------------------------------------------------
 *
 * resolve.h
 *	  Resolve's comparator pass: ordering the tie ranges that inexact keys
 *	  leave, and the comparator sort of a batch whose keys were given up,
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

#include "engine/engine.h"
#include "keys/keys.h"
#include "resolve/compare.h"
#include "support/threadpool.h"

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
extern void resolve_sorted(CompareContext *res, ThreadPool *pool,
						 const SortEngine *engine, uint32 *perm, size_t n,
						 int64 *resolved, Size *scratch);
extern void resolve_tie_ranges(CompareContext *res, uint32 *perm,
							   const TieRange *ranges, size_t nranges,
							   int64 *resolved, Size *scratch);
extern MinimalTuple *resolve_sort_tuples(CompareContext *res,
										 MinimalTuple *tuples, size_t n,
										 void *space);

/*
 * An item of the comparators' sort, a record's: a tie range's, and the
 * comparator sort's, which then holds the batch's records in these bytes
 * each beside their tuples (resolve_sort_tuples).
 */
#define RESOLVE_ITEM_BYTES	16

/*
 * The most the comparator pass takes beside the batch, a record: a tie
 * range's item and its compared columns' datums (a range can be the whole
 * batch, every column compared, the first twice where it is abbreviated),
 * and a byte for the equal neighbours.  batch_memory() (batch.c) counts it
 * in the batch's limit.
 */
#define RESOLVE_BYTES(ncols) \
	(RESOLVE_ITEM_BYTES + (Size) (ncols) * (sizeof(Datum) + sizeof(bool)) + 1)

#endif							/* GPUSORT_RESOLVE_H */

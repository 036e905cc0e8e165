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

#include "compare.h"
#include "engine.h"
#include "keys.h"
#include "threadpool.h"

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

#endif							/* GPUSORT_RESOLVE_H */

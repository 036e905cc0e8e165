/*-------------------------------------------------------------------------
 *
 * refine.h
 *	  After the prefix sort of a generic layout: refining tie ranges of equal
 *	  prefixes on the following key bytes, and checking libc order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_REFINE_H
#define GPUSORT_REFINE_H

#include "postgres.h"

#include "engine/engine.h"
#include "keys/keys.h"
#include "resolve/resolve.h"
#include "support/threadpool.h"

typedef struct RefineContext
{
	const KeyLayout *layout;
	const KeyInputs *inputs;
	ThreadPool *pool;
	MemoryContext cxt;			/* engines and workspace of the rounds */
	bool		use_gpu;		/* the sort ran on the GPU: large rounds may
								 * too (engine_chain_begin_within) */
	CompareContext *res;		/* PostgreSQL's comparators */

	/*
	 * A leading key's tie ranges that refinement orders by the later
	 * columns' keys: the only pairs the collation check has to check, the
	 * leading columns' exact keys and the comparators ordering the others
	 */
	TieRange   *keyed;
	size_t		nkeyed;

	/* results, for EXPLAIN ANALYZE */
	int			rounds;
	int64		refined;		/* record-rounds sorted on further bytes */
	bool		rounds_on_gpu;
	int64		collated;		/* records of the collation sort */
	int64		checked_pairs;	/* adjacent pairs checked (libc) */
	int64		repaired;		/* records moved by the repair */
} RefineContext;

extern bool gpusort_refine(RefineContext *rc, const SortEngine *sorted, uint32 *perm,
						   size_t n, TieRange **ranges, size_t *nranges, char **why);
extern bool gpusort_check_collation(RefineContext *rc, uint32 *perm, size_t n,
									const TieRange *ties, size_t nties,
									char **why);

#endif							/* GPUSORT_REFINE_H */

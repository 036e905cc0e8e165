/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  The resolve stage: after the engine has sorted the records by key,
 *	  each tie range (records with equal keys, contiguous in the sorted
 *	  result) is ordered with PostgreSQL's own comparators (SortSupport),
 *	  where the keys do not decide the order alone.
 *
 * A key is inexact when an ORDER BY column has no exact encoding (text,
 * numeric, arrays, ... or a non-default operator class) or does not fit in
 * gpusort.key_width.  The key then still orders records correctly where it
 * differs, and records with equal keys form tie ranges that are contiguous
 * after the engine's sort.  Within a tie range the leading exact_cols
 * columns are known equal (they are wholly in the key), so the comparison
 * starts at the first inexact column.  Ties left after every column are
 * broken by record index, which keeps a tie range in input order as the
 * engines do.
 *
 * The tie ranges are found from the engine's sorted result: the pool
 * threads compare the keys of neighbours (resolve_equal_neighbours), one
 * random key access a record; refinement (refine.c) finds its tie ranges
 * the same way.
 *
 * On the generic path (keys_build.c), refinement (refine.c) leaves tie
 * ranges of records whose full keys are equal; where the full key stops
 * short of the last ORDER BY column, this stage orders them on the
 * columns after.  The comparators themselves are compare.c's, which the
 * merges of runs use too; the comparator sort (batch keys given up) is
 * batch_sort.c's.
 *
 * A range is sorted as tuplesort sorts: 16-byte items holding the first
 * compared column's datum (abbreviated in long ranges), the datums of the
 * other columns deformed once a record beside them.  That scratch, and a
 * byte a record for the equal neighbours, is the batch's memory, and its
 * limit counts it (RESOLVE_BYTES, resolve.h).
 *
 * This is the path that makes every ORDER BY that PostgreSQL accepts come
 * out in PostgreSQL's order, whatever the types and collations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "resolve/resolve.h"
#include "support/compat.h"

/*
 * One record of a range: its first compared column's datum, abbreviated
 * where the range uses abbreviated keys, its index, and where its other
 * datums lie in the range's arrays (TieRest); 16 bytes, as tuplesort's
 * SortTuple less its tuple pointer.
 */
typedef struct TieItem
{
	Datum		first;
	uint32		index;
	uint32		slot;			/* TIE_SLOT: its row of the range's arrays;
								 * TIE_FIRST_NULL: first is NULL */
} TieItem;

StaticAssertDecl(sizeof(TieItem) == RESOLVE_TIE_ITEM_BYTES,
				 "batch_memory() counts a tie range's items at this size");

#define TIE_FIRST_NULL		((uint32) 1 << 31)
#define TIE_SLOT(item)		((item)->slot & ~TIE_FIRST_NULL)
#define TIE_NULL(item)		(((item)->slot & TIE_FIRST_NULL) != 0)

/*
 * The datums a comparison may reach after the first, deformed once a record
 * rather than at each comparison: nrest a record, from column rest_col on
 * (the first compared column itself where it is abbreviated, for the full
 * comparison behind equal abbreviations).  They point into the arena's
 * tuples or the key's inputs, both of which outlive the stage.
 */
typedef struct TieRest
{
	int			rest_col;
	int			nrest;
	Datum	   *values;
	bool	   *isnull;
} TieRest;

typedef struct TieCompare
{
	CompareContext *res;
	int			first_col;		/* first column to compare */
	SortSupport ssup;			/* of first_col, first_col + 1, ... */
	SortSupport abbrev;			/* first_col's abbreviation, or NULL */
	TieRest		rest;
	uint32		ncompares;		/* to check for interrupts now and then */
	Size		scratch;		/* the most a range's scratch took */
} TieCompare;

/*
 * Ranges at least this long compare abbreviated keys first, as tuplesort
 * does: converting costs one call per record, and pays for itself on the
 * n log n comparisons of a long range.
 */
#define ABBREVIATE_MIN_RANGE	64

/* sorted records a task of resolve_equal_neighbours compares */
#define TIES_GRAIN			65536

/* comparisons between checks for cancel and terminate */
#define COMPARES_PER_INTERRUPT_CHECK	4096

static int
compare_tie_items(const void *a, const void *b, void *arg)
{
	const TieItem *x = (const TieItem *) a;
	const TieItem *y = (const TieItem *) b;
	TieCompare *cmp = (TieCompare *) arg;
	const TieRest *rest = &cmp->rest;
	const Datum *xv;
	const Datum *yv;
	const bool *xn;
	const bool *yn;
	int			r;

	/*
	 * A range can be the whole input (a text key), and qsort has no
	 * interrupt checks of its own; leaving it by longjmp is safe, as it
	 * holds nothing but memory in our context.
	 */
	if (++cmp->ncompares % COMPARES_PER_INTERRUPT_CHECK == 0)
		CHECK_FOR_INTERRUPTS();

	r = ApplySortComparator(x->first, TIE_NULL(x), y->first, TIE_NULL(y),
							cmp->abbrev ? cmp->abbrev : &cmp->ssup[0]);
	if (r != 0)
		return r;

	xv = rest->values + (size_t) TIE_SLOT(x) * rest->nrest;
	yv = rest->values + (size_t) TIE_SLOT(y) * rest->nrest;
	xn = rest->isnull + (size_t) TIE_SLOT(x) * rest->nrest;
	yn = rest->isnull + (size_t) TIE_SLOT(y) * rest->nrest;
	for (int c = 0; c < rest->nrest; c++)
	{
		int			col = rest->rest_col + c - cmp->first_col;

		/* abbreviated keys were equal: the full datums decide */
		if (col == 0)
			r = ApplySortAbbrevFullComparator(xv[c], xn[c], yv[c], yn[c],
											  cmp->abbrev);
		else
			r = ApplySortComparator(xv[c], xn[c], yv[c], yn[c], &cmp->ssup[col]);
		if (r != 0)
			return r;
	}
	return (x->index < y->index) ? -1 : (x->index > y->index);
}

/* Order perm[0 .. len-1], a range of records with equal keys. */
static void
sort_tie_range(TieCompare *cmp, uint32 *range, size_t len,
			   MemoryContext rangecxt)
{
	CompareContext *res = cmp->res;
	MemoryContext oldcxt = MemoryContextSwitchTo(rangecxt);
	const KeyLayout *layout = res->layout;
	TupleTableSlot *slot = res->slot;
	TieCompare	range_cmp = *cmp;
	TieRest    *rest = &range_cmp.rest;
	TieItem    *items;

	/* long ranges use the first column's abbreviated keys, where it has them */
	if (len < ABBREVIATE_MIN_RANGE || res->abbrev == NULL ||
		res->abbrev[cmp->first_col].abbrev_converter == NULL)
		range_cmp.abbrev = NULL;
	else
		range_cmp.abbrev = &res->abbrev[cmp->first_col];
	rest->rest_col = range_cmp.abbrev ? cmp->first_col : cmp->first_col + 1;
	rest->nrest = layout->ncols - rest->rest_col;

	items = palloc_extended(sizeof(TieItem) * len, MCXT_ALLOC_HUGE);
	rest->values = palloc_extended(sizeof(Datum) * len * Max(rest->nrest, 1),
								   MCXT_ALLOC_HUGE);
	rest->isnull = palloc_extended(sizeof(bool) * len * Max(rest->nrest, 1),
								   MCXT_ALLOC_HUGE);

	for (size_t i = 0; i < len; i++)
	{
		Datum	   *values = rest->values + i * rest->nrest;
		bool	   *isnull = rest->isnull + i * rest->nrest;
		Datum		first = (Datum) 0;
		bool		first_isnull = true;

		ExecStoreMinimalTuple(res->tuples[range[i]], slot, false);
		slot_getsomeattrs(slot, layout->max_attno);
		for (int col = cmp->first_col; col < layout->ncols; col++)
		{
			Datum		value;
			bool		null;

			/* the key's inputs, detoasted once, where the batch kept them */
			if (res->inputs != NULL && col < res->inputs->ncols)
			{
				value = key_inputs_values(res->inputs, range[i])[col];
				null = key_inputs_isnull(res->inputs, range[i])[col];
			}
			else
			{
				value = slot->tts_values[layout->cols[col].attno - 1];
				null = slot->tts_isnull[layout->cols[col].attno - 1];
			}
			if (col == cmp->first_col)
			{
				first = value;
				first_isnull = null;
			}
			if (col >= rest->rest_col)
			{
				values[col - rest->rest_col] = value;
				isnull[col - rest->rest_col] = null;
			}
		}
		if (range_cmp.abbrev && !first_isnull)
			first = range_cmp.abbrev->abbrev_converter(first, range_cmp.abbrev);
		items[i].first = first_isnull ? (Datum) 0 : first;
		items[i].index = range[i];
		items[i].slot = (uint32) i | (first_isnull ? TIE_FIRST_NULL : 0);
	}
	ExecClearTuple(slot);

	qsort_arg(items, len, sizeof(TieItem), compare_tie_items, (void *) &range_cmp);
	cmp->ncompares = range_cmp.ncompares;
	cmp->scratch = Max(cmp->scratch, MemoryContextMemAllocated(rangecxt, true));

	for (size_t i = 0; i < len; i++)
		range[i] = items[i].index;

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(rangecxt);
}

static void
init_tie_compare(CompareContext *res, TieCompare *cmp, int first_col)
{
	cmp->res = res;
	cmp->first_col = first_col;
	cmp->ssup = res->ssup + first_col;
	cmp->ncompares = 0;
	cmp->scratch = 0;
}

/* a task of resolve_equal_neighbours: ties[i] for sorted records i in [from, to) */
typedef struct MarkTies
{
	const KeyStore *keys;
	const uint32 *perm;
	size_t		n;
	uint8	   *ties;
} MarkTies;

static bool
mark_ties(void *state, void *arg, size_t from, size_t to)
{
	MarkTies   *mt = (MarkTies *) arg;

	for (size_t i = from; i < to; i++)
	{
		if (i + 1 + KEYSTORE_PREFETCH_DISTANCE < mt->n)
			keystore_prefetch(mt->keys, mt->perm[i + 1 + KEYSTORE_PREFETCH_DISTANCE]);
		mt->ties[i] = keystore_keys_equal(mt->keys, mt->perm[i], mt->perm[i + 1]);
	}
	return true;
}

/*
 * Which neighbours of an engine's sorted result perm[0 .. n-1] have equal
 * keys: ties[i] says that sorted records i and i + 1 do; NULL if n < 2.
 * The pool threads compare the keys (the backend alone without a pool), one
 * random access a record, which in one thread took as long as the GPU sort
 * and its transfers together.  The result is palloc'd for the caller to
 * free.
 */
const uint8 *
resolve_equal_neighbours(ThreadPool *pool, const SortEngine *engine,
						 const uint32 *perm, size_t n)
{
	MarkTies	mt;

	if (n < 2)
		return NULL;
	mt.keys = &engine->keys;
	mt.perm = perm;
	mt.n = n;
	mt.ties = palloc_extended(n - 1, MCXT_ALLOC_HUGE);
	if (pool)
		threadpool_parallel_for(pool, mark_ties, &mt, n - 1, TIES_GRAIN);
	else
		(void) mark_ties(NULL, &mt, 0, n - 1);
	return mt.ties;
}

/*
 * The next range of two or more records with equal keys in a sorted result
 * of n records whose equal neighbours are ties (resolve_equal_neighbours),
 * at or after *start: its length (0: no more ranges), with *start moved to
 * its beginning.
 */
size_t
resolve_next_tie_range(const uint8 *ties, size_t n, size_t *start)
{
	size_t		i = *start;
	size_t		end;
	const uint8 *hit;

	if (ties == NULL || i + 1 >= n)
		return 0;
	hit = memchr(ties + i, 1, n - 1 - i);
	if (hit == NULL)
		return 0;
	i = hit - ties;
	for (end = i + 1; end < n && ties[end - 1]; end++)
		;
	*start = i;
	return end - i;
}

/*
 * The resolve stage of the fixed path: each tie range of equal inexact
 * keys in the engine's sorted result perm[0 .. n-1], known equal on the
 * columns the key holds whole; *resolved counts the records of such ranges,
 * *scratch the most memory the stage took.
 */
void
resolve_sorted(CompareContext *res, ThreadPool *pool, const SortEngine *engine,
			 uint32 *perm, size_t n, int64 *resolved, Size *scratch)
{
	TieCompare	cmp;
	MemoryContext rangecxt;
	const uint8 *ties;
	size_t		start = 0;
	size_t		len;

	*resolved = 0;
	*scratch = 0;
	if (res->layout->exact || n < 2)
		return;

	init_tie_compare(res, &cmp, res->layout->exact_cols);
	ties = resolve_equal_neighbours(pool, engine, perm, n);
	rangecxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort resolve",
									 ALLOCSET_DEFAULT_SIZES);
	while ((len = resolve_next_tie_range(ties, n, &start)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		sort_tie_range(&cmp, perm + start, len, rangecxt);
		*resolved += len;
		start += len;
	}
	*scratch = cmp.scratch + (n - 1);
	MemoryContextDelete(rangecxt);
	if (ties != NULL)
		pfree((void *) ties);
}

/*
 * The comparators over given tie ranges (refine.c finds them); *scratch is
 * the most memory they took.
 */
void
resolve_tie_ranges(CompareContext *res, uint32 *perm, const TieRange *ranges,
				   size_t nranges, int64 *resolved, Size *scratch)
{
	MemoryContext rangecxt;

	*resolved = 0;
	*scratch = 0;
	if (nranges == 0)
		return;
	rangecxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort resolve",
									 ALLOCSET_DEFAULT_SIZES);
	for (size_t r = 0; r < nranges; r++)
	{
		TieCompare	cmp;

		if (ranges[r].len < 2 || ranges[r].first_col >= res->layout->ncols)
			continue;
		CHECK_FOR_INTERRUPTS();
		init_tie_compare(res, &cmp, ranges[r].first_col);
		sort_tie_range(&cmp, perm + ranges[r].start, ranges[r].len, rangecxt);
		*resolved += ranges[r].len;
		*scratch = Max(*scratch, cmp.scratch);
	}
	MemoryContextDelete(rangecxt);
}

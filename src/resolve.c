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
 * columns after.  The comparator sort (batch keys given up) is one tie
 * range of the whole batch from the first column.  The comparators
 * themselves are compare.c's, which the merges of runs use too.
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

#include "compat.h"
#include "resolve.h"

/* one record of a range, with the datums its comparison needs */
typedef struct TieItem
{
	Datum		first;			/* the first compared column, kept inline */
	Datum		abbreviated;	/* its abbreviated key, if any */
	bool		first_isnull;
	uint32		index;
	Datum	   *values;			/* all compared columns */
	bool	   *isnull;
} TieItem;

typedef struct TieCompare
{
	int			first_col;		/* first column to compare */
	int			ncols;			/* columns compared */
	SortSupport ssup;			/* of first_col, first_col + 1, ... */
	SortSupport abbrev;			/* first_col's abbreviation, or NULL */
	uint32		ncompares;		/* to check for interrupts now and then */
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

	/*
	 * A range can be the whole input (a text key), and qsort has no
	 * interrupt checks of its own; leaving it by longjmp is safe, as it
	 * holds nothing but memory in our context.
	 */
	if (++cmp->ncompares % COMPARES_PER_INTERRUPT_CHECK == 0)
		CHECK_FOR_INTERRUPTS();

	for (int c = 0; c < cmp->ncols; c++)
	{
		int			r;

		if (c == 0 && cmp->abbrev)
		{
			/* abbreviated keys decide unless equal; then the full datums */
			r = ApplySortComparator(x->abbreviated, x->first_isnull,
									y->abbreviated, y->first_isnull, cmp->abbrev);
			if (r == 0)
				r = ApplySortAbbrevFullComparator(x->first, x->first_isnull,
												  y->first, y->first_isnull,
												  cmp->abbrev);
		}
		else if (c == 0)
			r = ApplySortComparator(x->first, x->first_isnull,
									y->first, y->first_isnull, &cmp->ssup[0]);
		else
			r = ApplySortComparator(x->values[c], x->isnull[c],
									y->values[c], y->isnull[c], &cmp->ssup[c]);
		if (r != 0)
			return r;
	}
	return (x->index < y->index) ? -1 : (x->index > y->index);
}

/* Order perm[0 .. len-1], a range of records with equal keys. */
static void
sort_tie_range(CompareContext *res, TieCompare *cmp, uint32 *range, size_t len,
		 MemoryContext rangecxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rangecxt);
	TieItem    *items = palloc_extended(sizeof(TieItem) * len, MCXT_ALLOC_HUGE);
	Datum	   *values = palloc_extended(sizeof(Datum) * len * cmp->ncols, MCXT_ALLOC_HUGE);
	bool	   *isnull = palloc_extended(sizeof(bool) * len * cmp->ncols, MCXT_ALLOC_HUGE);
	const KeyLayout *layout = res->layout;
	TieCompare	range_cmp = *cmp;

	/* long ranges use the first column's abbreviated keys, where it has them */
	if (len < ABBREVIATE_MIN_RANGE || res->abbrev == NULL ||
		res->abbrev[cmp->first_col].abbrev_converter == NULL)
		range_cmp.abbrev = NULL;
	else
		range_cmp.abbrev = &res->abbrev[cmp->first_col];

	for (size_t i = 0; i < len; i++)
	{
		TupleTableSlot *slot = res->slot;

		/*
		 * datums point into the arena's tuples, or are the key's inputs,
		 * detoasted once already; both outlive the stage
		 */
		ExecStoreMinimalTuple(res->tuples[range[i]], slot, false);
		slot_getsomeattrs(slot, layout->max_attno);
		items[i].index = range[i];
		items[i].values = values + i * cmp->ncols;
		items[i].isnull = isnull + i * cmp->ncols;
		for (int c = 0; c < cmp->ncols; c++)
		{
			int			col = cmp->first_col + c;
			AttrNumber	attno = layout->cols[col].attno;

			if (res->inputs != NULL && col < res->inputs->ncols)
			{
				items[i].values[c] = key_inputs_values(res->inputs, range[i])[col];
				items[i].isnull[c] = key_inputs_isnull(res->inputs, range[i])[col];
			}
			else
			{
				items[i].values[c] = slot->tts_values[attno - 1];
				items[i].isnull[c] = slot->tts_isnull[attno - 1];
			}
		}
		items[i].first = items[i].values[0];
		items[i].first_isnull = items[i].isnull[0];
		items[i].abbreviated = (range_cmp.abbrev && !items[i].first_isnull) ?
			range_cmp.abbrev->abbrev_converter(items[i].first, range_cmp.abbrev) :
			(Datum) 0;
	}
	ExecClearTuple(res->slot);

	qsort_arg(items, len, sizeof(TieItem), compare_tie_items, (void *) &range_cmp);
	cmp->ncompares = range_cmp.ncompares;

	for (size_t i = 0; i < len; i++)
		range[i] = items[i].index;

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(rangecxt);
}

static void
init_tie_compare(CompareContext *res, TieCompare *cmp, int first_col)
{
	cmp->first_col = first_col;
	cmp->ncols = res->layout->ncols - first_col;
	cmp->ssup = res->ssup + first_col;
	cmp->ncompares = 0;
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
mark_ties(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
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
 * columns the key holds whole; *resolved counts the records of such ranges.
 */
void
resolve_sorted(CompareContext *res, ThreadPool *pool, const SortEngine *engine,
			 uint32 *perm, size_t n, int64 *resolved)
{
	TieCompare	cmp;
	MemoryContext rangecxt;
	const uint8 *ties;
	size_t		start = 0;
	size_t		len;

	*resolved = 0;
	if (res->layout->exact || n < 2)
		return;

	init_tie_compare(res, &cmp, res->layout->exact_cols);
	ties = resolve_equal_neighbours(pool, engine, perm, n);
	rangecxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort resolve",
									 ALLOCSET_DEFAULT_SIZES);
	while ((len = resolve_next_tie_range(ties, n, &start)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		sort_tie_range(res, &cmp, perm + start, len, rangecxt);
		*resolved += len;
		start += len;
	}
	MemoryContextDelete(rangecxt);
	if (ties != NULL)
		pfree((void *) ties);
}

/* The comparators over given tie ranges (refine.c finds them). */
void
resolve_tie_ranges(CompareContext *res, uint32 *perm, const TieRange *ranges,
				   size_t nranges, int64 *resolved)
{
	MemoryContext rangecxt;

	*resolved = 0;
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
		sort_tie_range(res, &cmp, perm + ranges[r].start, ranges[r].len, rangecxt);
		*resolved += ranges[r].len;
	}
	MemoryContextDelete(rangecxt);
}

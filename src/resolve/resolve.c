/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  Resolve's comparator pass: after the engine has sorted records by key,
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
 * the same way, and walks them with resolve_next_tie_range.  batch_sort.c
 * calls the stage: resolve_sorted on the fixed path, resolve_tie_ranges
 * over the ranges that refinement leaves on the generic one.
 *
 * On the generic path (keys_build.c), refinement (refine.c) leaves tie
 * ranges of records whose full keys are equal; where the full key stops
 * short of the last ORDER BY column, this pass orders them on the
 * columns after.  The comparators themselves are compare.c's, which the
 * merges of runs use too.
 *
 * A range is sorted as tuplesort sorts: 16-byte items holding the first
 * compared column's datum (abbreviated in long ranges), the datums of the
 * other columns deformed once a record beside them.  That scratch, and a
 * byte a record for the equal neighbours, is the batch's memory, and its
 * limit counts it (RESOLVE_BYTES, resolve.h).  The comparator sort (a
 * batch whose keys were given up, batch_sort.c) is the same sort of items
 * over the whole batch, each holding its tuple's pointer instead, from
 * which the other columns are compared (resolve_sort_tuples): the batch
 * then holds 16 bytes a record beside its tuples.
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
 * An item of the comparators' sort, 16 bytes, tuplesort's SortTuple less a
 * field: a record's first compared column's datum, abbreviated where
 * the sort abbreviates (0 where NULL), and the record, whose lowest bit
 * says that the datum is NULL: in a sort of the batch's tuples
 * (resolve_sort_tuples), the tuple's pointer (tuples are MAXALIGNed); in a
 * tie range, its index (the high 32 bits) and its row of the range's
 * arrays (TieRest).
 */
typedef struct ResolveItem
{
	Datum		first;
	uint64		record;
} ResolveItem;

StaticAssertDecl(sizeof(ResolveItem) == RESOLVE_ITEM_BYTES,
				 "batch_memory() counts the items at this size");

#define ITEM_FIRST_NULL		((uint64) 1)
#define ITEM_NULL(item)		(((item)->record & ITEM_FIRST_NULL) != 0)
#define ITEM_TUPLE(item)	((MinimalTuple) (uintptr_t) ((item)->record & ~ITEM_FIRST_NULL))
#define ITEM_INDEX(item)	((uint32) ((item)->record >> 32))
#define ITEM_SLOT(item)		(((uint32) (item)->record) >> 1)

/*
 * The datums a comparison may reach after the first, deformed once a record
 * rather than at each comparison: nrest a record, from column rest_col on
 * (the first compared column itself where it is abbreviated, for the full
 * comparison behind equal abbreviations).  They point into the arena's
 * tuples or the key's inputs, both of which outlive the stage.  In a sort
 * of the batch's tuples there are no arrays (values NULL): the items hold
 * their tuples, from which the comparison takes every column.
 */
typedef struct TieRest
{
	int			rest_col;
	int			nrest;
	Datum	   *values;
	bool	   *isnull;
} TieRest;

/* a sort of items (compare_items), from column first_col on */
typedef struct ItemSort
{
	CompareContext *res;
	int			first_col;		/* first column to compare */
	SortSupport ssup;			/* of first_col, first_col + 1, ... */
	SortSupport abbrev;			/* first_col's abbreviation, or NULL */
	SortSupport first;			/* the items' first datums': abbrev or ssup */
	TieRest		rest;
	uint32		ncompares;		/* to check for interrupts now and then */
	Size		scratch;		/* the most a tie range's scratch took */
} ItemSort;

/*
 * Sorts of at least this many items compare abbreviated keys first, as
 * tuplesort does: converting costs one call per record, and pays for
 * itself on the n log n comparisons of a long sort.
 */
#define ABBREVIATE_MIN_ITEMS	64

/* sorted records a task of resolve_equal_neighbours compares */
#define TIES_GRAIN			65536

/* comparisons between checks for cancel and terminate */
#define COMPARES_PER_INTERRUPT_CHECK	4096

static int
compare_items(const void *a, const void *b, void *arg)
{
	const ResolveItem *x = (const ResolveItem *) a;
	const ResolveItem *y = (const ResolveItem *) b;
	ItemSort   *sort = (ItemSort *) arg;
	const TieRest *rest = &sort->rest;
	const Datum *xv;
	const Datum *yv;
	const bool *xn;
	const bool *yn;
	int			r;

	/*
	 * A sort can be the whole input (a text key, the comparator sort), and
	 * qsort has no interrupt checks of its own; leaving it by longjmp is
	 * safe, as it holds nothing but memory in our context.
	 */
	if (++sort->ncompares % COMPARES_PER_INTERRUPT_CHECK == 0)
		CHECK_FOR_INTERRUPTS();

	r = ApplySortComparator(x->first, ITEM_NULL(x), y->first, ITEM_NULL(y),
							sort->first);
	if (r != 0)
		return r;

	if (rest->values == NULL)
	{
		/* the items' tuples: every column, where the first is not alone */
		if (rest->nrest == 0)
			return 0;
		return compare_tuples(sort->res, ITEM_TUPLE(x), ITEM_TUPLE(y));
	}
	xv = rest->values + (size_t) ITEM_SLOT(x) * rest->nrest;
	yv = rest->values + (size_t) ITEM_SLOT(y) * rest->nrest;
	xn = rest->isnull + (size_t) ITEM_SLOT(x) * rest->nrest;
	yn = rest->isnull + (size_t) ITEM_SLOT(y) * rest->nrest;
	for (int c = 0; c < rest->nrest; c++)
	{
		int			col = rest->rest_col + c - sort->first_col;

		/* abbreviated keys were equal: the full datums decide */
		if (col == 0)
			r = ApplySortAbbrevFullComparator(xv[c], xn[c], yv[c], yn[c],
											  sort->abbrev);
		else
			r = ApplySortComparator(xv[c], xn[c], yv[c], yn[c], &sort->ssup[col]);
		if (r != 0)
			return r;
	}
	return (ITEM_INDEX(x) < ITEM_INDEX(y)) ? -1 : (ITEM_INDEX(x) > ITEM_INDEX(y));
}

static void
init_item_sort(CompareContext *res, ItemSort *sort, int first_col)
{
	memset(sort, 0, sizeof(ItemSort));
	sort->res = res;
	sort->first_col = first_col;
	sort->ssup = res->ssup + first_col;
}

/*
 * How a sort of n items compares their first datums: abbreviated where n
 * is long enough and the first column has abbreviated keys; and so which
 * columns the rest of a comparison reaches.
 */
static void
item_sort_choose_first(ItemSort *sort, size_t n)
{
	CompareContext *res = sort->res;
	int			first_col = sort->first_col;

	if (n < ABBREVIATE_MIN_ITEMS || res->abbrev == NULL ||
		res->abbrev[first_col].abbrev_converter == NULL)
		sort->abbrev = NULL;
	else
		sort->abbrev = &res->abbrev[first_col];
	sort->first = sort->abbrev ? sort->abbrev : &sort->ssup[0];
	sort->rest.rest_col = sort->abbrev ? first_col : first_col + 1;
	sort->rest.nrest = res->layout->ncols - sort->rest.rest_col;
}

/* Order perm[0 .. len-1], a range of records with equal keys. */
static void
sort_tie_range(ItemSort *sort, uint32 *range, size_t len,
			   MemoryContext rangecxt)
{
	CompareContext *res = sort->res;
	MemoryContext oldcxt = MemoryContextSwitchTo(rangecxt);
	const KeyLayout *layout = res->layout;
	TupleTableSlot *slot = res->slot;
	ItemSort	range_sort = *sort;
	TieRest    *rest = &range_sort.rest;
	ResolveItem *items;

	item_sort_choose_first(&range_sort, len);
	items = palloc_extended(sizeof(ResolveItem) * len, MCXT_ALLOC_HUGE);
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
		for (int col = sort->first_col; col < layout->ncols; col++)
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
			if (col == sort->first_col)
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
		if (range_sort.abbrev && !first_isnull)
			first = range_sort.abbrev->abbrev_converter(first, range_sort.abbrev);
		items[i].first = first_isnull ? (Datum) 0 : first;
		items[i].record = ((uint64) range[i] << 32) | ((uint64) i << 1) |
			(first_isnull ? ITEM_FIRST_NULL : 0);
	}
	ExecClearTuple(slot);

	qsort_arg(items, len, sizeof(ResolveItem), compare_items, (void *) &range_sort);
	sort->ncompares = range_sort.ncompares;
	sort->scratch = Max(sort->scratch, MemoryContextMemAllocated(rangecxt, true));

	for (size_t i = 0; i < len; i++)
		range[i] = ITEM_INDEX(&items[i]);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(rangecxt);
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
 * The comparator pass of the fixed path: each tie range of equal inexact
 * keys in the engine's sorted result perm[0 .. n-1], known equal on the
 * columns the key holds whole; *resolved counts the records of such ranges,
 * *scratch the most memory the pass took.
 */
void
resolve_sorted(CompareContext *res, ThreadPool *pool, const SortEngine *engine,
			 uint32 *perm, size_t n, int64 *resolved, Size *scratch)
{
	ItemSort	sort;
	MemoryContext rangecxt;
	const uint8 *ties;
	size_t		start = 0;
	size_t		len;

	*resolved = 0;
	*scratch = 0;
	if (res->layout->exact || n < 2)
		return;

	init_item_sort(res, &sort, res->layout->exact_cols);
	ties = resolve_equal_neighbours(pool, engine, perm, n);
	rangecxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort resolve",
									 ALLOCSET_DEFAULT_SIZES);
	while ((len = resolve_next_tie_range(ties, n, &start)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		sort_tie_range(&sort, perm + start, len, rangecxt);
		*resolved += len;
		start += len;
	}
	*scratch = sort.scratch + (n - 1);
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
		ItemSort	sort;

		if (ranges[r].len < 2 || ranges[r].first_col >= res->layout->ncols)
			continue;
		CHECK_FOR_INTERRUPTS();
		init_item_sort(res, &sort, ranges[r].first_col);
		sort_tie_range(&sort, perm + ranges[r].start, ranges[r].len, rangecxt);
		*resolved += ranges[r].len;
		*scratch = Max(*scratch, sort.scratch);
	}
	MemoryContextDelete(rangecxt);
}

/*
 * The comparators' order of n tuples, a whole batch's (the comparator sort,
 * batch_sort.c): one qsort of items, as tuplesort sorts its SortTuples, the
 * first column's datum (abbreviated where the type can) in the item and the
 * rest compared from the tuples, which are not copied.  space is room for n
 * items (RESOLVE_ITEM_BYTES each), which may be the array of tuples itself,
 * grown: each item is written from the last down, over pointers read
 * already.  Returns the sorted pointers, written over the items.
 */
MinimalTuple *
resolve_sort_tuples(CompareContext *res, MinimalTuple *tuples, size_t n,
					void *space)
{
	ResolveItem *items = (ResolveItem *) space;
	MinimalTuple *sorted = (MinimalTuple *) space;
	AttrNumber	attno = res->layout->cols[0].attno;
	TupleTableSlot *slot = res->slot;
	ItemSort	sort;

	init_item_sort(res, &sort, 0);
	item_sort_choose_first(&sort, n);

	/* from the last down: item i covers pointers 2i and 2i + 1, read already */
	for (size_t i = n; i-- > 0;)
	{
		MinimalTuple tuple = tuples[i];
		bool		isnull;
		Datum		value;

		ExecStoreMinimalTuple(tuple, slot, false);
		value = slot_getattr(slot, attno, &isnull);
		if (sort.abbrev && !isnull)
			value = sort.abbrev->abbrev_converter(value, sort.abbrev);
		items[i].first = isnull ? (Datum) 0 : value;
		items[i].record = (uintptr_t) tuple | (isnull ? ITEM_FIRST_NULL : 0);
	}
	ExecClearTuple(slot);

	if (n > 1)
		qsort_arg(items, n, sizeof(ResolveItem), compare_items, &sort);
	/* sorted[i] is written where items[i / 2] was, already read */
	for (size_t i = 0; i < n; i++)
		sorted[i] = ITEM_TUPLE(&items[i]);
	return sorted;
}

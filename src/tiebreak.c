/*-------------------------------------------------------------------------
 *
 * tiebreak.c
 *	  The comparator pass: after the engine has sorted the records by key,
 *	  each run of records with equal keys is ordered with PostgreSQL's own
 *	  comparators (SortSupport), when the keys do not decide the order alone.
 *
 * A key is inexact when an ORDER BY column has no exact encoding (text,
 * numeric, arrays, ... or a non-default operator class) or does not fit in
 * gpusort.key_width.  The key then still orders records correctly where it
 * differs, and records with equal keys form runs that are contiguous after
 * the engine's sort.  Within a run the leading exact_cols columns are known
 * equal (they are wholly in the key), so the comparison starts at the first
 * inexact column.  Ties left after every column are broken by record
 * index, which keeps runs in input order as the engines do.
 *
 * The runs are found from the engine's sorted result: where the engine
 * does not tell which neighbours have equal keys (the GPU's radix sort
 * does), the key threads compare them (gpusort_equal_neighbours), one
 * random key access a record; refinement (refine.c) finds its runs the
 * same way.
 *
 * On the generic path (keys_build.c), refinement (refine.c) leaves runs of
 * records whose full keys are equal; where the full key stops short of the
 * last ORDER BY column, this pass orders those runs on the columns after.
 *
 * This is the path that makes every ORDER BY that PostgreSQL accepts come
 * out in PostgreSQL's order, whatever the types and collations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "tiebreak.h"

/* one record of a run, with the datums its comparison needs */
typedef struct RunItem
{
	Datum		first;			/* the first compared column, kept inline */
	Datum		abbreviated;	/* its abbreviated key, if any */
	bool		first_isnull;
	uint32		index;
	Datum	   *values;			/* all compared columns */
	bool	   *isnull;
} RunItem;

typedef struct RunCompare
{
	int			first_col;		/* first column to compare */
	int			ncols;			/* columns compared */
	SortSupport ssup;			/* of first_col, first_col + 1, ... */
	SortSupport abbrev;			/* first_col's abbreviation, or NULL */
	uint32		ncompares;		/* to check for interrupts now and then */
} RunCompare;

/*
 * Runs at least this long compare abbreviated keys first, as tuplesort
 * does: converting costs one call per record, and pays for itself on the
 * n log n comparisons of a long run.
 */
#define ABBREVIATE_MIN_RUN	64

/* sorted records a task of gpusort_equal_neighbours compares */
#define TIES_GRAIN			65536

/* comparisons between checks for cancel and terminate */
#define COMPARES_PER_INTERRUPT_CHECK	4096

static int
compare_run_items(const void *a, const void *b, void *arg)
{
	const RunItem *x = (const RunItem *) a;
	const RunItem *y = (const RunItem *) b;
	RunCompare *cmp = (RunCompare *) arg;

	/*
	 * A run can be the whole input (a text key), and qsort has no
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

/* Order perm[0 .. len-1], a run of records with equal keys. */
static void
sort_run(Tiebreak *tb, RunCompare *cmp, uint32 *run, size_t len,
		 MemoryContext runcxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(runcxt);
	RunItem    *items = palloc_extended(sizeof(RunItem) * len, MCXT_ALLOC_HUGE);
	Datum	   *values = palloc_extended(sizeof(Datum) * len * cmp->ncols, MCXT_ALLOC_HUGE);
	bool	   *isnull = palloc_extended(sizeof(bool) * len * cmp->ncols, MCXT_ALLOC_HUGE);
	const KeyLayout *layout = tb->layout;
	RunCompare	run_cmp = *cmp;

	/* long runs use the first column's abbreviated keys, where it has them */
	if (len < ABBREVIATE_MIN_RUN || tb->abbrev == NULL ||
		tb->abbrev[cmp->first_col].abbrev_converter == NULL)
		run_cmp.abbrev = NULL;
	else
		run_cmp.abbrev = &tb->abbrev[cmp->first_col];

	for (size_t i = 0; i < len; i++)
	{
		TupleTableSlot *slot = tb->slot;

		/* datums point into the arena's tuples, which outlive the pass */
		ExecStoreMinimalTuple(tb->tuples[run[i]], slot, false);
		slot_getsomeattrs(slot, layout->max_attno);
		items[i].index = run[i];
		items[i].values = values + i * cmp->ncols;
		items[i].isnull = isnull + i * cmp->ncols;
		for (int c = 0; c < cmp->ncols; c++)
		{
			AttrNumber	attno = layout->cols[cmp->first_col + c].attno;

			items[i].values[c] = slot->tts_values[attno - 1];
			items[i].isnull[c] = slot->tts_isnull[attno - 1];
		}
		items[i].first = items[i].values[0];
		items[i].first_isnull = items[i].isnull[0];
		items[i].abbreviated = (run_cmp.abbrev && !items[i].first_isnull) ?
			run_cmp.abbrev->abbrev_converter(items[i].first, run_cmp.abbrev) :
			(Datum) 0;
	}
	ExecClearTuple(tb->slot);

	qsort_arg(items, len, sizeof(RunItem), compare_run_items, (void *) &run_cmp);
	cmp->ncompares = run_cmp.ncompares;

	for (size_t i = 0; i < len; i++)
		run[i] = items[i].index;

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(runcxt);
}

static void
init_run_compare(Tiebreak *tb, RunCompare *cmp, int first_col)
{
	cmp->first_col = first_col;
	cmp->ncols = tb->layout->ncols - first_col;
	cmp->ssup = tb->ssup + first_col;
	cmp->ncompares = 0;
}

/* a task of gpusort_equal_neighbours: ties[i] for sorted records i in [from, to) */
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
 * keys: ties[i] says that sorted records i and i + 1 do; NULL if none do.
 * The GPU engine's radix sort tells (engine->ties); otherwise the key
 * threads compare the keys (the backend alone without a pool), one random
 * access a record, which in one thread took as long as the GPU sort and
 * its transfers together.  A result that is not engine->ties is palloc'd
 * for the caller to free.
 */
const uint8 *
gpusort_equal_neighbours(KeyThreadPool *pool, const SortEngine *engine,
						 const uint32 *perm, size_t n)
{
	MarkTies	mt;

	if (engine->ties_known)
		return engine->nties > 0 ? engine->ties : NULL;
	if (n < 2)
		return NULL;
	mt.keys = &engine->keys;
	mt.perm = perm;
	mt.n = n;
	mt.ties = palloc_extended(n - 1, MCXT_ALLOC_HUGE);
	if (pool)
		keythreads_parallel_for(pool, mark_ties, &mt, n - 1, TIES_GRAIN);
	else
		(void) mark_ties(NULL, &mt, 0, n - 1);
	return mt.ties;
}

/*
 * The next run of two or more records with equal keys in a sorted result
 * of n records whose equal neighbours are ties (gpusort_equal_neighbours),
 * at or after *start: its length (0: no more runs), with *start moved to
 * its beginning.
 */
size_t
gpusort_next_tie_run(const uint8 *ties, size_t n, size_t *start)
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
 * The comparator pass of the fixed path: each run of equal inexact keys in
 * the engine's sorted result perm[0 .. n-1], known equal on the columns the
 * key holds whole; *resolved counts the records of such runs.
 */
void
gpusort_resolve_ties(Tiebreak *tb, KeyThreadPool *pool, const SortEngine *engine,
					 uint32 *perm, size_t n, int64 *resolved)
{
	RunCompare	cmp;
	MemoryContext runcxt;
	const uint8 *ties;
	size_t		start = 0;
	size_t		len;

	*resolved = 0;
	if (tb->layout->exact || n < 2)
		return;

	init_run_compare(tb, &cmp, tb->layout->exact_cols);
	ties = gpusort_equal_neighbours(pool, engine, perm, n);
	runcxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort tiebreak",
								   ALLOCSET_DEFAULT_SIZES);
	while ((len = gpusort_next_tie_run(ties, n, &start)) > 0)
	{
		CHECK_FOR_INTERRUPTS();
		sort_run(tb, &cmp, perm + start, len, runcxt);
		*resolved += len;
		start += len;
	}
	MemoryContextDelete(runcxt);
	if (ties != NULL && ties != engine->ties)
		pfree((void *) ties);
}

/* The comparator pass over given runs (refine.c finds them). */
void
gpusort_sort_runs(Tiebreak *tb, uint32 *perm, const SortRun *runs, size_t nruns,
				  int64 *resolved)
{
	MemoryContext runcxt;

	*resolved = 0;
	if (nruns == 0)
		return;
	runcxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort tiebreak",
								   ALLOCSET_DEFAULT_SIZES);
	for (size_t r = 0; r < nruns; r++)
	{
		RunCompare	cmp;

		if (runs[r].len < 2 || runs[r].first_col >= tb->layout->ncols)
			continue;
		CHECK_FOR_INTERRUPTS();
		init_run_compare(tb, &cmp, runs[r].first_col);
		sort_run(tb, &cmp, perm + runs[r].start, runs[r].len, runcxt);
		*resolved += runs[r].len;
	}
	MemoryContextDelete(runcxt);
}

/*
 * Compare tuples a and b on every ORDER BY column with PostgreSQL's
 * comparators: <0, 0, >0.
 */
int
gpusort_compare_tuples(Tiebreak *tb, MinimalTuple a, MinimalTuple b)
{
	const KeyLayout *layout = tb->layout;
	TupleTableSlot *sa = tb->slot;
	TupleTableSlot *sb = tb->slot2;
	int			r = 0;

	ExecStoreMinimalTuple(a, sa, false);
	ExecStoreMinimalTuple(b, sb, false);
	slot_getsomeattrs(sa, layout->max_attno);
	slot_getsomeattrs(sb, layout->max_attno);
	for (int c = 0; c < layout->ncols && r == 0; c++)
	{
		AttrNumber	attno = layout->cols[c].attno;

		r = ApplySortComparator(sa->tts_values[attno - 1], sa->tts_isnull[attno - 1],
								sb->tts_values[attno - 1], sb->tts_isnull[attno - 1],
								&tb->ssup[c]);
	}
	ExecClearTuple(sa);
	ExecClearTuple(sb);
	return r;
}

/* The same for records a and b of tb->tuples. */
int
gpusort_compare_records(Tiebreak *tb, uint32 a, uint32 b)
{
	return gpusort_compare_tuples(tb, tb->tuples[a], tb->tuples[b]);
}

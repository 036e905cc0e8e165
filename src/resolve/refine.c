/*-------------------------------------------------------------------------
 *
 * refine.c
 *	  After the prefix sort of a generic layout: refining ranges of equal
 *	  prefixes on the following key bytes, or, under a leading key,
 *	  sorting the small ones by the collation (gpusort_refine), and the
 *	  collation check of libc order (gpusort_check_collation); batch_sort.c
 *	  calls both.
 *
 * The engine sorts only the first gpusort.key_width bytes of each full key
 * (keys.h).  Records whose prefixes are equal form ranges in the sorted
 * order; their full keys may still differ further on (long strings with a
 * shared beginning: URLs, paths, padded codes).  Rather than leave such
 * ranges to n log n comparator calls, each refinement round sorts all their
 * records together, with an engine, on the next bytes of the full key: a
 * segmented sort, whose 32-byte keys begin with the range's ordinal so that
 * ranges stay apart and in place, followed by the next 28 bytes of the key.
 * Large rounds run on the GPU when the sort did: each round's engine comes
 * from an engine chain within the sort's (engine_chain.c), which moves the
 * round to the CPU if the GPU fails and records why, as it does a batch.
 * A range ends when its records' full keys are wholly equal (they tie), or
 * when its records hold identical values (checked first, so that a range
 * of duplicates of a long string costs no rounds at all).  Ranges of
 * values longer than REFINE_MAX_VALUE_BYTES (KEY_LIBC_XFRM_MAX_BYTES under
 * a libc collation, whose keys transform no more of a string:
 * keys_build.c), and those left after MAX_REFINE_ROUNDS, go to the
 * comparator pass (resolve.c), as do ranges of equal full keys when
 * the full key stops before the last ORDER BY column.
 *
 * A leading key (keys.h) holds only the fixed-width columns before a
 * collation's text, exact: its ranges of equal prefixes are records equal
 * on those columns, and the text's keys are built from the start of its
 * bytes in the full key.  Only ranges of LEADING_KEYED_MIN_RECORDS records
 * or more are refined; the smaller ones are sorted, each on its own, in
 * the pool threads by the comparison that the collation check makes (the
 * collation sort), which is PostgreSQL's order already: the check then
 * checks the pairs of the refined ranges alone, the leading columns'
 * exact keys deciding the pairs between ranges.
 *
 * libc collations: keys hold strxfrm's output, and PostgreSQL does not
 * trust glibc's strxfrm to agree with strcoll.  So every adjacent pair of
 * the sorted result is compared with strcoll_l and strcmp for ties, which
 * is what PostgreSQL's varstr_cmp calls, in the pool threads (a sorted
 * sequence is checked by its n - 1 adjacent pairs).  A pair found out of
 * order is confirmed with PostgreSQL's own comparator, and the order is
 * repaired: records of bad pairs are taken out, the rest is checked again
 * at each seam, and the records taken out are sorted by the comparators
 * and merged back by binary search.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "resolve/refine.h"

#define REFINE_KEY_WORDS		4
#define REFINE_KEY_BYTES		(REFINE_KEY_WORDS * 8)
#define RUN_ORDINAL_BYTES		4
#define REFINE_SPAN_BYTES		(REFINE_KEY_BYTES - RUN_ORDINAL_BYTES)
#define MAX_REFINE_ROUNDS		16

/*
 * libc builds each round's span by transforming the whole string again
 * (strxfrm has no offset), so a round costs what the first did: long
 * strings that share long prefixes would pay a transform per 28 bytes of
 * prefix, several times what the comparators' n log n strcoll calls cost
 * them.  Past this many rounds such ranges go to the comparators, as
 * tuplesort would sort them.
 */
#define MAX_LIBC_REFINE_ROUNDS	3
#define REFINE_GPU_MIN_RECORDS	65536

/*
 * Each round builds its records' keys again from the start (keeping every
 * full key would cost memory without bound), so ranges of values this long
 * go to the comparators instead, as tuplesort would sort them.
 */
#define REFINE_MAX_VALUE_BYTES	1024
#define TASK_GRAIN				2048
#define COLLATION_SORT_GRAIN	4096	/* records a task of the collation sort */

/* a growing list of ranges */
typedef struct TieRangeList
{
	TieRange    *ranges;
	size_t		n;
	size_t		cap;
} TieRangeList;

static void
tie_range_list_add(TieRangeList *list, size_t start, size_t len, int first_col)
{
	if (list->n == list->cap)
	{
		list->cap = Max(list->cap * 2, 64);
		list->ranges = list->ranges ?
			repalloc_huge(list->ranges, list->cap * sizeof(TieRange)) :
			palloc_extended(list->cap * sizeof(TieRange), MCXT_ALLOC_HUGE);
	}
	list->ranges[list->n].start = start;
	list->ranges[list->n].len = len;
	list->ranges[list->n].first_col = first_col;
	list->n++;
}

static bool
range_is_identical(RefineContext *rc, const uint32 *perm, size_t start, size_t len)
{
	const Datum *v0 = key_inputs_values(rc->inputs, perm[start]);
	const bool *n0 = key_inputs_isnull(rc->inputs, perm[start]);

	for (size_t i = start + 1; i < start + len; i++)
		if (!key_inputs_identical(rc->layout, v0, n0,
								  key_inputs_values(rc->inputs, perm[i]),
								  key_inputs_isnull(rc->inputs, perm[i])))
			return false;
	return true;
}

/* A range whose full keys are equal: only columns beyond the key may order it. */
static void
range_settled(RefineContext *rc, TieRangeList *settled, size_t start, size_t len)
{
	if (rc->layout->full_cols < rc->layout->ncols)
		tie_range_list_add(settled, start, len, rc->layout->full_cols);
}

/*
 * A range of equal keys so far: settled, to refine in the next round, or,
 * for long values, to the comparators, from column first_col (the records
 * are equal on the columns before it).  Under a libc collation, the bound
 * is where keys stop transforming a string (keys_build.c): past it, each
 * round would transform the value's beginning again for 28 more bytes of a
 * key that ends short of the value, where strcoll stops at the first
 * difference.
 */
static void
classify_range(RefineContext *rc, const uint32 *perm, TieRangeList *settled,
			   TieRangeList *pending, size_t start, size_t len, int first_col)
{
	size_t		max_bytes = rc->layout->libc_checked ?
		KEY_LIBC_XFRM_MAX_BYTES : REFINE_MAX_VALUE_BYTES;

	if (range_is_identical(rc, perm, start, len))
		range_settled(rc, settled, start, len);
	else if (key_inputs_bytes(rc->layout, key_inputs_values(rc->inputs, perm[start]),
							  key_inputs_isnull(rc->inputs, perm[start])) > max_bytes)
		tie_range_list_add(settled, start, len, first_col);
	else
		tie_range_list_add(pending, start, len, first_col);
}

/*
 * A tie range of a leading key (keys.h): records equal on the leading
 * columns.  A large one is refined, its records' keys of the later columns
 * built, sorted and checked; a smaller one is sorted on its own in the
 * pool threads by the collation's comparison (the collation sort, below),
 * or, where the full key lacks some columns, goes to the comparator pass.
 * A refinement round costs its records a key each, a segmented sort of
 * 32-byte keys and the collation check of their pairs, where a range's
 * sort costs its records a comparison or two per doubling of its length:
 * on two CPUs, 2M rows of md5 text under en_US.UTF-8 took less CPU time
 * in the collation sort than refined in ranges of 10, 64, 512 and 2,048
 * records (bench/results/never-slower.md), and the threshold lies above
 * them; ranges of a million (ORDER BY a boolean, t) are refined.
 */
#define LEADING_KEYED_MIN_RECORDS	8192

static void
classify_leading_range(RefineContext *rc, const uint32 *perm, TieRangeList *settled,
					   TieRangeList *pending, TieRangeList *keyed,
					   TieRangeList *collated, size_t start, size_t len)
{
	int			lead_cols = rc->layout->lead_cols;

	if (len < LEADING_KEYED_MIN_RECORDS)
	{
		/* the collation sort, where the full key has every column */
		if (rc->layout->full_cols == rc->layout->ncols)
			tie_range_list_add(collated, start, len, lead_cols);
		else
			tie_range_list_add(settled, start, len, lead_cols);
		return;
	}
	tie_range_list_add(keyed, start, len, lead_cols);
	classify_range(rc, perm, settled, pending, start, len, lead_cols);
}

/* the collation sort's tasks: their tie ranges, and their comparison */
typedef struct CollationSort
{
	const KeyInputs *inputs;
	uint32	   *perm;
	const TieRange *ranges;
	int			first_col;		/* the leading columns, equal in a range */
} CollationSort;

/*
 * A record of a range being sorted: its first compared column's datum,
 * read once from the inputs, which lie elsewhere in memory
 */
typedef struct CollationItem
{
	Datum		first;
	uint32		record;
	bool		isnull;
} CollationItem;

typedef struct CollationSortTask
{
	CollationSort *cs;
	KeyBuildContext *ctx;
	bool		failed;
	CollationItem items[LEADING_KEYED_MIN_RECORDS];	/* a range's */
} CollationSortTask;

static int
compare_collated(const void *a, const void *b, void *arg)
{
	CollationSortTask *t = (CollationSortTask *) arg;
	const CollationItem *x = (const CollationItem *) a;
	const CollationItem *y = (const CollationItem *) b;
	const KeyInputs *in = t->cs->inputs;
	int			first_col = t->cs->first_col;
	int			r;

	if (t->failed ||
		!key_compare_column(t->ctx, first_col, x->first, x->isnull,
							y->first, y->isnull, &r) ||
		(r == 0 &&
		 !key_compare_inputs(t->ctx, first_col + 1,
							 key_inputs_values(in, x->record), key_inputs_isnull(in, x->record),
							 key_inputs_values(in, y->record), key_inputs_isnull(in, y->record),
							 &r)))
	{
		t->failed = true;
		return 0;
	}
	if (r != 0)
		return r;
	return (x->record < y->record) ? -1 : (x->record > y->record);
}

/* fetch ahead a record's datums, or, with values, its varlena first_col */
static inline void
prefetch_inputs(const KeyInputs *in, uint32 record, int first_col, bool values)
{
#if defined(__GNUC__) || defined(__clang__)
	const Datum *datums = key_inputs_values(in, record);

	if (!values)
	{
		__builtin_prefetch(datums + first_col);
		__builtin_prefetch(key_inputs_isnull(in, record) + first_col);
	}
	else if (!key_inputs_isnull(in, record)[first_col])
		__builtin_prefetch(DatumGetPointer(datums[first_col]));
#endif
}

/* the ranges ahead of the one sorted whose values are fetched */
#define COLLATION_PREFETCH_RANGES	4

static void
prefetch_range(const CollationSort *cs, size_t r, bool values)
{
	for (size_t i = 0; i < cs->ranges[r].len; i++)
		prefetch_inputs(cs->inputs, cs->perm[cs->ranges[r].start + i],
						cs->first_col, values);
}

/*
 * A task of the collation sort: tie ranges [from, to), each sorted on its
 * own by the comparison that the collation check makes (strcoll_l, or
 * ucol_strcollUTF8, as PostgreSQL compares them) in the pool threads,
 * record index breaking ties.  qsort_arg is src/port's, which holds no
 * state.  A failure (out of memory, an ICU error) stops the task.
 */
static bool
sort_collated_ranges(void *state, void *arg, size_t from, size_t to)
{
	CollationSort *cs = (CollationSort *) arg;
	CollationSortTask *task = malloc(sizeof(CollationSortTask));
	bool		ok = true;

	if (task == NULL)
		return false;
	task->cs = cs;
	task->ctx = (KeyBuildContext *) state;
	task->failed = false;
	for (size_t r = from; r < to && !task->failed; r++)
	{
		const TieRange *range = &cs->ranges[r];
		uint32	   *records = cs->perm + range->start;

		if ((r & 63) == 0 && key_build_stopped(task->ctx))
		{
			ok = false;
			break;
		}

		/*
		 * The records of a range lie anywhere in the batch, and their
		 * comparisons would wait for memory longer than strcoll_l takes:
		 * fetch ahead the datums of the records of a range further on, and
		 * the values of a nearer one.
		 */
		if (r + 2 * COLLATION_PREFETCH_RANGES < to)
			prefetch_range(cs, r + 2 * COLLATION_PREFETCH_RANGES, false);
		if (r + COLLATION_PREFETCH_RANGES < to)
			prefetch_range(cs, r + COLLATION_PREFETCH_RANGES, true);
		for (size_t i = 0; i < range->len; i++)
		{
			task->items[i].record = records[i];
			task->items[i].first = key_inputs_values(cs->inputs, records[i])[cs->first_col];
			task->items[i].isnull = key_inputs_isnull(cs->inputs, records[i])[cs->first_col];
		}
		qsort_arg(task->items, range->len, sizeof(CollationItem),
				  compare_collated, task);
		for (size_t i = 0; i < range->len; i++)
			records[i] = task->items[i].record;
	}
	ok = ok && !task->failed;
	free(task);
	return ok;
}

/* what a round's key-building task needs */
typedef struct RoundBuild
{
	const KeyInputs *inputs;
	const uint32 *records;		/* record index of member j */
	const uint32 *ordinals;		/* its range's ordinal */
	uint64	  **chunks;			/* the engine's key chunks */
	size_t		skip;			/* full-key offset of the span */
	bool	   *ended;			/* out: member j's full key ends in it */
} RoundBuild;

static bool
build_round_keys(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	RoundBuild *rb = (RoundBuild *) arg;

	for (size_t j = from; j < to; j++)
	{
		uint8		bytes[REFINE_KEY_BYTES];
		uint32		ordinal = rb->ordinals[j];
		uint32		record = rb->records[j];

		if ((j & 63) == 0 && key_build_stopped(ctx))
			return false;
		bytes[0] = (uint8) (ordinal >> 24);
		bytes[1] = (uint8) (ordinal >> 16);
		bytes[2] = (uint8) (ordinal >> 8);
		bytes[3] = (uint8) ordinal;
		if (!key_build_span(ctx, key_inputs_values(rb->inputs, record),
							  key_inputs_isnull(rb->inputs, record),
							  rb->skip, REFINE_SPAN_BYTES,
							  bytes + RUN_ORDINAL_BYTES, &rb->ended[j]))
			return false;
		key_bytes_to_words(bytes, REFINE_KEY_WORDS,
						   rb->chunks[j / GPUSORT_CHUNK_RECORDS] +
						   (j % GPUSORT_CHUNK_RECORDS) * REFINE_KEY_WORDS);
	}
	return true;
}

/*
 * Sort the m members of one round on the chain, begun within the sort's
 * (the one whose engine `sorted` sorted the prefixes): their keys are
 * built into its chunks, then sorted.  The chain puts large rounds on the
 * GPU where the sort ran there, and moves a round to the CPU, with its
 * keys, if the GPU fails, as it does a batch.  True with the keys and
 * *perm2 in chain->engine; false with *why.
 */
static bool
sort_round(RefineContext *rc, const SortEngine *sorted, EngineChain *chain,
		   RoundBuild *rb, size_t m, uint32 **perm2, char **why)
{
	size_t		nchunks = (m + GPUSORT_CHUNK_RECORDS - 1) /
		GPUSORT_CHUNK_RECORDS;

	engine_chain_begin_within(chain, sorted, rc->use_gpu, rc->cxt,
							  REFINE_KEY_WORDS, m, REFINE_GPU_MIN_RECORDS);
	chain->engine->threads = rc->pool;
	rb->chunks = palloc(sizeof(uint64 *) * Max(nchunks, 1));
	for (size_t c = 0; c < nchunks; c++)
		if ((rb->chunks[c] = engine_chain_chunk(chain, c, why)) == NULL)
			return false;
	threadpool_parallel_for(rc->pool, build_round_keys, rb, m, TASK_GRAIN);
	if (threadpool_failure(rc->pool))
	{
		*why = pstrdup(threadpool_failure(rc->pool));
		return false;
	}
	for (size_t c = 0; c < nchunks; c++)
		if (!engine_chain_submit(chain, c,
								 Min(GPUSORT_CHUNK_RECORDS,
									 m - c * GPUSORT_CHUNK_RECORDS),
								 why))
			return false;
	if (!engine_chain_sort(chain, m, perm2, why))
		return false;
	rc->rounds_on_gpu |= chain->on_gpu;
	return true;
}

/*
 * Refine the ranges of equal prefixes in perm, the result of the engine
 * `sorted` (whose keys are the prefixes).  On return, *ranges lists the tie
 * ranges the comparators still have to order.  False, with *why, if an engine
 * or key building failed.
 */
bool
gpusort_refine(RefineContext *rc, const SortEngine *sorted, uint32 *perm, size_t n,
			   TieRange **ranges, size_t *nranges, char **why)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rc->cxt);
	TieRangeList settled = {NULL, 0, 0};
	TieRangeList pending = {NULL, 0, 0};
	TieRangeList keyed = {NULL, 0, 0};
	TieRangeList collated = {NULL, 0, 0};
	EngineChain chain;
	bool		leading = rc->layout->lead_cols > 0;
	int			tied_cols = leading ? rc->layout->lead_cols : 0;	/* known
																	 * equal */
	size_t		skip = leading ? rc->layout->lead_bytes : rc->layout->key_bytes;
	size_t		start = 0;
	size_t		len;
	const uint8 *ties = resolve_equal_neighbours(rc->pool, sorted, perm, n);

	/* the ranges of equal prefixes */
	while ((len = resolve_next_tie_range(ties, n, &start)) > 0)
	{
		if (leading)
			classify_leading_range(rc, perm, &settled, &pending, &keyed,
								   &collated, start, len);
		else
			classify_range(rc, perm, &settled, &pending, start, len, tied_cols);
		start += len;
	}
	rc->keyed = keyed.ranges;
	rc->nkeyed = keyed.n;

	/* a leading key's small tie ranges: the collation sort */
	if (collated.n > 0)
	{
		CollationSort cs;
		size_t		records = 0;

		cs.inputs = rc->inputs;
		cs.perm = perm;
		cs.ranges = collated.ranges;
		cs.first_col = rc->layout->lead_cols;
		for (size_t r = 0; r < collated.n; r++)
			records += collated.ranges[r].len;
		rc->collated += records;
		/* tasks of COLLATION_SORT_GRAIN records, as the ranges average */
		threadpool_parallel_for(rc->pool, sort_collated_ranges, &cs, collated.n,
								Max(collated.n * COLLATION_SORT_GRAIN / records, 1));
		pfree(collated.ranges);
		if (threadpool_failure(rc->pool))
		{
			*why = pstrdup(threadpool_failure(rc->pool));
			if (ties != NULL)
				pfree((void *) ties);
			MemoryContextSwitchTo(oldcxt);
			return false;
		}
	}
	if (ties != NULL)
		pfree((void *) ties);

	memset(&chain, 0, sizeof(chain));
	while (pending.n > 0)
	{
		TieRangeList next = {NULL, 0, 0};
		RoundBuild	rb;
		uint32	   *positions;
		uint32	   *records;
		uint32	   *ordinals;
		uint32	   *reordered;
		uint32	   *perm2;
		size_t		m = 0;
		size_t		j;

		CHECK_FOR_INTERRUPTS();
		if (rc->rounds == (rc->layout->libc_checked ?
						   MAX_LIBC_REFINE_ROUNDS : MAX_REFINE_ROUNDS))
		{
			/* keys this long are left to the comparators */
			for (size_t r = 0; r < pending.n; r++)
				tie_range_list_add(&settled, pending.ranges[r].start,
								   pending.ranges[r].len, tied_cols);
			break;
		}

		for (size_t r = 0; r < pending.n; r++)
			m += pending.ranges[r].len;
		positions = palloc_extended(sizeof(uint32) * m, MCXT_ALLOC_HUGE);
		records = palloc_extended(sizeof(uint32) * m, MCXT_ALLOC_HUGE);
		ordinals = palloc_extended(sizeof(uint32) * m, MCXT_ALLOC_HUGE);
		reordered = palloc_extended(sizeof(uint32) * m, MCXT_ALLOC_HUGE);
		rb.ended = palloc_extended(sizeof(bool) * m, MCXT_ALLOC_HUGE);
		j = 0;
		for (size_t r = 0; r < pending.n; r++)
			for (size_t i = 0; i < pending.ranges[r].len; i++, j++)
			{
				positions[j] = pending.ranges[r].start + i;
				records[j] = perm[positions[j]];
				ordinals[j] = (uint32) r;
			}
		rb.inputs = rc->inputs;
		rb.records = records;
		rb.ordinals = ordinals;
		rb.skip = skip;

		if (!sort_round(rc, sorted, &chain, &rb, m, &perm2, why))
		{
			engine_chain_end(&chain);
			MemoryContextSwitchTo(oldcxt);
			return false;
		}
		rc->rounds++;
		rc->refined += m;

		/* members in their new order, into their ranges' places */
		for (j = 0; j < m; j++)
			reordered[j] = records[perm2[j]];
		for (j = 0; j < m; j++)
			perm[positions[j]] = reordered[j];

		/* the ranges that are still equal */
		j = 0;
		ties = resolve_equal_neighbours(rc->pool, chain.engine, perm2, m);
		while ((len = resolve_next_tie_range(ties, m, &j)) > 0)
		{
			if (rb.ended[perm2[j]])
				range_settled(rc, &settled, positions[j], len);
			else
				classify_range(rc, perm, &settled, &next, positions[j], len, tied_cols);
			j += len;
		}
		if (ties != NULL)
			pfree((void *) ties);
		engine_chain_end(&chain);
		pfree(positions);
		pfree(records);
		pfree(ordinals);
		pfree(reordered);
		pfree(rb.ended);
		pfree(rb.chunks);
		if (pending.ranges)
			pfree(pending.ranges);
		pending = next;
		skip += REFINE_SPAN_BYTES;
	}

	MemoryContextSwitchTo(oldcxt);
	*ranges = settled.ranges;
	*nranges = settled.n;
	return true;
}

/* ---------------------------------------------------------------------
 * The collation check
 * ---------------------------------------------------------------------
 */

typedef struct CheckPairs
{
	const KeyInputs *inputs;
	const uint32 *perm;
	bool	   *bad;			/* bad[i]: perm[i] > perm[i + 1] */
	const bool *resolved;		/* resolved[i]: the comparators ordered the
								 * pair, or NULL */
} CheckPairs;

static bool
check_pairs(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	CheckPairs *cp = (CheckPairs *) arg;

	for (size_t i = from; i < to; i++)
	{
		uint32		a = cp->perm[i];
		uint32		b = cp->perm[i + 1];
		int			r;

		if ((i & 63) == 0 && key_build_stopped(ctx))
			return false;
		if (cp->resolved != NULL && cp->resolved[i])
			continue;
		if (!key_compare_inputs(ctx, 0,
								key_inputs_values(cp->inputs, a), key_inputs_isnull(cp->inputs, a),
								key_inputs_values(cp->inputs, b), key_inputs_isnull(cp->inputs, b),
								&r))
			return false;
		cp->bad[i] = (r > 0);
	}
	return true;
}

static int
compare_for_repair(const void *a, const void *b, void *arg)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;
	int			r;

	CHECK_FOR_INTERRUPTS();
	r = compare_records((CompareContext *) arg, x, y);
	if (r != 0)
		return r;
	return (x < y) ? -1 : (x > y);
}

/*
 * Repair perm, whose adjacent pairs flagged in bad are out of order.  The
 * records of bad pairs are taken out; walking the rest, each record is
 * compared with the last one kept where they were not adjacent before (a
 * pair that was adjacent is checked already), and taken out too with it
 * when out of order.  What is kept is then sorted; the records taken out
 * are sorted by the comparators and merged in by binary search.
 */
static void
repair_order(RefineContext *rc, uint32 *perm, size_t n, const bool *bad)
{
	CompareContext *res = rc->res;
	uint32	   *kept = palloc_extended(sizeof(uint32) * n, MCXT_ALLOC_HUGE);
	size_t	   *kept_pos = palloc_extended(sizeof(size_t) * n, MCXT_ALLOC_HUGE);
	uint32	   *out;
	uint32	   *removed;
	size_t		nkept = 0;
	size_t		nremoved = 0;
	size_t		removed_cap = 64;
	size_t		k;
	size_t		lo;

	removed = palloc(sizeof(uint32) * removed_cap);
	for (size_t i = 0; i < n; i++)
	{
		bool		take_out = (i + 1 < n && bad[i]) || (i > 0 && bad[i - 1]);

		if (!take_out && nkept > 0 && kept_pos[nkept - 1] != i - 1 &&
			compare_records(res, kept[nkept - 1], perm[i]) > 0)
		{
			/* a new seam out of order: both go */
			if (nremoved == removed_cap)
				removed = repalloc_huge(removed, sizeof(uint32) * (removed_cap *= 2));
			removed[nremoved++] = kept[--nkept];
			take_out = true;
		}
		if (take_out)
		{
			if (nremoved == removed_cap)
				removed = repalloc_huge(removed, sizeof(uint32) * (removed_cap *= 2));
			removed[nremoved++] = perm[i];
		}
		else
		{
			kept[nkept] = perm[i];
			kept_pos[nkept] = i;
			nkept++;
		}
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	qsort_arg(removed, nremoved, sizeof(uint32), compare_for_repair, res);

	/* merge: each removed record after the kept ones not greater than it */
	out = palloc_extended(sizeof(uint32) * n, MCXT_ALLOC_HUGE);
	k = 0;
	lo = 0;
	for (size_t r = 0; r < nremoved; r++)
	{
		size_t		hi = nkept;

		while (lo < hi)
		{
			size_t		mid = lo + (hi - lo) / 2;

			if (compare_records(res, kept[mid], removed[r]) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		while (k < lo)
		{
			out[k + r] = kept[k];
			k++;
		}
		out[k + r] = removed[r];
	}
	while (k < nkept)
	{
		out[k + nremoved] = kept[k];
		k++;
	}
	memcpy(perm, out, sizeof(uint32) * n);
	rc->repaired += nremoved;
	pfree(out);
	pfree(kept);
	pfree(kept_pos);
	pfree(removed);
}

/*
 * Check every adjacent pair of perm as PostgreSQL compares them, and repair
 * the order where strxfrm disagreed.  False, with *why, if the checking
 * itself failed.
 *
 * The pairs within the nties ranges of ties, which the comparators ordered
 * (resolve_tie_ranges), are PostgreSQL's order already, and are not
 * compared again: where each comparison reads long values whole (a few
 * values of 100 MB, equal for as long as a key reaches), that would be
 * most of the sort's time.  Their first and last records are checked
 * against their neighbours outside like any other.  Under a leading key
 * (keys.h) only the pairs within the ranges that refinement keyed are
 * checked: elsewhere the leading columns' exact keys or the comparators
 * decided each pair.
 */
bool
gpusort_check_collation(RefineContext *rc, uint32 *perm, size_t n,
						const TieRange *ties, size_t nties, char **why)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rc->cxt);
	CheckPairs	cp;
	bool		any_bad = false;
	bool	   *resolved = NULL;
	size_t		nresolved = 0;

	if (n < 2)
	{
		MemoryContextSwitchTo(oldcxt);
		return true;
	}
	if (rc->layout->lead_cols > 0)
	{
		/* a leading key: only the keyed ranges' pairs, as gpusort_refine says */
		resolved = MemoryContextAllocExtended(CurrentMemoryContext, n, MCXT_ALLOC_HUGE);
		memset(resolved, true, n);
		nresolved = n - 1;
		for (size_t r = 0; r < rc->nkeyed; r++)
			for (size_t i = rc->keyed[r].start; i + 1 < rc->keyed[r].start + rc->keyed[r].len; i++)
			{
				resolved[i] = false;
				nresolved--;
			}
	}
	else if (nties > 0)
		resolved = MemoryContextAllocExtended(CurrentMemoryContext, n,
											  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (size_t r = 0; r < nties; r++)
		for (size_t i = ties[r].start; i + 1 < ties[r].start + ties[r].len; i++)
		{
			if (!resolved[i])
				nresolved++;
			resolved[i] = true;
		}
	if (nresolved == n - 1)
	{
		/* every pair is ordered already: nothing to check */
		if (resolved)
			pfree(resolved);
		MemoryContextSwitchTo(oldcxt);
		return true;
	}
	cp.inputs = rc->inputs;
	cp.perm = perm;
	cp.resolved = resolved;
	cp.bad = MemoryContextAllocExtended(CurrentMemoryContext, n,
										MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	threadpool_parallel_for(rc->pool, check_pairs, &cp, n - 1, TASK_GRAIN * 2);
	if (threadpool_failure(rc->pool))
	{
		*why = pstrdup(threadpool_failure(rc->pool));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}
	rc->checked_pairs += n - 1 - nresolved;

	/* PostgreSQL's comparator has the last word on each flagged pair */
	for (size_t i = 0; i + 1 < n; i++)
	{
		if (!cp.bad[i])
			continue;
		if (compare_records(rc->res, perm[i], perm[i + 1]) > 0)
			any_bad = true;
		else
			cp.bad[i] = false;
	}
	if (any_bad)
		repair_order(rc, perm, n, cp.bad);
	pfree(cp.bad);
	if (resolved)
		pfree(resolved);
	MemoryContextSwitchTo(oldcxt);
	return true;
}

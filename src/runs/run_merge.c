/*-------------------------------------------------------------------------
 *
 * run_merge.c
 *	  The k-way merge of a sort's runs on the way out: merge passes, the
 *	  final merge on the fly, and the random-access result with its
 *	  positions.
 *
 * The merge sits above the runs' storage (run.h): the runs (run_write.c)
 * are read back through the run reader (run_read.c), which decodes their
 * records and builds fixed keys again from the tuples; a merge pass writes
 * its output as a new run (runs_begin_run), and the random-access result
 * goes into the runs' file too, as the storage's result (run_result.c).  The last batch is not written: it
 * stays in memory and is one input of the final merge.  The merge's state
 * is its own (RunsMerge), and sort.c ends it before the runs.  sort.c
 * calls it through run_merge.h: runs_merge_start (the passes, then the
 * final merge started), runs_merge_next, runs_merge_markpos,
 * runs_merge_restorepos, runs_merge_rewind, runs_merge_end, and for
 * EXPLAIN runs_merge_passes and runs_merge_threads.
 *
 * The merge compares the records' keys first, and calls PostgreSQL's
 * comparators (compare.c) only where two inexact keys are equal.  A
 * record's values are detoasted once for the comparators, while the record
 * is current (compare_inputs).
 *
 * Keys of runs whose layouts differ (a NULL seen late widens the layout)
 * or that do not follow PostgreSQL's order where they differ (libc
 * collation keys, or a batch that comparators sorted) are not compared:
 * such pairs go to the comparators.
 *
 * With more runs than the merge memory can read at once (a read buffer of
 * at least RUN_READ_BUFFER_MIN each), runs are first merged in groups into
 * longer runs, pass after pass, as tuplesort.c does.  The final merge then
 * runs on the fly as the executor fetches: a tree of losers over the
 * inputs' current records, nothing written twice.  A run's reader gives
 * back the space it has read at once (run_read.c), and a pass writes its
 * output into it, so that a pass takes little more disk than its inputs.
 *
 * Where the keys alone decide the order of every input and the sort has
 * pool threads, the final merge is theirs instead, a window of records at a
 * time (run_merge_window.c); the passes before it and every other final
 * merge are this file's.
 *
 * Where the plan needs random access (backward scan, mark/restore,
 * rewind), the final merge is instead written once more, as the runs'
 * result (run_result.c): in the space its inputs give back, in records
 * read both ways.  This file keeps the position in it: the record returned
 * last, and the result's byte where the record after it starts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "keys/key_order.h"
#include "runs/loser_tree.h"
#include "runs/run.h"
#include "runs/run_merge.h"
#include "runs/run_merge_window.h"
#include "support/faults.h"

/* the most runs one merge reads at once, as tuplesort.c's MAXORDER */
#define MAX_MERGE_ORDER		500

/* One input of a merge: a run read back, or the batch held in memory. */
typedef struct MergeInput
{
	bool		on_file;		/* false: the batch in memory */
	RunReader	reader;			/* the run's, on_file */
	MinimalTuple *mem_tuples;	/* the batch's sorted tuples and keys */
	const uint64 *mem_keys;
	size_t		mem_pos;
	size_t		mem_n;
	int			key_words;
	int			layout_version;
	bool		keys_order;
	bool		exact;

	/* the current record */
	MinimalTuple tuple;
	const uint64 *key;
	bool		exhausted;		/* no current record: past the last */

	/*
	 * The current record's ORDER BY datums, once a comparator needed them,
	 * with the values stored out of line or compressed detoasted into
	 * valuecxt (value_bytes of them): see compare_inputs().
	 */
	Datum	   *values;
	bool	   *isnull;
	bool		have_values;
	Size		value_bytes;
	MemoryContext valuecxt;
} MergeInput;

/* A merge: its inputs in a tree of losers; see below. */
typedef struct Merge
{
	MergeInput *inputs;
	int			ninputs;
	int		   *tree;			/* ninputs entries: winner, then losers */
	uint64	   *first_words;	/* each input's key's first word */
	bool		keys_decide;	/* every input's keys order its records */
	bool		winner_returned;	/* the winner's record went out: advance it */
	Size		value_bytes;	/* the inputs' detoasted values kept */
	Size		value_limit;	/* the most they may take */
} Merge;

/* The merge of a sort's runs: its passes, its final merge, its result. */
struct RunsMerge
{
	SortRuns   *runs;
	CompareContext *tb;			/* the runs': comparators and slot */
	MemoryContext cxt;			/* the runs' */
	int			merge_passes;

	/* the final merge, on the fly: by the pool threads, or in final */
	WindowMerge *window;
	int			merge_threads;	/* the window merge's, the backend's among
								 * them; 0: none */
	Merge		final;
	bool		on_the_fly;
	int64		emitted;		/* rows the final merge returned on the fly */

	/* random access: the merged result, in the runs' file */
	int64		result_n;
	int64		pos;			/* last returned, -1 before the first */
	int64		result_at;		/* the record whose start at is */
	off_t		at;				/* the result's byte where result_at starts */
	char	   *result_buf;
	Size		result_buflen;
	int64		mark_result_at;
	off_t		mark_at;
	int64		markpos;
};

static void final_merge_start(RunsMerge *rm, SortBatch *last, int nmem,
							  Size merge_memory);
static MinimalTuple final_merge_next(RunsMerge *rm);

/*
 * A merge (Merge): its inputs in a tree of losers (Knuth,
 * TAOCP vol. 3, 5.4.1).  Node j (1 <= j < ninputs) holds the input that lost
 * the match played there, between the winners of its two subtrees; input i is
 * leaf ninputs + i, and node 0 holds the overall winner, whose current record
 * is the smallest.  When the winner advances, one match per level is replayed
 * on its way up: log2(ninputs) comparisons, where a binary heap needs up to
 * twice as many.  Where all inputs' keys decide their order (keys_decide), a
 * match compares the first words of the two inputs' keys, kept side by side in
 * first_words (the largest word for an exhausted input), and looks further
 * only where they are equal; the winner is then chosen without a branch, since
 * on unsorted data which input wins cannot be predicted.
 */

/* Make in's next record current; false (and exhausted) at its end. */
static bool
input_advance(RunsMerge *rm, MergeInput *in)
{
	if (!in->on_file)
	{
		if (in->mem_pos >= in->mem_n)
		{
			in->exhausted = true;
			return false;
		}
		if (in->mem_pos + 16 < in->mem_n)
			gs_prefetch(in->mem_tuples[in->mem_pos + 16]);
		in->tuple = in->mem_tuples[in->mem_pos];
		in->key = in->mem_keys ? in->mem_keys + in->mem_pos * in->key_words : NULL;
		in->mem_pos++;
		return true;
	}
	if (!run_read_next(rm->runs, &in->reader))
	{
		in->exhausted = true;
		return false;
	}
	in->tuple = in->reader.tuple;
	in->key = in->reader.key;
	return true;
}

/* Whether two inputs' keys can decide the order of their records. */
static bool
keys_comparable(const MergeInput *a, const MergeInput *b)
{
	return a->keys_order && b->keys_order && a->key_words > 0 &&
		a->key_words == b->key_words && a->layout_version == b->layout_version;
}

/* Forget in's current record's datums and the values detoasted for them. */
static void
input_forget_values(Merge *m, MergeInput *in)
{
	if (!in->have_values)
		return;
	if (in->value_bytes > 0)
	{
		MemoryContextReset(in->valuecxt);
		m->value_bytes -= in->value_bytes;
		in->value_bytes = 0;
	}
	in->have_values = false;
}

/*
 * Take in's current record's datums for the comparators, detoasting once
 * what is stored out of line or compressed; true if they were not kept
 * already.
 */
static bool
input_take_values(RunsMerge *rm, Merge *m, MergeInput *in)
{
	int			ncols = rm->tb->layout->ncols;

	if (in->have_values)
		return false;
	if (in->values == NULL)
	{
		MemoryContext cxt = GetMemoryChunkContext(m->inputs);

		in->values = MemoryContextAlloc(cxt, sizeof(Datum) * ncols);
		in->isnull = MemoryContextAlloc(cxt, sizeof(bool) * ncols);
		in->valuecxt = AllocSetContextCreate(cxt, "GpuSort merge values",
											 ALLOCSET_SMALL_SIZES);
	}
	compare_deform_tuple(rm->tb, in->tuple, in->values, in->isnull,
						 in->valuecxt, &in->value_bytes);
	m->value_bytes += in->value_bytes;
	in->have_values = true;
	return true;
}

/*
 * Order of two inputs' current records: by their keys where both runs'
 * keys can decide, else (and where inexact keys are equal) by PostgreSQL's
 * comparators.
 *
 * The comparators are given datums that each input keeps for its current
 * record until it advances.  A large value stored out of line (a TOASTed
 * text of 100 MB) is then detoasted once while its record waits in the
 * tree, rather than twice at every comparison, as the comparators
 * themselves would: the record may meet hundreds of others there.  The
 * detoasted values kept take at most the merge's value_limit; past it, the
 * two just taken are let go after their comparison, as PostgreSQL's
 * comparators let theirs go.
 */
static int
compare_inputs(RunsMerge *rm, Merge *m, MergeInput *a, MergeInput *b)
{
	bool		a_new;
	bool		b_new;
	int			c;

	if (keys_comparable(a, b))
	{
		c = gs_compare_key_words(a->key, b->key, a->key_words);
		if (c != 0 || a->exact)
			return c;
	}
	a_new = input_take_values(rm, m, a);
	b_new = input_take_values(rm, m, b);
	c = compare_values(rm->tb, a->values, a->isnull,
							   b->values, b->isnull);
	if (b_new && m->value_bytes > m->value_limit)
		input_forget_values(m, b);
	if (a_new && m->value_bytes > m->value_limit)
		input_forget_values(m, a);
	return c;
}

/*
 * Whether input a's current record goes out before input b's: an
 * exhausted input after every other, equal records in input order (the
 * runs' order, so that the merge is deterministic).
 */
static inline bool
input_precedes(RunsMerge *rm, Merge *m, int a, int b)
{
	MergeInput *ia = &m->inputs[a];
	MergeInput *ib = &m->inputs[b];
	int			cmp;

	if (ia->exhausted || ib->exhausted)
		return ib->exhausted && (!ia->exhausted || a < b);
	cmp = compare_inputs(rm, m, ia, ib);
	return cmp < 0 || (cmp == 0 && a < b);
}

/* input_precedes(), deciding at once where the keys' first words differ */
static inline bool
input_wins(RunsMerge *rm, Merge *m, int a, int b)
{
	if (m->keys_decide && m->first_words[a] != m->first_words[b])
		return m->first_words[a] < m->first_words[b];
	return input_precedes(rm, m, a, b);
}

/*
 * Make input i's next record current, and note its key's first word.  A
 * run read to its end gives back its space and its read buffer at once.
 */
static void
merge_advance(RunsMerge *rm, Merge *m, int i)
{
	MergeInput *in = &m->inputs[i];
	bool		more;

	input_forget_values(m, in);
	more = input_advance(rm, in);

	if (m->keys_decide)
		m->first_words[i] = more ? in->key[0] : PG_UINT64_MAX;
	if (!more && in->on_file)
		run_read_end(rm->runs, &in->reader);
}

/* input_wins() for loser_tree_play() */
typedef struct MergeMatch
{
	RunsMerge  *rm;
	Merge	   *m;
} MergeMatch;

static bool
match_wins(void *arg, int a, int b)
{
	MergeMatch *match = arg;

	return input_wins(match->rm, match->m, a, b);
}

/* Whether the inputs' keys decide the order of all their records. */
static bool
inputs_share_keys(MergeInput *inputs, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (!keys_comparable(&inputs[0], &inputs[i]))
			return false;
	}
	return true;
}

/*
 * Read each input's first record and play the tournament.  The values the
 * inputs keep detoasted (compare_inputs) may take merge_memory, or one
 * value of the largest size PostgreSQL allows, whichever is more.
 */
static void
merge_start(RunsMerge *rm, Merge *m, Size merge_memory)
{
	MemoryContext cxt = GetMemoryChunkContext(m->inputs);

	m->tree = MemoryContextAlloc(cxt, sizeof(int) * Max(m->ninputs, 1));
	m->first_words = MemoryContextAlloc(cxt, sizeof(uint64) * Max(m->ninputs, 1));
	m->keys_decide = inputs_share_keys(m->inputs, m->ninputs);
	m->value_bytes = 0;
	m->value_limit = Max(merge_memory, MaxAllocSize);
	for (int i = 0; i < m->ninputs; i++)
		merge_advance(rm, m, i);
	if (m->ninputs > 0)
	{
		MergeMatch	match = {rm, m};

		m->tree[0] = loser_tree_play(m->ninputs, m->tree, 1, match_wins, &match);
	}
	m->winner_returned = false;
}

/* The merge's next input, whose current record is the smallest; NULL at the end. */
static MergeInput *
merge_next(RunsMerge *rm, Merge *m)
{
	int			winner;

	if (m->ninputs == 0)
		return NULL;
	winner = m->tree[0];
	if (m->winner_returned)
	{
		/* replay the winner's matches on its way up, with its next record */
		merge_advance(rm, m, winner);
		for (int node = (winner + m->ninputs) / 2; node > 0; node /= 2)
		{
			int			other = m->tree[node];
			bool		other_wins = input_wins(rm, m, other, winner);

			m->tree[node] = other_wins ? winner : other;
			winner = other_wins ? other : winner;
		}
		m->tree[0] = winner;
	}
	if (m->inputs[winner].exhausted)
		return NULL;
	m->winner_returned = true;
	return &m->inputs[winner];
}

/*
 * Set up in to read run buffer_size bytes at a time into its read buffer;
 * the read buffer
 * and the record buffer live in cxt.
 */
static void
input_from_run(RunsMerge *rm, MergeInput *in, SortedRun *run, Size buffer_size,
			   MemoryContext cxt)
{
	memset(in, 0, sizeof(MergeInput));
	in->on_file = true;
	run_read_start(rm->runs, &in->reader, run, buffer_size, cxt);
	in->key_words = in->reader.key_words;
	in->layout_version = in->reader.layout_version;
	in->keys_order = run->keys_order;
	in->exact = in->reader.exact;
}

/*
 * Merge the n runs of group into one new run, which is returned; their
 * space is given back as it is read, and the new run, written record by
 * record (runs_begin_run), takes it again.  The tree and the inputs' buffers live in the pass's own memory,
 * which goes with it.
 */
static SortedRun
merge_to_run(RunsMerge *rm, SortedRun *group, int n, Size buffer_size)
{
	MemoryContext mergecxt = AllocSetContextCreate(rm->cxt, "GpuSort merge pass",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(mergecxt);
	Merge		m = {0};
	SortedRun	like = {0};
	SortedRun	out;
	MergeInput *in;
	int64		count = 0;
	off_t		input_bytes = 0;

	for (int i = 0; i < n; i++)
		input_bytes += run_bytes(&group[i]);

	m.inputs = palloc(sizeof(MergeInput) * n);
	m.ninputs = n;
	for (int i = 0; i < n; i++)
		input_from_run(rm, &m.inputs[i], &group[i], buffer_size, mergecxt);
	merge_start(rm, &m, buffer_size * n);
	MemoryContextSwitchTo(oldcxt);

	/* the merged run keeps the keys where they decide in all its inputs */
	like.key_words = m.keys_decide ? m.inputs[0].key_words : 0;
	like.layout_version = m.inputs[0].layout_version;
	like.keys_order = m.keys_decide;
	like.exact = m.keys_decide && m.inputs[0].exact;
	runs_begin_run(rm->runs, &like, input_bytes);
	while ((in = merge_next(rm, &m)) != NULL)
	{
		if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
			CHECK_FOR_INTERRUPTS();
		runs_append_record(rm->runs, in->key, in->tuple);
	}
	out = runs_end_run(rm->runs);
	/* every input ran out, and its space was given back (merge_advance) */
	MemoryContextDelete(mergecxt);
	return out;
}

/* read buffer of each of n inputs in merge_memory bytes */
static Size
read_buffer_size(Size merge_memory, int n)
{
	Size		size = merge_memory / Max(n, 1);

	size = Max(size, RUN_READ_BUFFER_LEAST);
	size = Min(size, RUN_READ_BUFFER_MAX);
	return size - size % BLCKSZ;
}

/*
 * The fewest runs a group of a merge pass may take so that merging the
 * npending runs in groups of that size, one after another, removes excess
 * of them, within order.
 */
static int
pass_group_size(int npending, int excess, int order)
{
	for (int g = 2; g < order; g++)
		if ((npending / g) * (g - 1) >= excess)
			return g;
	return order;
}

/*
 * Merge runs in passes until the runs on disk and the batch held in memory
 * (last, if it holds records) fit one merge in merge_memory bytes of read
 * buffers; then start the final merge, on the fly or, for random access,
 * into the runs' result.  The merge is returned; runs_merge_end ends it,
 * before runs_end ends the runs it reads.
 *
 * A pass merges its runs in groups as small as will do, and only as many
 * groups as it must, so that it writes no more than it must: where few
 * runs are too many for the final merge, 37 runs for 32 inputs say, six
 * merges of two runs write a third as much as one merge of 32 would.  A
 * merge's output takes the space its inputs give back as they are read
 * (run_read.c), so that the disk stays near the rows'.
 */
RunsMerge *
runs_merge_start(SortRuns *runs, SortBatch *last, Size merge_memory,
				 bool random_access)
{
	RunsMerge  *rm = MemoryContextAllocZero(runs_memory(runs),
											sizeof(RunsMerge));
	int			nmem = (last != NULL && last->ntuples > 0) ? 1 : 0;
	int			order = (int) Min(merge_memory / RUN_READ_BUFFER_MIN, MAX_MERGE_ORDER);
	SortedRun  *pending;
	int			npending;

	rm->runs = runs;
	rm->tb = runs_compare(runs);
	rm->cxt = runs_memory(runs);
	rm->pos = -1;
	rm->markpos = -1;
	order = Max(order, RUN_MERGE_MIN_ORDER);
	pending = runs_pending(runs, &npending);
	gpusort_fault_point(GPUSORT_PHASE_MERGE);

	/* passes, until one merge takes them all */
	while (npending + nmem > order)
	{
		int			nout = 0;
		int			excess = npending + nmem - order;	/* runs to remove */
		int			group = pass_group_size(npending, excess, order);

		for (int first = 0; first < npending;)
		{
			/* a group removes all but one of its runs; the rest wait */
			int			n = Min(Min(group, npending - first), excess + 1);

			if (n <= 1)
			{
				pending[nout++] = pending[first];
				first++;
				continue;
			}
			/* a merge of small runs may take fewer records than a check's */
			CHECK_FOR_INTERRUPTS();
			pending[nout++] = merge_to_run(rm, &pending[first], n,
										   read_buffer_size(merge_memory, n));
			excess -= n - 1;
			first += n;
		}
		runs_keep_pending(runs, nout);
		npending = nout;
		rm->merge_passes++;
	}

	/* the final merge: by the pool threads where they can, else here */
	rm->window = window_merge_start(runs, last, merge_memory);
	if (rm->window != NULL)
		rm->merge_threads = window_merge_threads(rm->window);
	else
		final_merge_start(rm, last, nmem, merge_memory);
	rm->merge_passes++;

	if (!random_access)
	{
		rm->on_the_fly = true;
		return rm;
	}

	/* random access: write the merged result, readable both ways */
	{
		MinimalTuple tuple;
		int64		count = 0;

		runs_begin_result(runs);
		while ((tuple = final_merge_next(rm)) != NULL)
		{
			if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
				CHECK_FOR_INTERRUPTS();
			runs_append_result(runs, tuple);
		}

		/*
		 * every input ran out, and its space was given back; the window merge's
		 * memory goes before the batch it is part of (sort.c frees it)
		 */
		if (rm->window)
			window_merge_close(rm->window);
		rm->window = NULL;
		rm->result_n = runs_end_result(runs);
		rm->result_at = 0;
		rm->at = 0;
		rm->pos = -1;
	}
	return rm;
}

/*
 * Start the final merge in the backend, of the runs on disk and the
 * batch held in memory (nmem 1), with merge_memory bytes of read buffers.
 */
static void
final_merge_start(RunsMerge *rm, SortBatch *last, int nmem, Size merge_memory)
{
	SortBatchShared *sh = runs_shared(rm->runs);
	Merge	   *m = &rm->final;
	int			npending;
	SortedRun  *pending = runs_pending(rm->runs, &npending);

	m->ninputs = npending + nmem;
	m->inputs = MemoryContextAlloc(rm->cxt, sizeof(MergeInput) * Max(m->ninputs, 1));
	for (int i = 0; i < npending; i++)
		input_from_run(rm, &m->inputs[i], &pending[i],
					   read_buffer_size(merge_memory, npending), rm->cxt);
	if (nmem)
	{
		MergeInput *in = &m->inputs[npending];

		memset(in, 0, sizeof(MergeInput));
		in->mem_tuples = last->sorted;
		in->mem_keys = last->sorted_keys;
		in->mem_n = last->ntuples;
		in->key_words = last->sorted_keys ? last->sorted_key_words : 0;
		in->layout_version = sh->layout_version;
		in->keys_order = last->keys_order;
		in->exact = sh->layout.exact;
	}
	merge_start(rm, m, merge_memory);
}

/* The final merge's next tuple, NULL at its end. */
static MinimalTuple
final_merge_next(RunsMerge *rm)
{
	MergeInput *in;

	if (rm->window)
		return window_merge_next(rm->runs, rm->window);
	in = merge_next(rm, &rm->final);
	return in ? in->tuple : NULL;
}

/* ---------------------------------------------------------------------
 * Reading the result
 * ---------------------------------------------------------------------
 */

/* Read the result's record j (random access). */
static MinimalTuple
result_read(RunsMerge *rm, int64 j)
{
	/* back to record j's start, over the records between */
	while (rm->result_at > j)
	{
		(void) runs_result_read(rm->runs, &rm->at, false,
								&rm->result_buf, &rm->result_buflen);
		rm->result_at--;
	}
	/* forward to it, reading the records between */
	for (;;)
	{
		MinimalTuple tuple = runs_result_read(rm->runs, &rm->at, true,
											  &rm->result_buf,
											  &rm->result_buflen);

		if (rm->result_at++ == j)
			return tuple;
	}
}

/* The next tuple in the given direction, or NULL past either end. */
MinimalTuple
runs_merge_next(RunsMerge *rm, bool forward)
{
	if (rm->on_the_fly)
	{
		if (!forward)
			elog(ERROR, "gpusort: backward scan of a sort made without random access");
		/* the final merge runs as the rows go out: a cancel lands here too */
		if (++rm->emitted % RECORDS_PER_INTERRUPT_CHECK == 0)
			CHECK_FOR_INTERRUPTS();
		return final_merge_next(rm);
	}

	if (!sort_step_position(&rm->pos, rm->result_n, forward))
		return NULL;
	return result_read(rm, rm->pos);
}

void
runs_merge_markpos(RunsMerge *rm)
{
	Assert(!rm->on_the_fly);
	rm->mark_at = rm->at;
	rm->mark_result_at = rm->result_at;
	rm->markpos = rm->pos;
}

void
runs_merge_restorepos(RunsMerge *rm)
{
	Assert(!rm->on_the_fly);
	rm->at = rm->mark_at;
	rm->result_at = rm->mark_result_at;
	rm->pos = rm->markpos;
}

void
runs_merge_rewind(RunsMerge *rm)
{
	Assert(!rm->on_the_fly);
	rm->at = 0;
	rm->result_at = 0;
	rm->pos = -1;
	rm->markpos = -1;
}

int
runs_merge_passes(RunsMerge *rm)
{
	return rm->merge_passes;
}

/* threads of the final merge, the backend's among them; 1: the backend */
int
runs_merge_threads(RunsMerge *rm)
{
	return Max(rm->merge_threads, 1);
}

/*
 * End the merge: the window merge's memory goes, and its threads' hold on
 * the runs' file.  The runs' file and the result in it are the storage's,
 * which runs_end closes after this.
 */
void
runs_merge_end(RunsMerge *rm)
{
	if (rm->window)
		window_merge_close(rm->window);
	rm->window = NULL;
}

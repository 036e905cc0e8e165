/*-------------------------------------------------------------------------
 *
 * run_merge.c
 *	  The k-way merge of a sort's runs on the way out: merge passes, the
 *	  final merge on the fly, and the random-access result with its
 *	  positions.
 *
 * The runs (run_write.c) are read back from their files (run_file.c) and
 * their records decoded (run_format.h).  The last batch is not written: it
 * stays in memory and is one input of the final merge.
 *
 * The merge compares the records' keys first, and calls PostgreSQL's
 * comparators (resolve.c) only where two inexact keys are equal.  A run
 * carries generic keys in its file; fixed keys are built again from each
 * tuple as it is read (key_encode_words or key_encode_tuple, with the
 * layout as it is at the end, which has seen every tuple), so that runs
 * take Sort's space.  A record's values are detoasted once for the
 * comparators, while the record is current (compare_inputs).
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
 * inputs' current records, nothing written twice; runs are read a chunk at
 * a time, and records decoded from the chunk.  A merge removes each
 * input's file as soon as it has read it to its end, so that a pass, or the
 * final merge, does not hold the disk its inputs gave up.
 *
 * Where the keys alone decide the order of every input and the sort has
 * key threads, the final merge is theirs instead, a window of records at a
 * time (run_merge_window.c); the passes before it and every other final
 * merge are this file's.
 *
 * Where the plan needs random access (backward scan, mark/restore,
 * rewind), the final merge is instead written to a logical tape of
 * logtape.c, in records of their own,
 *
 *		uint32 length | MinimalTuple (length bytes) | uint32 length
 *
 * whose length at both ends lets the tape be read backwards; the tape is
 * frozen so that it can be read again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/tablespace.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "cpu_radix.h"
#include "faults.h"
#include "run_format.h"
#include "run_internal.h"

/* the most runs one merge reads at once, as tuplesort.c's MAXORDER */
#define MAX_MERGE_ORDER		500

static void final_merge_start(SortRuns *runs, SortBatch *last, int nmem,
							  Size merge_memory);
static MinimalTuple final_merge_next(SortRuns *runs);

/*
 * A merge (Merge, in run_internal.h): its inputs in a tree of losers (Knuth,
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

/*
 * Make sure in's chunk holds the next `need` bytes of its run unparsed,
 * reading more (and keeping the bytes not parsed yet) as needed, from the
 * run's next file where one ends.  A file read to its end goes at once.
 */
static void
input_fill(SortRuns *runs, MergeInput *in, Size need)
{
	Size		have = in->chunk_end - in->chunk_pos;
	Size		more;

	if (have >= need)
		return;
	if (need > in->chunk_size)
	{
		Size		newsize = Max(need, in->chunk_size * 2);
		char	   *chunk = MemoryContextAlloc(in->cxt, newsize);

		memcpy(chunk, in->chunk + in->chunk_pos, have);
		pfree(in->chunk);
		in->chunk = chunk;
		in->chunk_size = newsize;
	}
	else
		memmove(in->chunk, in->chunk + in->chunk_pos, have);
	in->chunk_pos = 0;
	in->chunk_end = have;
	while (in->chunk_end < need)
	{
		if (in->read_pos == in->file->size)
		{
			if (in->file + 1 >= in->run->files + in->run->nfiles)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("gpusort: unexpected end of data in a temporary file")));
			in->file++;
			in->read_pos = 0;
			continue;
		}
		more = Min(in->chunk_size - in->chunk_end,
				   (Size) (in->file->size - in->read_pos));
		run_file_read(in->file, in->read_pos, in->chunk + in->chunk_end, more);
		in->read_pos += more;
		in->chunk_end += more;
		if (in->read_pos == in->file->size)
			runs_close_run_file(runs, in->file);
	}
}

/* Make in's next record current; false (and exhausted) at its end. */
static bool
input_advance(SortRuns *runs, MergeInput *in)
{
	uint32		len;
	const char *record;

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
	if (in->remaining == 0)
	{
		in->exhausted = true;
		return false;
	}
	input_fill(runs, in, RUN_RECORD_LENGTH_BYTES);
	len = run_record_length(in->chunk + in->chunk_pos);
	input_fill(runs, in, RUN_RECORD_LENGTH_BYTES + len);
	record = in->chunk + in->chunk_pos + RUN_RECORD_LENGTH_BYTES;
	in->chunk_pos += RUN_RECORD_LENGTH_BYTES + len;

	if (run_record_unpacked_bytes(len) > in->buflen)
	{
		Size		newlen = Max(run_record_unpacked_bytes(len), Max(in->buflen * 2, 1024));

		if (in->buf)
			pfree(in->buf);
		in->buf = MemoryContextAlloc(in->cxt, newlen);
		in->buflen = newlen;
	}
	in->tuple = run_record_get(record, len,
							   in->keys_rebuilt ? 0 : in->key_words * sizeof(uint64),
							   in->buf, &in->key);
	if (in->keys_rebuilt)
	{
		/* the layout has seen every tuple of the runs: each encodes */
		if (!key_encode_words(&runs->sh->layout, in->tuple, in->rebuilt_key) &&
			!key_encode_tuple(&runs->sh->layout, in->tuple, runs->tb.slot,
							  in->rebuilt_key))
			elog(ERROR, "gpusort: a run's tuple does not fit the sort's key layout");
		in->key = in->rebuilt_key;
	}
	in->remaining--;
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
input_take_values(SortRuns *runs, Merge *m, MergeInput *in)
{
	int			ncols = runs->tb.layout->ncols;

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
	resolve_deform_tuple(&runs->tb, in->tuple, in->values, in->isnull,
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
compare_inputs(SortRuns *runs, Merge *m, MergeInput *a, MergeInput *b)
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
	a_new = input_take_values(runs, m, a);
	b_new = input_take_values(runs, m, b);
	c = resolve_compare_values(&runs->tb, a->values, a->isnull,
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
input_precedes(SortRuns *runs, Merge *m, int a, int b)
{
	MergeInput *ia = &m->inputs[a];
	MergeInput *ib = &m->inputs[b];
	int			cmp;

	if (ia->exhausted || ib->exhausted)
		return ib->exhausted && (!ia->exhausted || a < b);
	cmp = compare_inputs(runs, m, ia, ib);
	return cmp < 0 || (cmp == 0 && a < b);
}

/* input_precedes(), deciding at once where the keys' first words differ */
static inline bool
input_wins(SortRuns *runs, Merge *m, int a, int b)
{
	if (m->keys_decide && m->first_words[a] != m->first_words[b])
		return m->first_words[a] < m->first_words[b];
	return input_precedes(runs, m, a, b);
}

/*
 * Make input i's next record current, and note its key's first word.  A
 * run read to its end gives back its file and its read buffer at once.
 */
static void
merge_advance(SortRuns *runs, Merge *m, int i)
{
	MergeInput *in = &m->inputs[i];
	bool		more;

	input_forget_values(m, in);
	more = input_advance(runs, in);

	if (m->keys_decide)
		m->first_words[i] = more ? in->key[0] : PG_UINT64_MAX;
	if (!more && in->on_file)
	{
		runs_close_run(runs, in->run);
		if (in->chunk)
			pfree(in->chunk);
		in->chunk = NULL;
		in->chunk_size = 0;
	}
}

/* input_wins() for loser_tree_play() */
typedef struct MergeMatch
{
	SortRuns   *runs;
	Merge	   *m;
} MergeMatch;

static bool
match_wins(void *arg, int a, int b)
{
	MergeMatch *match = arg;

	return input_wins(match->runs, match->m, a, b);
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
merge_start(SortRuns *runs, Merge *m, Size merge_memory)
{
	MemoryContext cxt = GetMemoryChunkContext(m->inputs);

	m->tree = MemoryContextAlloc(cxt, sizeof(int) * Max(m->ninputs, 1));
	m->first_words = MemoryContextAlloc(cxt, sizeof(uint64) * Max(m->ninputs, 1));
	m->keys_decide = inputs_share_keys(m->inputs, m->ninputs);
	m->value_bytes = 0;
	m->value_limit = Max(merge_memory, MaxAllocSize);
	for (int i = 0; i < m->ninputs; i++)
		merge_advance(runs, m, i);
	if (m->ninputs > 0)
	{
		MergeMatch	match = {runs, m};

		m->tree[0] = loser_tree_play(m->ninputs, m->tree, 1, match_wins, &match);
	}
	m->winner_returned = false;
}

/* The merge's next input, whose current record is the smallest; NULL at the end. */
static MergeInput *
merge_next(SortRuns *runs, Merge *m)
{
	int			winner;

	if (m->ninputs == 0)
		return NULL;
	winner = m->tree[0];
	if (m->winner_returned)
	{
		/* replay the winner's matches on its way up, with its next record */
		merge_advance(runs, m, winner);
		for (int node = (winner + m->ninputs) / 2; node > 0; node /= 2)
		{
			int			other = m->tree[node];
			bool		other_wins = input_wins(runs, m, other, winner);

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
 * Set up in to read run's file a chunk of buffer_size bytes at a time; the
 * chunk and the record buffer live in cxt.
 */
static void
input_from_run(SortRuns *runs, MergeInput *in, SortedRun *run, Size buffer_size,
			   MemoryContext cxt)
{
	memset(in, 0, sizeof(MergeInput));
	in->cxt = cxt;
	in->on_file = true;
	in->run = run;
	in->file = &run->files[0];
	in->read_pos = 0;
	in->remaining = run->ntuples;
	in->key_words = run->key_words;
	in->layout_version = run->layout_version;
	in->keys_order = run->keys_order;
	in->exact = run->exact;
	in->keys_rebuilt = run->key_words > 0 && runs_rebuild_keys(runs);
	if (in->keys_rebuilt)
	{
		/*
		 * built with the layout as it is now, as the last batch's are; a
		 * layout widened since the run was written may have left exact keys
		 * for prefixes, whose equal keys the comparators must then order
		 */
		in->key_words = runs->sh->layout.key_words;
		in->layout_version = runs->sh->layout_version;
		in->exact = runs->sh->layout.exact;
		in->rebuilt_key = MemoryContextAlloc(cxt, sizeof(uint64) * Max(in->key_words, 1));
	}
	in->chunk_size = Max(buffer_size, BLCKSZ);
	in->chunk = MemoryContextAlloc(cxt, in->chunk_size);
}

/* Start the next file of the run a merge pass writes. */
static void
pass_output_next_file(SortRuns *runs, int *maxfiles)
{
	SortedRun  *out = &runs->pass_output;

	if (out->nfiles == *maxfiles)
	{
		*maxfiles *= 2;
		out->files = repalloc(out->files, sizeof(RunFile) * *maxfiles);
	}
	run_file_create(&out->files[out->nfiles]);
	out->nfiles++;
}

/*
 * Merge the n runs of group into one new run, which is returned; their
 * files go as each is read to its end.  The new run is the sort's
 * pass_output until it is done, so that runs_end closes its files after
 * an error.  The tree and the inputs' buffers live in the pass's own
 * memory, which goes with it.
 *
 * The new run is written in files of a RUN_SEGMENTS-th of it or so, each
 * begun at a record.  The next merge, which reads it, then gives back its
 * disk a file at a time, as its merge grows: a merge's inputs and output
 * together take little more than the inputs did.  In one file, the next
 * pass would hold each input whole until its end, and the disk at its
 * peak would be all the rows plus the largest merge's output: a sixth of
 * the rows more, or more, in the last pass before the final merge.
 * logtape.c reaches the same end by recycling the blocks it has read.
 */
static SortedRun
merge_to_run(SortRuns *runs, SortedRun *group, int n, Size buffer_size)
{
	MemoryContext mergecxt = AllocSetContextCreate(runs->cxt, "GpuSort merge pass",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(mergecxt);
	Merge		m = {0};
	SortedRun	out = {0};
	RunOutput	output;
	MergeInput *in;
	int64		count = 0;
	int			file_key_words;
	off_t		input_bytes = 0;
	off_t		file_bytes;		/* a file of the output is full at this */
	int			maxfiles = RUN_SEGMENTS + 1;

	for (int i = 0; i < n; i++)
		for (int f = 0; f < group[i].nfiles; f++)
			input_bytes += group[i].files[f].size;
	file_bytes = Max(RUN_SEGMENT_MIN, input_bytes / RUN_SEGMENTS);

	m.inputs = palloc(sizeof(MergeInput) * n);
	m.ninputs = n;
	for (int i = 0; i < n; i++)
		input_from_run(runs, &m.inputs[i], &group[i], buffer_size, mergecxt);
	merge_start(runs, &m, buffer_size * n);
	output.buf = palloc(RUN_WRITE_BUFFER);
	output.used = 0;
	MemoryContextSwitchTo(oldcxt);

	/* the merged run keeps the keys where they decide in all its inputs */
	runs->pass_output.files = MemoryContextAlloc(runs->cxt, sizeof(RunFile) * maxfiles);
	runs->pass_output.nfiles = 0;
	pass_output_next_file(runs, &maxfiles);
	output.file = &runs->pass_output.files[0];
	out.key_words = m.keys_decide ? m.inputs[0].key_words : 0;
	out.layout_version = m.inputs[0].layout_version;
	out.keys_order = m.keys_decide;
	out.exact = m.keys_decide && m.inputs[0].exact;
	file_key_words = run_file_key_words(runs, &out);
	while ((in = merge_next(runs, &m)) != NULL)
	{
		if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
			CHECK_FOR_INTERRUPTS();
		if (output.file->size + (off_t) output.used >= file_bytes)
		{
			run_output_flush(&output);
			runs->disk_bytes += output.file->size;
			pass_output_next_file(runs, &maxfiles);
			output.file = &runs->pass_output.files[runs->pass_output.nfiles - 1];
			runs_note_disk_use(runs);
		}
		run_output_record(&output, file_key_words, in->key, in->tuple);
	}
	run_output_flush(&output);
	runs->disk_bytes += output.file->size;
	out.ntuples = count;
	out.files = runs->pass_output.files;
	out.nfiles = runs->pass_output.nfiles;
	runs->pass_output.files = NULL;
	runs->pass_output.nfiles = 0;
	runs_note_disk_use(runs);
	/* every input ran out, and its file went then (merge_advance) */
	MemoryContextDelete(mergecxt);
	return out;
}

/* read buffer of each of n inputs in merge_memory bytes */
static Size
read_buffer_size(Size merge_memory, int n)
{
	Size		size = merge_memory / Max(n, 1);

	size = Max(size, RUN_READ_BUFFER_MIN);
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
 * Merge runs in passes until the runs in files and the batch held in memory
 * (last, if it holds records) fit one merge in merge_memory bytes of read
 * buffers; then start the final merge, on the fly or, for random access,
 * onto a tape of its own.
 *
 * A pass merges its runs in groups as small as will do, and only as many
 * groups as it must.  Until a merge's inputs run out, most of what they
 * hold is still on disk beside the merge's output: the disk the pass takes
 * beyond the rows is one group's runs, at least where they are runs of a
 * batch, written in one file each (a pass's own output is in segments,
 * which the next merge gives back as it reads them).  So, where few runs
 * are too many for the final merge, 37 runs for 32 inputs say, six merges
 * of two runs take a few percent more disk than the rows, where one merge
 * of 32 would take 80 percent more, and write a third as much.
 */
void
runs_start_merge(SortRuns *runs, SortBatch *last, Size merge_memory,
				 bool random_access)
{
	int			nmem = (last != NULL && last->ntuples > 0) ? 1 : 0;
	int			order = (int) Min(merge_memory / RUN_READ_BUFFER_MIN, MAX_MERGE_ORDER);
	Merge	   *m = &runs->final;

	order = Max(order, RUN_MERGE_MIN_ORDER);
	Assert(runs->writer == NULL);
	gpusort_fault_point(GPUSORT_PHASE_MERGE);

	/* passes, until one merge takes them all */
	while (runs->npending + nmem > order)
	{
		int			nout = 0;
		int			excess = runs->npending + nmem - order;	/* runs to remove */
		int			group = pass_group_size(runs->npending, excess, order);

		for (int first = 0; first < runs->npending;)
		{
			/* a group removes all but one of its runs; the rest wait */
			int			n = Min(Min(group, runs->npending - first), excess + 1);

			if (n <= 1)
			{
				runs->pending[nout++] = runs->pending[first];
				first++;
				continue;
			}
			/* a merge of small runs may take fewer records than a check's */
			CHECK_FOR_INTERRUPTS();
			runs->pending[nout++] = merge_to_run(runs, &runs->pending[first], n,
											   read_buffer_size(merge_memory, n));
			excess -= n - 1;
			first += n;
		}
		runs->npending = nout;
		runs->merge_passes++;
	}

	/* the final merge: by the key threads where they can, else here */
	runs->window = window_merge_start(runs, last, merge_memory);
	if (runs->window == NULL)
		final_merge_start(runs, last, nmem, merge_memory);
	runs->merge_passes++;

	if (!random_access)
	{
		runs->on_the_fly = true;
		return;
	}

	/* random access: write the merged result, readable both ways */
	{
		MinimalTuple tuple;
		int64		count = 0;

		/* temp_tablespaces, as tuplesort.c does before its tapes */
		PrepareTempTablespaces();
		runs->tapeset = LogicalTapeSetCreate(false, NULL, -1);
		runs->result = LogicalTapeCreate(runs->tapeset);
		while ((tuple = final_merge_next(runs)) != NULL)
		{
			uint32		len = tuple->t_len;

			if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
				CHECK_FOR_INTERRUPTS();
			LogicalTapeWrite(runs->result, &len, sizeof(len));
			LogicalTapeWrite(runs->result, tuple, len);
			LogicalTapeWrite(runs->result, &len, sizeof(len));
		}
		/*
		 * every input ran out, and its file went then; the window merge's
		 * memory goes before the batch it is part of (sort.c frees it)
		 */
		m->ninputs = 0;
		window_merge_close(runs);
		runs->result_n = count;
		LogicalTapeFreeze(runs->result, NULL);
		runs->tape_at = 0;
		runs->pos = -1;
		runs_note_disk_use(runs);
	}
}

/*
 * Start the final merge in the backend, of the runs in files and the
 * batch held in memory (nmem 1), with merge_memory bytes of read buffers.
 */
static void
final_merge_start(SortRuns *runs, SortBatch *last, int nmem, Size merge_memory)
{
	Merge	   *m = &runs->final;

	m->ninputs = runs->npending + nmem;
	m->inputs = MemoryContextAlloc(runs->cxt, sizeof(MergeInput) * Max(m->ninputs, 1));
	for (int i = 0; i < runs->npending; i++)
		input_from_run(runs, &m->inputs[i], &runs->pending[i],
					   read_buffer_size(merge_memory, runs->npending), runs->cxt);
	if (nmem)
	{
		MergeInput *in = &m->inputs[runs->npending];

		memset(in, 0, sizeof(MergeInput));
		in->mem_tuples = last->sorted;
		in->mem_keys = last->sorted_keys;
		in->mem_n = last->ntuples;
		in->key_words = last->sorted_keys ? last->sorted_key_words : 0;
		in->layout_version = runs->sh->layout_version;
		in->keys_order = last->keys_order;
		in->exact = runs->sh->layout.exact;
	}
	runs->npending = 0;
	merge_start(runs, m, merge_memory);
}

/* The final merge's next tuple, NULL at its end. */
static MinimalTuple
final_merge_next(SortRuns *runs)
{
	MergeInput *in;

	if (runs->window)
		return window_merge_next(runs, runs->window);
	in = merge_next(runs, &runs->final);
	return in ? in->tuple : NULL;
}

/* ---------------------------------------------------------------------
 * Reading the result
 * ---------------------------------------------------------------------
 */

static void
read_exactly(LogicalTape *tape, void *ptr, size_t size)
{
	if (LogicalTapeRead(tape, ptr, size) != size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
}

/* Read the result tape's record j (random access). */
static MinimalTuple
result_read(SortRuns *runs, int64 j)
{
	LogicalTape *tape = runs->result;
	uint32		len;

	/* back to record j's start: over each record's trailing length */
	while (runs->tape_at > j)
	{
		if (LogicalTapeBackspace(tape, sizeof(len)) != sizeof(len))
			elog(ERROR, "gpusort: could not read a temporary file backwards");
		read_exactly(tape, &len, sizeof(len));
		if (LogicalTapeBackspace(tape, len + 2 * sizeof(len)) != len + 2 * sizeof(len))
			elog(ERROR, "gpusort: could not read a temporary file backwards");
		runs->tape_at--;
	}
	/* forward to it, reading the records between */
	for (;;)
	{
		read_exactly(tape, &len, sizeof(len));
		if (len + sizeof(len) > runs->result_buflen)
		{
			Size		newlen = Max(len + sizeof(len), Max(runs->result_buflen * 2, 1024));

			if (runs->result_buf)
				pfree(runs->result_buf);
			runs->result_buf = MemoryContextAlloc(runs->cxt, newlen);
			runs->result_buflen = newlen;
		}
		read_exactly(tape, runs->result_buf, len + sizeof(len));
		if (runs->tape_at++ == j)
			return (MinimalTuple) runs->result_buf;
	}
}

/* The next tuple in the given direction, or NULL past either end. */
MinimalTuple
runs_next(SortRuns *runs, bool forward)
{
	if (runs->on_the_fly)
	{
		if (!forward)
			elog(ERROR, "gpusort: backward scan of a sort made without random access");
		/* the final merge runs as the rows go out: a cancel lands here too */
		if (++runs->emitted % RECORDS_PER_INTERRUPT_CHECK == 0)
			CHECK_FOR_INTERRUPTS();
		return final_merge_next(runs);
	}

	if (!sort_step_position(&runs->pos, runs->result_n, forward))
		return NULL;
	return result_read(runs, runs->pos);
}

void
runs_markpos(SortRuns *runs)
{
	Assert(!runs->on_the_fly);
	LogicalTapeTell(runs->result, &runs->mark_block, &runs->mark_offset);
	runs->mark_tape_at = runs->tape_at;
	runs->markpos = runs->pos;
}

void
runs_restorepos(SortRuns *runs)
{
	Assert(!runs->on_the_fly);
	LogicalTapeSeek(runs->result, runs->mark_block, runs->mark_offset);
	runs->tape_at = runs->mark_tape_at;
	runs->pos = runs->markpos;
}

void
runs_rewind(SortRuns *runs)
{
	Assert(!runs->on_the_fly);
	LogicalTapeRewindForRead(runs->result, BLCKSZ);
	runs->tape_at = 0;
	runs->pos = -1;
	runs->markpos = -1;
}

/*
 * Close the final merge's inputs' files, a merge pass's output and the
 * result's tape: their temporary files go (runs_end).
 */
void
runs_close_merge(SortRuns *runs)
{
	window_merge_close(runs);
	for (int i = 0; i < runs->final.ninputs; i++)
	{
		if (runs->final.inputs[i].on_file)
			runs_close_run(runs, runs->final.inputs[i].run);
	}
	runs->final.ninputs = 0;
	for (int i = 0; i < runs->pass_output.nfiles; i++)
		run_file_close(&runs->pass_output.files[i]);
	runs->pass_output.nfiles = 0;
	if (runs->tapeset)
		LogicalTapeSetClose(runs->tapeset);
	runs->tapeset = NULL;
}

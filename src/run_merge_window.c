/*-------------------------------------------------------------------------
 *
 * run_merge_window.c
 *	  The final merge of a sort's runs done by the key threads, a window of
 *	  records at a time, where the keys alone decide the order.
 *
 * The merge of run_merge.c is one thread in the backend: for every row it
 * decodes a record, builds its key again and plays its matches in the tree
 * of losers.  That is about as much work per row as the executor does
 * with the row afterwards, so a sort past its memory returned its rows at
 * half the speed of one held in memory.  Where the keys of all the runs
 * decide the order by themselves (an exact layout: integers, floats,
 * timestamps, and keys that need no comparator), this file merges instead
 * in the key threads, and the backend only reads the runs' files and
 * hands out tuples:
 *
 *	1. The backend fills each input's chunk from its run's files (fd.c, as
 *	   the serial merge reads them) and finds the records whole in it.
 *	   The batch held in memory is an input too, read in place.
 *	2. The key threads build the new records' keys again from their tuples
 *	   (or copy them from the file, for runs that carry them).
 *	3. The window: every record that precedes the last record in the chunk
 *	   of an input not read to its end.  Records are ordered by (key, input,
 *	   position), as the serial merge orders them, so the output is the same
 *	   and no record not read yet can come before the window's last one.
 *	4. The window is split into ranges at records of its largest input
 *	   (splitters), each input cut by a binary search, and each key thread
 *	   merges a range with a tree of losers, copying its tuples, decoded,
 *	   into the window's output at places computed beforehand from the
 *	   records' lengths.  Tuples of the batch in memory are not copied.
 *	5. The backend returns the window's tuples in order, then keeps the
 *	   records the window left in each chunk (their keys built already) and
 *	   reads on.
 *
 * The pool is counted among the server's busy sorts only while it merges a
 * window (keythreads_idle after each), so that a cursor returning rows
 * slowly does not take a share of the CPUs.  Memory: the chunks take a
 * quarter of the merge memory (WINDOW_MEMORY_SHARES); the records'
 * offsets and keys take up to about as much again, and the window's output
 * (decoded tuples and their pointers) up to about twice as much, for the
 * smallest records.  A record larger than its chunk grows the chunk, as
 * the serial merge's does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "batch.h"
#include "cpu_radix.h"
#include "keythreads.h"
#include "run_format.h"
#include "run_internal.h"

/* a chunk of each input's run: at least, at most */
#define WINDOW_CHUNK_MIN	((Size) 4 * BLCKSZ)
#define WINDOW_CHUNK_MAX	((Size) 8 * 1024 * 1024)

/* the merge memory per chunk: the chunk's share, and its records' */
#define WINDOW_MEMORY_SHARES	4

/* the batch in memory gives a window a record per this many chunk bytes */
#define WINDOW_MEMORY_RECORD_BYTES	32

/* records of a window per range, at least: fewer go to fewer ranges */
#define WINDOW_RANGE_MIN_RECORDS	4096

/* records whose keys one task builds */
#define WINDOW_KEY_SLICE	16384

/*
 * Bytes a decoded tuple may take in the output beyond its record's bytes
 * in the file (run_format.h): the tuple's length and padding, less the
 * record's length, plus MAXALIGN's padding.
 */
#define WINDOW_DECODE_SLACK (MINIMAL_TUPLE_DATA_OFFSET - RUN_RECORD_LENGTH_BYTES + MAXIMUM_ALIGNOF - 1)

typedef struct WindowInput
{
	SortedRun  *run;			/* NULL: the batch held in memory */

	/* a run: its files, read into chunk */
	int			file_index;		/* the file being read */
	off_t		read_pos;		/* in it */
	bool		all_read;		/* every byte of the run is in the chunk */
	int			file_key_bytes; /* key bytes each record holds in the file;
								 * 0: keys built again from the tuples */
	char	   *chunk;
	Size		chunk_size;
	Size		chunk_end;		/* bytes in the chunk */
	Size	   *rec_off;		/* nrec + 1 offsets of whole records */
	Size		rec_cap;

	/* the batch in memory: records mem_pos .. mem_n - 1 are left */
	MinimalTuple *mem_tuples;
	const uint64 *mem_keys;
	size_t		mem_pos;
	size_t		mem_n;
	size_t		mem_window;		/* the most records a window takes */

	/* the records at hand: nrec, of which nkeyed have keys in keys */
	uint64	   *keys;			/* a run's; the batch's are mem_keys */
	size_t		nrec;
	size_t		nkeyed;
	bool		complete;		/* no record beyond those at hand */
	size_t		take;			/* records the window takes */
} WindowInput;

/* one task's keys to build: records [from, to) of input */
typedef struct KeySlice
{
	WindowInput *input;
	size_t		from;
	size_t		to;
	bool		failed;			/* some tuple needs the backend */
} KeySlice;

/* one range of a window, merged by one task */
typedef struct WindowRange
{
	size_t	   *lo;				/* per input: first record */
	size_t	   *hi;				/* per input: past the last */
	size_t		out_pos;		/* its first tuple's place in the output */
	Size		out_byte;		/* where its decoded tuples begin */
	int		   *tree;			/* tree of losers, ninputs entries */
	size_t	   *pos;			/* per input: next record */
} WindowRange;

struct WindowMerge
{
	MemoryContext cxt;
	KeyThreadPool *pool;
	const KeyLayout *layout;
	int			key_words;
	int			ninputs;
	WindowInput *inputs;
	int			maxranges;
	WindowRange *ranges;
	KeySlice   *slices;
	int			maxslices;
	int			nslices;

	/* the window being returned */
	MinimalTuple *out;
	size_t		out_cap;
	char	   *out_buf;
	Size		out_buf_size;
	size_t		nout;
	size_t		next;
	bool		done;
};

/* the key of input in's record i */
static inline const uint64 *
input_key(const WindowMerge *wm, const WindowInput *in, size_t i)
{
	if (in->run == NULL)
		return in->mem_keys + (in->mem_pos + i) * wm->key_words;
	return in->keys + i * wm->key_words;
}

/* bytes of input in's records [from, to) in its chunk */
static inline Size
input_bytes(const WindowInput *in, size_t from, size_t to)
{
	return in->run ? in->rec_off[to] - in->rec_off[from] : 0;
}

/*
 * Whether record (key a, input ia, position pa) goes before (b, ib, pb):
 * by key, then input, then position, the serial merge's order.
 */
static inline bool
record_before(const uint64 *a, int ia, size_t pa,
			  const uint64 *b, int ib, size_t pb, int key_words)
{
	int			c = gs_compare_key_words(a, b, key_words);

	if (c != 0)
		return c < 0;
	if (ia != ib)
		return ia < ib;
	return pa < pb;
}

/* records of input j among [0, n) that go before record (key, ib, pb) */
static size_t
count_before(const WindowMerge *wm, int j, size_t n,
			 const uint64 *key, int ib, size_t pb)
{
	const WindowInput *in = &wm->inputs[j];
	size_t		lo = 0;
	size_t		hi = n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (record_before(input_key(wm, in, mid), j, mid, key, ib, pb, wm->key_words))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Build the keys of a slice's records from their tuples, or copy them
 * from the file.  A tuple the thread cannot encode (it lacks some key
 * columns) fails the slice, and the backend encodes the slice again.
 */
static bool
build_slice_keys(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	WindowMerge *wm = arg;

	for (size_t s = from; s < to; s++)
	{
		KeySlice   *sl = &wm->slices[s];
		WindowInput *in = sl->input;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		bool		null_seen[INDEX_MAX_KEYS];

		for (size_t i = sl->from; i < sl->to && !sl->failed; i++)
		{
			const char *record = in->chunk + in->rec_off[i] + RUN_RECORD_LENGTH_BYTES;
			uint64	   *key = in->keys + i * wm->key_words;

			if (in->file_key_bytes > 0)
			{
				memcpy(key, record, in->file_key_bytes);
				continue;
			}

			/*
			 * The record's tuple without its length and padding, which
			 * the encoders do not read
			 */
			{
				MinimalTuple tuple = (MinimalTuple) (record - MINIMAL_TUPLE_DATA_OFFSET);

				if (!key_encode_words(wm->layout, tuple, key) &&
					key_encode_record((KeyLayout *) wm->layout, tuple, values,
									  isnull, null_seen, key) != KEY_ENCODED)
					sl->failed = true;
			}
		}
		if (key_build_stopped(ctx))
			return false;
	}
	return true;
}

/* a range's match of inputs a and b, for loser_tree_play() */
typedef struct RangeMatch
{
	const WindowMerge *wm;
	const WindowRange *r;
} RangeMatch;

static bool
range_wins(void *arg, int a, int b)
{
	RangeMatch *match = arg;
	const WindowMerge *wm = match->wm;
	const WindowRange *r = match->r;

	if (r->pos[b] == r->hi[b])
		return true;
	return r->pos[a] < r->hi[a] &&
		record_before(input_key(wm, &wm->inputs[a], r->pos[a]), a, 0,
					  input_key(wm, &wm->inputs[b], r->pos[b]), b, 0,
					  wm->key_words);
}

/* Merge range r of the window into its place in the output. */
static void
merge_range(WindowMerge *wm, WindowRange *r)
{
	int			n = wm->ninputs;
	size_t		count = 0;
	char	   *dest = wm->out_buf + r->out_byte;
	MinimalTuple *out = wm->out + r->out_pos;
	int			winner;

	for (int j = 0; j < n; j++)
	{
		r->pos[j] = r->lo[j];
		count += r->hi[j] - r->lo[j];
	}
	{
		RangeMatch	match = {wm, r};

		winner = loser_tree_play(n, r->tree, 1, range_wins, &match);
	}
	while (count-- > 0)
	{
		WindowInput *in = &wm->inputs[winner];
		size_t		i = r->pos[winner]++;

		if (in->run == NULL)
			*out++ = in->mem_tuples[in->mem_pos + i];
		else
		{
			const char *record = in->chunk + in->rec_off[i];
			uint32		tuple_bytes = run_record_length(record) - in->file_key_bytes;
			MinimalTuple tuple = (MinimalTuple) dest;

			memcpy(RUN_TUPLE_DATA(tuple),
				   record + RUN_RECORD_LENGTH_BYTES + in->file_key_bytes, tuple_bytes);
			tuple->t_len = tuple_bytes + MINIMAL_TUPLE_DATA_OFFSET;
			*out++ = tuple;
			dest += MAXALIGN(tuple->t_len);
		}

		/* replay the winner's matches on its way up */
		for (int node = (winner + n) / 2; node > 0; node /= 2)
		{
			int			other = r->tree[node];
			bool		other_wins;

			if (r->pos[winner] == r->hi[winner])
				other_wins = true;
			else if (r->pos[other] == r->hi[other])
				other_wins = false;
			else
				other_wins = record_before(input_key(wm, &wm->inputs[other], r->pos[other]),
										   other, 0,
										   input_key(wm, in, r->pos[winner]), winner, 0,
										   wm->key_words);
			if (other_wins)
			{
				r->tree[node] = winner;
				winner = other;
				in = &wm->inputs[winner];
			}
		}
	}
}

static bool
merge_ranges(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	WindowMerge *wm = arg;

	for (size_t t = from; t < to; t++)
		merge_range(wm, &wm->ranges[t]);
	return !key_build_stopped(ctx);
}

/*
 * Find the records whole in in's chunk from its first not parsed yet, and
 * make room for their offsets and keys.
 */
static void
input_parse(WindowMerge *wm, WindowInput *in)
{
	Size		p = in->rec_off[in->nrec];

	for (;;)
	{
		uint32		len;

		if (in->chunk_end - p < RUN_RECORD_LENGTH_BYTES)
			break;
		len = run_record_length(in->chunk + p);
		if (in->chunk_end - p < RUN_RECORD_LENGTH_BYTES + len)
			break;
		if (in->nrec + 1 >= in->rec_cap)
		{
			in->rec_cap *= 2;
			in->rec_off = repalloc(in->rec_off, sizeof(Size) * in->rec_cap);
			in->keys = repalloc(in->keys, sizeof(uint64) * wm->key_words * in->rec_cap);
		}
		p += RUN_RECORD_LENGTH_BYTES + len;
		in->rec_off[++in->nrec] = p;
	}
	in->complete = in->all_read;
}

/*
 * Read in's run into the room left in its chunk, from the run's next file
 * where one ends; a file read to its end goes at once.  A record larger
 * than the chunk grows it.
 */
static void
input_fill(SortRuns *runs, WindowMerge *wm, WindowInput *in)
{
	while (!in->all_read)
	{
		SortedRun  *run = in->run;
		RunFile    *file = &run->files[in->file_index];
		Size		more;

		if (in->chunk_end == in->chunk_size)
		{
			/* full: grow it only if no record is whole in it */
			input_parse(wm, in);
			if (in->nrec > 0)
				return;
			in->chunk_size *= 2;
			in->chunk = repalloc_huge(in->chunk, in->chunk_size);
		}
		if (in->read_pos == file->size)
		{
			if (in->file_index + 1 >= run->nfiles)
			{
				in->all_read = true;
				break;
			}
			in->file_index++;
			in->read_pos = 0;
			continue;
		}
		more = Min(in->chunk_size - in->chunk_end, (Size) (file->size - in->read_pos));
		run_file_read(file, in->read_pos, in->chunk + in->chunk_end, more);
		in->read_pos += more;
		in->chunk_end += more;
		if (in->read_pos == file->size)
		{
			runs_close_run_file(runs, file);
			if (in->file_index + 1 >= run->nfiles)
				in->all_read = true;
		}
	}
	input_parse(wm, in);
	if (in->all_read && in->chunk_end != in->rec_off[in->nrec])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
}

/*
 * Drop the records of in that the last window took: the rest move to the
 * front of its chunk, with their keys.
 */
static void
input_drop_taken(WindowMerge *wm, WindowInput *in)
{
	size_t		take = in->take;
	Size		base;

	if (in->run == NULL)
	{
		in->mem_pos += take;
		in->nrec = in->nkeyed = Min(in->mem_n - in->mem_pos, in->mem_window);
		in->complete = (in->mem_pos + in->nrec == in->mem_n);
		in->take = 0;
		return;
	}
	if (take == 0)
		return;
	base = in->rec_off[take];
	memmove(in->chunk, in->chunk + base, in->chunk_end - base);
	in->chunk_end -= base;
	for (size_t i = take; i <= in->nrec; i++)
		in->rec_off[i - take] = in->rec_off[i] - base;
	memmove(in->keys, in->keys + take * wm->key_words,
			sizeof(uint64) * wm->key_words * (in->nkeyed - take));
	in->nrec -= take;
	in->nkeyed -= take;
	in->take = 0;
}

/* Grow an array of the window to hold n entries of size bytes. */
static void *
window_array(void *array, size_t *cap, size_t n, Size size)
{
	if (n <= *cap)
		return array;
	*cap = Max(n, *cap * 2);
	if (array)
		pfree(array);
	return MemoryContextAllocHuge(CurrentMemoryContext, *cap * size);
}

/*
 * Every task of the window ran.  Ours fail only when the pool is stopped,
 * which ends the sort, but a failed pool skips the tasks given to it after
 * that, and a window whose tasks did not run must not go out.
 */
static void
window_check_tasks(WindowMerge *wm)
{
	const char *failure = keythreads_failure(wm->pool);

	if (failure)
		elog(ERROR, "gpusort: the key threads could not merge the runs: %s", failure);
}

/* Read on, build the keys, and merge the next window; false at the end. */
static bool
window_next(SortRuns *runs, WindowMerge *wm)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(wm->cxt);
	const uint64 *bound_key = NULL;
	int			bound_input = -1;
	size_t		bound_pos = 0;
	size_t		total = 0;
	Size		total_bytes = 0;
	int			largest = 0;
	int			nranges;

	/* 1. read on; 2. build the new records' keys */
	wm->nslices = 0;
	for (int j = 0; j < wm->ninputs; j++)
	{
		WindowInput *in = &wm->inputs[j];

		input_drop_taken(wm, in);
		if (in->run == NULL)
			continue;
		input_fill(runs, wm, in);
		for (size_t from = in->nkeyed; from < in->nrec; from += WINDOW_KEY_SLICE)
		{
			KeySlice   *sl;

			if (wm->nslices == wm->maxslices)
			{
				wm->maxslices *= 2;
				wm->slices = repalloc(wm->slices, sizeof(KeySlice) * wm->maxslices);
			}
			sl = &wm->slices[wm->nslices++];
			sl->input = in;
			sl->from = from;
			sl->to = Min(from + WINDOW_KEY_SLICE, in->nrec);
			sl->failed = false;
		}
	}
	if (wm->nslices > 0)
		keythreads_parallel_for(wm->pool, build_slice_keys, wm, wm->nslices, 1);
	window_check_tasks(wm);
	for (int s = 0; s < wm->nslices; s++)
	{
		KeySlice   *sl = &wm->slices[s];

		if (!sl->failed)
			continue;
		/* tuples the threads could not encode: the backend's encoder */
		for (size_t i = sl->from; i < sl->to; i++)
		{
			WindowInput *in = sl->input;
			char	   *record = in->chunk + in->rec_off[i] + RUN_RECORD_LENGTH_BYTES;
			uint32		len = run_record_length(record - RUN_RECORD_LENGTH_BYTES);
			char	   *buf = palloc(run_record_unpacked_bytes(len));
			const uint64 *unused;
			MinimalTuple tuple = run_record_get(record, len, 0, buf, &unused);

			if (!key_encode_tuple(&runs->sh->layout, tuple, runs->tb.slot,
								  in->keys + i * wm->key_words))
				elog(ERROR, "gpusort: a run's tuple does not fit the sort's key layout");
			pfree(buf);
		}
	}
	for (int j = 0; j < wm->ninputs; j++)
		wm->inputs[j].nkeyed = wm->inputs[j].nrec;

	/* 3. the window: up to the first of the inputs' last records at hand */
	for (int j = 0; j < wm->ninputs; j++)
	{
		WindowInput *in = &wm->inputs[j];
		const uint64 *last;

		if (in->complete || in->nrec == 0)
			continue;
		last = input_key(wm, in, in->nrec - 1);
		if (bound_input < 0 ||
			record_before(last, j, in->nrec - 1, bound_key, bound_input, bound_pos,
						  wm->key_words))
		{
			bound_key = last;
			bound_input = j;
			bound_pos = in->nrec - 1;
		}
	}
	for (int j = 0; j < wm->ninputs; j++)
	{
		WindowInput *in = &wm->inputs[j];

		if (bound_input < 0)
			in->take = in->nrec;
		else if (j == bound_input)
			in->take = in->nrec;
		else
			in->take = count_before(wm, j, in->nrec, bound_key, bound_input, bound_pos + 1);
		total += in->take;
		total_bytes += input_bytes(in, 0, in->take);
		if (in->take > wm->inputs[largest].take)
			largest = j;
	}
	if (total == 0)
	{
		MemoryContextSwitchTo(oldcxt);
		return false;
	}

	/* 4. ranges cut at records of the largest input, merged by the threads */
	nranges = (int) Min((size_t) wm->maxranges,
						Max(total / WINDOW_RANGE_MIN_RECORDS, (size_t) 1));
	wm->out = window_array(wm->out, &wm->out_cap, total, sizeof(MinimalTuple));
	wm->out_buf = window_array(wm->out_buf, &wm->out_buf_size,
							   total_bytes + total * WINDOW_DECODE_SLACK +
							   (Size) MAXIMUM_ALIGNOF * (nranges + 1), 1);
	for (int t = 0; t < nranges; t++)
	{
		WindowRange *r = &wm->ranges[t];
		Size		bytes = 0;

		r->out_pos = 0;
		for (int j = 0; j < wm->ninputs; j++)
		{
			WindowInput *in = &wm->inputs[j];

			if (t == 0)
				r->lo[j] = 0;
			else
			{
				WindowInput *big = &wm->inputs[largest];
				size_t		at = big->take * t / nranges;

				r->lo[j] = (j == largest) ? at :
					count_before(wm, j, in->take, input_key(wm, big, at), largest, at);
			}
			if (t > 0)
				wm->ranges[t - 1].hi[j] = r->lo[j];
			if (t == nranges - 1)
				r->hi[j] = in->take;
			r->out_pos += r->lo[j];
			bytes += input_bytes(in, 0, r->lo[j]);
		}
		/* room for each tuple decoded, and MAXALIGN'd starts (see above) */
		r->out_byte = MAXALIGN(bytes + r->out_pos * WINDOW_DECODE_SLACK +
							   (Size) MAXIMUM_ALIGNOF * t);
	}
	keythreads_parallel_for(wm->pool, merge_ranges, wm, nranges, 1);
	window_check_tasks(wm);
	keythreads_idle(wm->pool);

	wm->nout = total;
	wm->next = 0;
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/*
 * A merge of the final merge's inputs in windows, or NULL where it does
 * not apply: the keys of some input do not decide the order, there are no
 * key threads, or the merge memory is too small for chunks worth a window.
 * pending are the runs in files, last the batch held in memory.
 */
WindowMerge *
window_merge_start(SortRuns *runs, SortBatch *last, Size merge_memory)
{
	const KeyLayout *layout = &runs->sh->layout;
	int			nmem = (last != NULL && last->ntuples > 0) ? 1 : 0;
	int			nfile = runs->npending;
	int			n = nfile + nmem;
	int			key_words = layout->key_words;
	Size		chunk;
	WindowMerge *wm;
	MemoryContext cxt;

	if (last == NULL || n < 2 || key_words == 0 || !layout->exact || layout->ncols > INDEX_MAX_KEYS)
		return NULL;
	chunk = merge_memory / (WINDOW_MEMORY_SHARES * Max(nfile, 1));
	chunk = Min(chunk, WINDOW_CHUNK_MAX);
	chunk -= chunk % BLCKSZ;
	if (chunk < WINDOW_CHUNK_MIN)
		return NULL;
	/*
	 * Every run's keys decide its order, and are built again with the
	 * layout of now, which is exact, or were written with it
	 */
	for (int i = 0; i < nfile; i++)
	{
		SortedRun  *run = &runs->pending[i];

		if (run->key_words == 0 || !run->keys_order || !run->exact)
			return NULL;
		if (!runs_rebuild_keys(runs) &&
			(run->key_words != key_words ||
			 run->layout_version != runs->sh->layout_version))
			return NULL;
	}
	if (nmem && (last->sorted_keys == NULL || !last->keys_order ||
				 last->sorted_key_words != key_words))
		return NULL;
	if (last->pool == NULL && batch_key_threads(last) > 0)
		batch_start_key_threads(last);
	/* a pool that a task failed in runs no more tasks (keythreads.c) */
	if (last->pool == NULL || keythreads_count(last->pool) == 0 ||
		keythreads_failure(last->pool) != NULL)
		return NULL;

	cxt = AllocSetContextCreate(runs->cxt, "GpuSort window merge",
								ALLOCSET_DEFAULT_SIZES);
	wm = MemoryContextAllocZero(cxt, sizeof(WindowMerge));
	wm->cxt = cxt;
	wm->pool = last->pool;
	wm->layout = layout;
	wm->key_words = key_words;
	wm->ninputs = n;
	wm->inputs = MemoryContextAllocZero(cxt, sizeof(WindowInput) * n);
	wm->maxranges = keythreads_count(wm->pool) + 1;
	wm->ranges = MemoryContextAllocZero(cxt, sizeof(WindowRange) * wm->maxranges);
	for (int t = 0; t < wm->maxranges; t++)
	{
		wm->ranges[t].lo = MemoryContextAlloc(cxt, sizeof(size_t) * n);
		wm->ranges[t].hi = MemoryContextAlloc(cxt, sizeof(size_t) * n);
		wm->ranges[t].pos = MemoryContextAlloc(cxt, sizeof(size_t) * n);
		wm->ranges[t].tree = MemoryContextAlloc(cxt, sizeof(int) * n);
	}
	wm->maxslices = 64;
	wm->slices = MemoryContextAlloc(cxt, sizeof(KeySlice) * wm->maxslices);

	for (int i = 0; i < nfile; i++)
	{
		WindowInput *in = &wm->inputs[i];

		in->run = &runs->pending[i];
		in->file_key_bytes = run_file_key_words(runs, in->run) * sizeof(uint64);
		in->chunk_size = chunk;
		in->chunk = MemoryContextAllocHuge(cxt, chunk);
		in->rec_cap = chunk / 64 + 2;
		in->rec_off = MemoryContextAlloc(cxt, sizeof(Size) * in->rec_cap);
		in->rec_off[0] = 0;
		in->keys = MemoryContextAlloc(cxt, sizeof(uint64) * key_words * in->rec_cap);
		in->all_read = (in->run->nfiles == 0);
	}
	if (nmem)
	{
		WindowInput *in = &wm->inputs[nfile];

		in->mem_tuples = last->sorted;
		in->mem_keys = last->sorted_keys;
		in->mem_n = last->ntuples;
		in->mem_window = Max(chunk / WINDOW_MEMORY_RECORD_BYTES, WINDOW_RANGE_MIN_RECORDS);
		/* nrec and complete: set by the first window (input_drop_taken) */
	}
	runs->npending = 0;
	return wm;
}

/* The merge's next tuple, or NULL at its end. */
MinimalTuple
window_merge_next(SortRuns *runs, WindowMerge *wm)
{
	while (wm->next == wm->nout)
	{
		if (wm->done || !window_next(runs, wm))
		{
			wm->done = true;
			return NULL;
		}
	}
	return wm->out[wm->next++];
}

/* threads that merge the windows, the backend among them */
int
window_merge_threads(WindowMerge *wm)
{
	return wm->maxranges;
}

/* Close the files of the runs not read to their end. */
void
window_merge_close(SortRuns *runs, WindowMerge *wm)
{
	for (int j = 0; j < wm->ninputs; j++)
	{
		if (wm->inputs[j].run)
			runs_close_run(runs, wm->inputs[j].run);
	}
	wm->ninputs = 0;
}

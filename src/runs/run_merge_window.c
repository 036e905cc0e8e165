/*-------------------------------------------------------------------------
 *
 * run_merge_window.c
 *	  The final merge of a sort's runs done by the pool threads, a window of
 *	  records at a time, where the keys alone decide the order.
 *
 * The merge of run_merge.c is one thread in the backend: for every row it
 * decodes a record, builds its key again and plays its matches in the tree
 * of losers.  That is about as much work per row as the executor does
 * with the row afterwards, so that a sort past its memory would return its
 * rows at about half the speed of one held in memory.  Where the keys of
 * all the runs decide the order by themselves (an exact layout: integers,
 * floats, timestamps, and keys that need no comparator), this file merges
 * instead in the pool threads, and the backend only hands out tuples:
 *
 *	1. Fill: a task per input moves the records the last window left to
 *	   the front of its read buffer, reads its run on into it (pread() on
 *	   a descriptor of its own, run_file.c), finds the records whole in it
 *	   and builds their keys again from their tuples (or copies them from
 *	   the file, for runs that carry them).  The batch held in memory is an
 *	   input too, read in place.  What a task cannot do is left to the
 *	   backend, which does it as the serial merge does: the next extent of
 *	   a run, a record larger than the read buffer, a tuple the threads cannot
 *	   encode, a read without a descriptor to spare.
 *	2. The window: every record that precedes the last record in the read
 *	   buffer of an input not read to its end.  Records are ordered by (key, input,
 *	   position), as the serial merge orders them, so the output is the same
 *	   and no record not read yet can come before the window's last one.
 *	3. Merge: the window is split into ranges at records of its largest
 *	   input (splitters), each input cut by a binary search, and each pool
 *	   thread merges a range with a tree of losers, copying its tuples,
 *	   decoded, into the window's output at places computed beforehand
 *	   from the records' lengths.  Tuples of the batch in memory are not
 *	   copied.
 *	4. The backend returns the window's tuples in order.
 *
 * This merge sits in the merge layer beside run_merge.c, which starts it
 * (run_merge_window.h: window_merge_start, window_merge_next,
 * window_merge_threads, window_merge_close), over the runs' storage
 * (run.h): it reads the runs' file itself (run_file.c), in its threads
 * and a window at a time, rather than a record at a time through the run
 * reader (run_read.c), and decodes their records with run_format.h.  What
 * its threads have read of a run is given back (runs_release) by the
 * backend as each fill ends, while no thread reads; what runs not read to
 * their end hold goes with the file (runs_end).
 *
 * The windows are a pipeline of two: while the backend returns one
 * window's tuples from one output, the threads fill the inputs and merge
 * the next window into the other output.  The backend looks every
 * WINDOW_POLL_TUPLES tuples whether the fill is done, and then plans the
 * merge (step 2, binary searches only), so that it waits only where the
 * threads are slower than the rows go out.  A window's output is written
 * only once a tuple of the other has gone out, so the tuple the caller
 * holds is never overwritten.
 *
 * The pool is counted among the server's busy sorts only while it works
 * (threadpool_idle once a window is merged), so that a cursor returning rows
 * slowly does not take a share of the CPUs.  The merge's memory is a child of
 * the pool's, and its reset drops the tasks still queued and waits for those
 * running before the read buffers and outputs they write go: an error may end
 * the sort while the threads fill or merge.  Memory: the read buffers take a
 * sixth of the merge memory (WINDOW_MEMORY_SHARES); the records' offsets and
 * keys take up to about as much again, and each of the two outputs (decoded
 * tuples and their pointers) up to about twice as much, for the smallest
 * records.  A record larger than its read buffer grows the read buffer, as the
 * serial merge's does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "batch/batch.h"
#include "keys/key_order.h"
#include "runs/loser_tree.h"
#include "runs/run.h"
#include "runs/run_file.h"
#include "runs/run_format.h"
#include "runs/run_merge_window.h"
#include "support/threadpool.h"

/* a read buffer of each input's run: at least, at most */
#define WINDOW_READBUF_MIN	((Size) 4 * BLCKSZ)
#define WINDOW_READBUF_MAX	((Size) 8 * 1024 * 1024)

/*
 * the merge memory per read buffer: the read buffer's share, its
 * records', two outputs'
 */
#define WINDOW_MEMORY_SHARES	6

/* the batch in memory gives a window a record per this many bytes read */
#define WINDOW_MEMORY_RECORD_BYTES	32

/* records of a window per range, at least: fewer go to fewer ranges */
#define WINDOW_RANGE_MIN_RECORDS	4096

/* records whose keys one task of the backend's fill builds */
#define WINDOW_KEY_SLICE	16384

/* tuples returned between looks at the threads' progress (a power of 2) */
#define WINDOW_POLL_TUPLES	4096

/*
 * Bytes a decoded tuple may take in the output beyond its record's bytes
 * in the file (run_format.h): the tuple's length and padding, less the
 * record's length, plus MAXALIGN's padding.
 */
#define WINDOW_DECODE_SLACK (MINIMAL_TUPLE_DATA_OFFSET - RUN_RECORD_LENGTH_BYTES + MAXIMUM_ALIGNOF - 1)

typedef struct WindowInput
{
	SortedRun  *run;			/* NULL: the batch held in memory; tasks
								 * only compare it with NULL */

	/* a run: its first extent, read into readbuf */
	off_t		read_pos;		/* where in the file the next read starts */
	bool		all_read;		/* every byte of the run has been read */
	int			file_key_bytes; /* key bytes each record holds in the file;
								 * 0: keys built again from the tuples */
	int			thread_fd;		/* the fill task's descriptor of the file,
								 * or -1: the backend reads */
	off_t		extent_end;		/* where the first extent ends, for the
								 * fill task */
	Size		thread_read;	/* bytes the task read, to be counted */
	int			read_errno;		/* the task's read failed: an errno, or
								 * RUN_FILE_EOF */
	char	   *readbuf;
	Size		readbuf_size;
	Size		readbuf_end;		/* bytes in the read buffer */
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

/* one slice of the keys the backend's fill builds: records [from, to) */
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

/* a window's tuples in order: the decoded ones in buf */
typedef struct WindowOutput
{
	MinimalTuple *tuples;
	size_t		cap;
	char	   *buf;
	Size		buf_size;
	size_t		n;
} WindowOutput;

/* where the next window is */
typedef enum WindowStage
{
	WINDOW_NONE,				/* not started */
	WINDOW_FILLING,				/* the inputs are being filled */
	WINDOW_MERGING,				/* its ranges are being merged */
	WINDOW_MERGED,				/* ready to go out */
	WINDOW_END					/* there is none: the merge is done */
} WindowStage;

struct WindowMerge
{
	MemoryContext cxt;
	ThreadPool *pool;
	const KeyLayout *layout;
	int			key_words;
	int			ninputs;
	WindowInput *inputs;
	int			maxranges;
	WindowRange *ranges;
	KeySlice   *slices;
	int			maxslices;
	int			nslices;

	WindowStage stage;
	TaskGroup  *fill_group;
	TaskGroup  *merge_group;
	MemoryContextCallback forget;
	WindowOutput outputs[2];
	WindowOutput *merging;		/* the one the next window goes into */
	WindowOutput *returning;	/* the one whose tuples go out */
	size_t		next;			/* its next tuple */
};

/* the key of input in's record i */
static inline const uint64 *
input_key(const WindowMerge *wm, const WindowInput *in, size_t i)
{
	if (in->run == NULL)
		return in->mem_keys + (in->mem_pos + i) * wm->key_words;
	return in->keys + i * wm->key_words;
}

/* bytes of input in's records [from, to) in its read buffer */
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
 * Build the key of in's record i from its tuple, or copy it from the file.
 * False if the tuple cannot be encoded here (it lacks some key columns):
 * the backend's encoder must.  Calls nothing of PostgreSQL.
 */
static inline bool
record_key(const WindowMerge *wm, WindowInput *in, size_t i)
{
	const char *record = in->readbuf + in->rec_off[i] + RUN_RECORD_LENGTH_BYTES;
	uint64	   *key = in->keys + i * wm->key_words;
	MinimalTuple tuple;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	bool		null_seen[INDEX_MAX_KEYS];

	if (in->file_key_bytes > 0)
	{
		memcpy(key, record, in->file_key_bytes);
		return true;
	}

	/*
	 * The record's tuple without its length and padding, which the
	 * encoders do not read
	 */
	tuple = (MinimalTuple) (record - MINIMAL_TUPLE_DATA_OFFSET);
	return key_encode_words(wm->layout, tuple, key) ||
		key_encode_record((KeyLayout *) wm->layout, tuple, values,
						  isnull, null_seen, key) == KEY_ENCODED;
}

/* a task: the keys of the backend's slices [from, to) */
static bool
build_slice_keys(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	WindowMerge *wm = arg;

	for (size_t s = from; s < to; s++)
	{
		KeySlice   *sl = &wm->slices[s];

		for (size_t i = sl->from; i < sl->to && !sl->failed; i++)
			sl->failed = !record_key(wm, sl->input, i);
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

/* Merge range r of the window into its place in the merging output. */
static void
merge_range(WindowMerge *wm, WindowRange *r)
{
	int			n = wm->ninputs;
	size_t		count = 0;
	char	   *dest = wm->merging->buf + r->out_byte;
	MinimalTuple *out = wm->merging->tuples + r->out_pos;
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
			const char *record = in->readbuf + in->rec_off[i];
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

/* a task: ranges [from, to) */
static bool
merge_ranges(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	WindowMerge *wm = arg;

	for (size_t t = from; t < to; t++)
		merge_range(wm, &wm->ranges[t]);
	return !key_build_stopped(ctx);
}

/*
 * Find the records whole in in's read buffer from its first not parsed yet, as
 * many as its arrays hold.  True if it found them all.  Calls nothing of
 * PostgreSQL.
 */
static bool
input_parse_some(WindowInput *in)
{
	Size		p = in->rec_off[in->nrec];

	for (;;)
	{
		uint32		len;

		if (in->readbuf_end - p < RUN_RECORD_LENGTH_BYTES)
			return true;
		len = run_record_length(in->readbuf + p);
		if (in->readbuf_end - p < RUN_RECORD_LENGTH_BYTES + len)
			return true;
		if (in->nrec + 1 >= in->rec_cap)
			return false;
		p += RUN_RECORD_LENGTH_BYTES + len;
		in->rec_off[++in->nrec] = p;
	}
}

/*
 * Find every record whole in in's read buffer, making room for their offsets
 * and keys.
 */
static void
input_parse(WindowMerge *wm, WindowInput *in)
{
	while (!input_parse_some(in))
	{
		in->rec_cap *= 2;
		in->rec_off = repalloc(in->rec_off, sizeof(Size) * in->rec_cap);
		in->keys = repalloc(in->keys, sizeof(uint64) * wm->key_words * in->rec_cap);
	}
	in->complete = in->all_read;
}

/*
 * Read in's run into the room left in its read buffer, from the run's next
 * extent where one ends; what the threads and this have read of the run is
 * given back first.  A record larger than the read buffer grows it.  The
 * backend's part of the fill: what the task left, with no thread reading.
 */
static void
input_fill(SortRuns *runs, WindowMerge *wm, WindowInput *in)
{
	while (!in->all_read)
	{
		SortedRun  *run = in->run;
		RunExtent  *extent = &run->extents[0];
		Size		more;

		/*
		 * A run written behind is one extent: given back only at its end, the
		 * random-access result written meanwhile would find no room in it
		 */
		if (in->read_pos > extent->offset &&
			in->read_pos < extent->offset + extent->len)
			runs_release(runs, run, in->read_pos - extent->offset);
		if (in->read_pos == extent->offset + extent->len)
		{
			runs_release(runs, run, extent->len);
			if (run->nextents == 0)
			{
				run_file_release_thread_fd(in->thread_fd);
				in->thread_fd = -1;
				in->all_read = true;
				break;
			}
			in->read_pos = run->extents[0].offset;
			continue;
		}
		if (in->readbuf_end == in->readbuf_size)
		{
			/* full: grow it only if no record is whole in it */
			input_parse(wm, in);
			if (in->nrec > 0)
				return;
			in->readbuf_size *= 2;
			in->readbuf = repalloc_huge(in->readbuf, in->readbuf_size);
		}
		more = Min(in->readbuf_size - in->readbuf_end,
				   (Size) (extent->offset + extent->len - in->read_pos));
		run_file_read(runs_file(runs), in->read_pos, in->readbuf + in->readbuf_end, more);
		in->read_pos += more;
		in->readbuf_end += more;
	}
	input_parse(wm, in);
	if (in->all_read && in->readbuf_end != in->rec_off[in->nrec])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
}

/*
 * Drop the records of in that the last window took: the rest move to the
 * front of its read buffer, with their keys.  Calls nothing of PostgreSQL.
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
	memmove(in->readbuf, in->readbuf + base, in->readbuf_end - base);
	in->readbuf_end -= base;
	for (size_t i = take; i <= in->nrec; i++)
		in->rec_off[i - take] = in->rec_off[i] - base;
	memmove(in->keys, in->keys + take * wm->key_words,
			sizeof(uint64) * wm->key_words * (in->nkeyed - take));
	in->nrec -= take;
	in->nkeyed -= take;
	in->take = 0;
}

/*
 * A task: fill inputs [from, to) for the next window, as far as a thread
 * can (the file header's step 1); input_fill and the backend's keys do the
 * rest.
 */
static bool
fill_inputs(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	WindowMerge *wm = arg;

	for (size_t j = from; j < to; j++)
	{
		WindowInput *in = &wm->inputs[j];

		input_drop_taken(wm, in);
		if (in->run == NULL)
			continue;
		if (in->thread_fd >= 0 && in->read_pos < in->extent_end &&
			in->readbuf_end < in->readbuf_size)
		{
			Size		more = Min(in->readbuf_size - in->readbuf_end,
								   (Size) (in->extent_end - in->read_pos));

			in->read_errno = run_file_pread(in->thread_fd, in->read_pos,
											in->readbuf + in->readbuf_end, more);
			if (in->read_errno != 0)
				continue;
			in->read_pos += more;
			in->readbuf_end += more;
			in->thread_read += more;
		}
		(void) input_parse_some(in);
		while (in->nkeyed < in->nrec && record_key(wm, in, in->nkeyed))
			in->nkeyed++;
		if (key_build_stopped(ctx))
			return false;
	}
	return true;
}

/* Grow an array of an output to hold n entries of size bytes. */
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
	const char *failure = threadpool_failure(wm->pool);

	if (failure)
		elog(ERROR, "gpusort: the pool threads could not merge the runs: %s", failure);
}

/* Hand the fill of the next window to the threads. */
static void
window_fill_start(SortRuns *runs, WindowMerge *wm)
{
	for (int j = 0; j < wm->ninputs; j++)
	{
		WindowInput *in = &wm->inputs[j];

		if (in->run == NULL || in->all_read)
			continue;
		/* -1 where no descriptor is to spare: the backend reads then */
		if (in->thread_fd < 0)
			in->thread_fd = run_file_thread_fd(runs_file(runs));
		in->extent_end = in->run->extents[0].offset + in->run->extents[0].len;
	}
	for (int j = 0; j < wm->ninputs; j++)
		threadpool_submit(wm->pool, wm->fill_group, fill_inputs, wm, j, j + 1);
	wm->stage = WINDOW_FILLING;
}

/*
 * Wait for the fill and finish it in the backend: count what the threads
 * read, read what they could not, and build the keys they could not.
 */
static void
window_fill_finish(SortRuns *runs, WindowMerge *wm)
{
	threadpool_wait(wm->pool, wm->fill_group);
	window_check_tasks(wm);

	wm->nslices = 0;
	for (int j = 0; j < wm->ninputs; j++)
	{
		WindowInput *in = &wm->inputs[j];

		if (in->run == NULL)
			continue;
		run_file_note_read(in->thread_read);
		in->thread_read = 0;
		if (in->read_errno != 0)
			run_file_read_error(runs_file(runs), in->read_errno);
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
	{
		threadpool_parallel_for(wm->pool, build_slice_keys, wm, wm->nslices, 1);
		window_check_tasks(wm);
	}
	for (int s = 0; s < wm->nslices; s++)
	{
		KeySlice   *sl = &wm->slices[s];

		if (!sl->failed)
			continue;
		/* tuples the threads could not encode: the backend's encoder */
		for (size_t i = sl->from; i < sl->to; i++)
		{
			WindowInput *in = sl->input;
			char	   *record = in->readbuf + in->rec_off[i] + RUN_RECORD_LENGTH_BYTES;
			uint32		len = run_record_length(record - RUN_RECORD_LENGTH_BYTES);
			char	   *buf = palloc(run_record_unpacked_bytes(len));
			const uint64 *unused;
			MinimalTuple tuple = run_record_get(record, len, 0, buf, &unused);

			if (!key_encode_tuple(&runs_shared(runs)->layout, tuple,
								  runs_compare(runs)->slot,
								  in->keys + i * wm->key_words))
				elog(ERROR, "gpusort: a run's tuple does not fit the sort's key layout");
			pfree(buf);
		}
	}
	for (int j = 0; j < wm->ninputs; j++)
		wm->inputs[j].nkeyed = wm->inputs[j].nrec;
}

/*
 * Plan the next window (the file header's step 2) and hand its ranges to
 * the threads to merge into the output not going out.  False if there is
 * no record left: the merge is done.
 */
static bool
window_merge_start_ranges(WindowMerge *wm)
{
	WindowOutput *out = wm->merging;
	const uint64 *bound_key = NULL;
	int			bound_input = -1;
	size_t		bound_pos = 0;
	size_t		total = 0;
	Size		total_bytes = 0;
	int			largest = 0;
	int			nranges;

	/* up to the first of the inputs' last records at hand */
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

		if (bound_input < 0 || j == bound_input)
			in->take = in->nrec;
		else
			in->take = count_before(wm, j, in->nrec, bound_key, bound_input, bound_pos + 1);
		total += in->take;
		total_bytes += input_bytes(in, 0, in->take);
		if (in->take > wm->inputs[largest].take)
			largest = j;
	}
	if (total == 0)
		return false;

	/* ranges cut at records of the largest input */
	nranges = (int) Min((size_t) wm->maxranges,
						Max(total / WINDOW_RANGE_MIN_RECORDS, (size_t) 1));
	out->tuples = window_array(out->tuples, &out->cap, total, sizeof(MinimalTuple));
	out->buf = window_array(out->buf, &out->buf_size,
							total_bytes + total * WINDOW_DECODE_SLACK +
							(Size) MAXIMUM_ALIGNOF * (nranges + 1), 1);
	out->n = total;
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
	for (int t = 0; t < nranges; t++)
		threadpool_submit(wm->pool, wm->merge_group, merge_ranges, wm, t, t + 1);
	return true;
}

/*
 * Move the next window on as far as the threads have got: plan its merge
 * once its fill is done, and note it merged.  With wait, until it is merged
 * or there is none.
 */
static void
window_advance(SortRuns *runs, WindowMerge *wm, bool wait)
{
	MemoryContext oldcxt;

	if (wm->stage == WINDOW_NONE && wait)
		window_fill_start(runs, wm);
	if (wm->stage == WINDOW_FILLING)
	{
		if (!wait && !threadpool_group_done(wm->pool, wm->fill_group))
			return;
		oldcxt = MemoryContextSwitchTo(wm->cxt);
		window_fill_finish(runs, wm);
		wm->stage = window_merge_start_ranges(wm) ? WINDOW_MERGING : WINDOW_END;
		MemoryContextSwitchTo(oldcxt);
	}
	if (wm->stage == WINDOW_MERGING)
	{
		if (!wait && !threadpool_group_done(wm->pool, wm->merge_group))
			return;
		threadpool_wait(wm->pool, wm->merge_group);
		window_check_tasks(wm);
		threadpool_idle(wm->pool);
		wm->stage = WINDOW_MERGED;
	}
}

/*
 * The merge's memory goes: no task may run on.  Also at an error, before
 * the pool is stopped (its memory is the parent).
 */
static void
window_forget(void *arg)
{
	WindowMerge *wm = arg;

	threadpool_forget_group(wm->pool, wm->fill_group);
	threadpool_forget_group(wm->pool, wm->merge_group);
	for (int j = 0; j < wm->ninputs; j++)
	{
		run_file_release_thread_fd(wm->inputs[j].thread_fd);
		wm->inputs[j].thread_fd = -1;
	}
}

/*
 * A merge of the final merge's inputs in windows, or NULL where it does not
 * apply: the keys of some input do not decide the order, there are no pool
 * threads, or the merge memory is too small for read buffers worth a window.
 * Its inputs are the runs on disk (runs_pending) and last, the batch held in
 * memory.
 */
WindowMerge *
window_merge_start(SortRuns *runs, SortBatch *last, Size merge_memory)
{
	SortBatchShared *sh = runs_shared(runs);
	const KeyLayout *layout = &sh->layout;
	int			nmem = (last != NULL && last->ntuples > 0) ? 1 : 0;
	int			nfile;
	SortedRun  *pending = runs_pending(runs, &nfile);
	int			n = nfile + nmem;
	int			key_words = layout->key_words;
	Size		readbuf_bytes;
	WindowMerge *wm;
	MemoryContext cxt;

	if (last == NULL || n < 2 || key_words == 0 || !layout->exact || layout->ncols > INDEX_MAX_KEYS)
		return NULL;
	readbuf_bytes = merge_memory / (WINDOW_MEMORY_SHARES * Max(nfile, 1));
	readbuf_bytes = Min(readbuf_bytes, WINDOW_READBUF_MAX);
	readbuf_bytes -= readbuf_bytes % BLCKSZ;
	if (readbuf_bytes < WINDOW_READBUF_MIN)
		return NULL;
	/*
	 * Every run's keys decide its order, and are built again with the
	 * layout of now, which is exact, or were written with it
	 */
	for (int i = 0; i < nfile; i++)
	{
		SortedRun  *run = &pending[i];

		if (run->key_words == 0 || !run->keys_order || !run->exact)
			return NULL;
		if (!runs_rebuild_keys(runs) &&
			(run->key_words != key_words ||
			 run->layout_version != sh->layout_version))
			return NULL;
	}
	if (nmem && (last->sorted_keys == NULL || !last->keys_order ||
				 last->sorted_key_words != key_words))
		return NULL;
	if (last->pool == NULL && batch_threads(last) > 0)
		batch_start_threads(last);
	/* a pool that a task failed in runs no more tasks (threadpool.c) */
	if (last->pool == NULL || threadpool_count(last->pool) == 0 ||
		threadpool_failure(last->pool) != NULL)
		return NULL;

	/* under the pool's memory: see window_forget */
	cxt = AllocSetContextCreate(last->threadcxt, "GpuSort window merge",
								ALLOCSET_DEFAULT_SIZES);
	wm = MemoryContextAllocZero(cxt, sizeof(WindowMerge));
	wm->cxt = cxt;
	wm->pool = last->pool;
	wm->layout = layout;
	wm->key_words = key_words;
	wm->ninputs = n;
	wm->inputs = MemoryContextAllocZero(cxt, sizeof(WindowInput) * n);
	wm->maxranges = threadpool_count(wm->pool) + 1;
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
	wm->fill_group = MemoryContextAllocZero(cxt, sizeof(TaskGroup));
	wm->merge_group = MemoryContextAllocZero(cxt, sizeof(TaskGroup));
	wm->merging = &wm->outputs[0];
	wm->returning = &wm->outputs[1];

	for (int i = 0; i < n; i++)
		wm->inputs[i].thread_fd = -1;
	wm->forget.func = window_forget;
	wm->forget.arg = wm;
	MemoryContextRegisterResetCallback(cxt, &wm->forget);

	for (int i = 0; i < nfile; i++)
	{
		WindowInput *in = &wm->inputs[i];

		in->run = &pending[i];
		in->file_key_bytes = run_file_key_words(runs, in->run) * sizeof(uint64);
		in->readbuf_size = readbuf_bytes;
		in->readbuf = MemoryContextAllocHuge(cxt, readbuf_bytes);
		in->rec_cap = readbuf_bytes / 64 + 2;
		in->rec_off = MemoryContextAlloc(cxt, sizeof(Size) * in->rec_cap);
		in->rec_off[0] = 0;
		in->keys = MemoryContextAlloc(cxt, sizeof(uint64) * key_words * in->rec_cap);
		in->all_read = (in->run->nextents == 0);
		if (!in->all_read)
			in->read_pos = in->run->extents[0].offset;
	}
	if (nmem)
	{
		WindowInput *in = &wm->inputs[nfile];

		in->mem_tuples = last->sorted;
		in->mem_keys = last->sorted_keys;
		in->mem_n = last->ntuples;
		in->mem_window = Max(readbuf_bytes / WINDOW_MEMORY_RECORD_BYTES,
							 WINDOW_RANGE_MIN_RECORDS);
		/* nrec and complete: set by the first window's fill (input_drop_taken) */
	}
	return wm;
}

/* The merge's next tuple, or NULL at its end. */
MinimalTuple
window_merge_next(SortRuns *runs, WindowMerge *wm)
{
	WindowOutput *out = wm->returning;

	if (wm->next < out->n)
	{
		/* now and then, plan the next window's merge once its fill is done */
		if ((wm->next & (WINDOW_POLL_TUPLES - 1)) == 0 && wm->next > 0)
			window_advance(runs, wm, false);
		return out->tuples[wm->next++];
	}

	/* this window is out: the next, once merged, and the fill of the one after */
	window_advance(runs, wm, true);
	if (wm->stage != WINDOW_MERGED)
		return NULL;
	wm->returning = wm->merging;
	wm->merging = out;
	wm->next = 0;
	window_fill_start(runs, wm);
	return wm->returning->tuples[wm->next++];
}

/* Threads that merge the windows, the backend's among them. */
int
window_merge_threads(WindowMerge *wm)
{
	return wm->maxranges;
}

/*
 * End the window merge: its memory goes, and with it the threads' tasks
 * and descriptors (window_forget).  The runs' file is the storage's: what
 * runs not read to their end hold goes at runs_end.
 */
void
window_merge_close(WindowMerge *wm)
{
	MemoryContextDelete(wm->cxt);
}

/*-------------------------------------------------------------------------
 *
 * run_write.c
 *	  The run writer: a sorted batch written as a run to a temporary file,
 *	  by the backend or behind it, while the backend loads the next batch;
 *	  and a run written record by record, a merge pass's output.
 *
 * When a sort's input outgrows the memory it may hold, each full batch is
 * sorted (batch_sort.c) and written here as a *run*: its tuples in sorted
 * order, in the record format of run_format.h, in extents of the temporary
 * file of PostgreSQL's own that the sort's runs share (run_file.c), so that
 * temp_tablespaces, temp_file_limit, log_temp_files and the removal of
 * temporary files at the end of a transaction behave as they do for Sort.
 * A record carries
 * the key the engine sorted only where the layout is generic: a fixed key
 * is built again from the tuple as the run is read (runs_rebuild_keys, in
 * run.c), and a key that cannot decide a merge is not written at all.  The
 * run reader (run_read.c) and the final merge in the pool threads
 * (run_merge_window.c) read the runs back.
 *
 * A batch's run is written in one of three ways, by its size and by
 * whether the batch has pool threads:
 *
 * - a small run, by the backend, record after record through a buffer
 *	 (run_output_record);
 * - a large run, by the backend with the batch's pool threads serializing
 *	 its records in slices while the backend writes the previous slice
 *	 (write_batch_in_threads);
 * - *behind* the backend: the pool threads serialize and write it while
 *	 the backend goes on loading the next batch (runs_write_batch with
 *	 behind, runs_finish_write, and runs_write_done, which says whether
 *	 the threads are done); sort.c keeps the batch until then.
 *
 * The last batch is not written: it stays in memory and is one input of
 * the final merge.  A merge pass (run_merge.c) writes its output record by
 * record through the same buffer (runs_begin_run, runs_append_record,
 * runs_end_run), into the space its inputs gave back as they were read.
 * But for a run written behind, whose threads need its extent whole before
 * they start, a run is written in pieces of the file taken as the last
 * fills (run_file_take), and a record may lie across two.
 *
 * The random-access result (run_result.c) goes through the same output, a
 * buffer and the pieces behind it, with records of its own:
 * run_output_write, run_output_flush and run_output_end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "runs/run_format.h"
#include "runs/run_internal.h"
#include "support/faults.h"
#include "support/threadpool.h"

/*
 * The most a piece of the file taken for the backend's writes holds: the
 * space a merge's inputs give back is taken again as soon as the piece is
 * full, so that a larger one would grow the file ahead of them.
 */
#define RUN_PIECE_BYTES		((off_t) 32 * BLCKSZ)

/* The run's bytes now go on to len bytes at offset of its file. */
static void
run_add_extent(SortRuns *runs, SortedRun *run, off_t offset, off_t len)
{
	RunExtent  *last = run->nextents > 0 ? &run->extents[run->nextents - 1] : NULL;

	if (last && last->offset + last->len == offset)
	{
		last->len += len;
		return;
	}
	if (run->nextents == run->maxextents)
	{
		run->maxextents = Max(run->maxextents * 2, 4);
		if (run->extents)
			run->extents = repalloc(run->extents, sizeof(RunExtent) * run->maxextents);
		else
			run->extents = MemoryContextAlloc(runs->cxt,
											  sizeof(RunExtent) * run->maxextents);
	}
	run->extents[run->nextents].offset = offset;
	run->extents[run->nextents].len = len;
	run->nextents++;
}

/* Write len bytes at the run's end, in pieces of the file taken as needed. */
void
run_output_write(SortRuns *runs, RunOutput *out, const char *data, Size len)
{
	while (len > 0)
	{
		Size		n;

		if (out->piece_left == 0)
			out->piece = run_file_take(out->file, RUN_PIECE_BYTES, &out->piece_left);
		n = Min(len, (Size) out->piece_left);
		run_file_write(out->file, out->piece, data, n);
		run_add_extent(runs, out->run, out->piece, n);
		out->piece += n;
		out->piece_left -= n;
		data += n;
		len -= n;
	}
}

/* Write the buffer's records to the run. */
void
run_output_flush(SortRuns *runs, RunOutput *out)
{
	if (out->used > 0)
		run_output_write(runs, out, out->buf, out->used);
	out->used = 0;
}

/* The run is written: the rest of its last piece is given back. */
void
run_output_end(SortRuns *runs, RunOutput *out)
{
	run_output_flush(runs, out);
	run_file_release(out->file, out->piece, out->piece_left);
	out->piece_left = 0;
}

/* Append one record to the run through the buffer. */
static void
run_output_record(SortRuns *runs, RunOutput *out, int key_words,
				  const uint64 *key, MinimalTuple tuple)
{
	Size		key_bytes = key_words * sizeof(uint64);
	Size		need = run_record_bytes(tuple, key_bytes);

	if (out->used + need > out->bufsize)
	{
		run_output_flush(runs, out);
		if (need > out->bufsize)
		{
			/* a record larger than the buffer: its tuple goes directly */
			out->used = run_record_put_head(out->buf, key, key_bytes, tuple);
			run_output_flush(runs, out);
			run_output_write(runs, out, RUN_TUPLE_DATA(tuple), RUN_TUPLE_BYTES(tuple));
			return;
		}
	}
	run_record_put(out->buf + out->used, key, key_bytes, tuple);
	out->used += need;
}

/*
 * Writing a large run with the batch's pool threads: the sorted tuples lie
 * at random places in the arena, so serializing them one by one waits for
 * memory at every record.  Instead, slices of SPILL_SLICE_RECORDS records
 * are serialized into a buffer by the threads (the sizes first, then the
 * bytes at their offsets), while the backend writes the previous slice's
 * buffer to the runs' file.
 */
#define SPILL_SLICE_RECORDS		((size_t) 64 * 1024)
#define SPILL_TASK_RECORDS		((size_t) 4 * 1024)

typedef struct SpillSlice
{
	MinimalTuple *sorted;		/* the slice's first sorted tuple */
	const uint64 *keys;			/* and its key, or NULL */
	int			key_words;
	size_t		n;				/* records in the slice */
	Size	   *offsets;		/* n + 1: each record's offset in buf */
	char	   *buf;
	Size		buflen;
} SpillSlice;

/* a task: the sizes of records [from, to) of a slice, in offsets[i + 1] */
static bool
measure_records(void *state, void *arg, size_t from, size_t to)
{
	SpillSlice *sl = (SpillSlice *) arg;
	Size		key_bytes = sl->key_words * sizeof(uint64);

	for (size_t i = from; i < to; i++)
	{
		if (i + 16 < to)
			gs_prefetch(sl->sorted[i + 16]);
		sl->offsets[i + 1] = run_record_bytes(sl->sorted[i], key_bytes);
	}
	return true;
}

/* a task: records [from, to) of a slice, serialized at their offsets */
static bool
serialize_records(void *state, void *arg, size_t from, size_t to)
{
	SpillSlice *sl = (SpillSlice *) arg;
	Size		key_bytes = sl->key_words * sizeof(uint64);

	for (size_t i = from; i < to; i++)
	{
		if (i + 16 < to)
			gs_prefetch(sl->sorted[i + 16]);
		run_record_put(sl->buf + sl->offsets[i],
					   sl->keys ? sl->keys + i * sl->key_words : NULL, key_bytes,
					   sl->sorted[i]);
	}
	return true;
}

/* Serialize slice sl in the threads: sizes, offsets, then (queued) bytes. */
static void
start_slice(ThreadPool *pool, TaskGroup *group, SpillSlice *sl, MemoryContext cxt)
{
	sl->offsets[0] = 0;
	threadpool_parallel_for(pool, measure_records, sl, sl->n, SPILL_TASK_RECORDS);
	for (size_t i = 0; i < sl->n; i++)
		sl->offsets[i + 1] += sl->offsets[i];
	if (sl->offsets[sl->n] > sl->buflen)
	{
		if (sl->buf)
			pfree(sl->buf);
		sl->buflen = Max(sl->offsets[sl->n], sl->buflen * 2);
		sl->buf = MemoryContextAllocHuge(cxt, sl->buflen);
	}
	for (size_t from = 0; from < sl->n; from += SPILL_TASK_RECORDS)
		threadpool_submit(pool, group, serialize_records, sl, from,
						  Min(sl->n, from + SPILL_TASK_RECORDS));
}

/*
 * The two slices, in the spill's memory rather than on the stack: the
 * backend's write of one slice may raise an ERROR (a full disk, the file
 * size limit, temp_file_limit, a cancel) while the threads still serialize
 * the other, and they must not read a stack that the error unwinds, nor
 * buffers already freed.  The spill's memory goes first (a child of the
 * batch's, made after the pool threads'), and waits for its tasks then.
 */
typedef struct SpillState
{
	SpillSlice	slices[2];
	TaskGroup  *groups[2];
	ThreadPool *pool;
	MemoryContextCallback forget;
} SpillState;

static void
spill_forget(void *arg)
{
	SpillState *st = (SpillState *) arg;

	threadpool_forget_group(st->pool, st->groups[0]);
	threadpool_forget_group(st->pool, st->groups[1]);
}

static void
write_batch_in_threads(SortRuns *runs, SortBatch *batch, RunOutput *out,
					   int key_words)
{
	MemoryContext cxt = AllocSetContextCreate(batch->cxt, "GpuSort spill",
											  ALLOCSET_DEFAULT_SIZES);
	SpillState *st = MemoryContextAllocZero(cxt, sizeof(SpillState));
	SpillSlice *slices = st->slices;
	TaskGroup **groups = st->groups;
	size_t		next = 0;
	int			cur = 0;
	bool		pending = false;

	st->pool = batch->pool;
	for (int s = 0; s < 2; s++)
	{
		slices[s].key_words = key_words;
		slices[s].offsets = MemoryContextAlloc(cxt, sizeof(Size) * (SPILL_SLICE_RECORDS + 1));
		groups[s] = threadpool_group_create(batch->pool);
	}
	st->forget.func = spill_forget;
	st->forget.arg = st;
	MemoryContextRegisterResetCallback(cxt, &st->forget);

	/* slice cur is serialized in the threads while the backend writes the other */
	while (next < batch->ntuples || pending)
	{
		SpillSlice *sl = &slices[cur];
		SpillSlice *prev = &slices[1 - cur];
		bool		started = false;

		if (next < batch->ntuples)
		{
			sl->sorted = batch->sorted + next;
			sl->keys = key_words ? batch->sorted_keys + next * key_words : NULL;
			sl->n = Min(SPILL_SLICE_RECORDS, batch->ntuples - next);
			start_slice(batch->pool, groups[cur], sl, cxt);
			next += sl->n;
			started = true;
		}
		if (pending)
		{
			threadpool_wait(batch->pool, groups[1 - cur]);
			CHECK_FOR_INTERRUPTS();
			run_output_write(runs, out, prev->buf, prev->offsets[prev->n]);
		}
		pending = started;
		cur = 1 - cur;
	}
	threadpool_wait_all(batch->pool);
	MemoryContextDelete(cxt);
}

/*
 * A run written behind the backend: the batch's pool threads serialize its
 * sorted records and write them with pwrite() into the extent that the
 * backend reserved (run_file.c), while the backend loads the next batch.
 * The run is cut into parts of consecutive records, one task each; each
 * part's bytes are measured first, so that every part knows where it
 * starts in the file and all are written at once, as fast as the backend
 * writes a run with the same threads.  The writer lives in the batch's
 * memory, which sort.c keeps until runs_finish_write; the threads'
 * descriptor is closed there or, after an error, by release_writer_fd when
 * that memory goes, after the batch's pool threads have been joined (they
 * belong to a child of that memory).
 */
#define RUN_WRITER_BUFFER	((Size) 1024 * 1024)
#define RUN_WRITER_PARTS	16

typedef struct RunWriterPart
{
	size_t		from;			/* its records: [from, to) */
	size_t		to;
	off_t		offset;			/* where its bytes go */
	Size		bytes;
	char	   *buf;
	int			error;			/* errno of a failed write, or 0 */
	bool		finished;		/* every record was written */
} RunWriterPart;

struct RunWriter
{
	MinimalTuple *sorted;
	const uint64 *keys;
	int			key_words;
	RunFile    *file;			/* the runs' file ... */
	int			fd;				/* ... the threads' descriptor of it, or -1 */
	int			nparts;
	RunWriterPart parts[RUN_WRITER_PARTS];
	ThreadPool *pool;
	TaskGroup  *group;
	MemoryContextCallback release;
};

static void
release_writer_fd(void *arg)
{
	RunWriter  *w = (RunWriter *) arg;

	run_file_release_thread_fd(w->fd);
	w->fd = -1;
}

/* a task: the bytes of parts [from, to) */
static bool
measure_parts(void *state, void *arg, size_t from, size_t to)
{
	RunWriter  *w = (RunWriter *) arg;
	Size		key_bytes = w->key_words * sizeof(uint64);

	for (size_t p = from; p < to; p++)
	{
		RunWriterPart *part = &w->parts[p];
		Size		bytes = 0;

		for (size_t i = part->from; i < part->to; i++)
		{
			if (i + 16 < part->to)
				gs_prefetch(w->sorted[i + 16]);
			bytes += run_record_bytes(w->sorted[i], key_bytes);
		}
		part->bytes = bytes;
	}
	return true;
}

/* the part's buffer, written out at *offset; false if the write failed */
static bool
part_flush(RunWriter *w, RunWriterPart *part, off_t *offset, Size *used)
{
	if (*used > 0)
		part->error = run_file_pwrite(w->fd, *offset, part->buf, *used);
	*offset += *used;
	*used = 0;
	return part->error == 0;
}

/* a task: serialize and write parts [from, to) */
static bool
write_parts(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	RunWriter  *w = (RunWriter *) arg;
	Size		key_bytes = w->key_words * sizeof(uint64);

	for (size_t p = from; p < to; p++)
	{
		RunWriterPart *part = &w->parts[p];
		off_t		offset = part->offset;
		Size		used = 0;

		for (size_t i = part->from; i < part->to; i++)
		{
			MinimalTuple tuple = w->sorted[i];
			const uint64 *key = w->keys ? w->keys + i * w->key_words : NULL;
			Size		need = run_record_bytes(tuple, key_bytes);

			if (i + 16 < part->to)
				gs_prefetch(w->sorted[i + 16]);
			if (used + need > RUN_WRITER_BUFFER)
			{
				/* the sort may be ending: give up between buffers */
				if (key_build_stopped(ctx) || !part_flush(w, part, &offset, &used))
					return true;
				if (need > RUN_WRITER_BUFFER)
				{
					Size		tuple_bytes = RUN_TUPLE_BYTES(tuple);

					/* a record larger than the buffer: its tuple goes directly */
					used = run_record_put_head(part->buf, key, key_bytes, tuple);
					if (!part_flush(w, part, &offset, &used))
						return true;
					part->error = run_file_pwrite(w->fd, offset, RUN_TUPLE_DATA(tuple),
												  tuple_bytes);
					if (part->error != 0)
						return true;
					offset += tuple_bytes;
					continue;
				}
			}
			run_record_put(part->buf + used, key, key_bytes, tuple);
			used += need;
		}
		if (!part_flush(w, part, &offset, &used))
			return true;
		/* the part was measured from the same records: it must be full */
		if (offset != part->offset + (off_t) part->bytes)
			part->error = EIO;
		else
			part->finished = true;
	}
	return true;
}

/*
 * Start writing the batch's run behind the backend; false if it cannot be
 * (no pool thread, or no descriptor to spare), and the caller writes it.
 */
static bool
start_write_behind(SortRuns *runs, SortBatch *batch, SortedRun *run, int key_words)
{
	RunWriter  *w;
	size_t		n = batch->ntuples;
	off_t		offset;
	Size		total = 0;

	/* a batch whose keys the backend encoded as it loaded has no threads yet */
	if (batch->pool == NULL && batch_threads(batch) > 0)
		batch_start_threads(batch);
	if (batch->pool == NULL || threadpool_count(batch->pool) == 0)
		return false;
	w = MemoryContextAllocZero(batch->cxt, sizeof(RunWriter));
	w->file = &runs->file;
	w->fd = run_file_thread_fd(w->file);
	if (w->fd < 0)
		return false;
	w->release.func = release_writer_fd;
	w->release.arg = w;
	MemoryContextRegisterResetCallback(batch->cxt, &w->release);

	w->sorted = batch->sorted;
	w->keys = key_words ? batch->sorted_keys : NULL;
	w->key_words = key_words;
	w->nparts = Min(threadpool_count(batch->pool), RUN_WRITER_PARTS);
	for (int p = 0; p < w->nparts; p++)
	{
		w->parts[p].from = n * p / w->nparts;
		w->parts[p].to = n * (p + 1) / w->nparts;
	}

	/* each part's length, to reserve the run's extent in the backend */
	threadpool_parallel_for(batch->pool, measure_parts, w, w->nparts, 1);
	for (int p = 0; p < w->nparts; p++)
		total += w->parts[p].bytes;
	offset = run_file_reserve(&runs->file, total);
	if (total > 0)
		run_add_extent(runs, run, offset, total);
	for (int p = 0; p < w->nparts; p++)
	{
		w->parts[p].offset = offset;
		offset += w->parts[p].bytes;
		w->parts[p].buf = MemoryContextAlloc(batch->cxt, RUN_WRITER_BUFFER);
	}

	w->pool = batch->pool;
	w->group = threadpool_group_create(batch->pool);
	for (int p = 0; p < w->nparts; p++)
		threadpool_submit(batch->pool, w->group, write_parts, w, p, p + 1);

	/*
	 * The pool is not counted among the server's sorts with pool threads
	 * while it writes, so that the next batch's own threads get this sort's
	 * share: the writer's threads spend most of their time in the kernel.
	 */
	threadpool_idle(batch->pool);
	runs->writer = w;
	return true;
}

/*
 * Write the batch's sorted tuples (and keys) as a new run.  With behind,
 * a pool thread may write it while the backend goes on; then true is
 * returned, and the batch must stay as it is until runs_finish_write.
 */
bool
runs_write_batch(SortRuns *runs, SortBatch *batch, bool behind)
{
	SortedRun  *run;
	bool		keys_decide = batch->sorted_keys != NULL && batch->keys_order;
	int			key_words;		/* the keys' words in each record */
	bool		written_behind = false;

	Assert(runs->writer == NULL);
	run = runs_add_run(runs);
	run->ntuples = batch->ntuples;
	run->key_words = keys_decide ? batch->sorted_key_words : 0;
	run->layout_version = runs->sh->layout_version;
	run->keys_order = keys_decide;
	run->exact = runs->sh->layout.exact;
	/* keys that cannot decide a merge are not written at all */
	key_words = run_file_key_words(runs, run);

	if (behind && batch->ntuples >= RUN_WRITE_BEHIND_MIN_RECORDS)
		written_behind = start_write_behind(runs, batch, run, key_words);

	/* an injected fault: with a run written behind, while the threads write */
	gpusort_fault_point(GPUSORT_PHASE_SPILL);
	if (!written_behind)
	{
		RunOutput	out = {&runs->file, run, 0, 0, NULL, RUN_WRITE_BUFFER, 0};

		if (batch->pool && threadpool_count(batch->pool) > 0 &&
			batch->ntuples >= 2 * SPILL_SLICE_RECORDS)
			write_batch_in_threads(runs, batch, &out, key_words);
		else
		{
			out.buf = MemoryContextAlloc(batch->cxt, RUN_WRITE_BUFFER);
			for (size_t i = 0; i < batch->ntuples; i++)
			{
				if (i % RECORDS_PER_INTERRUPT_CHECK == 0)
					CHECK_FOR_INTERRUPTS();
				if (i + 16 < batch->ntuples)
					gs_prefetch(batch->sorted[i + 16]);
				run_output_record(runs, &out, key_words,
								  key_words ? batch->sorted_keys + i * key_words : NULL,
								  batch->sorted[i]);
			}
		}
		run_output_end(runs, &out);
		if (out.buf)
			pfree(out.buf);
	}
	runs->runs_written++;
	if (written_behind)
		runs->runs_behind++;
	runs_note_disk_use(runs);
	return written_behind;
}

/* Whether no run is being written behind the backend any more. */
bool
runs_write_done(SortRuns *runs)
{
	return runs->writer == NULL ||
		threadpool_group_done(runs->writer->pool, runs->writer->group);
}

/*
 * Wait for the run written behind the backend, if any; after this its
 * batch may go.  A failed write is reported here, in the backend.
 */
void
runs_finish_write(SortRuns *runs)
{
	RunWriter  *w = runs->writer;

	if (w == NULL)
		return;
	threadpool_wait(w->pool, w->group);
	runs->writer = NULL;
	release_writer_fd(w);
	for (int p = 0; p < w->nparts; p++)
	{
		if (!w->parts[p].finished)
			run_file_write_error(w->file, w->parts[p].error ? w->parts[p].error : EIO);
	}
}


/*
 * Begin a run written record by record, of expected_bytes or so, with the
 * keys of like (its key_words, layout_version, keys_order and exact): a
 * merge pass's output.  Until runs_end_run it is the set's output_run.  Its
 * records go into the space that the merge's inputs give back as they are
 * read, a piece at a time, so that a merge's inputs and output together
 * take little more than the inputs did, as logtape.c's tapes, which recycle
 * the blocks they have read.
 */
void
runs_begin_run(SortRuns *runs, const SortedRun *like, off_t expected_bytes)
{
	SortedRun  *out = &runs->output_run;

	Assert(runs->output.buf == NULL);
	memset(out, 0, sizeof(SortedRun));
	runs->output.file = &runs->file;
	runs->output.run = out;
	runs->output.piece = 0;
	runs->output.piece_left = 0;
	runs->output.buf = MemoryContextAlloc(runs->cxt, RUN_WRITE_BUFFER);
	runs->output.bufsize = RUN_WRITE_BUFFER;
	runs->output.used = 0;
	/* a run of one extent at the least, as its inputs' bytes and pieces */
	out->maxextents = Max(4, (int) Min(expected_bytes / RUN_PIECE_BYTES + 1, 1024));
	out->extents = MemoryContextAlloc(runs->cxt, sizeof(RunExtent) * out->maxextents);
	out->key_words = like->key_words;
	out->layout_version = like->layout_version;
	out->keys_order = like->keys_order;
	out->exact = like->exact;
	runs->output_key_words = run_file_key_words(runs, out);
}

/*
 * Append a record, tuple and its key (of the run's key_words), to the run
 * written record by record.
 */
void
runs_append_record(SortRuns *runs, const uint64 *key, MinimalTuple tuple)
{
	run_output_record(runs, &runs->output, runs->output_key_words, key, tuple);
	runs->output_run.ntuples++;
}

/* End the run written record by record; it is returned, for the caller. */
SortedRun
runs_end_run(SortRuns *runs)
{
	SortedRun	out;

	run_output_end(runs, &runs->output);
	out = runs->output_run;
	memset(&runs->output_run, 0, sizeof(SortedRun));
	pfree(runs->output.buf);
	runs->output.buf = NULL;
	runs->output.file = NULL;
	runs->output.run = NULL;
	runs_note_disk_use(runs);
	return out;
}

/*-------------------------------------------------------------------------
 *
 * sort_runs.c
 *	  Sorted runs written to temporary files, and their k-way merge on the
 *	  way out.
 *
 * When a sort's input outgrows the memory it may hold, each full batch is
 * sorted (sort_batch.c) and written here as a *run*: its tuples in sorted
 * order in a temporary file of PostgreSQL's own (run_file.c), so that
 * temp_tablespaces, temp_file_limit, log_temp_files and the removal of
 * temporary files at the end of a transaction behave as they do for Sort.
 * Each record of a run is
 *
 *		uint32 length | normalized key (key_words words) | MinimalTuple
 *
 * where, as tuplesort.c writes them, the tuple goes without its length and
 * padding (the first MINIMAL_TUPLE_DATA_OFFSET bytes), which the reader
 * puts back; the length counts the key and the rest of the tuple.
 *
 * The key is the one the engine sorted (sort_batch.c keeps it beside each
 * sorted tuple), so that the merge compares keys first and calls
 * PostgreSQL's comparators only where two inexact keys are equal.  Keys of
 * runs whose layouts differ (a NULL seen late widens the layout) or that
 * do not follow PostgreSQL's order where they differ (libc collation keys,
 * or a batch that comparators sorted) are not compared: such pairs go to
 * the comparators.
 *
 * A run is written either by the backend, with the batch's key threads
 * serializing its records, or *behind* the backend: the key threads
 * serialize and write it while the backend goes on loading the next batch
 * (runs_write_batch, runs_finish_write); sort.c keeps the batch until then.
 *
 * The last batch is not written: it stays in memory and is one input of
 * the final merge.  With more runs than the merge memory can read at once
 * (a read buffer of at least RUN_READ_BUFFER_MIN each), runs are first
 * merged in groups into longer runs, pass after pass, as tuplesort.c does.
 * The final merge then runs on the fly as the executor fetches: a tree of
 * losers over the inputs' current records, nothing written twice; runs
 * are read a chunk at a time, and records parsed from the chunk.  A merge
 * removes each input's file as soon as it has read it to its end, so that
 * a pass, or the final merge, does not hold the disk its inputs gave up.
 * Where the plan needs random access (backward scan, mark/restore,
 * rewind), the final merge is instead written to a logical tape of
 * logtape.c, whose records carry their length at both ends so that it can
 * be read backwards, and which is frozen so that it can be read again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "utils/logtape.h"
#include "utils/memutils.h"

#include "cpu_radix.h"
#include "faults.h"
#include "keythreads.h"
#include "run_file.h"
#include "sort_runs.h"
#include "tiebreak.h"

/* records between checks for cancel */
#define RECORDS_PER_INTERRUPT_CHECK 1024

/* the most runs one merge reads at once, as tuplesort.c's MAXORDER */
#define MAX_MERGE_ORDER		500

/* A run in its file, waiting to be merged. */
typedef struct SortedRun
{
	RunFile		file;
	int64		ntuples;
	int			key_words;		/* 0: no keys in the run */
	int			layout_version;
	bool		keys_order;		/* keys decide where they differ */
	bool		exact;			/* equal keys mean equal records */
} SortedRun;

/* One input of a merge: a run in its file, or the batch held in memory. */
typedef struct MergeInput
{
	bool		on_file;		/* false: the batch in memory */
	RunFile    *file;			/* the run's, in SortRuns.pending */
	off_t		read_pos;		/* where the next chunk starts in the file */
	int64		remaining;		/* records still in the file */
	MinimalTuple *mem_tuples;	/* the batch's sorted tuples and keys */
	const uint64 *mem_keys;
	size_t		mem_pos;
	size_t		mem_n;
	int			key_words;
	int			layout_version;
	bool		keys_order;
	bool		exact;

	/*
	 * A run is read a chunk at a time into chunk[], whose bytes from
	 * chunk_pos to chunk_end are not parsed yet; each record is then
	 * copied out of it into buf, where its tuple gets back its length and
	 * its alignment.
	 */
	char	   *chunk;
	Size		chunk_size;
	Size		chunk_pos;
	Size		chunk_end;

	/* the current record */
	MinimalTuple tuple;
	const uint64 *key;
	bool		exhausted;		/* no current record: past the last */
	char	   *buf;			/* a run's record, read */
	Size		buflen;
	MemoryContext cxt;			/* where buf and chunk live */
} MergeInput;

/*
 * A merge: its inputs in a tree of losers (Knuth, TAOCP vol. 3, 5.4.1).
 * Node j (1 <= j < ninputs) holds the input that lost the match played
 * there, between the winners of its two subtrees; input i is leaf
 * ninputs + i, and node 0 holds the overall winner, whose current record
 * is the smallest.  When the winner advances, one match per level is
 * replayed on its way up: log2(ninputs) comparisons, where a binary heap
 * needs up to twice as many.  Where all inputs' keys decide their order
 * (keys_decide), a match compares the first words of the two inputs' keys,
 * kept side by side in first_words (the largest word for an exhausted
 * input), and looks further only where they are equal; the winner is then
 * chosen without a branch, since on unsorted data which input wins cannot
 * be predicted.
 */
typedef struct Merge
{
	MergeInput *inputs;
	int			ninputs;
	int		   *tree;			/* ninputs entries: winner, then losers */
	uint64	   *first_words;	/* each input's key's first word */
	bool		keys_decide;	/* every input's keys order its records */
	bool		winner_returned;	/* the winner's record went out: advance it */
} Merge;

typedef struct RunWriter RunWriter;

struct SortRuns
{
	SortBatchShared *sh;
	MemoryContext cxt;
	LogicalTapeSet *tapeset;	/* random access: the merged result's */
	Tiebreak	tb;

	SortedRun  *pending;		/* runs not merged yet, in the order written */
	int			npending;
	int			maxpending;
	RunWriter  *writer;			/* the run written behind, or NULL */

	int			runs_written;
	int			runs_behind;	/* of them, written behind the backend */
	int			merge_passes;
	off_t		disk_bytes;		/* in the runs' files now */
	off_t		max_disk_bytes;
	RunFile		pass_output;	/* the run a merge pass writes; -1: none */

	/* the final merge, on the fly */
	Merge		final;
	bool		on_the_fly;

	/* random access: the merged result on one frozen tape */
	LogicalTape *result;
	int64		result_n;
	int64		pos;			/* last returned, -1 before the first */
	int64		tape_at;		/* the record whose start the tape is at */
	char	   *result_buf;
	Size		result_buflen;
	long		mark_block;
	int			mark_offset;
	int64		mark_tape_at;
	int64		markpos;
};

SortRuns *
runs_create(SortBatchShared *sh, MemoryContext cxt)
{
	SortRuns   *runs = MemoryContextAllocZero(cxt, sizeof(SortRuns));

	runs->sh = sh;
	runs->cxt = cxt;
	batch_init_tiebreak(sh, &runs->tb, NULL);
	runs->pos = -1;
	runs->markpos = -1;
	runs->pass_output.file = -1;
	return runs;
}

/*
 * The most disk the sort has used: its runs' files, the run a merge pass
 * is writing, and its result tape.
 */
static void
note_disk_use(SortRuns *runs)
{
	off_t		now = runs->disk_bytes;

	if (runs->pass_output.file >= 0)
		now += runs->pass_output.size;
	if (runs->tapeset)
		now += (off_t) LogicalTapeSetBlocks(runs->tapeset) * BLCKSZ;
	runs->max_disk_bytes = Max(runs->max_disk_bytes, now);
}

/*
 * Close a run's file, which removes it: the merge has read it.  The disk
 * used peaks just before a file goes, while a merge's output grows.
 */
static void
close_run_file(SortRuns *runs, RunFile *file)
{
	if (file->file < 0)
		return;
	note_disk_use(runs);
	runs->disk_bytes -= file->size;
	run_file_close(file);
}

/* A new run, with an empty file, at the end of the runs to merge. */
static SortedRun *
add_run(SortRuns *runs)
{
	SortedRun  *run;
	RunFile		file;

	if (runs->npending == runs->maxpending)
	{
		int			newmax = Max(runs->maxpending * 2, 16);

		if (runs->pending)
			runs->pending = repalloc(runs->pending, sizeof(SortedRun) * newmax);
		else
			runs->pending = MemoryContextAlloc(runs->cxt, sizeof(SortedRun) * newmax);
		runs->maxpending = newmax;
	}
	run_file_create(&file);
	run = &runs->pending[runs->npending++];
	memset(run, 0, sizeof(SortedRun));
	run->file = file;
	return run;
}

/* bytes of a tuple in a run: without its length and padding */
#define TAPE_TUPLE_BYTES(tuple)	((tuple)->t_len - MINIMAL_TUPLE_DATA_OFFSET)
#define TAPE_TUPLE_DATA(tuple)	((char *) (tuple) + MINIMAL_TUPLE_DATA_OFFSET)

/*
 * Records written by the backend one at a time (a small batch, a merge
 * pass) go through a buffer of RUN_WRITE_BUFFER bytes into the run's file.
 */
#define RUN_WRITE_BUFFER	((Size) 64 * 1024)

typedef struct RunOutput
{
	RunFile    *file;
	char	   *buf;
	Size		used;
} RunOutput;

static void
output_flush(RunOutput *out)
{
	if (out->used > 0)
		run_file_append(out->file, out->buf, out->used);
	out->used = 0;
}

static void
output_put(RunOutput *out, const void *data, Size len)
{
	if (out->used + len > RUN_WRITE_BUFFER)
	{
		output_flush(out);
		if (len > RUN_WRITE_BUFFER)
		{
			run_file_append(out->file, data, len);
			return;
		}
	}
	memcpy(out->buf + out->used, data, len);
	out->used += len;
}

static void
write_record(RunOutput *out, int key_words, const uint64 *key, MinimalTuple tuple)
{
	uint32		len = key_words * sizeof(uint64) + TAPE_TUPLE_BYTES(tuple);

	output_put(out, &len, sizeof(len));
	if (key_words > 0)
		output_put(out, key, key_words * sizeof(uint64));
	output_put(out, TAPE_TUPLE_DATA(tuple), TAPE_TUPLE_BYTES(tuple));
}

static void
read_exactly(LogicalTape *tape, void *ptr, size_t size)
{
	if (LogicalTapeRead(tape, ptr, size) != size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
}

/*
 * Writing a large run with the batch's key threads: the sorted tuples lie
 * at random places in the arena, so serializing them one by one waits for
 * memory at every record.  Instead, slices of SPILL_SLICE_RECORDS records
 * are serialized into a buffer by the threads (the sizes first, then the
 * bytes at their offsets), while the backend writes the previous slice's
 * buffer to the run's file.
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

/* bytes of a record in a run: its length, its key (key_bytes), its tuple */
static inline Size
record_bytes(MinimalTuple tuple, Size key_bytes)
{
	return sizeof(uint32) + key_bytes + TAPE_TUPLE_BYTES(tuple);
}

/* Serialize a record's length and key at p; returns the bytes written. */
static inline Size
put_record_head(char *p, const uint64 *key, Size key_bytes, MinimalTuple tuple)
{
	uint32		len = key_bytes + TAPE_TUPLE_BYTES(tuple);

	memcpy(p, &len, sizeof(len));
	if (key_bytes > 0)
		memcpy(p + sizeof(len), key, key_bytes);
	return sizeof(len) + key_bytes;
}

/* Serialize one record at p, in record_bytes() bytes. */
static inline void
put_record(char *p, const uint64 *key, Size key_bytes, MinimalTuple tuple)
{
	Size		head = put_record_head(p, key, key_bytes, tuple);

	memcpy(p + head, TAPE_TUPLE_DATA(tuple), TAPE_TUPLE_BYTES(tuple));
}

/* a task: the sizes of records [from, to) of a slice, in offsets[i + 1] */
static bool
measure_records(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	SpillSlice *sl = (SpillSlice *) arg;
	Size		key_bytes = sl->key_words * sizeof(uint64);

	for (size_t i = from; i < to; i++)
	{
		if (i + 16 < to)
			gs_prefetch(sl->sorted[i + 16]);
		sl->offsets[i + 1] = record_bytes(sl->sorted[i], key_bytes);
	}
	return true;
}

/* a task: records [from, to) of a slice, serialized at their offsets */
static bool
serialize_records(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	SpillSlice *sl = (SpillSlice *) arg;
	Size		key_bytes = sl->key_words * sizeof(uint64);

	for (size_t i = from; i < to; i++)
	{
		if (i + 16 < to)
			gs_prefetch(sl->sorted[i + 16]);
		put_record(sl->buf + sl->offsets[i],
				   sl->keys ? sl->keys + i * sl->key_words : NULL, key_bytes,
				   sl->sorted[i]);
	}
	return true;
}

/* Serialize slice sl in the threads: sizes, offsets, then (queued) bytes. */
static void
start_slice(KeyThreadPool *pool, KeyTaskGroup *group, SpillSlice *sl, MemoryContext cxt)
{
	sl->offsets[0] = 0;
	keythreads_parallel_for(pool, measure_records, sl, sl->n, SPILL_TASK_RECORDS);
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
		keythreads_submit(pool, group, serialize_records, sl, from,
						  Min(sl->n, from + SPILL_TASK_RECORDS));
}

static void
write_batch_in_threads(SortBatch *batch, RunFile *file, int key_words)
{
	MemoryContext cxt = AllocSetContextCreate(batch->cxt, "GpuSort spill",
											  ALLOCSET_DEFAULT_SIZES);
	SpillSlice	slices[2];
	KeyTaskGroup *groups[2];
	size_t		next = 0;
	int			cur = 0;
	bool		pending = false;

	for (int s = 0; s < 2; s++)
	{
		memset(&slices[s], 0, sizeof(SpillSlice));
		slices[s].key_words = key_words;
		slices[s].offsets = MemoryContextAlloc(cxt, sizeof(Size) * (SPILL_SLICE_RECORDS + 1));
		groups[s] = keythreads_group_create(batch->pool);
	}

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
			keythreads_wait(batch->pool, groups[1 - cur]);
			CHECK_FOR_INTERRUPTS();
			run_file_append(file, prev->buf, prev->offsets[prev->n]);
		}
		pending = started;
		cur = 1 - cur;
	}
	keythreads_wait_all(batch->pool);
	MemoryContextDelete(cxt);
}

/*
 * A run written behind the backend: the batch's key threads serialize its
 * sorted records and write them with pwrite() into the extent that the
 * backend reserved (run_file.c), while the backend loads the next batch.
 * The run is cut into parts of consecutive records, one task each; each
 * part's bytes are measured first, so that every part knows where it
 * starts in the file and all are written at once, as fast as the backend
 * writes a run with the same threads.  The writer lives in the batch's
 * memory, which sort.c keeps until runs_finish_write; the threads'
 * descriptor is closed there or, after an error, by release_writer_fd when
 * that memory goes, after the batch's key threads have been joined (they
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
	int			fd;				/* the threads' descriptor, or -1 */
	int			nparts;
	RunWriterPart parts[RUN_WRITER_PARTS];
	KeyThreadPool *pool;
	KeyTaskGroup *group;
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
measure_parts(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
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
			bytes += record_bytes(w->sorted[i], key_bytes);
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
write_parts(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
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
			Size		need = record_bytes(tuple, key_bytes);

			if (i + 16 < part->to)
				gs_prefetch(w->sorted[i + 16]);
			if (used + need > RUN_WRITER_BUFFER)
			{
				/* the sort may be ending: give up between buffers */
				if (key_build_stopped(ctx) || !part_flush(w, part, &offset, &used))
					return true;
				if (need > RUN_WRITER_BUFFER)
				{
					Size		tuple_bytes = TAPE_TUPLE_BYTES(tuple);

					/* a record larger than the buffer: its tuple goes directly */
					used = put_record_head(part->buf, key, key_bytes, tuple);
					if (!part_flush(w, part, &offset, &used))
						return true;
					part->error = run_file_pwrite(w->fd, offset, TAPE_TUPLE_DATA(tuple),
												  tuple_bytes);
					if (part->error != 0)
						return true;
					offset += tuple_bytes;
					continue;
				}
			}
			put_record(part->buf + used, key, key_bytes, tuple);
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
 * (no key thread, or no descriptor to spare), and the caller writes it.
 */
static bool
start_write_behind(SortRuns *runs, SortBatch *batch, SortedRun *run, int key_words)
{
	RunWriter  *w;
	size_t		n = batch->ntuples;
	off_t		offset;
	Size		total = 0;

	/* a batch whose keys the backend encoded as it loaded has no threads yet */
	if (batch->pool == NULL && batch_key_threads(batch) > 0)
		batch_start_key_threads(batch);
	if (batch->pool == NULL || keythreads_count(batch->pool) == 0)
		return false;
	w = MemoryContextAllocZero(batch->cxt, sizeof(RunWriter));
	w->fd = run_file_thread_fd(&run->file);
	if (w->fd < 0)
		return false;
	w->release.func = release_writer_fd;
	w->release.arg = w;
	MemoryContextRegisterResetCallback(batch->cxt, &w->release);

	w->sorted = batch->sorted;
	w->keys = key_words ? batch->sorted_keys : NULL;
	w->key_words = key_words;
	w->nparts = Min(keythreads_count(batch->pool), RUN_WRITER_PARTS);
	for (int p = 0; p < w->nparts; p++)
	{
		w->parts[p].from = n * p / w->nparts;
		w->parts[p].to = n * (p + 1) / w->nparts;
	}

	/* each part's length, to reserve the run's extent in the backend */
	keythreads_parallel_for(batch->pool, measure_parts, w, w->nparts, 1);
	for (int p = 0; p < w->nparts; p++)
		total += w->parts[p].bytes;
	offset = run_file_reserve(&run->file, total);
	for (int p = 0; p < w->nparts; p++)
	{
		w->parts[p].offset = offset;
		offset += w->parts[p].bytes;
		w->parts[p].buf = MemoryContextAlloc(batch->cxt, RUN_WRITER_BUFFER);
	}

	w->pool = batch->pool;
	w->group = keythreads_group_create(batch->pool);
	for (int p = 0; p < w->nparts; p++)
		keythreads_submit(batch->pool, w->group, write_parts, w, p, p + 1);

	/*
	 * The pool is not counted among the server's sorts with key threads
	 * while it writes, so that the next batch's own threads get this sort's
	 * share: the writer's threads spend most of their time in the kernel.
	 */
	keythreads_idle(batch->pool);
	runs->writer = w;
	return true;
}

/*
 * Write the batch's sorted tuples (and keys) as a new run.  With behind,
 * a key thread may write it while the backend goes on; then true is
 * returned, and the batch must stay as it is until runs_finish_write.
 */
bool
runs_write_batch(SortRuns *runs, SortBatch *batch, bool behind)
{
	SortedRun  *run;
	int			key_words = batch->sorted_keys ? batch->sorted_key_words : 0;
	bool		written_behind = false;

	Assert(runs->writer == NULL);
	run = add_run(runs);
	run->ntuples = batch->ntuples;
	run->key_words = key_words;
	run->layout_version = runs->sh->layout_version;
	run->keys_order = batch->keys_order;
	run->exact = runs->sh->layout.exact;

	if (behind && batch->ntuples >= RUN_WRITE_BEHIND_MIN_RECORDS)
		written_behind = start_write_behind(runs, batch, run, key_words);

	/* an injected fault: with a run written behind, while the threads write */
	gpusort_fault_point(GPUSORT_PHASE_SPILL);
	if (written_behind)
		;
	else if (batch->pool && keythreads_count(batch->pool) > 0 &&
			 batch->ntuples >= 2 * SPILL_SLICE_RECORDS)
		write_batch_in_threads(batch, &run->file, key_words);
	else
	{
		RunOutput	out = {&run->file, MemoryContextAlloc(batch->cxt, RUN_WRITE_BUFFER), 0};

		for (size_t i = 0; i < batch->ntuples; i++)
		{
			if (i % RECORDS_PER_INTERRUPT_CHECK == 0)
				CHECK_FOR_INTERRUPTS();
			if (i + 16 < batch->ntuples)
				gs_prefetch(batch->sorted[i + 16]);
			write_record(&out, key_words,
						 key_words ? batch->sorted_keys + i * key_words : NULL,
						 batch->sorted[i]);
		}
		output_flush(&out);
		pfree(out.buf);
	}
	runs->runs_written++;
	if (written_behind)
		runs->runs_behind++;
	runs->disk_bytes += run->file.size;
	note_disk_use(runs);
	return written_behind;
}

/* Whether no run is being written behind the backend any more. */
bool
runs_write_done(SortRuns *runs)
{
	return runs->writer == NULL ||
		keythreads_group_done(runs->writer->pool, runs->writer->group);
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
	keythreads_wait(w->pool, w->group);
	runs->writer = NULL;
	release_writer_fd(w);
	for (int p = 0; p < w->nparts; p++)
	{
		if (!w->parts[p].finished)
		{
			errno = w->parts[p].error ? w->parts[p].error : EIO;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write to temporary file: %m")));
		}
	}
}

/* ---------------------------------------------------------------------
 * Merging
 * ---------------------------------------------------------------------
 */

/*
 * Make sure in's chunk holds the next `need` bytes of its run unparsed,
 * reading more (and keeping the bytes not parsed yet) as needed.
 */
static void
input_fill(MergeInput *in, Size need)
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
	more = Min(in->chunk_size - have, (Size) (in->file->size - in->read_pos));
	if (have + more < need)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
	run_file_read(in->file, in->read_pos, in->chunk + have, more);
	in->read_pos += more;
	in->chunk_end += more;
}

/* Make in's next record current; false (and exhausted) at its end. */
static bool
input_advance(MergeInput *in)
{
	uint32		len;
	Size		key_bytes;
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
	input_fill(in, sizeof(len));
	memcpy(&len, in->chunk + in->chunk_pos, sizeof(len));
	input_fill(in, sizeof(len) + len);
	record = in->chunk + in->chunk_pos + sizeof(len);
	in->chunk_pos += sizeof(len) + len;

	if (len + MINIMAL_TUPLE_DATA_OFFSET > in->buflen)
	{
		Size		newlen = Max(len + MINIMAL_TUPLE_DATA_OFFSET, Max(in->buflen * 2, 1024));

		if (in->buf)
			pfree(in->buf);
		in->buf = MemoryContextAlloc(in->cxt, newlen);
		in->buflen = newlen;
	}
	key_bytes = in->key_words * sizeof(uint64);
	memcpy(in->buf, record, key_bytes);
	in->key = (const uint64 *) in->buf;
	in->tuple = (MinimalTuple) (in->buf + key_bytes);
	memcpy(TAPE_TUPLE_DATA(in->tuple), record + key_bytes, len - key_bytes);
	in->tuple->t_len = len - key_bytes + MINIMAL_TUPLE_DATA_OFFSET;
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

/*
 * Order of two inputs' current records: by their keys where both runs'
 * keys can decide, else (and where inexact keys are equal) by PostgreSQL's
 * comparators.
 */
static int
compare_inputs(SortRuns *runs, const MergeInput *a, const MergeInput *b)
{
	if (keys_comparable(a, b))
	{
		int			c = gs_compare_key_words(a->key, b->key, a->key_words);

		if (c != 0 || a->exact)
			return c;
	}
	return gpusort_compare_tuples(&runs->tb, a->tuple, b->tuple);
}

/*
 * Whether input a's current record goes out before input b's: an
 * exhausted input after every other, equal records in input order (the
 * runs' order, so that the merge is deterministic).
 */
static inline bool
input_precedes(SortRuns *runs, Merge *m, int a, int b)
{
	const MergeInput *ia = &m->inputs[a];
	const MergeInput *ib = &m->inputs[b];
	int			cmp;

	if (ia->exhausted || ib->exhausted)
		return ib->exhausted && (!ia->exhausted || a < b);
	cmp = compare_inputs(runs, ia, ib);
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
	bool		more = input_advance(in);

	if (m->keys_decide)
		m->first_words[i] = more ? in->key[0] : PG_UINT64_MAX;
	if (!more && in->on_file)
	{
		close_run_file(runs, in->file);
		if (in->chunk)
			pfree(in->chunk);
		in->chunk = NULL;
		in->chunk_size = 0;
	}
}

/* Play the matches of the subtree under node; its winner is returned. */
static int
tree_build(SortRuns *runs, Merge *m, int node)
{
	int			left;
	int			right;

	if (node >= m->ninputs)
		return node - m->ninputs;
	left = tree_build(runs, m, 2 * node);
	right = tree_build(runs, m, 2 * node + 1);
	if (input_wins(runs, m, left, right))
	{
		m->tree[node] = right;
		return left;
	}
	m->tree[node] = left;
	return right;
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

/* Read each input's first record and play the tournament. */
static void
merge_start(SortRuns *runs, Merge *m)
{
	MemoryContext cxt = GetMemoryChunkContext(m->inputs);

	m->tree = MemoryContextAlloc(cxt, sizeof(int) * Max(m->ninputs, 1));
	m->first_words = MemoryContextAlloc(cxt, sizeof(uint64) * Max(m->ninputs, 1));
	m->keys_decide = inputs_share_keys(m->inputs, m->ninputs);
	for (int i = 0; i < m->ninputs; i++)
		merge_advance(runs, m, i);
	if (m->ninputs > 0)
		m->tree[0] = tree_build(runs, m, 1);
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
input_from_run(MergeInput *in, SortedRun *run, Size buffer_size, MemoryContext cxt)
{
	memset(in, 0, sizeof(MergeInput));
	in->cxt = cxt;
	in->on_file = true;
	in->file = &run->file;
	in->read_pos = 0;
	in->remaining = run->ntuples;
	in->key_words = run->key_words;
	in->layout_version = run->layout_version;
	in->keys_order = run->keys_order;
	in->exact = run->exact;
	in->chunk_size = Max(buffer_size, BLCKSZ);
	in->chunk = MemoryContextAlloc(cxt, in->chunk_size);
}

/*
 * Merge the n runs of group into one new run, which is returned; their
 * files go as each is read to its end.  The new run's file is the sort's
 * pass_output until it is done, so that runs_end closes it after an error.
 * The tree and the inputs' buffers live in the pass's own memory, which
 * goes with it.
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

	m.inputs = palloc(sizeof(MergeInput) * n);
	m.ninputs = n;
	for (int i = 0; i < n; i++)
		input_from_run(&m.inputs[i], &group[i], buffer_size, mergecxt);
	merge_start(runs, &m);
	output.buf = palloc(RUN_WRITE_BUFFER);
	output.used = 0;
	MemoryContextSwitchTo(oldcxt);

	/* the merged run keeps the keys where they decide in all its inputs */
	run_file_create(&runs->pass_output);
	output.file = &runs->pass_output;
	out.key_words = m.keys_decide ? m.inputs[0].key_words : 0;
	out.layout_version = m.inputs[0].layout_version;
	out.keys_order = m.keys_decide;
	out.exact = m.keys_decide && m.inputs[0].exact;
	while ((in = merge_next(runs, &m)) != NULL)
	{
		if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
			CHECK_FOR_INTERRUPTS();
		write_record(&output, out.key_words, in->key, in->tuple);
	}
	output_flush(&output);
	out.ntuples = count;
	out.file = runs->pass_output;
	runs->pass_output.file = -1;
	runs->pass_output.size = 0;
	runs->disk_bytes += out.file.size;
	note_disk_use(runs);
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
 * Merge runs in passes until the runs in files and the batch held in memory
 * (last, if it holds records) fit one merge in merge_memory bytes of read
 * buffers; then start the final merge, on the fly or, for random access,
 * onto a tape of its own.
 */
void
runs_start_merge(SortRuns *runs, SortBatch *last, Size merge_memory,
				 bool random_access)
{
	int			nmem = (last != NULL && last->ntuples > 0) ? 1 : 0;
	int			order = (int) Min(merge_memory / RUN_READ_BUFFER_MIN, MAX_MERGE_ORDER);
	Merge	   *m = &runs->final;

	order = Max(order, 2);
	Assert(runs->writer == NULL);
	gpusort_fault_point(GPUSORT_PHASE_MERGE);

	/* passes: groups of `order` runs into one, until one merge takes them all */
	while (runs->npending + nmem > order)
	{
		int			nout = 0;
		int			want = order - nmem;	/* runs the final merge takes */

		for (int first = 0; first < runs->npending;)
		{
			int			n = Min(order, runs->npending - first);

			/* merge no more than needed: the rest may wait for the next pass */
			if (nout + (runs->npending - first) <= want)
				n = 1;
			if (n == 1)
				runs->pending[nout++] = runs->pending[first];
			else
				runs->pending[nout++] = merge_to_run(runs, &runs->pending[first], n,
												   read_buffer_size(merge_memory, n));
			first += n;
		}
		runs->npending = nout;
		runs->merge_passes++;
	}

	/* the final merge */
	m->ninputs = runs->npending + nmem;
	m->inputs = MemoryContextAlloc(runs->cxt, sizeof(MergeInput) * Max(m->ninputs, 1));
	for (int i = 0; i < runs->npending; i++)
		input_from_run(&m->inputs[i], &runs->pending[i],
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
	merge_start(runs, m);
	runs->merge_passes++;

	if (!random_access)
	{
		runs->on_the_fly = true;
		return;
	}

	/* random access: write the merged result, readable both ways */
	{
		MergeInput *in;
		int64		count = 0;

		/* temp_tablespaces, as tuplesort.c does before its tapes */
		PrepareTempTablespaces();
		runs->tapeset = LogicalTapeSetCreate(false, NULL, -1);
		runs->result = LogicalTapeCreate(runs->tapeset);
		while ((in = merge_next(runs, m)) != NULL)
		{
			uint32		len = in->tuple->t_len;

			if (++count % RECORDS_PER_INTERRUPT_CHECK == 0)
				CHECK_FOR_INTERRUPTS();
			LogicalTapeWrite(runs->result, &len, sizeof(len));
			LogicalTapeWrite(runs->result, in->tuple, len);
			LogicalTapeWrite(runs->result, &len, sizeof(len));
		}
		/* every input ran out, and its file went then (merge_advance) */
		m->ninputs = 0;
		runs->result_n = count;
		LogicalTapeFreeze(runs->result, NULL);
		runs->tape_at = 0;
		runs->pos = -1;
		note_disk_use(runs);
	}
}

/* ---------------------------------------------------------------------
 * Reading the result
 * ---------------------------------------------------------------------
 */

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
		MergeInput *in;

		if (!forward)
			elog(ERROR, "gpusort: backward scan of a sort made without random access");
		in = merge_next(runs, &runs->final);
		return in ? in->tuple : NULL;
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

int
runs_written(SortRuns *runs)
{
	return runs->runs_written;
}

int
runs_written_behind(SortRuns *runs)
{
	return runs->runs_behind;
}

int
runs_merge_passes(SortRuns *runs)
{
	return runs->merge_passes;
}

int64
runs_disk_kb(SortRuns *runs)
{
	return (int64) ((runs->max_disk_bytes + 1023) / 1024);
}

/*
 * Close the runs' files and the result's tape: their temporary files go.
 * A run written behind the backend must be finished, or its batch gone.
 */
void
runs_end(SortRuns *runs)
{
	for (int i = 0; i < runs->npending; i++)
		close_run_file(runs, &runs->pending[i].file);
	runs->npending = 0;
	for (int i = 0; i < runs->final.ninputs; i++)
	{
		if (runs->final.inputs[i].on_file)
			close_run_file(runs, runs->final.inputs[i].file);
	}
	runs->final.ninputs = 0;
	run_file_close(&runs->pass_output);
	if (runs->tapeset)
		LogicalTapeSetClose(runs->tapeset);
	runs->tapeset = NULL;
}

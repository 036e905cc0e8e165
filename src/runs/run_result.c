/*-------------------------------------------------------------------------
 *
 * run_result.c
 *	  The random-access result: a sort's final merge written once more, in
 *	  the runs' own file, where the plan reads its rows backward, marks and
 *	  restores positions, or rewinds.
 *
 * tuplesort.c, asked for random access, merges its last tapes onto one
 * more tape of the same set, which takes the blocks its inputs have read:
 * its disk stays near the rows'.  The result here does as much.  It is
 * written into the space that the final merge's inputs give back as they
 * are read (run_file_take, as a merge pass's output), or at the file's end
 * where none is left, so that the sort's disk is the runs' and not the runs'
 * and the result's; its extents are kept until the runs end.  The final
 * merge in the pool threads (run_merge_window.c) reads only extents not
 * given back, so the backend never writes where a thread reads.
 *
 * Its records carry their length at both ends, to be read both ways, and
 * the tuple as a run's record does (run_format.h) and as tuplesort.c's
 * random-access tapes hold it, without its length and padding:
 *
 *		uint32 length | MinimalTuple (length bytes) | uint32 length
 *
 * They are written through a buffer of one block and read through one, as
 * logtape.c's frozen tape is, the result's bytes mapped to the file's by
 * its extents (a binary search over their starts in the result).
 *
 * The merge above (run_merge.c) calls it through run.h:
 * runs_begin_result, runs_append_result, runs_end_result (written), then
 * runs_result_read (a tuple by its offset, forward or backward).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "runs/run_format.h"
#include "runs/run_internal.h"

#define RESULT_LENGTH_BYTES		sizeof(uint32)

/* Start the result: written into the space the merge's inputs give back. */
void
runs_begin_result(SortRuns *runs)
{
	RunResult  *res = &runs->result;

	Assert(runs->output.buf == NULL && res->output.buf == NULL);
	memset(res, 0, sizeof(RunResult));
	res->output.file = &runs->file;
	res->output.run = &res->run;
	res->output.buf = MemoryContextAlloc(runs->cxt, BLCKSZ);
	res->output.bufsize = BLCKSZ;
}

/* Append bytes to the result, through its buffer. */
static void
result_append(SortRuns *runs, const void *data, Size len)
{
	RunOutput  *out = &runs->result.output;

	if (out->used + len > out->bufsize)
	{
		run_output_flush(runs, out);
		if (len > out->bufsize)
		{
			run_output_write(runs, out, data, len);
			return;
		}
	}
	memcpy(out->buf + out->used, data, len);
	out->used += len;
}

/* Append the merge's next tuple to the result. */
void
runs_append_result(SortRuns *runs, MinimalTuple tuple)
{
	uint32		len = RUN_TUPLE_BYTES(tuple);

	result_append(runs, &len, RESULT_LENGTH_BYTES);
	result_append(runs, RUN_TUPLE_DATA(tuple), len);
	result_append(runs, &len, RESULT_LENGTH_BYTES);
	runs->result.run.ntuples++;
}

/*
 * The result is written: its extents' starts are laid out for the reads,
 * and its buffer becomes the read buffer.  Returns its number of tuples.
 */
int64
runs_end_result(SortRuns *runs)
{
	RunResult  *res = &runs->result;
	off_t		at = 0;

	run_output_end(runs, &res->output);
	res->starts = MemoryContextAlloc(runs->cxt,
									 sizeof(off_t) * Max(res->run.nextents, 1));
	for (int i = 0; i < res->run.nextents; i++)
	{
		res->starts[i] = at;
		at += res->run.extents[i].len;
	}
	res->bytes = at;
	res->readbuf = res->output.buf;
	res->output.buf = NULL;
	res->readbuf_start = 0;
	res->readbuf_len = 0;
	runs_note_disk_use(runs);
	return res->run.ntuples;
}

/* Read len bytes of the result from its byte at, through its extents. */
static void
result_read_file(SortRuns *runs, off_t at, char *dst, Size len)
{
	RunResult  *res = &runs->result;
	int			lo = 0,
				hi = res->run.nextents - 1;

	if (at < 0 || at + (off_t) len > res->bytes)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("gpusort: unexpected end of data in a temporary file")));
	/* the last extent that starts at or before at */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (res->starts[mid] <= at)
			lo = mid;
		else
			hi = mid - 1;
	}
	while (len > 0)
	{
		RunExtent  *e = &res->run.extents[lo];
		off_t		within = at - res->starts[lo];
		Size		n = Min(len, (Size) (e->len - within));

		run_file_read(&runs->file, e->offset + within, dst, n);
		dst += n;
		at += n;
		len -= n;
		lo++;
	}
}

/*
 * Copy len bytes of the result from its byte at into dst, through the read
 * buffer: a block around them is read where the buffer does not hold them,
 * the block before them where the reads go backward.
 */
static void
result_copy(SortRuns *runs, off_t at, void *dst, Size len, bool forward)
{
	RunResult  *res = &runs->result;
	off_t		start;

	if (at >= res->readbuf_start &&
		at + (off_t) len <= res->readbuf_start + (off_t) res->readbuf_len)
	{
		memcpy(dst, res->readbuf + (at - res->readbuf_start), len);
		return;
	}
	if (len >= BLCKSZ)
	{
		result_read_file(runs, at, dst, len);
		return;
	}
	start = forward ? at : Max(at + (off_t) len - BLCKSZ, 0);
	res->readbuf_start = start;
	res->readbuf_len = Min((off_t) BLCKSZ, res->bytes - start);
	result_read_file(runs, start, res->readbuf, res->readbuf_len);
	memcpy(dst, res->readbuf + (at - start), len);
}

/*
 * The result's record that starts at byte *at (forward), or that ends there
 * (backward), copied into *buf (of *buflen bytes, grown as needed, in the
 * runs' memory); *at moves past it in that direction.
 */
MinimalTuple
runs_result_read(SortRuns *runs, off_t *at, bool forward,
				 char **buf, Size *buflen)
{
	uint32		len;
	off_t		start;
	MinimalTuple tuple;

	if (forward)
	{
		result_copy(runs, *at, &len, RESULT_LENGTH_BYTES, true);
		start = *at + RESULT_LENGTH_BYTES;
		*at = start + len + RESULT_LENGTH_BYTES;
	}
	else
	{
		result_copy(runs, *at - RESULT_LENGTH_BYTES, &len, RESULT_LENGTH_BYTES, false);
		start = *at - RESULT_LENGTH_BYTES - len;
		*at = start - RESULT_LENGTH_BYTES;
	}
	if (len + MINIMAL_TUPLE_DATA_OFFSET > *buflen)
	{
		Size		newlen = Max(len + MINIMAL_TUPLE_DATA_OFFSET, Max(*buflen * 2, 1024));

		if (*buf)
			pfree(*buf);
		*buf = MemoryContextAlloc(runs->cxt, newlen);
		*buflen = newlen;
	}
	tuple = (MinimalTuple) *buf;
	result_copy(runs, start, RUN_TUPLE_DATA(tuple), len, forward);
	tuple->t_len = len + MINIMAL_TUPLE_DATA_OFFSET;
	return tuple;
}

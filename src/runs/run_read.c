/*-------------------------------------------------------------------------
 *
 * run_read.c
 *	  The run reader: a sorted run's records read back from its extents, one
 *	  at a time, for the merges above (run_merge.c), which call
 *	  run_read_start, run_read_next and run_read_end.
 *
 * A run is read front to back, a read buffer's worth of its extents at a
 * time (run_file.c), and each record is decoded out of the read buffer
 * (run_format.h) into a buffer of the reader's, where its tuple gets back its
 * length and alignment.  A run carries generic keys in its file; fixed keys
 * are built again from each tuple as it is read (key_encode_words or
 * key_encode_tuple, with the layout as it is at the end, which has seen every
 * tuple: runs_rebuild_keys), so that runs take Sort's space.  The space read
 * is given back at once (runs_release), so that a merge pass writes its
 * output where its inputs were, as logtape.c's tapes recycle their blocks.
 *
 * The final merge in the pool threads (run_merge_window.c) reads the runs'
 * file itself, in its threads, a window at a time; every other merge
 * reads through here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "runs/run_format.h"
#include "runs/run_internal.h"

/*
 * Set up rd to read run's extents buffer_size bytes at a time;
 * the read buffer and the record buffer live in cxt.
 */
void
run_read_start(SortRuns *runs, RunReader *rd, SortedRun *run,
			   Size buffer_size, MemoryContext cxt)
{
	memset(rd, 0, sizeof(RunReader));
	rd->cxt = cxt;
	rd->run = run;
	rd->remaining = run->ntuples;
	rd->key_words = run->key_words;
	rd->layout_version = run->layout_version;
	rd->exact = run->exact;
	rd->keys_rebuilt = run->key_words > 0 && runs_rebuild_keys(runs);
	if (rd->keys_rebuilt)
	{
		/*
		 * built with the layout as it is now, as the last batch's are; a
		 * layout widened since the run was written may have left exact keys
		 * for prefixes, whose equal keys the comparators must then order
		 */
		rd->key_words = runs->sh->layout.key_words;
		rd->layout_version = runs->sh->layout_version;
		rd->exact = runs->sh->layout.exact;
		rd->rebuilt_key = MemoryContextAlloc(cxt, sizeof(uint64) * Max(rd->key_words, 1));
	}
	rd->readbuf_size = Max(buffer_size, BLCKSZ);
	rd->readbuf = MemoryContextAlloc(cxt, rd->readbuf_size);
}

/*
 * Make sure rd's read buffer holds the next `need` bytes of its run unparsed,
 * reading more (and keeping the bytes not parsed yet) as needed, from the
 * run's next extent where one ends.  The space read is given back at once.
 */
static void
read_fill(SortRuns *runs, RunReader *rd, Size need)
{
	Size		have = rd->readbuf_end - rd->readbuf_pos;
	Size		more;

	if (have >= need)
		return;
	if (need > rd->readbuf_size)
	{
		Size		newsize = Max(need, rd->readbuf_size * 2);
		char	   *newbuf = MemoryContextAlloc(rd->cxt, newsize);

		memcpy(newbuf, rd->readbuf + rd->readbuf_pos, have);
		pfree(rd->readbuf);
		rd->readbuf = newbuf;
		rd->readbuf_size = newsize;
	}
	else
		memmove(rd->readbuf, rd->readbuf + rd->readbuf_pos, have);
	rd->readbuf_pos = 0;
	rd->readbuf_end = have;
	while (rd->readbuf_end < need)
	{
		RunExtent  *next;

		if (rd->run->nextents == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("gpusort: unexpected end of data in a temporary file")));
		next = &rd->run->extents[0];
		more = Min(rd->readbuf_size - rd->readbuf_end, (Size) next->len);
		run_file_read(runs_file(runs), next->offset, rd->readbuf + rd->readbuf_end, more);
		rd->readbuf_end += more;
		runs_release(runs, rd->run, more);
	}
}

/*
 * Make rd's next record current, in rd->tuple and rd->key; false at the
 * run's end.
 */
bool
run_read_next(SortRuns *runs, RunReader *rd)
{
	uint32		len;
	const char *record;

	if (rd->remaining == 0)
		return false;
	read_fill(runs, rd, RUN_RECORD_LENGTH_BYTES);
	len = run_record_length(rd->readbuf + rd->readbuf_pos);
	read_fill(runs, rd, RUN_RECORD_LENGTH_BYTES + len);
	record = rd->readbuf + rd->readbuf_pos + RUN_RECORD_LENGTH_BYTES;
	rd->readbuf_pos += RUN_RECORD_LENGTH_BYTES + len;

	if (run_record_unpacked_bytes(len) > rd->buflen)
	{
		Size		newlen = Max(run_record_unpacked_bytes(len), Max(rd->buflen * 2, 1024));

		if (rd->buf)
			pfree(rd->buf);
		rd->buf = MemoryContextAlloc(rd->cxt, newlen);
		rd->buflen = newlen;
	}
	rd->tuple = run_record_get(record, len,
							   rd->keys_rebuilt ? 0 : rd->key_words * sizeof(uint64),
							   rd->buf, &rd->key);
	if (rd->keys_rebuilt)
	{
		/* the layout has seen every tuple of the runs: each encodes */
		if (!key_encode_words(&runs->sh->layout, rd->tuple, rd->rebuilt_key) &&
			!key_encode_tuple(&runs->sh->layout, rd->tuple, runs->tb.slot,
							  rd->rebuilt_key))
			elog(ERROR, "gpusort: a run's tuple does not fit the sort's key layout");
		rd->key = rd->rebuilt_key;
	}
	rd->remaining--;
	return true;
}

/*
 * The reader is done with its run: what is left of the run's space is given
 * back, and the read buffer goes.  Again is harmless.
 */
void
run_read_end(SortRuns *runs, RunReader *rd)
{
	runs_release_run(runs, rd->run);
	if (rd->readbuf)
		pfree(rd->readbuf);
	rd->readbuf = NULL;
	rd->readbuf_size = 0;
}

/*-------------------------------------------------------------------------
 *
 * run.c
 *	  A sort's sorted runs: the set of them, the disk they use, and what
 *	  EXPLAIN reports of them.
 *
 * When a sort's input outgrows the memory it may hold, each full batch is
 * sorted (batch_sort.c) and written as a *run*: its tuples in sorted order
 * in extents of a temporary file of PostgreSQL's own that all the sort's
 * runs share (run_file.c), in the record format of run_format.h.
 * run_write.c writes a run, in the backend or behind it; run_read.c reads
 * one back.  This file keeps the runs, in the order written, for the merges
 * above (run_merge.c), which replace groups of them by longer runs and read
 * them on the way out, and the peak of the disk that their file uses (the
 * random-access result's too, run_result.c, which lies in it), which
 * EXPLAIN shows as the sort's disk.  The space a run has been read from is given back as it is
 * read (runs_release), and the runs written next take it again, so that
 * the peak is that of the largest step, not their sum, as for tuplesort.c;
 * runs_end closes the file.
 *
 * What the others call:
 *	- sort.c: runs_create, runs_end, and for EXPLAIN runs_written,
 *	  runs_written_behind, runs_disk_kb;
 *	- the writer (run_write.c): runs_add_run, runs_note_disk_use;
 *	- the reader and the merges: runs_pending, runs_keep_pending (a merge
 *	  pass's runs in place of its inputs), runs_file, run_bytes,
 *	  runs_release, runs_release_run, runs_rebuild_keys and
 *	  run_file_key_words (the
 *	  keys a run's records carry), runs_shared, runs_compare (the
 *	  comparators), runs_memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "runs/run_internal.h"

SortRuns *
runs_create(SortBatchShared *sh, MemoryContext cxt)
{
	SortRuns   *runs = MemoryContextAllocZero(cxt, sizeof(SortRuns));

	runs->sh = sh;
	runs->cxt = cxt;
	runs->file.file = -1;
	batch_init_compare(sh, &runs->tb, NULL);
	return runs;
}

/*
 * The most disk the sort has used: its runs' file at its furthest (the file
 * is not cut as its end comes back).
 */
void
runs_note_disk_use(SortRuns *runs)
{
	runs->max_disk_bytes = Max(runs->max_disk_bytes, runs->file.max_size);
}

/* the file the runs share, for their readers and their errors */
RunFile *
runs_file(SortRuns *runs)
{
	return &runs->file;
}

/* The bytes of run left to read. */
off_t
run_bytes(const SortedRun *run)
{
	off_t		bytes = 0;

	for (int i = 0; i < run->nextents; i++)
		bytes += run->extents[i].len;
	return bytes;
}

/*
 * The first len bytes of run have been read: their space is given back, to
 * be written again, and the run's extents begin past them.
 */
void
runs_release(SortRuns *runs, SortedRun *run, off_t len)
{
	while (len > 0)
	{
		RunExtent  *first = &run->extents[0];
		off_t		n = Min(len, first->len);

		Assert(run->nextents > 0);
		run_file_release(&runs->file, first->offset, n);
		first->offset += n;
		first->len -= n;
		len -= n;
		if (first->len == 0)
		{
			run->nextents--;
			memmove(&run->extents[0], &run->extents[1],
					sizeof(RunExtent) * run->nextents);
		}
	}
}

/* Give back what is left of run: it is read, or will not be. */
void
runs_release_run(SortRuns *runs, SortedRun *run)
{
	if (runs->file.file >= 0)
		runs_release(runs, run, run_bytes(run));
	run->nextents = 0;
}

/* A new run, with no extent yet, at the end of the runs to merge. */
SortedRun *
runs_add_run(SortRuns *runs)
{
	SortedRun  *run;

	if (runs->npending == runs->maxpending)
	{
		int			newmax = Max(runs->maxpending * 2, 16);

		if (runs->pending)
			runs->pending = repalloc(runs->pending, sizeof(SortedRun) * newmax);
		else
			runs->pending = MemoryContextAlloc(runs->cxt, sizeof(SortedRun) * newmax);
		runs->maxpending = newmax;
	}
	/* the sort's first run opens the file, which its runs share */
	if (runs->file.file < 0)
		run_file_open(&runs->file, runs->cxt);
	run = &runs->pending[runs->npending++];
	memset(run, 0, sizeof(SortedRun));
	return run;
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

int64
runs_disk_kb(SortRuns *runs)
{
	return (int64) ((runs->max_disk_bytes + 1023) / 1024);
}

SortBatchShared *
runs_shared(SortRuns *runs)
{
	return runs->sh;
}

/* the comparators and the slot that the runs' tuples are read with */
CompareContext *
runs_compare(SortRuns *runs)
{
	return &runs->tb;
}

/* the sort's memory, which the runs live in */
MemoryContext
runs_memory(SortRuns *runs)
{
	return runs->cxt;
}

/*
 * The runs, in the order written, *npending of them; every one is written
 * (runs_finish_write).  A merge pass puts its runs in their place, in
 * order, and keeps that many (runs_keep_pending).
 */
SortedRun *
runs_pending(SortRuns *runs, int *npending)
{
	Assert(runs->writer == NULL);
	*npending = runs->npending;
	return runs->pending;
}

/* Keep the first npending runs; those past them were merged into them. */
void
runs_keep_pending(SortRuns *runs, int npending)
{
	Assert(npending <= runs->npending);
	runs->npending = npending;
}

/*
 * Whether the runs' keys are left out of their records on disk and built again from
 * each tuple as a run is read.  So they are where the layout is fixed
 * (int8, float8, timestamps, ...: keys.c's own encoding, a few loads and
 * shifts a record), so that a run takes no more disk than Sort's tapes for
 * the same tuples.  Generic keys (text, numeric, collations: keys_build.c)
 * cost more to build than to read back, and stay in the file.
 */
bool
runs_rebuild_keys(SortRuns *runs)
{
	return !runs->sh->layout.generic;
}

/* The words of each record's key that run holds on disk. */
int
run_file_key_words(SortRuns *runs, const SortedRun *run)
{
	return runs_rebuild_keys(runs) ? 0 : run->key_words;
}

/*
 * Close the runs' file: its temporary file goes, with the random-access
 * result in it.  A run written behind the backend must be finished, or its
 * batch gone.
 */
void
runs_end(SortRuns *runs)
{
	runs->npending = 0;
	runs->output_run.nextents = 0;
	run_file_close(&runs->file);
	memset(&runs->result, 0, sizeof(RunResult));
}

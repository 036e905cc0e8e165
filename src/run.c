/*-------------------------------------------------------------------------
 *
 * run.c
 *	  A sort's sorted runs: the set of them, the disk they use, and what
 *	  EXPLAIN reports of them.
 *
 * When a sort's input outgrows the memory it may hold, each full batch is
 * sorted (batch_sort.c) and written as a *run*: its tuples in sorted order
 * in a temporary file of PostgreSQL's own (run_file.c), in the record
 * format of run_format.h.  run_write.c writes a run, in the backend or
 * behind it; run_merge.c merges the runs, and the last batch held in
 * memory, on the way out.  This file keeps the runs not merged yet, in the
 * order written, and the peak of the disk they, a merge pass's output and
 * the random-access result use together, which EXPLAIN shows as the sort's
 * disk.  A merge removes each run's file as soon as it has read it to its
 * end (runs_close_run_file), so that the peak is that of the largest
 * step, not their sum, as for tuplesort.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "run_internal.h"

SortRuns *
runs_create(SortBatchShared *sh, MemoryContext cxt)
{
	SortRuns   *runs = MemoryContextAllocZero(cxt, sizeof(SortRuns));

	runs->sh = sh;
	runs->cxt = cxt;
	batch_init_resolve(sh, &runs->tb, NULL);
	runs->pos = -1;
	runs->markpos = -1;
	return runs;
}

/*
 * The most disk the sort has used: its runs' files, the run a merge pass
 * is writing, and its result tape.
 */
void
runs_note_disk_use(SortRuns *runs)
{
	off_t		now = runs->disk_bytes;

	/* the file a merge pass is writing, not counted until it is done */
	if (runs->pass_output.nfiles > 0)
		now += runs->pass_output.files[runs->pass_output.nfiles - 1].size;
	if (runs->tapeset)
		now += (off_t) LogicalTapeSetBlocks(runs->tapeset) * BLCKSZ;
	runs->max_disk_bytes = Max(runs->max_disk_bytes, now);
}

/*
 * Close a run's file, which removes it: the merge has read it.  The disk
 * used peaks just before a file goes, while a merge's output grows.
 */
void
runs_close_run_file(SortRuns *runs, RunFile *file)
{
	if (file->file < 0)
		return;
	runs_note_disk_use(runs);
	runs->disk_bytes -= file->size;
	run_file_close(file);
}

/* Close those of the run's files that are open: they go. */
void
runs_close_run(SortRuns *runs, SortedRun *run)
{
	for (int i = 0; i < run->nfiles; i++)
		runs_close_run_file(runs, &run->files[i]);
}

/* A new run, with an empty file, at the end of the runs to merge. */
SortedRun *
runs_add_run(SortRuns *runs)
{
	SortedRun  *run;
	RunFile    *file = MemoryContextAlloc(runs->cxt, sizeof(RunFile));

	if (runs->npending == runs->maxpending)
	{
		int			newmax = Max(runs->maxpending * 2, 16);

		if (runs->pending)
			runs->pending = repalloc(runs->pending, sizeof(SortedRun) * newmax);
		else
			runs->pending = MemoryContextAlloc(runs->cxt, sizeof(SortedRun) * newmax);
		runs->maxpending = newmax;
	}
	run_file_create(file);
	run = &runs->pending[runs->npending++];
	memset(run, 0, sizeof(SortedRun));
	run->files = file;
	run->nfiles = 1;
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

int
runs_merge_passes(SortRuns *runs)
{
	return runs->merge_passes;
}

/* threads that do the final merge, the backend's among them; 1: the backend alone */
int
runs_merge_threads(SortRuns *runs)
{
	return Max(runs->merge_threads, 1);
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
		runs_close_run(runs, &runs->pending[i]);
	runs->npending = 0;
	runs_close_merge(runs);
}

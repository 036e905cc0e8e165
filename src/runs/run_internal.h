/*-------------------------------------------------------------------------
 *
 * run_internal.h
 *	  The state of a sort's runs, shared by the storage's files only: the
 *	  set (run.c), the writer (run_write.c) and the reader (run_read.c).
 *	  sort.c and the merges see run.h.
 *
 * The runs are kept in the order written (pending); the writer adds to
 * them, a merge pass replaces groups of them by longer runs, and the final
 * merge reads them where they are.  The disk they use, with the run being
 * written record by record and the result's tape, is counted here as it
 * changes, for EXPLAIN's peak.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_INTERNAL_H
#define GPUSORT_RUN_INTERNAL_H

#include "postgres.h"

#include "utils/logtape.h"

#include "resolve/compare.h"
#include "runs/run.h"
#include "runs/run_file.h"

/*
 * run_write.c: records written by the backend one at a time (a small
 * batch, a run written record by record) go through a buffer of
 * RUN_WRITE_BUFFER bytes into the run's file.
 */
#define RUN_WRITE_BUFFER	((Size) 64 * 1024)

typedef struct RunOutput
{
	RunFile    *file;
	char	   *buf;
	Size		used;
} RunOutput;

/* a run being written behind the backend (run_write.c) */
typedef struct RunWriter RunWriter;

struct SortRuns
{
	SortBatchShared *sh;
	MemoryContext cxt;
	CompareContext tb;

	SortedRun  *pending;		/* the runs, in the order written */
	int			npending;
	int			maxpending;
	RunWriter  *writer;			/* the run written behind, or NULL */

	int			runs_written;
	int			runs_behind;	/* of them, written behind the backend */
	off_t		disk_bytes;		/* in the runs' files now */
	off_t		max_disk_bytes;

	/*
	 * The run written record by record (runs_begin_run), in files whose
	 * last is being written; none: 0 files
	 */
	SortedRun	output_run;
	RunOutput	output;
	int			output_key_words;	/* the keys' words in each record */
	off_t		output_file_bytes;	/* a file of it is full at this */
	int			output_maxfiles;

	LogicalTapeSet *tapeset;	/* random access: the merged result's */
};

/* run.c */
extern SortedRun *runs_add_run(SortRuns *runs);
extern void runs_note_disk_use(SortRuns *runs);
extern void runs_close_run(SortRuns *runs, SortedRun *run);

#endif							/* GPUSORT_RUN_INTERNAL_H */

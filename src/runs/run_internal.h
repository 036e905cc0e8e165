/*-------------------------------------------------------------------------
 *
 * run_internal.h
 *	  The state of a sort's runs, shared by the storage's files only: the
 *	  set (run.c), the writer (run_write.c), the reader (run_read.c) and
 *	  the random-access result (run_result.c).
 *	  sort.c and the merges see run.h.
 *
 * The runs are kept in the order written (pending), in the one file they
 * share; the writer adds to them, a merge pass replaces groups of them by
 * longer runs, and the final merge reads them where they are.  The disk
 * their file uses is counted here as it changes, for EXPLAIN's peak.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_INTERNAL_H
#define GPUSORT_RUN_INTERNAL_H

#include "postgres.h"


#include "resolve/compare.h"
#include "runs/run.h"
#include "runs/run_file.h"

/*
 * run_write.c: records written by the backend one at a time (a small
 * batch, a run written record by record) go through a buffer of
 * RUN_WRITE_BUFFER bytes into the run's extents, in pieces of the file
 * taken as they fill (run_file_take); the random-access result's, through
 * one of a block.
 */
#define RUN_WRITE_BUFFER	((Size) 64 * 1024)

typedef struct RunOutput
{
	RunFile    *file;
	SortedRun  *run;			/* whose extents grow */
	off_t		piece;			/* where the piece taken goes on */
	off_t		piece_left;		/* bytes of it not written */
	char	   *buf;
	Size		bufsize;
	Size		used;
} RunOutput;

/*
 * run_result.c: the random-access result, in the runs' file: its extents,
 * each one's start in the result, and its read buffer, which holds the
 * result's bytes from readbuf_start
 */
typedef struct RunResult
{
	SortedRun	run;
	RunOutput	output;			/* output.buf is NULL where none is written */
	off_t	   *starts;
	off_t		bytes;
	char	   *readbuf;		/* one block */
	off_t		readbuf_start;
	Size		readbuf_len;
} RunResult;

/* a run being written behind the backend (run_write.c) */
typedef struct RunWriter RunWriter;

struct SortRuns
{
	SortBatchShared *sh;
	MemoryContext cxt;
	CompareContext tb;

	RunFile		file;			/* the runs' file; -1 until the first run */
	SortedRun  *pending;		/* the runs, in the order written */
	int			npending;
	int			maxpending;
	RunWriter  *writer;			/* the run written behind, or NULL */

	int			runs_written;
	int			runs_behind;	/* of them, written behind the backend */
	off_t		max_disk_bytes;

	/*
	 * The run written record by record (runs_begin_run); output.buf is NULL
	 * where none is
	 */
	SortedRun	output_run;
	RunOutput	output;
	int			output_key_words;	/* the keys' words in each record */

	RunResult	result;			/* random access: the merged result */
};

/* run.c */
extern SortedRun *runs_add_run(SortRuns *runs);
extern void runs_note_disk_use(SortRuns *runs);
extern void runs_release_run(SortRuns *runs, SortedRun *run);

/* run_write.c, for run_result.c */
extern void run_output_write(SortRuns *runs, RunOutput *out, const char *data,
							 Size len);
extern void run_output_flush(SortRuns *runs, RunOutput *out);
extern void run_output_end(SortRuns *runs, RunOutput *out);

#endif							/* GPUSORT_RUN_INTERNAL_H */

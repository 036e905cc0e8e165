/*-------------------------------------------------------------------------
 *
 * run.h
 *	  A sort's sorted runs in temporary files: the storage under the merge,
 *	  and its interface to sort.c and to the merges.
 *
 * A run is a batch's tuples in sorted order, written to a temporary file
 * when the sort's input outgrows its memory (run_write.c), in the record
 * format of run_format.h, in extents of the one file that the sort's runs
 * share (run_file.c).  run.c holds the sort's set of runs and their file
 * and the disk they use; run_read.c reads a run's records back;
 * run_result.c holds the random-access result, in the same file.  The
 * merges above (run_merge.h) read the runs through this interface, write a
 * merge pass's runs and the result through it, and call nothing else of the storage but the
 * file (run_file.h) and the record format: the storage calls nothing of
 * the merges, as logtape.c calls nothing of tuplesort.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_H
#define GPUSORT_RUN_H

#include "postgres.h"

#include "executor/tuptable.h"

#include "batch/batch.h"
#include "resolve/compare.h"
#include "runs/run_file.h"

typedef struct SortRuns SortRuns;

/* records between checks for cancel */
#define RECORDS_PER_INTERRUPT_CHECK 1024

/* a smaller run is written by the backend, as the writer would gain little */
#define RUN_WRITE_BEHIND_MIN_RECORDS	((size_t) 128 * 1024)

/*
 * A run in the sort's file: its extents, in the order its bytes are read, a
 * record's bytes possibly across two.  As a reader reads them, it gives their
 * space back and they shrink from the front (run_read.c), so that what they
 * hold is what is left to read.
 */
typedef struct SortedRun
{
	RunExtent  *extents;
	int			nextents;
	int			maxextents;
	int64		ntuples;
	int			key_words;		/* 0: no keys in the run */
	int			layout_version;
	bool		keys_order;		/* keys decide where they differ */
	bool		exact;			/* equal keys mean equal records */
} SortedRun;

/*
 * A run read back record by record (run_read.c): its extents are read into
 * readbuf[], whose bytes from readbuf_pos to readbuf_end are not parsed
 * yet; each record is then decoded out of it into buf, where its tuple
 * gets back its length and its alignment.
 */
typedef struct RunReader
{
	SortedRun  *run;			/* its first extent is read next */
	int64		remaining;		/* records still in the run */

	/* the records' keys: as the run was written, or built again */
	int			key_words;
	int			layout_version;
	bool		exact;
	bool		keys_rebuilt;	/* the keys are built here, into
								 * rebuilt_key */
	uint64	   *rebuilt_key;

	char	   *readbuf;
	Size		readbuf_size;
	Size		readbuf_pos;
	Size		readbuf_end;
	char	   *buf;			/* the current record, decoded */
	Size		buflen;
	MemoryContext cxt;			/* where buf and read buffer live */

	/* the current record */
	MinimalTuple tuple;
	const uint64 *key;
} RunReader;

/* run.c: the set, for sort.c */
extern SortRuns *runs_create(SortBatchShared *sh, MemoryContext cxt);
extern int	runs_written(SortRuns *runs);
extern int	runs_written_behind(SortRuns *runs);
extern int64 runs_disk_kb(SortRuns *runs);
extern void runs_end(SortRuns *runs);

/* run.c: the set, for the merges */
extern SortBatchShared *runs_shared(SortRuns *runs);
extern CompareContext *runs_compare(SortRuns *runs);
extern MemoryContext runs_memory(SortRuns *runs);
extern SortedRun *runs_pending(SortRuns *runs, int *npending);
extern void runs_keep_pending(SortRuns *runs, int npending);
extern bool runs_rebuild_keys(SortRuns *runs);
extern int	run_file_key_words(SortRuns *runs, const SortedRun *run);
extern RunFile *runs_file(SortRuns *runs);
extern off_t run_bytes(const SortedRun *run);
extern void runs_release(SortRuns *runs, SortedRun *run, off_t len);

/* run_write.c: a batch's run, for sort.c */
extern bool runs_write_batch(SortRuns *runs, SortBatch *batch, bool behind);
extern bool runs_write_done(SortRuns *runs);
extern void runs_finish_write(SortRuns *runs);

/* run_write.c: a run written record by record, for a merge pass */
extern void runs_begin_run(SortRuns *runs, const SortedRun *like,
						   off_t expected_bytes);
extern void runs_append_record(SortRuns *runs, const uint64 *key,
							   MinimalTuple tuple);
extern SortedRun runs_end_run(SortRuns *runs);

/* run_read.c: a run read back, for the merges */
extern void run_read_start(SortRuns *runs, RunReader *rd, SortedRun *run,
						   Size buffer_size, MemoryContext cxt);
extern bool run_read_next(SortRuns *runs, RunReader *rd);
extern void run_read_end(SortRuns *runs, RunReader *rd);

/* run_result.c: the random-access result, for the final merge */
extern void runs_begin_result(SortRuns *runs);
extern void runs_append_result(SortRuns *runs, MinimalTuple tuple);
extern int64 runs_end_result(SortRuns *runs);
extern MinimalTuple runs_result_read(SortRuns *runs, off_t *at, bool forward,
									 char **buf, Size *buflen);

#endif							/* GPUSORT_RUN_H */

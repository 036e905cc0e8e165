/*-------------------------------------------------------------------------
 *
 * run_internal.h
 *	  The state of a sort's runs, shared by run.c, the run writer
 *	  (run_write.c) and the merge (run_merge.c); sort.c sees only run.h.
 *
 * The runs written and not merged yet are kept in the order written
 * (pending); the writer adds to them, a merge pass replaces groups of them
 * by longer runs, and the final merge takes them all, with the last batch
 * held in memory.  The disk they use is counted here as it changes, for
 * EXPLAIN's peak.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_INTERNAL_H
#define GPUSORT_RUN_INTERNAL_H

#include "postgres.h"

#include "utils/logtape.h"

#include "resolve.h"
#include "run.h"
#include "run_file.h"

/* records between checks for cancel */
#define RECORDS_PER_INTERRUPT_CHECK 1024

/*
 * A merge pass writes its output in about RUN_SEGMENTS files of at least
 * RUN_SEGMENT_MIN bytes each, so that the next merge gives back each file
 * as soon as it has read it rather than the whole run at its end.
 */
#define RUN_SEGMENTS		32
#define RUN_SEGMENT_MIN		((off_t) 32 * BLCKSZ)

/*
 * A run in its files, waiting to be merged: one file for a batch's run;
 * for a merge pass's output, a file for each RUN_SEGMENTS-th of it or so
 * (run_merge.c says why).
 */
typedef struct SortedRun
{
	RunFile    *files;
	int			nfiles;
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
	SortedRun  *run;			/* the run, in SortRuns.pending */
	RunFile    *file;			/* the run's file being read */
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
	bool		keys_rebuilt;	/* the run's keys are built here, into
								 * rebuilt_key */
	uint64	   *rebuilt_key;

	/*
	 * A run is read a chunk at a time into chunk[], whose bytes from
	 * chunk_pos to chunk_end are not parsed yet; each record is then
	 * decoded out of it into buf, where its tuple gets back its length and
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
	char	   *buf;			/* a run's record, decoded */
	Size		buflen;
	MemoryContext cxt;			/* where buf and chunk live */

	/*
	 * The current record's ORDER BY datums, once a comparator needed them,
	 * with the values stored out of line or compressed detoasted into
	 * valuecxt (value_bytes of them): see compare_inputs().
	 */
	Datum	   *values;
	bool	   *isnull;
	bool		have_values;
	Size		value_bytes;
	MemoryContext valuecxt;
} MergeInput;

/* A merge: its inputs in a tree of losers; run_merge.c says how. */
typedef struct Merge
{
	MergeInput *inputs;
	int			ninputs;
	int		   *tree;			/* ninputs entries: winner, then losers */
	uint64	   *first_words;	/* each input's key's first word */
	bool		keys_decide;	/* every input's keys order its records */
	bool		winner_returned;	/* the winner's record went out: advance it */
	Size		value_bytes;	/* the inputs' detoasted values kept */
	Size		value_limit;	/* the most they may take */
} Merge;

/*
 * Play the matches of a tree of losers' subtree under node, for ninputs
 * inputs (leaf ninputs + i is input i): each node of tree gets the loser
 * of its match, and the subtree's winner is returned.  wins(arg, a, b):
 * whether input a's current record goes out before input b's.  Both
 * merges build their trees with it (run_merge.c, run_merge_window.c); the
 * matches replayed as a winner advances are theirs, inline.
 */
static inline int
loser_tree_play(int ninputs, int *tree, int node,
				bool (*wins) (void *arg, int a, int b), void *arg)
{
	int			left;
	int			right;

	if (node >= ninputs)
		return node - ninputs;
	left = loser_tree_play(ninputs, tree, 2 * node, wins, arg);
	right = loser_tree_play(ninputs, tree, 2 * node + 1, wins, arg);
	if (wins(arg, left, right))
	{
		tree[node] = right;
		return left;
	}
	tree[node] = left;
	return right;
}

/* a run being written behind the backend (run_write.c) */
typedef struct RunWriter RunWriter;

/* the final merge done by the key threads (run_merge_window.c) */
typedef struct WindowMerge WindowMerge;

struct SortRuns
{
	SortBatchShared *sh;
	MemoryContext cxt;
	LogicalTapeSet *tapeset;	/* random access: the merged result's */
	ResolveContext tb;

	SortedRun  *pending;		/* runs not merged yet, in the order written */
	int			npending;
	int			maxpending;
	RunWriter  *writer;			/* the run written behind, or NULL */

	int			runs_written;
	int			runs_behind;	/* of them, written behind the backend */
	int			merge_passes;
	off_t		disk_bytes;		/* in the runs' files now */
	off_t		max_disk_bytes;
	SortedRun	pass_output;	/* the run a merge pass writes, in files
								 * whose last is being written; none: 0
								 * files */

	/* the final merge, on the fly: by the key threads, or in final */
	WindowMerge *window;
	int			merge_threads;	/* the window merge's, the backend's among
								 * them; 0: none */
	Merge		final;
	bool		on_the_fly;
	int64		emitted;		/* rows the final merge returned on the fly */

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

/*
 * Whether the runs' keys are left out of their files and built again from
 * each tuple as the merge reads it.  So they are where the layout is fixed
 * (int8, float8, timestamps, ...: keys.c's own encoding, a few loads and
 * shifts a record), so that a run takes no more disk than Sort's tapes for
 * the same tuples.  Generic keys (text, numeric, collations: keys_build.c)
 * cost more to build than to read back, and stay in the file.
 */
static inline bool
runs_rebuild_keys(const SortRuns *runs)
{
	return !runs->sh->layout.generic;
}

/* The words of each record's key that run's file holds. */
static inline int
run_file_key_words(const SortRuns *runs, const SortedRun *run)
{
	return runs_rebuild_keys(runs) ? 0 : run->key_words;
}

/* run.c */
extern SortedRun *runs_add_run(SortRuns *runs);
extern void runs_note_disk_use(SortRuns *runs);
extern void runs_close_run_file(SortRuns *runs, RunFile *file);
extern void runs_close_run(SortRuns *runs, SortedRun *run);

/*
 * run_write.c: records written by the backend one at a time (a small
 * batch, a merge pass) go through a buffer of RUN_WRITE_BUFFER bytes into
 * the run's file.
 */
#define RUN_WRITE_BUFFER	((Size) 64 * 1024)

typedef struct RunOutput
{
	RunFile    *file;
	char	   *buf;
	Size		used;
} RunOutput;

extern void run_output_record(RunOutput *out, int key_words, const uint64 *key,
							  MinimalTuple tuple);
extern void run_output_flush(RunOutput *out);

/* run_merge.c */
extern void runs_close_merge(SortRuns *runs);

/* run_merge_window.c */
extern WindowMerge *window_merge_start(SortRuns *runs, SortBatch *last,
									   Size merge_memory);
extern MinimalTuple window_merge_next(SortRuns *runs, WindowMerge *wm);
extern void window_merge_close(SortRuns *runs);

#endif							/* GPUSORT_RUN_INTERNAL_H */

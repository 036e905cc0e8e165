/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  One in-memory sort of gpusort's sort module: the tuples held at once,
 *	  their normalized keys, the engine that sorts them, and the result.
 *
 * A sort (sort.c) reads its input into a *batch*.  When the batch reaches
 * the memory the sort may hold, or the input ends, the batch is sorted and
 * becomes a sorted run: spilled, written to a temporary file by the run
 * writer (run_write.c), and reset for the next run; or, the last one, kept
 * in memory.  The batch's stages run one way, a file a stage, in the
 * order src/README lists them, and no stage calls one before it:
 *
 *	batch_load.c	load: each tuple copied once into an arena of large
 *					blocks (a parallel load's blocks of tuples by the pool
 *					threads)
 *	batch_encode.c	encode: normalized keys (keys.h) written into the
 *					engine's chunks, every ENCODE_BATCH tuples while they are
 *					in the CPU's cache, or by the pool threads at the end;
 *					the engine chain (engine_chain.c) chooses the engine
 *					and hands the GPU engine's keys to the CPU engine when
 *					it fails (engine.h)
 *	batch_sort.c	the engine's sort, then resolve: the order of equal
 *					inexact keys (refine.c, resolve.c); then gather: the
 *					sorted tuple pointers (and keys, for a merge)
 *	batch_emit.c	emit: the sorted tuples of a batch held in memory
 *					copied in order by the pool threads, ahead of the rows
 *					returned
 *	batch.c			what every stage shares: the batch's lifecycle (init,
 *					reset, move, destroy), its memory measured against its
 *					limit, its pool threads, and giving its keys up
 *
 * Nothing the user sees depends on the engine: when the GPU engine fails
 * the CPU engine sorts the same keys, and when the keys cannot be built or
 * the CPU engine fails, the batch is ordered by PostgreSQL's comparators
 * alone (the *comparator sort*), in place, without copying a tuple.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_BATCH_H
#define GPUSORT_BATCH_H

#include "postgres.h"

#include "executor/tuptable.h"
#include "portability/instr_time.h"
#include "utils/sortsupport.h"

#include "engine/cpu_radix.h"
#include "engine/engine.h"
#include "keys/keys.h"
#include "support/sort_stats.h"
#include "support/threadpool.h"
#include "support/tuple_block.h"

/*
 * Keys are encoded every ENCODE_BATCH loaded tuples, while those tuples are
 * still in the CPU's cache; chunks are submitted as they fill.
 */
#define ENCODE_BATCH		1024

/* chunks of records that 32-bit record indexes can address */
#define MAX_CHUNKS			((size_t) (PG_UINT32_MAX / GPUSORT_CHUNK_RECORDS) + 1)

/* records a batch holds at most: 32-bit record indexes address them */
#define BATCH_MAX_RECORDS	((size_t) PG_UINT32_MAX - 1)

/* the arena's first block (batch_load.c); later blocks grow from it */
#define ARENA_MIN_BLOCK		((Size) 256 * 1024)

typedef struct ChunkBuild ChunkBuild;

/*
 * Step a read position over n results in the direction given; it stays
 * within [-1, n], one step past either end, as tuplesort's does.  True if
 * it points at a result.
 */
static inline bool
sort_step_position(int64 *pos, int64 n, bool forward)
{
	if (forward)
		*pos = Min(*pos + 1, n);
	else
		*pos = Max(*pos - 1, (int64) -1);
	return *pos >= 0 && *pos < n;
}

#if defined(__GNUC__) || defined(__clang__)
#define gs_prefetch(p)	__builtin_prefetch(p)
#else
#define gs_prefetch(p)	((void) 0)
#endif

/* What stays the same for every batch of one sort. */
typedef struct SortBatchShared
{
	SortSupport ssup;			/* comparators, one per ORDER BY column */
	SortSupport abbrev;			/* the same, abbreviating where possible */
	TupleTableSlot *work_slot;	/* MinimalTuple slot to deform tuples */
	TupleTableSlot *work_slot2; /* another, to compare two tuples */
	KeyLayout	layout;			/* placed once; a NULL may widen it */
	int			layout_version; /* bumped when the layout changes */
	double		expected_rows;	/* the planner's estimate of the input */
	GpuSortStats *stats;		/* what the node reports */
	MemoryContext stats_cxt;	/* where its strings live: the caller's
								 * memory, which outlives the sort */
} SortBatchShared;

typedef struct SortBatch
{
	SortBatchShared *sh;

	/* all memory of the batch; reset when the batch becomes a run */
	MemoryContext cxt;
	Size		limit;			/* bytes the batch may hold */
	size_t		expected_records;	/* what the engine should prepare for */

	/* the arena: tuples in load order, the record index is the position */
	MinimalTuple *tuples;
	size_t		ntuples;
	size_t		maxtuples;
	char	   *block_free;		/* free space in the current block */
	Size		block_left;
	Size		next_block_size;
	Size		arena_bytes;	/* its blocks, the one taken ahead too */
	char	   *ahead_block;	/* the next block, faulted in meanwhile */
	Size		ahead_size;
	TaskGroup  *ahead_tasks;	/* faulting it in */

	/* keys and the engine that sorts them */
	EngineChain chain;			/* chain.engine has the keys */
	size_t		nencoded;		/* records whose keys are in the engine */
	size_t		nsubmitted;		/* records in submitted chunks */
	bool		loaded_by_blocks;	/* a parallel load's blocks went in: keys
									 * are encoded as chunks of records fill */
	bool		comparator_sort;	/* keys given up: comparators order it */

	/*
	 * Generic layouts (keys.h): each record's key column datums, and the
	 * threads that build keys from them.  The threads live in threadcxt, a
	 * child of cxt, so that they stop before cxt's memory goes.
	 */
	KeyInputs	inputs;
	uint8	  **input_states;	/* per chunk: its records' INPUTS_* bytes */
	size_t		ninputs;		/* records whose datums the backend stored */
	Size		inputs_bytes;	/* memory of inputs and detoasted copies */
	MemoryContext threadcxt;
	ThreadPool *pool;
	bool		threads_decided;	/* threads is set */
	int			threads;		/* threads the batch has or will start */
	TaskGroup  *chunk_tasks;	/* per chunk: its unfinished build tasks */
	TaskGroup  *copy_tasks;	/* blocks of tuples being copied in */
	ChunkBuild **chunk_builds;	/* per chunk: what its tasks build */

	/* the result: tuples in sorted order, and their keys where kept */
	MinimalTuple *sorted;
	uint64	   *sorted_keys;	/* key_words per record, or NULL */
	int			sorted_key_words;
	bool		keys_order;		/* sorted_keys may decide a merge */
	Size		peak_held;		/* the most it held while it sorted, with
								 * scratch freed since (batch_sort.c) */
} SortBatch;

/*
 * The fewest records a batch starts its pool threads for, to sort them or
 * to load their tuples: below it the CPU engine sorts in one thread.
 */
#define BATCH_THREADS_MIN_RECORDS	GS_RADIX_PARALLEL_MIN_RECORDS

/* batch.c */
extern void batch_init(SortBatch *batch, SortBatchShared *sh, MemoryContext parent);
extern void batch_reset(SortBatch *batch);
extern void batch_move(SortBatch *batch, SortBatch *to);
extern void batch_destroy(SortBatch *batch);
extern Size batch_keys_fixed_bytes(SortBatchShared *sh);
extern Size batch_memory(SortBatch *batch, size_t n, Size more);
extern Size batch_held(SortBatch *batch);
extern double batch_tuple_bytes(SortBatch *batch);
extern void *batch_alloc(SortBatch *batch, Size size);
extern Size batch_inputs_chunk_bytes(SortBatch *batch);
extern int	batch_threads(SortBatch *batch);
extern void batch_start_threads(SortBatch *batch);
extern void batch_give_up_keys(SortBatch *batch, const char *why);
struct CompareContext;
extern void batch_init_compare(SortBatchShared *sh, struct CompareContext *res,
							   MinimalTuple *tuples);

/* batch_load.c */
extern bool batch_store(SortBatch *batch, TupleTableSlot *slot);
extern void batch_end_load(SortBatch *batch);
extern bool batch_store_tuple(SortBatch *batch, MinimalTuple tuple);
extern int	batch_store_blocks(SortBatch *batch, const TupleBlock *blocks,
							   int nblocks);

/* batch_encode.c */
extern void batch_start_keys(SortBatch *batch);
extern void batch_start_engine(SortBatch *batch);
extern void batch_encode(SortBatch *batch, bool final);

/* batch_sort.c */
extern void batch_sort(SortBatch *batch, bool keep_keys);

/* batch_emit.c: the sorted tuples copied in order ahead of the emit */
typedef struct EmitCopy EmitCopy;
extern Size emit_copy_bytes(SortBatch *batch);
extern EmitCopy *emit_copy_start(SortBatch *batch);
extern MinimalTuple emit_copy_next(EmitCopy *copy, int64 pos);
extern void emit_copy_end(EmitCopy *copy);

#endif							/* GPUSORT_BATCH_H */

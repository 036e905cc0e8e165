/*-------------------------------------------------------------------------
 *
 * batch_emit.c
 *	  The emit stage of a batch held in memory (batch.h): the pool threads
 *	  copy its sorted tuples, in order, ahead of the rows the backend
 *	  returns, so that the backend reads them one after another.
 *
 * A batch's tuples lie in the arena in load order; its result is an array
 * of pointers to them in sorted order (batch_sort.c).  Returned through
 * that array, every row is a read at a random place of the arena: a cache
 * miss, and past a few gigabytes a TLB miss too, which one backend waits
 * for however far ahead it prefetches: in a large sort that emit, not the
 * sort, bounds the statement (docs/design.md; bench/results/duckdb.md
 * measures it).
 *
 * So the pool threads, which wait on many such reads at once, copy the
 * tuples in sorted order into a ring of EMIT_COPY_BLOCKS blocks, each the
 * next block_tuples positions of the result, split into a task per
 * thread; the backend returns the copies, one after another in memory.
 * When the backend moves into a block, the one it leaves is handed back to
 * the threads for the positions after the last block queued: the tuple it
 * returned from there is no longer the caller's (a tuple stays valid only
 * until the next call, as sort.h says), so the threads never overwrite one
 * in use.  The backend waits for a block only where it has caught up with
 * the threads, and then runs queued copies itself (threadpool_wait).
 *
 * Each task has a fixed share of its block's bytes, from the batch's mean
 * bytes a tuple and a quarter more; a tuple that does not fit what is left
 * of its share is returned from the arena in place, so a skew of sizes
 * costs speed, never a row.  The copy is only a faster way to the same
 * tuples: the sorted array stays as it was, and sort.c returns to it for
 * anything but a forward scan (backward, mark and restore, rescan) by
 * ending the copy.
 *
 * sort.c calls it all.  The ring's memory is sort.c's to count in the
 * budget: emit_copy_bytes says what it takes (0 where a copy would not
 * pay), and sort.c starts the copy (emit_copy_start) only once the budget
 * has granted that, takes each row from it (emit_copy_next) and ends it
 * (emit_copy_end) for anything but a forward scan.  A reset callback of its
 * memory context drops the queued copies and waits for the running ones
 * before the blocks go, as an error may end the sort while the threads
 * copy.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "batch/batch.h"
#include "support/settings.h"
#include "support/threadpool.h"

/* blocks in the ring: one being returned, the rest being copied */
#define EMIT_COPY_BLOCKS	4

/* a block's tuples: at most, at least */
#define EMIT_COPY_BLOCK_MAX_TUPLES	65536
#define EMIT_COPY_BLOCK_MIN_TUPLES	1024

/* a block's copies, in bytes, at most (so the ring takes about 16 MB) */
#define EMIT_COPY_BLOCK_BYTES	((Size) 4 * 1024 * 1024)

/* a task's tuples, at least */
#define EMIT_COPY_TASK_TUPLES	4096

/* tuples a task prefetches ahead of the one it copies */
#define EMIT_COPY_PREFETCH	16

/*
 * Results smaller than this many blocks are returned from the arena: they
 * lie mostly in the caches, and a cursor that reads a few rows of a small
 * sort would pay for copies it never returns.
 */
#define EMIT_COPY_MIN_BLOCKS	4

typedef struct EmitBlock
{
	struct EmitCopy *copy;
	int64		first;			/* sorted position of its first tuple */
	int64		count;			/* its tuples; 0: past the result's end */
	int64		copied;			/* of them, copied (the others are the
								 * arena's): the tasks add to it */
	MinimalTuple *tuples;		/* each a copy in data, or the arena's */
	char	   *data;
	TaskGroup  *group;
} EmitBlock;

struct EmitCopy
{
	MinimalTuple *sorted;		/* the batch's result */
	GpuSortStats *stats;		/* emit_copied: the copies returned */
	int64		ntuples;
	ThreadPool *pool;
	MemoryContext cxt;
	int64		block_tuples;
	Size		tuple_share;	/* bytes of a block per tuple, MAXALIGNed */
	int64		task_tuples;
	int64		next_first;		/* the first position not yet queued */
	int			current;		/* the block being returned */
	EmitBlock	blocks[EMIT_COPY_BLOCKS];
	MemoryContextCallback forget;
};

/* The bytes of a block a tuple gets: its mean size and a quarter more. */
static Size
tuple_share(SortBatch *batch)
{
	double		mean = batch_tuple_bytes(batch);

	return MAXALIGN((Size) (mean * 1.25) + 1);
}

/* The tuples of a block, each given share bytes. */
static int64
block_tuples(Size share)
{
	int64		n = EMIT_COPY_BLOCK_BYTES / share;

	return Max(Min(n, EMIT_COPY_BLOCK_MAX_TUPLES), EMIT_COPY_BLOCK_MIN_TUPLES);
}

/*
 * The memory a copy of batch's result would take, or 0 where it would not
 * pay: a result that mostly fits the caches, tuples so wide that a read of
 * one is mostly sequential anyway (and a ring of them would be large), a
 * batch without pool threads.
 */
Size
emit_copy_bytes(SortBatch *batch)
{
	Size		share;
	int64		n;

	if (!gpusort_emit_copy || batch->pool == NULL ||
		threadpool_count(batch->pool) == 0 || batch->sorted == NULL ||
		batch->ntuples == 0)
		return 0;
	share = tuple_share(batch);
	n = block_tuples(share);
	if ((int64) batch->ntuples < n * EMIT_COPY_MIN_BLOCKS ||
		share > EMIT_COPY_BLOCK_BYTES / EMIT_COPY_BLOCK_MIN_TUPLES)
		return 0;
	return EMIT_COPY_BLOCKS * (Size) n * (share + sizeof(MinimalTuple)) +
		EMIT_COPY_BLOCKS * sizeof(TaskGroup) + sizeof(EmitCopy);
}

/* A task: copy tuples [from, to) of a block into its share of the block. */
static bool
copy_tuples(void *state, void *arg, size_t from, size_t to)
{
	EmitBlock  *block = arg;
	EmitCopy   *copy = block->copy;
	MinimalTuple *src = copy->sorted + block->first;
	char	   *dst = block->data + from * copy->tuple_share;
	char	   *end = block->data + to * copy->tuple_share;
	int64		copied = 0;

	for (size_t i = from; i < to; i++)
	{
		MinimalTuple tuple = src[i];
		Size		len = tuple->t_len;

		if (i + EMIT_COPY_PREFETCH < to)
			gs_prefetch(src[i + EMIT_COPY_PREFETCH]);
		if (MAXALIGN(len) <= (Size) (end - dst))
		{
			memcpy(dst, tuple, len);
			block->tuples[i] = (MinimalTuple) dst;
			dst += MAXALIGN(len);
			copied++;
		}
		else
			block->tuples[i] = tuple;
	}
	__atomic_fetch_add(&block->copied, copied, __ATOMIC_RELAXED);
	return true;
}

/* Queue block's copies of the next positions not yet queued. */
static void
queue_block(EmitCopy *copy, EmitBlock *block)
{
	block->first = copy->next_first;
	block->count = Min(copy->block_tuples, copy->ntuples - copy->next_first);
	block->copied = 0;
	copy->next_first += block->count;
	for (int64 from = 0; from < block->count; from += copy->task_tuples)
		threadpool_submit(copy->pool, block->group, copy_tuples, block,
						  from, Min(from + copy->task_tuples, block->count));
}

/*
 * Wait for block's copies, running queued ones meanwhile; its copies then
 * count as returned (the caller reads them all, or ends the copy).
 */
static void
wait_block(EmitCopy *copy, EmitBlock *block)
{
	threadpool_wait(copy->pool, block->group);
	copy->stats->emit_copied += block->copied;
}

/* The ring's memory goes: no copy may run on (also at an error). */
static void
forget_copies(void *arg)
{
	EmitCopy   *copy = arg;

	for (int b = 0; b < EMIT_COPY_BLOCKS; b++)
		threadpool_forget_group(copy->pool, copy->blocks[b].group);
}

/*
 * Start copying batch's result in order.  The caller has found that a copy
 * pays (emit_copy_bytes is not 0) and holds its memory in the budget.
 */
EmitCopy *
emit_copy_start(SortBatch *batch)
{
	int			threads = threadpool_count(batch->pool);
	MemoryContext cxt;
	EmitCopy   *copy;

	Assert(emit_copy_bytes(batch) > 0);
	cxt = AllocSetContextCreate(batch->threadcxt, "GpuSort emit copy",
								ALLOCSET_DEFAULT_SIZES);
	copy = MemoryContextAllocZero(cxt, sizeof(EmitCopy));
	copy->sorted = batch->sorted;
	copy->stats = batch->sh->stats;
	copy->ntuples = (int64) batch->ntuples;
	copy->pool = batch->pool;
	copy->cxt = cxt;
	copy->tuple_share = tuple_share(batch);
	copy->block_tuples = block_tuples(copy->tuple_share);
	copy->task_tuples = Max((copy->block_tuples + threads) / (threads + 1),
							EMIT_COPY_TASK_TUPLES);
	for (int b = 0; b < EMIT_COPY_BLOCKS; b++)
	{
		EmitBlock  *block = &copy->blocks[b];

		block->copy = copy;
		block->tuples = MemoryContextAlloc(cxt, sizeof(MinimalTuple) * copy->block_tuples);
		block->data = MemoryContextAllocHuge(cxt, copy->tuple_share * copy->block_tuples);
		block->group = MemoryContextAllocZero(cxt, sizeof(TaskGroup));
	}
	copy->forget.func = forget_copies;
	copy->forget.arg = copy;
	MemoryContextRegisterResetCallback(cxt, &copy->forget);
	for (int b = 0; b < EMIT_COPY_BLOCKS; b++)
		queue_block(copy, &copy->blocks[b]);
	copy->current = 0;
	wait_block(copy, &copy->blocks[0]);
	return copy;
}

/*
 * The tuple at sorted position pos, which is the one after the last asked
 * for (or 0, the first time): forward scans only.
 */
MinimalTuple
emit_copy_next(EmitCopy *copy, int64 pos)
{
	EmitBlock  *block = &copy->blocks[copy->current];

	if (pos >= block->first + block->count)
	{
		/* the caller is done with the block's last tuple: refill it */
		queue_block(copy, block);
		copy->current = (copy->current + 1) % EMIT_COPY_BLOCKS;
		block = &copy->blocks[copy->current];
		wait_block(copy, block);
		/* the last block: no copy is left, the threads have done */
		if (block->first + block->count >= copy->ntuples)
			threadpool_idle(copy->pool);
	}
	Assert(pos >= block->first && pos < block->first + block->count);
	return block->tuples[pos - block->first];
}

/* Stop copying and free the ring; the batch's result stays as it was. */
void
emit_copy_end(EmitCopy *copy)
{
	ThreadPool *pool = copy->pool;

	MemoryContextDelete(copy->cxt);
	/* the rows now go out without the pool threads */
	threadpool_idle(pool);
}

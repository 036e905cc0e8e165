/*-------------------------------------------------------------------------
 *
 * batch_load.c
 *	  The load stage of a batch (batch.h): the arena that holds its
 *	  tuples, within the batch's limit (batch_memory, batch.c).
 *
 * Each child tuple is copied once, as a MinimalTuple, into blocks that
 * grow from 256 kB to 16 MB (hostmem.c keeps large blocks mapped between
 * sorts); the record index of a tuple is its position in load order.  The
 * batch's limit, set by sort_memory.c from what the budgets granted
 * it, is checked where the memory is taken: batch_store()
 * (a slot's tuple) and batch_store_tuple() (a MinimalTuple) refuse a
 * tuple whose block would take the batch past it, counting everything the
 * batch will need to sort what it holds (batch_memory), so that the sort
 * that follows stays within the limit too.
 * A refused tuple ends the batch: sort.c sorts it into a run and stores
 * the tuple again in the next batch.
 *
 * Where a session sorts for the first time, the arena's blocks are fresh
 * memory, which the backend would fault in a huge page at a time as it
 * copies tuples into them: on a virtual machine, the largest cost of that
 * first sort (hostmem.c says why).  So from 2 MB up the arena takes its
 * next block while the backend fills the current one, and the pool threads
 * fault it in meanwhile (arena_take_ahead), on a CPU that the load leaves
 * idle; batch_end_load gives back a block the input did not reach.  The
 * tuple pointers take at once the room the batch expects (hostmem_reserve),
 * so that a warm sort finds them in the cache whole.
 *
 * A parallel load hands over its workers' tuples a block of shared memory
 * (a TupleBlock) at a time: batch_store_blocks() takes the arena space and
 * tuple slots of whole blocks in the backend, then the pool threads copy the
 * tuples, the backend helping, so that the leader, which moves every row
 * of the load, keeps pace with the workers that scan them.  Nothing that
 * can raise an error runs between handing the copies to the threads and
 * their end, and the wait for them stops the threads before it lets a
 * cancel through (threadpool.c), so no thread reads a block after its
 * shared memory may have gone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"
#include "utils/memutils.h"

#include "batch/batch.h"
#include "support/faults.h"
#include "support/hostmem.h"

#define ARENA_MAX_BLOCK		((Size) 16 * 1024 * 1024)

/* the smallest block taken ahead: huge pages, which fault in slowest */
#define ARENA_AHEAD_MIN_BLOCK	HOSTMEM_HUGE_PAGE

/* tuples of a block one copying task takes */
#define BLOCK_COPY_TUPLES	4096

/*
 * The size of the arena's next block, for a tuple of len bytes: blocks
 * double up to ARENA_MAX_BLOCK, but one is no larger than the rest of the
 * expected input needs, at the bytes per tuple so far and an eighth more,
 * beyond what the current block still holds.  The last block of a batch
 * would otherwise leave up to ARENA_MAX_BLOCK unused, which the batch's
 * memory counts: enough, just above what PostgreSQL's Sort needs to sort in
 * memory, to make a batch spill where Sort does not.
 */
static Size
arena_block_size(SortBatch *batch, Size len)
{
	Size		block = Max(batch->next_block_size, len);
	double		rest;

	if (batch->ntuples == 0 || batch->expected_records <= batch->ntuples)
		return block;
	rest = (double) (batch->expected_records - batch->ntuples) *
		batch_tuple_bytes(batch) * 1.125 - (double) batch->block_left;
	if (rest < (double) block)
		block = Max(MAXALIGN((Size) Max(rest, 0.0)), Max(len, ARENA_MIN_BLOCK));
	return block;
}

/* a task: fault in bytes [from, to) of the arena's block taken ahead */
static bool
populate_ahead(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;

	if (!key_build_stopped(ctx))
		(void) hostmem_populate((char *) arg + from, to - from);
	return true;
}

/*
 * Take the arena's next block now, while the backend fills the current one,
 * and have the pool threads fault it in meanwhile, where it is fresh memory
 * (a session's first sort: nothing cached) and the input is expected to
 * need it.  The block counts as the arena's from now on, so only a batch
 * far below its limit takes it, where it changes no decision that the
 * memory held makes (the limit, the early spill of sort.c), up to when it
 * would have been taken anyway.
 */
static void
arena_take_ahead(SortBatch *batch)
{
	Size		block = arena_block_size(batch, 0);
	double		per_tuple;
	size_t		fill;
	char	   *ahead;

	if (batch->ahead_block != NULL || block < ARENA_AHEAD_MIN_BLOCK ||
		batch->ntuples == 0)
		return;

	/*
	 * Only a batch that has its pool threads, or that will start them (to
	 * encode or sort this many records), lends them this work: a smaller
	 * sort does not start threads for it.
	 */
	if (batch->pool == NULL &&
		(batch->expected_records < BATCH_THREADS_MIN_RECORDS ||
		 batch_threads(batch) == 0))
		return;
	if (batch->pool != NULL && threadpool_count(batch->pool) == 0)
		return;
	per_tuple = batch_tuple_bytes(batch);
	if (((double) batch->expected_records - (double) batch->ntuples) *
		per_tuple <= (double) batch->block_left)
		return;
	fill = batch->ntuples + (size_t) (batch->block_left / Max(per_tuple, 1.0));
	if (batch_memory(batch, fill, block) > batch->limit / 2)
		return;
	ahead = hostmem_alloc(batch->cxt, block, HOSTMEM_HUGE);
	if (ahead == NULL)
		return;
	batch->ahead_block = ahead;
	batch->ahead_size = block;
	batch->arena_bytes += block;
	if (!hostmem_fresh(ahead))
		return;

	batch_start_threads(batch);
	if (batch->ahead_tasks == NULL)
		batch->ahead_tasks = threadpool_group_create(batch->pool);
	for (Size from = 0; from < block; from += HOSTMEM_HUGE_PAGE)
		threadpool_submit(batch->pool, batch->ahead_tasks, populate_ahead, ahead,
						  from, Min(block, from + HOSTMEM_HUGE_PAGE));
}

/*
 * The batch's load is over (its input ended, or it is full): the block
 * taken ahead, if unused, goes, and its faulting stops.
 */
void
batch_end_load(SortBatch *batch)
{
	if (batch->ahead_tasks)
		threadpool_forget_group(batch->pool, batch->ahead_tasks);
	if (batch->ahead_block)
	{
		hostmem_free(batch->ahead_block, batch->ahead_size);
		batch->arena_bytes -= batch->ahead_size;
		batch->ahead_block = NULL;
		batch->ahead_size = 0;
	}
}

static void *
arena_alloc(SortBatch *batch, Size len)
{
	void	   *p;

	len = MAXALIGN(len);
	if (len > batch->block_left)
	{
		Size		block = arena_block_size(batch, len);
		bool		ahead = (batch->ahead_block != NULL && batch->ahead_size >= len);

		/*
		 * The limit is enforced where the memory is taken, against what the
		 * batch will need (batch_memory) and what it holds already (arrays
		 * reserved ahead of its records); an empty batch takes its first
		 * block whatever the limit, so that every batch holds at least one
		 * tuple.  A block taken ahead counts already.
		 */
		if (ahead)
			block = 0;
		if (batch->ntuples > 0 &&
			(batch_memory(batch, batch->ntuples + 1, block) > batch->limit ||
			 batch_held(batch) + block > batch->limit ||
			 gpusort_fault_arena_oom(batch->arena_bytes)))
			return NULL;
		if (ahead)
		{
			batch->block_free = batch->ahead_block;
			block = batch->ahead_size;
			batch->ahead_block = NULL;
			batch->ahead_size = 0;
		}
		else
		{
			batch->block_free = hostmem_alloc(batch->cxt, block, HOSTMEM_HUGE);
			if (batch->block_free == NULL)
			{
				batch->block_left = 0;
				if (batch->ntuples == 0)
					ereport(ERROR,
							(errcode(ERRCODE_OUT_OF_MEMORY),
							 errmsg("out of memory"),
							 errdetail("Failed on request of size %zu in GpuSort.", block)));
				return NULL;
			}
			batch->arena_bytes += block;
		}
		batch->block_left = block;
		batch->next_block_size = Min(batch->next_block_size * 2, ARENA_MAX_BLOCK);
		arena_take_ahead(batch);
	}
	p = batch->block_free;
	batch->block_free += len;
	batch->block_left -= len;
	return p;
}

/* Room for one more tuple pointer; false if memory ran out. */
static bool
grow_tuple_array(SortBatch *batch)
{
	size_t		newmax = Max(batch->maxtuples * 2, 1024);
	size_t		room = newmax;
	MinimalTuple *newtuples = NULL;

	/* a large array grows where it lies, without a copy (hostmem_grow) */
	if (batch->tuples)
		newtuples = hostmem_grow(batch->tuples, batch->maxtuples * sizeof(MinimalTuple),
								 newmax * sizeof(MinimalTuple));
	if (newtuples)
	{
		batch->tuples = newtuples;
		batch->maxtuples = newmax;
		return true;
	}

	/*
	 * An array large enough for a block of its own has room for the records
	 * that the batch expects (hostmem_reserve)
	 */
	if (newmax * sizeof(MinimalTuple) >= HOSTMEM_MIN_REQUEST)
		room = Max(newmax, Min(batch->expected_records, BATCH_MAX_RECORDS));
	newtuples = hostmem_reserve(batch->cxt, newmax * sizeof(MinimalTuple),
								room * sizeof(MinimalTuple), HOSTMEM_HUGE);
	if (newtuples == NULL)
		return false;
	if (batch->tuples)
	{
		memcpy(newtuples, batch->tuples, batch->ntuples * sizeof(MinimalTuple));
		hostmem_free(batch->tuples, batch->maxtuples * sizeof(MinimalTuple));
	}
	batch->tuples = newtuples;
	batch->maxtuples = newmax;
	return true;
}

static void *
arena_space(void *arg, Size len)
{
	return arena_alloc((SortBatch *) arg, len);
}

/*
 * Room for n records in all; false if the batch is full (n is past its
 * record count, or memory ran out).
 */
static bool
batch_has_room_for(SortBatch *batch, size_t n)
{
	if (n > BATCH_MAX_RECORDS)
		return false;
	while (batch->maxtuples < n)
		if (!grow_tuple_array(batch))
			return false;
	return true;
}

/* Room for one more record; false if the batch is full. */
static bool
batch_has_room(SortBatch *batch)
{
	return batch_has_room_for(batch, batch->ntuples + 1);
}

/*
 * Copy the slot's tuple into the arena as a MinimalTuple, once.  False if
 * the batch is full (its limit, its record count, or memory): the caller
 * sorts the batch and stores the tuple in the next one.
 */
bool
batch_store(SortBatch *batch, TupleTableSlot *slot)
{
	MinimalTuple copy;

	if (!batch_has_room(batch))
		return false;
	copy = gpusort_copy_slot_tuple(slot, arena_space, batch);
	if (copy == NULL)
		return false;
	batch->tuples[batch->ntuples++] = copy;
	return true;
}

/*
 * Copy a MinimalTuple into the arena, once; false if the batch is full, as
 * for batch_store().
 */
bool
batch_store_tuple(SortBatch *batch, MinimalTuple tuple)
{
	MinimalTuple copy;

	if (!batch_has_room(batch))
		return false;
	copy = arena_alloc(batch, tuple->t_len);
	if (copy == NULL)
		return false;
	memcpy(copy, tuple, tuple->t_len);
	batch->tuples[batch->ntuples++] = copy;
	return true;
}

/* a copying task's view of one block */
typedef struct BlockCopy
{
	TupleBlock	block;
	char	   *dst;			/* the block's space in the arena */
	MinimalTuple *tuples;		/* its tuples' slots in the tuple array */
} BlockCopy;

/*
 * a copying task: tuples [from, to) of a block, into the arena, as the one
 * span of the block they fill (TupleBlock), in one memcpy
 */
static bool
copy_block_tuples(void *state, void *arg, size_t from, size_t to)
{
	BlockCopy  *bc = (BlockCopy *) arg;
	const TupleBlock *block = &bc->block;
	uint32		span_low = block->offsets[to - 1];
	uint32		span_high = (from == 0) ? block->high : block->offsets[from - 1];

	memcpy(bc->dst + (span_low - block->low), block->base + span_low,
		   span_high - span_low);
	for (size_t i = from; i < to; i++)
		bc->tuples[i] = (MinimalTuple) (bc->dst + (block->offsets[i] - block->low));
	return true;
}

/*
 * Copy blocks of tuples into the arena, in the pool threads.  Returns how
 * many blocks were stored, from the first: a block the batch has no room
 * for (its limit, its record count, or memory) stops it, and the caller
 * stores the rest one tuple at a time, which ends the batch where it must.
 */
int
batch_store_blocks(SortBatch *batch, const TupleBlock *blocks, int nblocks)
{
	BlockCopy  *copies;
	size_t		ntuples = batch->ntuples;
	int			nstored;

	batch_start_threads(batch);
	if (batch->copy_tasks == NULL)
	{
		batch->copy_tasks = threadpool_group_create(batch->pool);
		batch->copy_tasks->always_run = true;
	}
	copies = MemoryContextAlloc(batch->cxt, sizeof(BlockCopy) * Max(nblocks, 1));

	/* 1: room for each block, in the backend, where errors may be raised */
	for (nstored = 0; nstored < nblocks; nstored++)
	{
		const TupleBlock *block = &blocks[nstored];
		size_t		after = ntuples + block->ntuples;
		Size		bytes = block->high - block->low;

		if (batch_memory(batch, after, MAXALIGN(bytes)) > batch->limit ||
			!batch_has_room_for(batch, after))
			break;
		copies[nstored].dst = arena_alloc(batch, bytes);
		if (copies[nstored].dst == NULL)
			break;
		copies[nstored].block = *block;
		ntuples = after;
	}

	/* 2: the copies, in the threads; the tuple array moves no more */
	ntuples = batch->ntuples;
	for (int b = 0; b < nstored; b++)
	{
		BlockCopy  *bc = &copies[b];

		bc->tuples = batch->tuples + ntuples;
		for (size_t from = 0; from < bc->block.ntuples; from += BLOCK_COPY_TUPLES)
			threadpool_submit(batch->pool, batch->copy_tasks, copy_block_tuples, bc,
							  from, Min(from + BLOCK_COPY_TUPLES, bc->block.ntuples));
		ntuples += bc->block.ntuples;
	}
	threadpool_wait(batch->pool, batch->copy_tasks);
	batch->ntuples = ntuples;
	if (nstored > 0)
		batch->loaded_by_blocks = true;
	pfree(copies);
	return nstored;
}

/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  The batch of gpusort's sort module (batch.h): its lifecycle (init,
 *	  reset, move, destroy), the measure of its memory against its limit,
 *	  its pool threads with their key builders, and giving its keys up.
 *
 * Every stage of the batch (batch_load.c, batch_encode.c, batch_sort.c,
 * batch_emit.c) works on the SortBatch that this file makes and resets,
 * and calls into it; this file calls none of them, only layers below:
 * the engines (it ends the batch's engine chain with the batch, and counts
 * the CPU engine's workspace), host memory and the thread pool.  A
 * batch's memory is one memory context, reset when the batch becomes a
 * run; the batch's limit, set by the sort module's memory policy
 * (sort_memory.c) from what the budgets granted it, is checked by the load
 * against batch_memory(), which counts everything the batch will need to
 * sort what it holds (tuple pointers, keys, the order, the CPU engine's
 * workspace, the comparator pass's scratch), so that the sort that follows
 * stays within the limit too.  This file measures; the policy decides what
 * a batch may hold and when it spills.
 *
 * What the others call:
 *	- the lifecycle, for sort.c: batch_init, batch_reset, batch_move (a
 *	  batch whose run is written behind), batch_destroy;
 *	- memory: batch_memory, batch_held, batch_tuple_bytes, batch_alloc,
 *	  batch_inputs_chunk_bytes, and batch_keys_fixed_bytes (what its keys
 *	  take whatever its records, for the memory policy);
 *	- the pool threads: batch_threads, batch_start_threads (for the
 *	  stages, the run writer and the window merge too);
 *	- batch_give_up_keys, which hands the batch to the comparators, and
 *	  batch_init_compare, the comparators' view of its tuples (for
 *	  batch_sort.c and the runs' merges).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "batch/batch.h"
#include "resolve/compare.h"
#include "resolve/resolve.h"
#include "support/hostmem.h"

/* A new engine chain, knowing whether the GPU failed in this sort. */
static void
batch_init_chain(SortBatch *batch, bool gpu_failed)
{
	batch->chain.engine = NULL;
	batch->chain.on_gpu = false;
	batch->chain.gpu_failed = gpu_failed;
	batch->chain.fallback = &batch->sh->stats->fallback;
	batch->chain.fallback_cxt = batch->sh->stats_cxt;
}

void
batch_init(SortBatch *batch, SortBatchShared *sh, MemoryContext parent)
{
	memset(batch, 0, sizeof(SortBatch));
	batch->sh = sh;
	/*
	 * Small blocks: the batch's arrays past a kilobyte get blocks of their
	 * own size, so that what the context holds is what the batch counts
	 * (batch_memory), not blocks doubled ahead of it, which at 64 kB took
	 * a sixth of the budget
	 */
	batch->cxt = AllocSetContextCreate(parent, "GpuSort batch",
									   ALLOCSET_SMALL_SIZES);
	batch_init_chain(batch, false);
	batch->next_block_size = ARENA_MIN_BLOCK;
}

/*
 * Free everything the batch holds (its memory, the engine, the pool
 * threads) and make it ready for the next run.  The GPU's failure stays
 * known: later batches of the sort do not try it again.  Keys given up
 * are tried again: what failed (memory, a value) may not recur.
 */
void
batch_reset(SortBatch *batch)
{
	SortBatchShared *sh = batch->sh;
	MemoryContext cxt = batch->cxt;
	Size		limit = batch->limit;
	bool		gpu_failed = batch->chain.gpu_failed;

	engine_chain_end(&batch->chain);
	MemoryContextReset(cxt);	/* stops the pool threads first */
	memset(batch, 0, sizeof(SortBatch));
	batch->sh = sh;
	batch->cxt = cxt;
	batch->limit = limit;
	batch_init_chain(batch, gpu_failed);
	batch->next_block_size = ARENA_MIN_BLOCK;
}

/*
 * Move a sorted batch to `to`, where its run is written behind the backend
 * (sort.c), and make the batch an empty one in memory of its own, as
 * batch_reset does.  The engine ends first: the sorted tuples and keys lie
 * in the batch's own memory.
 */
void
batch_move(SortBatch *batch, SortBatch *to)
{
	MemoryContext parent = MemoryContextGetParent(batch->cxt);
	SortBatchShared *sh = batch->sh;
	Size		limit = batch->limit;
	bool		gpu_failed = batch->chain.gpu_failed;

	engine_chain_end(&batch->chain);
	*to = *batch;
	batch_init(batch, sh, parent);
	batch->limit = limit;
	batch->chain.gpu_failed = gpu_failed;
}

void
batch_destroy(SortBatch *batch)
{
	engine_chain_end(&batch->chain);
	if (batch->cxt)
		MemoryContextDelete(batch->cxt);
	batch->cxt = NULL;
}

/* bytes of one chunk of KeyInputs: datums, NULL flags, INPUTS_* bytes */
Size
batch_inputs_chunk_bytes(SortBatch *batch)
{
	return GPUSORT_CHUNK_RECORDS *
		(batch->inputs.ncols * (sizeof(Datum) + sizeof(bool)) + sizeof(uint8));
}

/* bytes of the KeyInputs chunks that n records need and are not yet taken */
static Size
unallocated_inputs_bytes(SortBatch *batch, size_t n)
{
	size_t		chunks = (n + GPUSORT_CHUNK_RECORDS - 1) / GPUSORT_CHUNK_RECORDS;

	if (!batch->sh->layout.generic || chunks <= batch->inputs.nchunks)
		return 0;
	return (chunks - batch->inputs.nchunks) * batch_inputs_chunk_bytes(batch);
}

/*
 * Bytes that a batch's keys take whatever its records: the engine takes its
 * buffer of keys a chunk of GPUSORT_CHUNK_RECORDS records at a time, and a
 * generic layout a chunk of inputs (datums, NULL flags, states) at a time,
 * and an array of MAX_CHUNKS entries for each of its five per-chunk tables
 * (batch_start_keys).  The first chunk of each, and the arrays: at a text
 * key's four words, about 6.5 MB, taken by the first record.
 */
Size
batch_keys_fixed_bytes(SortBatchShared *sh)
{
	int			words = Max(sh->layout.key_words, 1);
	Size		bytes = GPUSORT_CHUNK_RECORDS * words * sizeof(uint64);

	if (sh->layout.generic)
		bytes += GPUSORT_CHUNK_RECORDS *
			(sh->layout.full_cols * (sizeof(Datum) + sizeof(bool)) + sizeof(uint8)) +
			MAX_CHUNKS * (4 * sizeof(void *) + sizeof(TaskGroup));
	return bytes;
}

/*
 * Bytes the batch would hold with n records and `more` bytes of arena
 * beyond what it has: tuples, keys and the sort's workspace.  The keys
 * count in whole chunks, as the engine takes them, and a generic layout's
 * per-chunk arrays too: what the batch's memory holds, EXPLAIN's Memory
 * Used, is then what its limit bounds.
 */
Size
batch_memory(SortBatch *batch, size_t n, Size more)
{
	int			words = Max(batch->sh->layout.key_words, 1);
	size_t		key_chunks = (n + GPUSORT_CHUNK_RECORDS - 1) / GPUSORT_CHUNK_RECORDS;
	Size		bytes;

	/*
	 * Without keys: the comparator sort's items (resolve_sort_tuples), 16
	 * bytes, which take the tuple pointers' place where the pointers' array
	 * is large enough to grow where it lies, and are made beside it
	 * otherwise.  In its place they take the array's memory at the least:
	 * it is reserved for more records than a batch may come to hold.
	 */
	if (batch->comparator_sort)
	{
		Size		pointers = Max(batch->maxtuples, n) * sizeof(MinimalTuple);
		Size		items = n * RESOLVE_ITEM_BYTES;

		return batch->arena_bytes + more + batch->inputs_bytes +
			(pointers < HOSTMEM_MIN_REQUEST ? pointers + items : Max(pointers, items));
	}

	bytes = batch->arena_bytes + more + n * sizeof(MinimalTuple) +
		batch->inputs_bytes + unallocated_inputs_bytes(batch, n) +
		key_chunks * GPUSORT_CHUNK_RECORDS * words * sizeof(uint64) +	/* keys */
		n * (sizeof(uint32) + sizeof(MinimalTuple)) +	/* order */
		n * words * sizeof(uint64); /* sorted keys, for a merge */

	if (batch->sh->layout.generic)
		bytes += MAX_CHUNKS * (4 * sizeof(void *) + sizeof(TaskGroup));

	/* the CPU engine's radix sort needs a workspace; the GPU sorts on the GPU */
	if (!batch->chain.on_gpu)
		bytes += gs_cpu_radix_workspace(n, words);

	/*
	 * Inexact keys: the comparator pass's scratch is freed before the sorted
	 * pointers and keys counted above are allocated (batch_sort.c), so only
	 * what it takes beyond them counts.
	 */
	if (!batch->sh->layout.exact)
	{
		Size		scratch = n * RESOLVE_BYTES(batch->sh->layout.ncols);
		Size		gathered = n * sizeof(MinimalTuple) + n * words * sizeof(uint64);

		if (scratch > gathered)
			bytes += scratch - gathered;
	}
	return bytes;
}

/*
 * The arena's bytes a tuple has taken so far: its blocks less their free
 * room, the block taken ahead too, over the tuples.  The batch holds one at
 * least.
 */
double
batch_tuple_bytes(SortBatch *batch)
{
	Size		room = batch->block_left + batch->ahead_size;

	Assert(batch->ntuples > 0);
	return (double) (batch->arena_bytes - room) / (double) batch->ntuples;
}

/* What the batch's memory holds now, arena and engine included. */
Size
batch_held(SortBatch *batch)
{
	return MemoryContextMemAllocated(batch->cxt, true) + hostmem_owned(batch->cxt);
}

/* size bytes of the batch's memory, like palloc: out of memory is an ERROR */
void *
batch_alloc(SortBatch *batch, Size size)
{
	void	   *p = hostmem_alloc(batch->cxt, size, 0);

	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed on request of size %zu in GpuSort.", size)));
	return p;
}

/*
 * How many pool threads the batch is to have, decided once (threadpool_wanted
 * follows the sorts running on the server), so that the batch's choice of
 * encoding keys as it loads or in the threads at the end stays one choice.
 */
int
batch_threads(SortBatch *batch)
{
	if (!batch->threads_decided)
	{
		batch->threads = threadpool_wanted();
		batch->threads_decided = true;
	}
	return batch->threads;
}

/* why a pool thread's task failed: its key builder's error */
static const char *
key_builder_failure(void *state)
{
	return key_build_error((KeyBuildContext *) state);
}

static void
key_builder_release(void *state)
{
	key_build_context_free((KeyBuildContext *) state);
}

/*
 * The pool threads, started the first time a batch wants them.  Each
 * thread, and the backend, carries a key builder of the sort's layout for
 * the tasks that build keys (every task gets it: ThreadStates), which
 * watches the pool's stop flag.  Errors if a builder cannot be made.
 */
void
batch_start_threads(SortBatch *batch)
{
	int			nthreads;
	KeyBuildContext **builders;
	ThreadStates states;
	char		errbuf[256];

	if (batch->pool)
		return;
	batch->threadcxt = AllocSetContextCreate(batch->cxt, "GpuSort pool threads",
										  ALLOCSET_SMALL_SIZES);
	nthreads = batch_threads(batch);
	builders = MemoryContextAlloc(batch->threadcxt,
								  (nthreads + 1) * sizeof(KeyBuildContext *));
	for (int i = 0; i <= nthreads; i++)
	{
		builders[i] = key_build_context_create(&batch->sh->layout, errbuf,
											   sizeof(errbuf));
		if (builders[i] == NULL)
		{
			for (int j = 0; j < i; j++)
				key_build_context_free(builders[j]);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("gpusort: %s", errbuf)));
		}
	}
	states.states = (void **) builders;
	states.failure = key_builder_failure;
	states.release = key_builder_release;
	batch->pool = threadpool_start(nthreads, &states, batch->threadcxt);
	for (int i = 0; i <= nthreads; i++)
		key_build_set_stop_flag(builders[i], threadpool_stop_flag(batch->pool));
	batch->sh->stats->threads = threadpool_count(batch->pool);
}

/*
 * Keys cannot order this batch: stop encoding, end the engine and free its
 * keys, and let the comparators order it (batch_sort).  The tuples stay
 * where they are.
 */
void
batch_give_up_keys(SortBatch *batch, const char *why)
{
	SortEngine *engine = batch->chain.engine;

	engine_add_fallback_reason(batch->chain.fallback, batch->chain.fallback_cxt,
							   why);
	if (batch->pool)
		threadpool_wait_all(batch->pool);
	engine_chain_end(&batch->chain);
	if (engine)
		engine_local_free(engine);
	batch->comparator_sort = true;
}

/* Resolve's view of the sort, over the given tuples. */
void
batch_init_compare(SortBatchShared *sh, CompareContext *res, MinimalTuple *tuples)
{
	res->layout = &sh->layout;
	res->ssup = sh->ssup;
	res->abbrev = sh->abbrev;
	res->slot = sh->work_slot;
	res->slot2 = sh->work_slot2;
	res->tuples = tuples;
	res->inputs = NULL;
}

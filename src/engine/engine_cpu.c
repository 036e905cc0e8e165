/*-------------------------------------------------------------------------
 *
 * engine_cpu.c
 *	  The CPU sort engine: key chunks in ordinary memory, sorted by the
 *	  radix sort of cpu_radix.c, in the sort's pool threads where the caller
 *	  gives it them (SortEngine.threads).
 *
 * It serves when gpusort.engine = cpu, when no GPU is usable, and as the
 * fallback when the GPU engine fails: the engine chain starts it
 * (cpu_engine_begin).  The GPU engine keeps its keys in the same chunk
 * buffers (engine_local_chunk) and sorts them here when it falls back
 * (engine_cpu_sort_keys); a batch that gives its keys up frees them
 * (engine_local_free).  All its memory belongs to the batch's memory
 * context (palloc'd, or large blocks of hostmem.c), so the sort's memory
 * measure sees it and an error or cancel frees it with the query.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "engine/cpu_radix.h"
#include "engine/engine.h"
#include "support/faults.h"
#include "support/hostmem.h"
#include "support/threadpool.h"

typedef struct CpuEngine
{
	SortEngine	base;
} CpuEngine;

/* room in engine->keys.chunks for chunk chunkno */
static void
engine_reserve_chunk_slot(SortEngine *engine, size_t chunkno)
{
	if (chunkno < engine->nchunks_alloc)
		return;
	if (engine->nchunks_alloc == 0)
	{
		engine->nchunks_alloc = Max(16, chunkno + 1);
		engine->keys.chunks = MemoryContextAllocZero(engine->mcxt,
													 sizeof(uint64 *) * engine->nchunks_alloc);
	}
	else
	{
		size_t		newlen = Max(engine->nchunks_alloc * 2, chunkno + 1);

		engine->keys.chunks = repalloc(engine->keys.chunks, sizeof(uint64 *) * newlen);
		memset(engine->keys.chunks + engine->nchunks_alloc, 0,
			   sizeof(uint64 *) * (newlen - engine->nchunks_alloc));
		engine->nchunks_alloc = newlen;
	}
}

/*
 * A chunk buffer in the batch's memory.  The GPU engine keeps its keys in
 * the same kind of buffers (the service copies them), so that the CPU
 * engine's sort can take over its keys as they are.
 */
uint64 *
engine_local_chunk(SortEngine *engine, size_t chunkno, char **why)
{
	Size		bytes = GPUSORT_CHUNK_RECORDS * engine->keys.key_words * sizeof(uint64);

	engine_reserve_chunk_slot(engine, chunkno);
	if (engine->keys.chunks[chunkno] == NULL)
	{
		if (!gpusort_fault_cpu_alloc(chunkno))
			engine->keys.chunks[chunkno] = hostmem_alloc(engine->mcxt, bytes, 0);
		if (engine->keys.chunks[chunkno] == NULL)
		{
			*why = pstrdup("out of memory for the keys");
			return NULL;
		}
	}
	return engine->keys.chunks[chunkno];
}

/*
 * Free an engine's chunk buffers, once nothing reads its keys: a batch that
 * gave its keys up (batch_give_up_keys) no longer holds them.
 */
void
engine_local_free(SortEngine *engine)
{
	Size		bytes = GPUSORT_CHUNK_RECORDS * engine->keys.key_words * sizeof(uint64);

	for (size_t c = 0; c < engine->nchunks_alloc; c++)
	{
		if (engine->keys.chunks[c] != NULL)
			hostmem_free(engine->keys.chunks[c], bytes);
		engine->keys.chunks[c] = NULL;
	}
}

static bool
cpu_engine_submit(SortEngine *engine, size_t chunkno, size_t nrecords, char **why)
{
	return true;				/* nothing to overlap on the CPU */
}

/* the radix sort's progress hook: a long sort can be cancelled */
static void
cpu_radix_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

/* one piece of a radix sort's task, run as a pool-thread task */
typedef struct RadixTaskCall
{
	GsRadixTask task;
	void	   *task_arg;
} RadixTaskCall;

static bool
run_radix_task(void *state, void *arg, size_t from, size_t to)
{
	RadixTaskCall *call = (RadixTaskCall *) arg;

	call->task(call->task_arg, from, to);
	return true;
}

/* GsRadixThreads.run over the pool threads: they wait with cancel checked */
static void
run_in_threads(void *pool, GsRadixTask task, void *task_arg,
				   size_t ntasks, size_t grain)
{
	RadixTaskCall call = {task, task_arg};

	threadpool_parallel_for((ThreadPool *) pool, run_radix_task, &call,
							ntasks, grain);
}

/*
 * Sort an engine's n records (its keys in engine_local_chunk buffers) with
 * the radix sort, in the engine's pool threads if it has them; the
 * permutation is allocated in the engine's memory.
 */
bool
engine_cpu_sort_keys(SortEngine *engine, size_t n, uint32 **perm, char **why)
{
	Size		workspace_bytes = gs_cpu_radix_workspace(n, engine->keys.key_words);
	void	   *workspace;
	uint32	   *result;
	int			passes;
	GsRadixThreads threads;
	GsRadixThreads *use_threads = NULL;

	/*
	 * The radix passes scatter records over 256 places of the workspace at
	 * once, which huge pages keep within the TLB; the permutation is written
	 * and read in order.
	 */
	result = hostmem_alloc(engine->mcxt, n * sizeof(uint32), 0);
	workspace = hostmem_alloc(engine->mcxt, workspace_bytes, HOSTMEM_HUGE);
	if (result == NULL || workspace == NULL)
	{
		*why = pstrdup("out of memory for the radix sort");
		return false;
	}

	/*
	 * A pool where a task has failed runs no more tasks (threadpool.c): its
	 * threads cannot be trusted with the sort.
	 */
	if (engine->threads && threadpool_failure(engine->threads) == NULL)
	{
		threads.ntasks = threadpool_count(engine->threads) + 1;
		threads.run = run_in_threads;
		threads.arg = engine->threads;
		use_threads = &threads;
	}

	gs_cpu_radix_progress = cpu_radix_check_interrupts;
	passes = gs_cpu_radix_sort(engine->keys.chunks, engine->keys.chunk_records,
							   n, engine->keys.key_words, result, workspace,
							   use_threads);
	hostmem_free(workspace, workspace_bytes);
	if (use_threads && threadpool_failure(engine->threads))
	{
		*why = pstrdup(threadpool_failure(engine->threads));
		return false;
	}

	snprintf(engine->stats.algorithm, sizeof(engine->stats.algorithm),
			 passes == 0 ? "presorted check" : "radix sort (%d passes)", passes);
	*perm = result;
	return true;
}

static bool
cpu_engine_sort(SortEngine *engine, size_t n, uint32 **perm, char **why)
{
	return engine_cpu_sort_keys(engine, n, perm, why);
}

static void
cpu_engine_end(SortEngine *engine)
{
	/* everything is in the sort's memory context, freed with it */
}

static const SortEngineMethods cpu_engine_methods = {
	.chunk = engine_local_chunk,
	.submit = cpu_engine_submit,
	.sort = cpu_engine_sort,
	.end = cpu_engine_end,
};

SortEngine *
cpu_engine_begin(MemoryContext mcxt, int key_words)
{
	CpuEngine  *cpu = MemoryContextAllocZero(mcxt, sizeof(CpuEngine));

	cpu->base.methods = &cpu_engine_methods;
	cpu->base.mcxt = mcxt;
	cpu->base.keys.chunk_records = GPUSORT_CHUNK_RECORDS;
	cpu->base.keys.key_words = key_words;
	cpu->base.stats.engine = SORT_ENGINE_CPU;
	return &cpu->base;
}

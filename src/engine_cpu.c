/*-------------------------------------------------------------------------
 *
 * engine_cpu.c
 *	  The CPU sort engine: key chunks in ordinary memory, sorted by the
 *	  radix sort of cpu_radix.c.
 *
 * It serves when gpusort.engine = cpu, when no GPU is usable, and as the
 * fallback when the GPU engine fails.  All its memory belongs to the
 * batch's memory context (palloc'd, or large blocks of hostmem.c), so the
 * sort's memory measure sees it and an error or cancel frees it with the
 * query.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "cpu_radix.h"
#include "engine.h"
#include "faults.h"
#include "hostmem.h"

typedef struct CpuEngine
{
	SortEngine	base;
} CpuEngine;

void
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
			engine->keys.chunks[chunkno] = hostmem_alloc(engine->mcxt, bytes);
		if (engine->keys.chunks[chunkno] == NULL)
		{
			*why = pstrdup("out of memory for the keys");
			return NULL;
		}
	}
	return engine->keys.chunks[chunkno];
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

/*
 * Sort an engine's n records (its keys in engine_local_chunk buffers) with
 * the radix sort; the permutation is allocated in the engine's memory.
 */
bool
engine_cpu_sort_keys(SortEngine *engine, size_t n, uint32 **perm, char **why)
{
	Size		workspace_bytes = gs_cpu_radix_workspace(n, engine->keys.key_words);
	void	   *workspace;
	uint32	   *result;
	int			passes;

	result = hostmem_alloc(engine->mcxt, n * sizeof(uint32));
	workspace = hostmem_alloc(engine->mcxt, workspace_bytes);
	if (result == NULL || workspace == NULL)
	{
		*why = pstrdup("out of memory for the radix sort");
		return false;
	}

	gs_cpu_radix_progress = cpu_radix_check_interrupts;
	passes = gs_cpu_radix_sort(engine->keys.chunks, engine->keys.chunk_records,
							   n, engine->keys.key_words, result, workspace);
	hostmem_free(workspace, workspace_bytes);

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
	strlcpy(cpu->base.stats.engine, "CPU", sizeof(cpu->base.stats.engine));
	return &cpu->base;
}

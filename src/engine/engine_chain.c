/*-------------------------------------------------------------------------
 *
 * engine_chain.c
 *	  The engine chain: which engine sorts a batch's keys (or a refinement
 *	  round's), and the move from the GPU engine to the CPU engine, with the
 *	  keys already written, when the GPU engine fails.
 *
 * The GPU engine (a request to the GPU service) is tried first with
 * gpusort.engine = gpu, and with auto where a GPU is usable and the batch
 * is expected at gpusort.gpu_min_rows or more; auto without a usable GPU,
 * and cpu, start on the CPU engine (auto's choice there, not a fallback).
 * If the service cannot take the request, the CPU engine starts instead;
 * if the service fails it later, the GPU engine's own keys go to the CPU
 * engine's sort (SortEngine.fallback).  If the GPU engine fails in the
 * backend (at chunk(), submit() or sort()), the chain hands the keys it
 * holds to a CPU engine and goes on there: both engines keep their keys
 * in the same chunk buffers (engine_local_chunk), so no key is encoded
 * again.  Later batches of the same sort start on the CPU.
 *
 * The refinement rounds of a batch's sort (refine.c) sort on chains within
 * the batch's (engine_chain_begin_within): on the GPU only where the
 * batch's sort ran there and a round is large enough to repay the trip (a
 * smaller round on the CPU is their choice, not a fallback), and moved to
 * the CPU with their keys as a batch is.  A GPU failure in a round is one
 * of the sort: its later rounds and batches start on the CPU.
 *
 * Its callers, a batch's stages (batch_encode.c, batch_sort.c, batch.c)
 * and refine.c, drive it with engine_chain_begin (or
 * engine_chain_begin_within, for a refinement round), engine_chain_chunk,
 * engine_chain_submit, engine_chain_sort and engine_chain_end; batch.c
 * adds its own reasons with engine_add_fallback_reason.
 *
 * The chain's calls fail only when the CPU engine fails; the caller then
 * gives the keys up and orders the batch with PostgreSQL's comparators
 * (the comparator sort, batch_sort.c).  Every reason the GPU was left goes
 * into the sort's Fallback list (EXPLAIN ANALYZE).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "engine/engine.h"
#include "support/settings.h"
#include "support/stat.h"

/*
 * Add why to a "; "-separated list of reasons in cxt's memory, once.
 */
void
engine_add_fallback_reason(char **list, MemoryContext cxt, const char *why)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

	if (*list == NULL)
		*list = pstrdup(why);
	else if (strstr(*list, why) == NULL)
		*list = psprintf("%s; %s", *list, why);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * The GPU is left for why: no later sort of this one tries it (the chains
 * this one is within included), and why goes into the Fallback list.
 */
static void
leave_gpu(EngineChain *chain, const char *why)
{
	for (EngineChain *c = chain; c != NULL; c = c->parent)
		c->gpu_failed = true;
	engine_add_fallback_reason(chain->fallback, chain->fallback_cxt, why);
}

/*
 * Start the chain's engine in mcxt: the GPU engine where gpu is true and
 * the GPU has not failed in this sort, the CPU engine otherwise or if the
 * GPU engine cannot start.
 */
static void
start_engine(EngineChain *chain, MemoryContext mcxt, int key_words,
			 size_t expected, bool gpu)
{
	char	   *why = NULL;

	if (gpu && !chain->gpu_failed)
	{
		chain->engine = gpu_engine_begin(mcxt, key_words, expected, &why);
		if (chain->engine == NULL)
			leave_gpu(chain, why);
	}
	chain->on_gpu = (chain->engine != NULL);
	if (chain->engine == NULL)
		chain->engine = cpu_engine_begin(mcxt, key_words);
	chain->engine->chain = chain;
}

/*
 * Pick and start an engine for a batch's keys of key_words words, about
 * expected records, in mcxt; the engine the chain had before ends first.
 */
void
engine_chain_begin(EngineChain *chain, MemoryContext mcxt, int key_words,
				   size_t expected)
{
	bool		gpu;

	engine_chain_end(chain);

	/*
	 * engine = gpu tries the GPU and says why it fell back; engine = auto
	 * uses the GPU only where one is usable, and the CPU engine elsewhere is
	 * its choice, not a fallback.
	 */
	gpu = key_words > 0 &&
		(gpusort_engine == GPUSORT_ENGINE_GPU ||
		 (gpusort_engine == GPUSORT_ENGINE_AUTO &&
		  gpusort_gpu_maybe_present()));
	if (gpu && !chain->gpu_failed &&
		gpusort_engine == GPUSORT_ENGINE_AUTO &&
		expected < (size_t) gpusort_gpu_min_rows)
	{
		leave_gpu(chain, psprintf("%zu rows expected: too few to repay a trip to the GPU (gpusort.gpu_min_rows)",
								  expected));
		stat_count_fallback(FALLBACK_SMALL);
	}
	start_engine(chain, mcxt, key_words, expected, gpu);
}

/*
 * Start a chain within the one whose engine `sorted` sorted its keys (a
 * refinement round within its batch's sort), for keys of key_words words,
 * about expected records, in mcxt; the engine the chain had before ends
 * first.  It tries the GPU where gpu (the caller's sort ran there) and
 * expected reaches gpu_min_records; a smaller sort on the CPU is the
 * caller's choice, not a fallback.
 */
void
engine_chain_begin_within(EngineChain *chain, const SortEngine *sorted,
						  bool gpu, MemoryContext mcxt, int key_words,
						  size_t expected, size_t gpu_min_records)
{
	EngineChain *parent = sorted->chain;

	Assert(parent != NULL);
	engine_chain_end(chain);
	chain->parent = parent;
	chain->gpu_failed = parent->gpu_failed;
	chain->fallback = parent->fallback;
	chain->fallback_cxt = parent->fallback_cxt;
	start_engine(chain, mcxt, key_words, expected,
				 gpu && expected >= gpu_min_records);
}

/*
 * The GPU engine failed: a CPU engine takes over its keys (the chunk
 * buffers and what is written in them) and its pool threads, and the GPU
 * engine ends.
 */
static void
fail_over_to_cpu(EngineChain *chain, const char *why)
{
	SortEngine *gpu = chain->engine;
	SortEngine *cpu = cpu_engine_begin(gpu->mcxt, gpu->keys.key_words);

	leave_gpu(chain, why);
	cpu->chain = chain;
	cpu->keys = gpu->keys;
	cpu->nchunks_alloc = gpu->nchunks_alloc;
	cpu->threads = gpu->threads;
	gpu->methods->end(gpu);
	chain->engine = cpu;
	chain->on_gpu = false;
}

/*
 * After a call of the chain's engine failed with *why: true if that was
 * the GPU engine, and a CPU engine now holds its keys to try again on.
 */
static bool
failed_over(EngineChain *chain, char **why)
{
	if (!chain->on_gpu)
		return false;
	fail_over_to_cpu(chain, *why);
	*why = NULL;
	return true;
}

/* A buffer for chunk chunkno's keys, or NULL with *why if the CPU failed. */
uint64 *
engine_chain_chunk(EngineChain *chain, size_t chunkno, char **why)
{
	uint64	   *keys = chain->engine->methods->chunk(chain->engine, chunkno, why);

	if (keys == NULL && failed_over(chain, why))
		keys = chain->engine->methods->chunk(chain->engine, chunkno, why);
	return keys;
}

/* Chunk chunkno holds nrecords keys; false with *why if the CPU failed. */
bool
engine_chain_submit(EngineChain *chain, size_t chunkno, size_t nrecords,
					char **why)
{
	SortEngine *engine = chain->engine;

	if (engine->methods->submit(engine, chunkno, nrecords, why))
		return true;
	if (!failed_over(chain, why))
		return false;
	return chain->engine->methods->submit(chain->engine, chunkno, nrecords, why);
}

/*
 * Sort the n records; *perm lives until the engine ends.  False with *why
 * if the CPU engine failed.
 */
bool
engine_chain_sort(EngineChain *chain, size_t n, uint32 **perm, char **why)
{
	SortEngine *engine = chain->engine;

	if (engine->methods->sort(engine, n, perm, why))
	{
		if (engine->fallback)
		{
			/* the GPU engine's keys were sorted by the CPU engine */
			engine_add_fallback_reason(chain->fallback, chain->fallback_cxt,
									   engine->fallback);
			chain->on_gpu = false;
		}
		return true;
	}
	if (!failed_over(chain, why))
		return false;
	return chain->engine->methods->sort(chain->engine, n, perm, why);
}

/*
 * End the chain's engine, if it has one.  What failed stays known, and
 * on_gpu still tells which engine it was.
 */
void
engine_chain_end(EngineChain *chain)
{
	if (chain->engine)
		chain->engine->methods->end(chain->engine);
	chain->engine = NULL;
}

/*-------------------------------------------------------------------------
 *
 * sort_batch.c
 *	  The sort stage of a batch (sort_batch.h): which engine sorts its keys,
 *	  what happens when one fails, the order of what the keys leave equal,
 *	  and the result as tuple pointers in sorted order.
 *
 * The GPU engine (a request to the GPU service) is tried first with
 * gpusort.engine = gpu, and with auto where a GPU is usable and the batch
 * is expected at gpusort.gpu_min_rows or more; auto without a usable GPU,
 * and cpu, start on the CPU engine (auto's choice there, not a fallback).
 * If the service cannot take the request, the CPU engine starts instead;
 * if the service fails it later, the GPU engine's own keys go to the CPU
 * engine's sort (SortEngine.fallback).  If the GPU engine fails in the
 * backend, the batch's keys are encoded again for the CPU engine, and
 * later batches of the same sort start on the CPU.  If keys cannot be
 * built, or the CPU engine or the refinement of generic keys fails, the
 * batch is ordered by PostgreSQL's comparators alone, in place (the
 * comparator sort): no tuple is copied, and the batch becomes a run like
 * any other.  EXPLAIN ANALYZE gives every reason (Fallback).
 *
 * After the engine's sort (key, index), records with equal inexact keys are
 * ordered by PostgreSQL's comparators (tiebreak.c), after refinement on
 * further key bytes for generic layouts (refine.c).  The result is gathered
 * once into an array of tuple pointers in sorted order, and, where the run
 * will be merged with others, each record's key beside it, so that the
 * merge compares keys before it calls a comparator.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/memutils.h"

#include "cpu_radix.h"
#include "faults.h"
#include "hostmem.h"
#include "refine.h"
#include "service.h"
#include "sort_batch.h"
#include "tiebreak.h"

/* how many tuples ahead the gather prefetches */
#define GATHER_PREFETCH		16

void
batch_add_fallback_reason(SortBatchShared *sh, const char *why)
{
	GpuSortStats *stats = sh->stats;
	MemoryContext oldcxt = MemoryContextSwitchTo(sh->stats_cxt);

	if (stats->fallback == NULL)
		stats->fallback = pstrdup(why);
	else if (strstr(stats->fallback, why) == NULL)
		stats->fallback = psprintf("%s; %s", stats->fallback, why);
	MemoryContextSwitchTo(oldcxt);
}

/* Pick and start an engine for the current layout. */
void
batch_start_engine(SortBatch *batch)
{
	SortBatchShared *sh = batch->sh;
	char	   *why = NULL;
	size_t		expected = Max(batch->expected_records, batch->ntuples);

	/* key threads may be writing into the old engine's chunks */
	if (batch->pool)
		keythreads_wait_all(batch->pool);
	if (batch->chunk_tasks)
	{
		memset(batch->chunk_tasks, 0, sizeof(KeyTaskGroup) * MAX_CHUNKS);
		memset(batch->chunk_builds, 0, sizeof(ChunkBuild *) * MAX_CHUNKS);
	}
	if (batch->engine)
		batch->engine->methods->end(batch->engine);
	batch->engine = NULL;
	batch->nencoded = 0;
	batch->nsubmitted = 0;
	if (batch->comparator_sort)
		return;

	/*
	 * engine = gpu tries the GPU and says why it fell back; engine = auto
	 * uses the GPU only where one is usable, and the CPU engine elsewhere is
	 * its choice, not a fallback.
	 */
	if (!batch->gpu_failed && sh->layout.key_words > 0 &&
		(gpusort_engine == GPUSORT_ENGINE_GPU ||
		 (gpusort_engine == GPUSORT_ENGINE_AUTO && gpusort_gpu_maybe_present())))
	{
		if (gpusort_engine == GPUSORT_ENGINE_AUTO &&
			expected < (size_t) gpusort_gpu_min_rows)
		{
			why = psprintf("%zu rows expected: too few to repay a trip to the GPU (gpusort.gpu_min_rows)",
						   expected);
			service_count_fallback(FALLBACK_SMALL);
		}
		else
			batch->engine = gpu_engine_begin(batch->cxt, sh->layout.key_words,
											 expected, &why);
		if (batch->engine == NULL)
		{
			batch->gpu_failed = true;
			batch_add_fallback_reason(sh, why);
		}
	}
	batch->engine_is_gpu = (batch->engine != NULL);
	if (batch->engine == NULL)
		batch->engine = cpu_engine_begin(batch->cxt, sh->layout.key_words);
}

/*
 * Keys cannot order this batch: stop encoding, free the engine, and let
 * the comparators order it (batch_sort).  The tuples stay where they are.
 */
void
batch_give_up_keys(SortBatch *batch, const char *why)
{
	batch_add_fallback_reason(batch->sh, why);
	if (batch->pool)
		keythreads_wait_all(batch->pool);
	if (batch->engine)
		batch->engine->methods->end(batch->engine);
	batch->engine = NULL;
	batch->comparator_sort = true;
}

/*
 * The engine failed.  After the GPU engine, go on with the CPU engine from
 * the first record; after the CPU engine (out of memory), with comparators.
 */
void
batch_engine_failed(SortBatch *batch, const char *why)
{
	if (batch->engine_is_gpu)
	{
		batch->gpu_failed = true;
		batch_add_fallback_reason(batch->sh, why);
		batch_start_engine(batch);
	}
	else
		batch_give_up_keys(batch, why);
}

/* The comparator pass's view of the sort, over the given tuples. */
void
batch_init_tiebreak(SortBatchShared *sh, Tiebreak *tb, MinimalTuple *tuples)
{
	tb->layout = &sh->layout;
	tb->ssup = sh->ssup;
	tb->abbrev = sh->abbrev;
	tb->slot = sh->work_slot;
	tb->slot2 = sh->work_slot2;
	tb->tuples = tuples;
}

/*
 * Order what the engine's keys left equal: on the fixed path, runs of equal
 * inexact keys go to the comparators; on the generic path, runs of equal
 * prefixes are refined on further key bytes, what the full keys leave equal
 * goes to the comparators, and libc order is certified.  If refinement or
 * the check cannot be done (an engine or key building failed), the keys
 * are given up and the comparators order the batch.
 */
static void
resolve_order(SortBatch *batch, uint32 *perm)
{
	GpuSortStats *stats = batch->sh->stats;
	Tiebreak	tb;
	int64		resolved = 0;
	instr_time	start;
	RefineContext rc;
	SortRun    *runs = NULL;
	size_t		nruns = 0;
	char	   *why = NULL;
	MemoryContext refinecxt;

	batch_init_tiebreak(batch->sh, &tb, batch->tuples);
	if (!batch->sh->layout.generic)
	{
		INSTR_TIME_SET_CURRENT(start);
		gpusort_resolve_ties(&tb, batch->pool, batch->engine, perm, batch->ntuples,
							 &resolved);
		stats->resolved += resolved;
		stats->resolve_ms += gpusort_elapsed_ms(start);
		return;
	}

	/* the key threads are idle now: the prefixes were all built */
	memset(&rc, 0, sizeof(rc));
	refinecxt = AllocSetContextCreate(batch->cxt, "GpuSort refine",
									  ALLOCSET_DEFAULT_SIZES);
	rc.layout = &batch->sh->layout;
	rc.inputs = &batch->inputs;
	rc.pool = batch->pool;
	rc.cxt = refinecxt;
	rc.use_gpu = batch->engine_is_gpu;
	rc.tb = &tb;

	INSTR_TIME_SET_CURRENT(start);
	if (!gpusort_refine(&rc, batch->engine, perm, batch->ntuples,
						&runs, &nruns, &why))
	{
		MemoryContextDelete(refinecxt);
		batch_give_up_keys(batch, psprintf("refinement failed: %s", why));
		return;
	}
	stats->refine_ms += gpusort_elapsed_ms(start);

	INSTR_TIME_SET_CURRENT(start);
	gpusort_sort_runs(&tb, perm, runs, nruns, &resolved);
	stats->resolved += resolved;
	stats->resolve_ms += gpusort_elapsed_ms(start);

	if (batch->sh->layout.verify)
	{
		INSTR_TIME_SET_CURRENT(start);
		if (!gpusort_certify_libc_order(&rc, perm, batch->ntuples, &why))
		{
			MemoryContextDelete(refinecxt);
			batch_give_up_keys(batch, psprintf("order check failed: %s", why));
			return;
		}
		stats->check_ms += gpusort_elapsed_ms(start);
	}
	stats->refine_rounds += rc.rounds;
	stats->refined += rc.refined;
	stats->refined_on_gpu |= rc.rounds_on_gpu;
	stats->checked_pairs += rc.checked_pairs;
	stats->repaired += rc.repaired;
	stats->key_build_ms += keythreads_busy_ms(batch->pool);
	MemoryContextDelete(refinecxt);
}

/* a task of gather_sorted: sorted[from .. to-1], and their keys */
typedef struct GatherTuples
{
	MinimalTuple *sorted;
	MinimalTuple *tuples;
	uint64	   *sorted_keys;	/* or NULL */
	const KeyStore *keys;
	const uint32 *perm;
	size_t		n;
} GatherTuples;

static bool
gather_tuple_pointers(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	GatherTuples *g = (GatherTuples *) arg;
	int			words = g->keys->key_words;

	for (size_t i = from; i < to; i++)
	{
		if (i + GATHER_PREFETCH < g->n)
			gs_prefetch(&g->tuples[g->perm[i + GATHER_PREFETCH]]);
		g->sorted[i] = g->tuples[g->perm[i]];
		if (g->sorted_keys)
		{
			const uint64 *key = keystore_key(g->keys, g->perm[i]);

			/* a word or four: a loop, not a call to memcpy per record */
			for (int w = 0; w < words; w++)
				g->sorted_keys[i * words + w] = key[w];
		}
	}
	return true;
}

/*
 * The result as the tuples' pointers in sorted order, gathered once (in
 * the key threads where the batch has them) rather than looked up through
 * the permutation at each row emitted: emitting then waits for one cache
 * miss per row, the tuple, instead of two.  With keep_keys, each record's
 * key is gathered beside it, for a merge.  The load-order pointers are not
 * needed any more and go.
 */
static void
gather_sorted(SortBatch *batch, const uint32 *perm, bool keep_keys)
{
	GatherTuples g;
	size_t		n = batch->ntuples;

	g.sorted = batch_alloc(batch, Max(n, 1) * sizeof(MinimalTuple));
	g.tuples = batch->tuples;
	g.keys = &batch->engine->keys;
	g.sorted_keys = NULL;
	if (keep_keys)
	{
		batch->sorted_key_words = g.keys->key_words;
		g.sorted_keys = batch_alloc(batch, Max(n, 1) * g.keys->key_words * sizeof(uint64));
	}
	g.perm = perm;
	g.n = n;
	if (batch->pool && n >= GPUSORT_CHUNK_RECORDS)
		keythreads_parallel_for(batch->pool, gather_tuple_pointers, &g, n,
								GPUSORT_CHUNK_RECORDS / 2);
	else
		gather_tuple_pointers(NULL, &g, 0, n);
	batch->sorted = g.sorted;
	batch->sorted_keys = g.sorted_keys;

	/*
	 * The keys order a merge where they follow PostgreSQL's order wherever
	 * they differ: not libc collation keys, which only a check certifies.
	 */
	batch->keys_order = keep_keys && !batch->sh->layout.verify;
	if (batch->tuples)
		hostmem_free(batch->tuples, batch->maxtuples * sizeof(MinimalTuple));
	batch->tuples = NULL;
	batch->maxtuples = 0;
}

/*
 * Order the batch by PostgreSQL's comparators alone, in place: a single
 * run of the comparator pass (tiebreak.c) that starts at the first column.
 */
static void
comparator_sort(SortBatch *batch)
{
	size_t		n = batch->ntuples;
	uint32	   *perm = batch_alloc(batch, Max(n, 1) * sizeof(uint32));
	MinimalTuple *sorted = batch_alloc(batch, Max(n, 1) * sizeof(MinimalTuple));
	Tiebreak	tb;
	SortRun		all = {0, n, 0};
	int64		resolved = 0;
	instr_time	start;

	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32) i;
	batch_init_tiebreak(batch->sh, &tb, batch->tuples);
	INSTR_TIME_SET_CURRENT(start);
	if (n > 1)
		gpusort_sort_runs(&tb, perm, &all, 1, &resolved);
	batch->sh->stats->resolve_ms += gpusort_elapsed_ms(start);
	batch->sh->stats->resolved += resolved;
	for (size_t i = 0; i < n; i++)
		sorted[i] = batch->tuples[perm[i]];
	batch->sorted = sorted;
	batch->sorted_keys = NULL;
	batch->keys_order = false;
	strlcpy(batch->sh->stats->engine, "PostgreSQL comparators",
			sizeof(batch->sh->stats->engine));
	batch->sh->stats->device[0] = '\0';
	strlcpy(batch->sh->stats->algorithm, "quicksort",
			sizeof(batch->sh->stats->algorithm));
}

/*
 * Sort the batch: the last keys, the engine's sort (the CPU engine if the
 * GPU fails), the order of equal keys, and the sorted tuple pointers in
 * batch->sorted; with keep_keys, their keys in batch->sorted_keys.
 */
void
batch_sort(SortBatch *batch, bool keep_keys)
{
	GpuSortStats *stats = batch->sh->stats;
	uint32	   *perm = NULL;
	char	   *why = NULL;
	instr_time	start;

	while (!batch->comparator_sort)
	{
		batch_encode(batch, true);
		if (batch->comparator_sort)
			break;
		gpusort_fault_point(GPUSORT_PHASE_SORT);
		batch->engine->want_ties = batch->sh->layout.generic;

		/* a large CPU sort shares its radix passes among the key threads */
		if (!batch->engine_is_gpu && batch->ntuples >= GS_RADIX_PARALLEL_MIN_RECORDS)
			batch_start_key_threads(batch);
		batch->engine->threads = batch->pool;
		INSTR_TIME_SET_CURRENT(start);
		if (batch->engine->methods->sort(batch->engine, batch->ntuples, &perm, &why))
		{
			stats->sort_ms += gpusort_elapsed_ms(start);
			if (batch->engine->fallback)
			{
				/* the GPU engine's keys were sorted by the CPU engine */
				batch_add_fallback_reason(batch->sh, batch->engine->fallback);
				batch->engine_is_gpu = false;
			}
			break;
		}
		stats->sort_ms += gpusort_elapsed_ms(start);
		batch_engine_failed(batch, why);
	}

	if (!batch->comparator_sort)
	{
		gpusort_fault_point(GPUSORT_PHASE_RESOLVE);
		resolve_order(batch, perm);
	}
	if (batch->comparator_sort)
	{
		comparator_sort(batch);
		return;
	}

	/* keep the order in the batch's memory; the engine's buffers can go */
	gather_sorted(batch, perm, keep_keys);
	{
		SortEngineStats *es = &batch->engine->stats;

		strlcpy(stats->engine, es->engine, sizeof(stats->engine));
		strlcpy(stats->device, es->device, sizeof(stats->device));
		strlcpy(stats->algorithm, es->algorithm, sizeof(stats->algorithm));
		stats->transfer_ms += es->transfer_ms;
		stats->device_sort_ms += es->device_sort_ms;
		stats->device_memory = Max(stats->device_memory, es->device_bytes);
	}
	batch->engine->methods->end(batch->engine);
	batch->engine = NULL;
}

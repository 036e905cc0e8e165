/*-------------------------------------------------------------------------
 *
 * batch_sort.c
 *	  The last stages of a batch (batch.h), once its keys are all encoded:
 *	  the engine chain's sort, then resolve (the order of what the keys
 *	  leave equal), then gather (the result as tuple pointers in sorted
 *	  order).  sort.c calls batch_sort() once the batch's input has ended
 *	  or it is full.
 *
 * The engine chain (engine_chain.c) sorts the keys (key, index) on the GPU
 * or the CPU.  If the CPU engine fails, or the refinement of generic keys
 * fails, the keys are given up and the batch is ordered by PostgreSQL's
 * comparators alone, in place (the comparator sort): no tuple is copied,
 * and the batch becomes a run like any other.  EXPLAIN ANALYZE gives
 * every reason (Fallback).
 *
 * After the engine's sort, records with equal inexact keys (tie ranges)
 * are ordered by PostgreSQL's comparators (resolve.c), after refinement
 * on further key bytes for generic layouts (refine.c).  The result is
 * gathered once into an array of tuple pointers in sorted order, and,
 * where the run will be merged with others, each record's key beside it,
 * so that the merge compares keys before it calls a comparator.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/memutils.h"

#include "batch/batch.h"
#include "resolve/refine.h"
#include "resolve/resolve.h"
#include "support/faults.h"
#include "support/hostmem.h"

/* how many tuples ahead the gather prefetches */
#define GATHER_PREFETCH		16

/*
 * Order what the engine's keys left equal: on the fixed path, tie ranges of
 * equal inexact keys go to the comparators; on the generic path, tie ranges of
 * equal prefixes are refined on further key bytes, what the full keys leave
 * equal goes to the comparators, and libc order is checked.  If refinement
 * or the check cannot be done (an engine or key building failed), the keys are
 * given up and the comparators order the batch.
 */
static void
resolve_order(SortBatch *batch, uint32 *perm)
{
	GpuSortStats *stats = batch->sh->stats;
	CompareContext	res;
	int64		resolved = 0;
	instr_time	start;
	RefineContext rc;
	TieRange    *ties = NULL;
	size_t		nties = 0;
	char	   *why = NULL;
	MemoryContext refinecxt;
	MemoryContext oldcxt;
	Size		held;
	Size		scratch;

	batch_init_compare(batch->sh, &res, batch->tuples);
	if (!batch->sh->layout.generic)
	{
		/* the stage's scratch is the batch's, as batch_memory() counts */
		held = batch_held(batch);
		oldcxt = MemoryContextSwitchTo(batch->cxt);
		INSTR_TIME_SET_CURRENT(start);
		resolve_sorted(&res, batch->pool, batch->chain.engine, perm, batch->ntuples,
					   &resolved, &scratch);
		stats->resolved += resolved;
		stats->resolve_ms += gpusort_elapsed_ms(start);
		batch->peak_held = Max(batch->peak_held, held + scratch);
		MemoryContextSwitchTo(oldcxt);
		return;
	}

	/* the pool threads are idle now: the prefixes were all built */
	res.inputs = &batch->inputs;
	memset(&rc, 0, sizeof(rc));
	refinecxt = AllocSetContextCreate(batch->cxt, "GpuSort refine",
									  ALLOCSET_DEFAULT_SIZES);
	rc.layout = &batch->sh->layout;
	rc.inputs = &batch->inputs;
	rc.pool = batch->pool;
	rc.cxt = refinecxt;
	rc.use_gpu = batch->chain.on_gpu;
	rc.res = &res;

	INSTR_TIME_SET_CURRENT(start);
	if (!gpusort_refine(&rc, batch->chain.engine, perm, batch->ntuples,
						&ties, &nties, &why))
	{
		MemoryContextDelete(refinecxt);
		batch_give_up_keys(batch, psprintf("refinement failed: %s", why));
		return;
	}
	stats->refine_ms += gpusort_elapsed_ms(start);

	INSTR_TIME_SET_CURRENT(start);
	held = batch_held(batch);
	oldcxt = MemoryContextSwitchTo(batch->cxt);
	resolve_tie_ranges(&res, perm, ties, nties, &resolved, &scratch);
	MemoryContextSwitchTo(oldcxt);
	batch->peak_held = Max(batch->peak_held, held + scratch);
	stats->resolved += resolved;
	stats->resolve_ms += gpusort_elapsed_ms(start);

	if (batch->sh->layout.libc_checked)
	{
		INSTR_TIME_SET_CURRENT(start);
		if (!gpusort_check_collation(&rc, perm, batch->ntuples, ties, nties,
									 &why))
		{
			MemoryContextDelete(refinecxt);
			batch_give_up_keys(batch, psprintf("collation check failed: %s", why));
			return;
		}
		stats->check_ms += gpusort_elapsed_ms(start);
	}
	stats->refine_rounds += rc.rounds;
	stats->refined += rc.refined;
	stats->refined_on_gpu |= rc.rounds_on_gpu;
	stats->collated += rc.collated;
	stats->checked_pairs += rc.checked_pairs;
	stats->repaired += rc.repaired;
	stats->key_build_ms += threadpool_busy_ms(batch->pool);
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
gather_tuple_pointers(void *state, void *arg, size_t from, size_t to)
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
 * the pool threads where the batch has them) rather than looked up through
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
	g.keys = &batch->chain.engine->keys;
	g.sorted_keys = NULL;
	if (keep_keys)
	{
		batch->sorted_key_words = g.keys->key_words;
		g.sorted_keys = batch_alloc(batch, Max(n, 1) * g.keys->key_words * sizeof(uint64));
	}
	g.perm = perm;
	g.n = n;
	if (batch->pool && n >= GPUSORT_CHUNK_RECORDS)
		threadpool_parallel_for(batch->pool, gather_tuple_pointers, &g, n,
								GPUSORT_CHUNK_RECORDS / 2);
	else
		gather_tuple_pointers(NULL, &g, 0, n);
	batch->sorted = g.sorted;
	batch->sorted_keys = g.sorted_keys;

	/*
	 * The keys order a merge where they follow PostgreSQL's order wherever
	 * they differ: not libc collation keys, whose order only the collation
	 * check vouches for.
	 */
	batch->keys_order = keep_keys && !batch->sh->layout.libc_checked;
	if (batch->tuples)
		hostmem_free(batch->tuples, batch->maxtuples * sizeof(MinimalTuple));
	batch->tuples = NULL;
	batch->maxtuples = 0;
}

/*
 * Order the batch by PostgreSQL's comparators alone (the comparator sort):
 * resolve_sort_tuples over the load-order tuple pointers, its items in
 * that array where the array grows where it lies (hostmem_grow: a large
 * one), so that the batch holds 16 bytes a record beside its tuples, as
 * batch_memory() counts; else (an array of under a megabyte, in palloc'd
 * memory) beside it, for a while 8 bytes a record more.  The sorted
 * pointers are written over the items; the pointers' array is theirs from
 * then on, or freed.
 */
static void
comparator_sort(SortBatch *batch)
{
	size_t		n = batch->ntuples;
	SortBatchShared *sh = batch->sh;
	MinimalTuple *tuples = batch->tuples;
	void	   *items = NULL;
	bool		in_place = false;
	CompareContext res;
	instr_time	start;

	batch_init_compare(sh, &res, NULL);

	INSTR_TIME_SET_CURRENT(start);
	if (tuples != NULL && n > 0)
		items = hostmem_grow(tuples, batch->maxtuples * sizeof(MinimalTuple),
							 n * RESOLVE_ITEM_BYTES);
	if (items != NULL)
	{
		in_place = true;
		tuples = (MinimalTuple *) items;
	}
	else
		items = batch_alloc(batch, Max(n, 1) * RESOLVE_ITEM_BYTES);
	batch->sorted = resolve_sort_tuples(&res, tuples, n, items);
	if (!in_place && batch->tuples)
		hostmem_free(batch->tuples, batch->maxtuples * sizeof(MinimalTuple));
	batch->tuples = NULL;
	batch->maxtuples = 0;

	batch->sh->stats->resolve_ms += gpusort_elapsed_ms(start);
	batch->sh->stats->resolved += n;
	batch->sorted_keys = NULL;
	batch->keys_order = false;
	batch->sh->stats->engine = SORT_ENGINE_COMPARATORS;
	batch->sh->stats->device[0] = '\0';
	strlcpy(batch->sh->stats->algorithm, "quicksort",
			sizeof(batch->sh->stats->algorithm));
}

/*
 * Sort the batch, whose keys are all encoded (batch_encode, final): the
 * engine chain's sort, the order of equal keys, and the sorted tuple
 * pointers in batch->sorted; with keep_keys, their keys in
 * batch->sorted_keys.
 */
void
batch_sort(SortBatch *batch, bool keep_keys)
{
	GpuSortStats *stats = batch->sh->stats;
	uint32	   *perm = NULL;
	char	   *why = NULL;
	instr_time	start;

	/* the sort phase, whether the engine or the comparators order the batch */
	gpusort_fault_point(GPUSORT_PHASE_SORT);
	if (!batch->comparator_sort)
	{
		/* a large CPU sort shares its radix passes among the pool threads */
		if (!batch->chain.on_gpu && batch->ntuples >= BATCH_THREADS_MIN_RECORDS)
			batch_start_threads(batch);
		batch->chain.engine->threads = batch->pool;
		INSTR_TIME_SET_CURRENT(start);
		if (!engine_chain_sort(&batch->chain, batch->ntuples, &perm, &why))
			batch_give_up_keys(batch, why);
		stats->sort_ms += gpusort_elapsed_ms(start);
	}

	/* the resolve phase: resolve's passes, or the comparators' whole sort */
	gpusort_fault_point(GPUSORT_PHASE_RESOLVE);
	if (!batch->comparator_sort)
		resolve_order(batch, perm);
	if (batch->comparator_sort)
	{
		comparator_sort(batch);
		return;
	}

	/* keep the order in the batch's memory; the engine's buffers can go */
	gather_sorted(batch, perm, keep_keys);
	{
		SortEngineStats *es = &batch->chain.engine->stats;

		stats->engine = es->engine;
		strlcpy(stats->device, es->device, sizeof(stats->device));
		strlcpy(stats->algorithm, es->algorithm, sizeof(stats->algorithm));
		stats->transfer_ms += es->transfer_ms;
		stats->device_sort_ms += es->device_sort_ms;
		stats->device_memory = Max(stats->device_memory, es->device_bytes);
	}
	engine_chain_end(&batch->chain);
}

/*-------------------------------------------------------------------------
 *
 * nodeGpuSort.c
 *	  Executor of Custom Scan (GpuSort): a Sort node whose records are sorted
 *	  by a sort engine on normalized keys.
 *
 * The node behaves as nodeSort.c does, seen from above: on the first fetch
 * it reads its whole input, sorts it, then returns tuples in order; it
 * supports rescan (rewinding when its input's parameters have not changed),
 * backward scan and mark/restore, so it can stand wherever a Sort stood.
 *
 * Execution of one sort:
 *	1. load: each child tuple is copied once, as a MinimalTuple, into an
 *	   arena of large blocks in the sort's memory context;
 *	2. encode: every ENCODE_BATCH tuples, while they are still in the CPU's
 *	   cache, their normalized keys (keys.c) are written into the engine's
 *	   current chunk buffer; each chunk of GPUSORT_CHUNK_RECORDS keys is
 *	   submitted as soon as it is full, so the GPU engine transfers and
 *	   sorts while the child is still producing;
 *	3. sort: the engine returns the permutation sorted by (key, index);
 *	4. resolve: runs of equal inexact keys are ordered by PostgreSQL's
 *	   comparators (tiebreak.c);
 *	5. emit: tuples are returned straight from the arena in that order.
 *
 * Nothing the user can see depends on the engine.  If the GPU engine fails
 * the records are encoded again for the CPU engine; if the sort would pass
 * gpusort.max_memory, or there are more rows than 32-bit indexes can
 * address, the tuples already held go to PostgreSQL's tuplesort, which
 * reads the rest of the input and spills to disk if it must.  EXPLAIN
 * ANALYZE says which of these happened and why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

#include "cpu_radix.h"
#include "engine.h"
#include "faults.h"
#include "gpusort.h"
#include "hostmem.h"
#include "keys.h"
#include "keythreads.h"
#include "refine.h"
#include "tiebreak.h"

#define ARENA_MIN_BLOCK		((Size) 256 * 1024)
#define ARENA_MAX_BLOCK		((Size) 16 * 1024 * 1024)

/*
 * Keys are encoded every ENCODE_BATCH loaded tuples, while those tuples are
 * still in the CPU's cache; chunks are submitted as they fill.
 */
#define ENCODE_BATCH		1024

/* chunks of records that 32-bit record indexes can address */
#define MAX_CHUNKS			((size_t) (PG_UINT32_MAX / GPUSORT_CHUNK_RECORDS) + 1)

/* how many tuples ahead of the read position emitting prefetches */
#define EMIT_PREFETCH		16
#if defined(__GNUC__) || defined(__clang__)
#define prefetch_tuple(p)	__builtin_prefetch(p)
#else
#define prefetch_tuple(p)	((void) 0)
#endif

/*
 * Where a record's key column datums (KeyInputs, generic layouts) stand,
 * one byte per record.  Where the backend reads on while keys are built
 * (collation keys), it stores each record's datums as it loads; otherwise
 * the key threads take them from the tuples themselves once the input has
 * ended, and the backend does only what they cannot (detoasting).
 */
#define INPUTS_TO_DEFORM	0	/* a key thread reads them from the tuple */
#define INPUTS_FOR_BACKEND	1	/* it could not: the backend will */
#define INPUTS_STORED		2	/* in place */

/* a key-building task's view of one engine chunk (generic layouts) */
typedef struct ChunkBuild
{
	KeyInputs  *inputs;
	uint8	   *input_state;	/* the chunk's INPUTS_* bytes */
	MinimalTuple *tuples;		/* the arena's tuples, once the input has
								 * ended (no longer moved); else NULL */
	const KeyLayout *layout;
	uint64	   *keys;			/* the engine's buffer for the chunk */
	size_t		first;			/* record index of the chunk's first key */
	int			key_bytes;
	int			key_words;
} ChunkBuild;

typedef struct GpuSortState
{
	CustomScanState css;

	GpuSortPlanInfo info;
	bool		random_access;	/* backward scan or mark/restore wanted */
	SortSupport ssup;			/* comparators, one per ORDER BY column */
	SortSupport abbrev;			/* the same, abbreviating where possible */
	TupleTableSlot *work_slot;	/* MinimalTuple slot to deform arena tuples */
	TupleTableSlot *work_slot2; /* another, to compare two arena tuples */

	/* all memory of one sort; reset when the node sorts again */
	MemoryContext sortcxt;

	bool		sort_done;

	/* the arena: tuples in load order, the record index is the position */
	MinimalTuple *tuples;
	size_t		ntuples;
	size_t		maxtuples;
	char	   *block_free;		/* free space in the current block */
	Size		block_left;
	Size		next_block_size;
	Size		arena_bytes;
	bool		arena_over_limit;	/* the last arena_alloc hit max_memory */

	/* keys and the engine that sorts them */
	KeyLayout	layout;
	SortEngine *engine;
	size_t		nencoded;		/* records whose keys are in the engine */
	size_t		nsubmitted;		/* records in submitted chunks */
	bool		engine_is_gpu;
	bool		gpu_failed;		/* the GPU engine failed in this sort */

	/*
	 * Generic layouts (keys.h): each record's key column datums, and the
	 * threads that build keys from them.  The threads live in threadcxt, a
	 * child of sortcxt, so that they stop before sortcxt's memory goes.
	 */
	KeyInputs	inputs;
	uint8	  **input_states;	/* per chunk: its records' INPUTS_* bytes */
	size_t		ninputs;		/* records whose datums the backend stored */
	Size		inputs_bytes;	/* memory of inputs and detoasted copies */
	MemoryContext threadcxt;
	KeyThreadPool *pool;
	KeyTaskGroup *chunk_tasks;	/* per chunk: its unfinished build tasks */
	ChunkBuild **chunk_builds;	/* per chunk: what its tasks build */

	/* the result: the tuples in sorted order, and the read position */
	MinimalTuple *sorted;
	int64		pos;			/* last returned, -1 before the first */
	int64		markpos;

	/* fallback: PostgreSQL's own sort holds the tuples instead */
	Tuplesortstate *tuplesort;

	GpuSortStats stats;
} GpuSortState;

static Node *gpusort_create_state(CustomScan *cscan);
static void gpusort_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *gpusort_exec(CustomScanState *node);
static void gpusort_end(CustomScanState *node);
static void gpusort_rescan(CustomScanState *node);
static void gpusort_mark(CustomScanState *node);
static void gpusort_restore(CustomScanState *node);
static void gpusort_explain(CustomScanState *node, List *ancestors,
							ExplainState *es);

CustomScanMethods gpusort_scan_methods = {
	.CustomName = GPUSORT_NODE_NAME,
	.CreateCustomScanState = gpusort_create_state,
};

static const CustomExecMethods gpusort_exec_methods = {
	.CustomName = GPUSORT_NODE_NAME,
	.BeginCustomScan = gpusort_begin,
	.ExecCustomScan = gpusort_exec,
	.EndCustomScan = gpusort_end,
	.ReScanCustomScan = gpusort_rescan,
	.MarkPosCustomScan = gpusort_mark,
	.RestrPosCustomScan = gpusort_restore,
	.ExplainCustomScan = gpusort_explain,
};

void
gpusort_executor_init(void)
{
	RegisterCustomScanMethods(&gpusort_scan_methods);
}

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

static Node *
gpusort_create_state(CustomScan *cscan)
{
	GpuSortState *st = (GpuSortState *) newNode(sizeof(GpuSortState),
												T_CustomScanState);

	st->css.methods = &gpusort_exec_methods;
	st->css.flags = cscan->flags;
	gpusort_plan_info_from_list(cscan->custom_private, &st->info);
	return (Node *) st;
}

static void
gpusort_begin(CustomScanState *node, EState *estate, int eflags)
{
	GpuSortState *st = (GpuSortState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	TupleDesc	tupdesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;

	/*
	 * ExecInitCustomScan gave us a virtual scan slot; we return arena tuples
	 * without copying them, which needs a MinimalTuple slot.  Our target
	 * list is the scan tuple itself (planner.c), so the scan slot is also
	 * the result and no projection was set up over the old slot.
	 */
	if (node->ss.ps.ps_ProjInfo != NULL)
		elog(ERROR, "GpuSort node must not project");
	ExecInitScanTupleSlot(estate, &node->ss, tupdesc, &TTSOpsMinimalTuple);
	node->ss.ps.resultops = &TTSOpsMinimalTuple;
	node->ss.ps.resultopsfixed = true;
	node->ss.ps.resultopsset = true;

	st->random_access = (eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK)) != 0;

	/* like Sort, we materialize: the child needs no rewind or backward scan */
	outerPlanState(st) = ExecInitNode(outerPlan(cscan), estate,
									  eflags & ~(EXEC_FLAG_REWIND |
												 EXEC_FLAG_BACKWARD |
												 EXEC_FLAG_MARK));

	st->ssup = palloc0(sizeof(SortSupportData) * st->info.numCols);
	st->abbrev = palloc0(sizeof(SortSupportData) * st->info.numCols);
	for (int c = 0; c < st->info.numCols; c++)
	{
		for (int abbreviate = 0; abbreviate <= 1; abbreviate++)
		{
			SortSupport ssup = abbreviate ? &st->abbrev[c] : &st->ssup[c];

			ssup->ssup_cxt = CurrentMemoryContext;
			ssup->ssup_collation = st->info.collations[c];
			ssup->ssup_nulls_first = st->info.nullsFirst[c];
			ssup->ssup_attno = st->info.sortColIdx[c];
			ssup->abbreviate = (abbreviate == 1);
			PrepareSortSupportFromOrderingOp(st->info.sortOperators[c], ssup);
		}
	}
	st->work_slot = MakeSingleTupleTableSlot(tupdesc, &TTSOpsMinimalTuple);
	st->work_slot2 = MakeSingleTupleTableSlot(tupdesc, &TTSOpsMinimalTuple);
	st->sortcxt = AllocSetContextCreate(CurrentMemoryContext, "GpuSort",
										ALLOCSET_DEFAULT_SIZES);
	st->pos = -1;
	st->markpos = -1;
}

/* ---------------------------------------------------------------------
 * The arena
 * ---------------------------------------------------------------------
 */

/* bytes of one chunk of KeyInputs: datums, NULL flags, INPUTS_* bytes */
static Size
inputs_chunk_bytes(GpuSortState *st)
{
	return GPUSORT_CHUNK_RECORDS *
		(st->inputs.ncols * (sizeof(Datum) + sizeof(bool)) + sizeof(uint8));
}

/* bytes of the KeyInputs chunks that n records need and are not yet taken */
static Size
unallocated_inputs_bytes(GpuSortState *st, size_t n)
{
	size_t		chunks = (n + GPUSORT_CHUNK_RECORDS - 1) / GPUSORT_CHUNK_RECORDS;

	if (!st->layout.generic || chunks <= st->inputs.nchunks)
		return 0;
	return (chunks - st->inputs.nchunks) * inputs_chunk_bytes(st);
}

/*
 * Bytes the sort would hold with n records and `more` bytes of arena beyond
 * what it has: tuples, keys and the sort's workspace.
 */
static Size
projected_memory(GpuSortState *st, size_t n, Size more)
{
	int			words = Max(st->layout.key_words, 1);

	Size		bytes;

	bytes = st->arena_bytes + more + n * sizeof(MinimalTuple) +
		st->inputs_bytes + unallocated_inputs_bytes(st, n) +
		n * words * sizeof(uint64) +	/* keys */
		n * (sizeof(uint32) + sizeof(MinimalTuple));	/* order */

	/* the CPU engine's radix sort needs a workspace; the GPU sorts on the GPU */
	if (!st->engine_is_gpu)
		bytes += gs_cpu_radix_workspace(n, words);
	return bytes;
}

/* size bytes of the sort's memory, like palloc: out of memory is an ERROR */
static void *
sort_alloc(GpuSortState *st, Size size)
{
	void	   *p = hostmem_alloc(st->sortcxt, size);

	if (p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed on request of size %zu in GpuSort.", size)));
	return p;
}

static bool
over_memory_limit(GpuSortState *st, size_t n, Size more)
{
	return projected_memory(st, n, more) > (Size) gpusort_max_memory_kb * 1024;
}

static void *
arena_alloc(GpuSortState *st, Size len)
{
	void	   *p;

	len = MAXALIGN(len);
	if (len > st->block_left)
	{
		Size		block = Max(st->next_block_size, len);

		/* gpusort.max_memory is enforced where the memory is taken */
		st->arena_over_limit = over_memory_limit(st, st->ntuples, block);
		if (st->arena_over_limit)
			return NULL;

		if (gpusort_fault_arena_oom(st->arena_bytes))
		{
			st->block_left = 0;
			return NULL;
		}
		st->block_free = hostmem_alloc(st->sortcxt, block);
		if (st->block_free == NULL)
		{
			st->block_left = 0;
			return NULL;
		}
		st->block_left = block;
		st->arena_bytes += block;
		st->next_block_size = Min(st->next_block_size * 2, ARENA_MAX_BLOCK);
	}
	p = st->block_free;
	st->block_free += len;
	st->block_left -= len;
	return p;
}

/*
 * Copy the slot's tuple into the arena as a MinimalTuple, once.  False if
 * memory ran out (the caller falls back to tuplesort).
 */
static bool
arena_store(GpuSortState *st, TupleTableSlot *slot)
{
	MinimalTuple copy;
	bool		should_free;

	if (st->ntuples == st->maxtuples)
	{
		size_t		newmax = Max(st->maxtuples * 2, 1024);
		MinimalTuple *newtuples;

		newtuples = hostmem_alloc(st->sortcxt, newmax * sizeof(MinimalTuple));
		if (newtuples == NULL)
			return false;
		if (st->tuples)
		{
			memcpy(newtuples, st->tuples, st->ntuples * sizeof(MinimalTuple));
			hostmem_free(st->tuples, st->maxtuples * sizeof(MinimalTuple));
		}
		st->tuples = newtuples;
		st->maxtuples = newmax;
	}

	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		/* a heap tuple is a MinimalTuple behind a longer header */
		HeapTuple	htup = ExecFetchSlotHeapTuple(slot, false, &should_free);
		uint32		len = htup->t_len - MINIMAL_TUPLE_OFFSET;

		copy = arena_alloc(st, len);
		if (copy)
		{
			memcpy(copy, (char *) htup->t_data + MINIMAL_TUPLE_OFFSET, len);
			copy->t_len = len;
		}
		if (should_free)
			heap_freetuple(htup);
	}
	else if (TTS_IS_VIRTUAL(slot))
	{
		/* a projected row: form its MinimalTuple in the arena directly */
		TupleDesc	desc = slot->tts_tupleDescriptor;
		int			natts = desc->natts;
		bool		hasnull = false;
		Size		hoff;
		Size		data_len;

		slot_getallattrs(slot);
		for (int i = 0; i < natts && !hasnull; i++)
			hasnull = slot->tts_isnull[i];
		hoff = MAXALIGN(SizeofMinimalTupleHeader + (hasnull ? BITMAPLEN(natts) : 0));
		data_len = heap_compute_data_size(desc, slot->tts_values, slot->tts_isnull);
		copy = arena_alloc(st, hoff + data_len);
		if (copy)
		{
			memset(copy, 0, hoff + data_len);
			copy->t_len = hoff + data_len;
			HeapTupleHeaderSetNatts(copy, natts);
			copy->t_hoff = hoff + MINIMAL_TUPLE_OFFSET;
			heap_fill_tuple(desc, slot->tts_values, slot->tts_isnull,
							(char *) copy + hoff, data_len, &copy->t_infomask,
							hasnull ? copy->t_bits : NULL);
		}
	}
	else
	{
		MinimalTuple mtup = ExecFetchSlotMinimalTuple(slot, &should_free);

		copy = arena_alloc(st, mtup->t_len);
		if (copy)
			memcpy(copy, mtup, mtup->t_len);
		if (should_free)
			pfree(mtup);
	}
	if (copy == NULL)
		return false;
	st->tuples[st->ntuples++] = copy;
	return true;
}

/* ---------------------------------------------------------------------
 * Engines and encoding
 * ---------------------------------------------------------------------
 */

static void
add_fallback_reason(GpuSortState *st, const char *why)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(st));

	if (st->stats.fallback == NULL)
		st->stats.fallback = pstrdup(why);
	else if (strstr(st->stats.fallback, why) == NULL)
		st->stats.fallback = psprintf("%s; %s", st->stats.fallback, why);
	MemoryContextSwitchTo(oldcxt);
}

/* Pick and start an engine for the current layout. */
static void
start_engine(GpuSortState *st)
{
	char	   *why = NULL;
	size_t		expected = Max((size_t) outerPlanState(st)->plan->plan_rows, st->ntuples);

	/* key threads may be writing into the old engine's chunks */
	if (st->pool)
		keythreads_wait_all(st->pool);
	if (st->chunk_tasks)
	{
		memset(st->chunk_tasks, 0, sizeof(KeyTaskGroup) * MAX_CHUNKS);
		memset(st->chunk_builds, 0, sizeof(ChunkBuild *) * MAX_CHUNKS);
	}
	if (st->engine)
		st->engine->methods->end(st->engine);
	st->engine = NULL;
	st->nencoded = 0;
	st->nsubmitted = 0;

	if (!st->gpu_failed && st->layout.key_words > 0 &&
		gpusort_engine != GPUSORT_ENGINE_CPU)
	{
		if (gpusort_engine == GPUSORT_ENGINE_AUTO &&
			!gpu_engine_initialized() && expected < (size_t) gpusort_gpu_min_rows)
			why = psprintf("%zu rows expected: too few to repay starting CUDA (gpusort.gpu_min_rows)",
						   expected);
		else
			st->engine = gpu_engine_begin(st->sortcxt, st->layout.key_words,
										  expected, &why);
		if (st->engine == NULL)
		{
			st->gpu_failed = true;
			add_fallback_reason(st, why);
		}
	}
	st->engine_is_gpu = (st->engine != NULL);
	if (st->engine == NULL)
		st->engine = cpu_engine_begin(st->sortcxt, st->layout.key_words);
}

static void switch_to_tuplesort(GpuSortState *st, const char *why);

/*
 * The engine failed.  After the GPU engine, go on with the CPU engine from
 * the first record; after the CPU engine (out of memory), with tuplesort.
 */
static void
engine_failed(GpuSortState *st, const char *why)
{
	if (st->engine_is_gpu)
	{
		st->gpu_failed = true;
		add_fallback_reason(st, why);
		start_engine(st);
	}
	else
		switch_to_tuplesort(st, why);
}

/*
 * Hand chunk chunkno, records up to chunk_end, to the engine.  False if
 * the engine failed: it was replaced (engine_failed), and encoding starts
 * over from the first record.
 */
static bool
submit_chunk(GpuSortState *st, size_t chunkno, size_t chunk_end)
{
	char	   *why = NULL;

	if (!st->engine->methods->submit(st->engine, chunkno,
									 chunk_end - chunkno * GPUSORT_CHUNK_RECORDS, &why))
	{
		engine_failed(st, why);
		return false;
	}
	st->nsubmitted = chunk_end;
	return true;
}

/* Take the KeyInputs chunks that records below upto need (generic layouts). */
static void
alloc_inputs(GpuSortState *st, size_t upto)
{
	KeyInputs  *in = &st->inputs;
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;

	while (in->nchunks * chunk_records < upto)
	{
		size_t		chunkno = in->nchunks;

		in->values[chunkno] = sort_alloc(st, sizeof(Datum) * chunk_records * in->ncols);
		in->isnull[chunkno] = sort_alloc(st, sizeof(bool) * chunk_records * in->ncols);
		st->input_states[chunkno] = sort_alloc(st, chunk_records);
		memset(st->input_states[chunkno], INPUTS_TO_DEFORM, chunk_records);
		in->nchunks++;
		st->inputs_bytes += inputs_chunk_bytes(st);
	}
}

/* The backend keeps record i's key column datums, detoasted. */
static void
store_record_inputs(GpuSortState *st, size_t i)
{
	KeyInputs  *in = &st->inputs;

	ExecStoreMinimalTuple(st->tuples[i], st->work_slot, false);
	key_store_inputs(&st->layout, st->work_slot,
					 key_inputs_values(in, i), key_inputs_isnull(in, i),
					 st->sortcxt, &st->inputs_bytes);
	st->input_states[i / in->chunk_records][i % in->chunk_records] = INPUTS_STORED;
}

/* Keep the key column datums of records ninputs .. upto-1 (generic layouts). */
static void
store_inputs(GpuSortState *st, size_t upto)
{
	alloc_inputs(st, upto);
	for (; st->ninputs < upto; st->ninputs++)
		store_record_inputs(st, st->ninputs);
	ExecClearTuple(st->work_slot);
}

/*
 * Build record i's prefix into the chunk's key buffer, taking its datums
 * from the tuple first if no one has.  False if the key could not be built
 * (the context says why), or, with *for_backend set, if the datums need
 * the backend.
 */
static bool
build_record_key(KeyBuildContext *ctx, ChunkBuild *cb, size_t i, bool *for_backend)
{
	uint8	   *state = &cb->input_state[i - cb->first];
	Datum	   *values = key_inputs_values(cb->inputs, i);
	bool	   *isnull = key_inputs_isnull(cb->inputs, i);
	uint8		bytes[GPUSORT_MAX_KEY_BYTES];
	bool		ended;

	*for_backend = false;
	if (*state != INPUTS_STORED)
	{
		if (cb->tuples == NULL ||
			!key_deform_inputs(cb->layout, cb->tuples[i], values, isnull))
		{
			*state = INPUTS_FOR_BACKEND;
			*for_backend = true;
			return false;
		}
		*state = INPUTS_STORED;
	}
	if (!key_build_window(ctx, values, isnull, 0, cb->key_bytes, bytes, &ended))
		return false;
	key_bytes_to_words(bytes, cb->key_words,
					   cb->keys + (i - cb->first) * cb->key_words);
	return true;
}

/* a key-building task: the prefixes of records [from, to) of one chunk */
static bool
build_chunk_keys(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	ChunkBuild *cb = (ChunkBuild *) arg;

	for (size_t i = from; i < to; i++)
	{
		bool		for_backend;

		if ((i & 63) == 0 && key_build_stopped(ctx))
			return false;
		if (!build_record_key(ctx, cb, i, &for_backend) && !for_backend)
			return false;
	}
	return true;
}

/*
 * After the key threads are done with a chunk: the records whose datums
 * only the backend can take (detoasting, added columns), and their keys.
 */
static bool
finish_chunk_inputs(GpuSortState *st, ChunkBuild *cb, size_t end)
{
	uint8	   *states = cb->input_state;
	KeyBuildContext *ctx = keythreads_backend_context(st->pool);
	bool		ok = true;

	for (size_t i = cb->first; i < end && ok; i++)
	{
		uint8	   *next = memchr(states + (i - cb->first), INPUTS_FOR_BACKEND, end - i);
		bool		for_backend;

		if (next == NULL)
			break;
		i = cb->first + (next - states);
		store_record_inputs(st, i);
		ok = build_record_key(ctx, cb, i, &for_backend);
	}
	ExecClearTuple(st->work_slot);
	if (!ok)
		switch_to_tuplesort(st, psprintf("key building failed: %s",
										 key_build_error(ctx)));
	return ok;
}

/*
 * encode_records() for generic layouts: the building of each record's key
 * is queued to the key threads.  With collation keys, the backend keeps
 * each record's datums and the threads build while it reads on; other keys
 * are queued at the end, when the threads take the datums from the tuples
 * too.  A chunk is submitted once full and built; at the end, the backend
 * waits for (and helps with) what is left.
 */
static void
encode_generic(GpuSortState *st, bool final)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;

	/*
	 * Keys that cost little (C text, numeric, bytea, ...) wait for the end
	 * of the input, when every thread and the backend build them at once:
	 * threads busy beside the backend slow its reading down by more than
	 * such keys cost.  Collation keys are built while the input is read,
	 * unless gpusort.key_overlap is off.
	 */
	if (!final && !st->layout.costly_keys)
		return;

	while (st->tuplesort == NULL)
	{
		bool		restarted = false;

		/* queue the building of every new record's key */
		while (st->tuplesort == NULL && st->nencoded < st->ntuples && !restarted)
		{
			size_t		chunkno = st->nencoded / chunk_records;
			size_t		chunk_end = Min(st->ntuples, (chunkno + 1) * chunk_records);
			char	   *why = NULL;
			ChunkBuild *cb = st->chunk_builds[chunkno];

			if (cb == NULL)
			{
				uint64	   *keys = st->engine->methods->chunk(st->engine, chunkno, &why);

				if (keys == NULL)
				{
					engine_failed(st, why);
					restarted = true;
					break;
				}
				alloc_inputs(st, chunk_end);
				cb = MemoryContextAlloc(st->sortcxt, sizeof(ChunkBuild));
				cb->inputs = &st->inputs;
				cb->input_state = st->input_states[chunkno];
				/* the tuple array moves while it grows: only once it ended */
				cb->tuples = final ? st->tuples : NULL;
				cb->layout = &st->layout;
				cb->keys = keys;
				cb->first = chunkno * chunk_records;
				cb->key_bytes = st->layout.key_bytes;
				cb->key_words = st->layout.key_words;
				st->chunk_builds[chunkno] = cb;
			}
			if (st->layout.costly_keys)
				store_inputs(st, chunk_end);
			keythreads_submit(st->pool, &st->chunk_tasks[chunkno], build_chunk_keys, cb,
							  st->nencoded, chunk_end);
			st->nencoded = chunk_end;
		}
		if (restarted)
			continue;

		/* submit the chunks that are complete and built, in order */
		while (st->tuplesort == NULL && st->nsubmitted < st->nencoded)
		{
			size_t		chunkno = st->nsubmitted / chunk_records;
			size_t		chunk_end = Min(st->nencoded, (chunkno + 1) * chunk_records);

			if (!final && (chunk_end % chunk_records != 0 ||
						   !keythreads_group_done(st->pool, &st->chunk_tasks[chunkno])))
				break;
			keythreads_wait(st->pool, &st->chunk_tasks[chunkno]);
			if (keythreads_failure(st->pool))
			{
				switch_to_tuplesort(st, psprintf("key building failed: %s",
												 keythreads_failure(st->pool)));
				break;
			}
			if (!finish_chunk_inputs(st, st->chunk_builds[chunkno], chunk_end))
				break;
			if (!submit_chunk(st, chunkno, chunk_end))
			{
				restarted = true;
				break;
			}
		}
		if (!restarted)
			break;
	}
}

/*
 * Fixed layouts of large inputs: the keys past the first
 * PARALLEL_ENCODE_FROM records are encoded once the input has ended, by
 * the key threads and the backend together, rather than by the backend
 * between reading rows (reading is the backend's own work, which threads
 * cannot share).  Smaller inputs are encoded as they are read.
 */
#define PARALLEL_ENCODE_FROM	(2 * GPUSORT_CHUNK_RECORDS)

/* a key-encoding task's view of one engine chunk (fixed layouts) */
typedef struct ChunkEncode
{
	KeyLayout  *layout;
	MinimalTuple *tuples;		/* the arena's tuples (the input has ended) */
	uint64	   *keys;			/* the engine's buffer for the chunk */
	size_t		first;			/* record index of the chunk's first key */
	size_t		from;			/* records from .. to-1 are this task's */
	size_t		to;
	Datum	   *values;			/* room for one record's column datums */
	bool	   *isnull;
	bool	   *null_seen;		/* per column: NULL where the key has no
								 * NULL byte */
	bool		needs_backend;	/* a tuple lacks key columns */
} ChunkEncode;

static bool
encode_chunk_keys(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	ChunkEncode *ce = (ChunkEncode *) arg;
	int			words = ce->layout->key_words;

	for (size_t i = from; i < to; i++)
	{
		KeyEncodeResult result = key_encode_record(ce->layout, ce->tuples[i],
												   ce->values, ce->isnull,
												   ce->null_seen,
												   ce->keys + (i - ce->first) * words);

		/* a new layout means encoding every key again: stop here */
		if (result == KEY_NEEDS_NULL_BYTE)
			break;
		if (result == KEY_NEEDS_BACKEND)
		{
			ce->needs_backend = true;
			break;
		}
	}
	return true;
}

/* The key threads, started the first time a sort wants them. */
static void
start_key_threads(GpuSortState *st)
{
	if (st->pool)
		return;
	st->threadcxt = AllocSetContextCreate(st->sortcxt, "GpuSort key threads",
										  ALLOCSET_SMALL_SIZES);
	st->pool = keythreads_start(&st->layout, keythreads_wanted(), st->threadcxt);
	st->stats.key_threads = keythreads_count(st->pool);
}

/*
 * Encode records nencoded .. ntuples-1 of a fixed layout in the key
 * threads and submit every chunk; the input has ended.  Tuples the
 * threads cannot read are encoded by the backend, and a NULL where the
 * layout has no NULL byte places the layout again and starts over.
 */
static void
encode_fixed_in_threads(GpuSortState *st)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;
	KeyLayout  *layout = &st->layout;
	MemoryContext oldcxt = MemoryContextSwitchTo(st->sortcxt);

	start_key_threads(st);
	while (st->tuplesort == NULL)
	{
		size_t		nchunks = (st->ntuples - st->nencoded + chunk_records - 1) / chunk_records + 1;
		ChunkEncode *tasks = palloc0(sizeof(ChunkEncode) * nchunks);
		int			ntasks = 0;
		KeyTaskGroup group = {0};
		bool		restarted = false;
		bool		relayout = false;

		/* 1: a buffer for every chunk, and a task encoding into it */
		for (size_t from = st->nencoded; from < st->ntuples;)
		{
			size_t		chunkno = from / chunk_records;
			size_t		to = Min(st->ntuples, (chunkno + 1) * chunk_records);
			ChunkEncode *ce = &tasks[ntasks++];
			char	   *why = NULL;

			ce->keys = st->engine->methods->chunk(st->engine, chunkno, &why);
			if (ce->keys == NULL)
			{
				keythreads_wait(st->pool, &group);
				engine_failed(st, why);
				restarted = true;
				break;
			}
			ce->layout = layout;
			ce->tuples = st->tuples;
			ce->first = chunkno * chunk_records;
			ce->from = from;
			ce->to = to;
			ce->values = palloc(sizeof(Datum) * layout->ncols);
			ce->isnull = palloc(sizeof(bool) * layout->ncols);
			ce->null_seen = palloc0(sizeof(bool) * layout->ncols);
			keythreads_submit(st->pool, &group, encode_chunk_keys, ce, from, to);
			from = to;
		}
		if (restarted)
			continue;
		keythreads_wait(st->pool, &group);

		/* 2: what the threads left to the backend or to a new layout */
		for (int t = 0; t < ntasks && !relayout; t++)
		{
			ChunkEncode *ce = &tasks[t];

			for (int c = 0; c < layout->ncols; c++)
			{
				if (ce->null_seen[c])
				{
					layout->cols[c].null_byte = true;
					relayout = true;
				}
			}
			for (size_t i = ce->from; i < ce->to && ce->needs_backend && !relayout; i++)
				relayout = !key_encode_tuple(layout, st->tuples[i], st->work_slot,
											 ce->keys + (i - ce->first) * layout->key_words);
		}
		ExecClearTuple(st->work_slot);
		if (relayout)
		{
			key_layout_place(layout);
			start_engine(st);	/* from the first record */
			continue;
		}
		st->nencoded = st->ntuples;

		/* 3: submit the chunks in order */
		while (st->nsubmitted < st->ntuples && !restarted)
		{
			size_t		chunkno = st->nsubmitted / chunk_records;

			restarted = !submit_chunk(st, chunkno,
									  Min(st->ntuples, (chunkno + 1) * chunk_records));
		}
		if (!restarted)
			break;
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Encode the keys of records nencoded .. ntuples-1 into the engine and
 * submit the chunks that fill up (all of them if final).  A first NULL in a
 * column whose key had no NULL byte changes the layout: the engine starts
 * over and every record is encoded again.
 */
static void
encode_records(GpuSortState *st, bool final)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;
	instr_time	start;

	gpusort_fault_point(GPUSORT_PHASE_ENCODE);
	INSTR_TIME_SET_CURRENT(start);
	if (st->layout.generic)
	{
		encode_generic(st, final);
		st->stats.encode_ms += elapsed_ms(start);
		return;
	}
	if (st->nencoded >= PARALLEL_ENCODE_FROM && keythreads_wanted() > 0)
	{
		if (final)
			encode_fixed_in_threads(st);
		st->stats.encode_ms += elapsed_ms(start);
		return;
	}
	while (st->tuplesort == NULL &&
		   (st->nencoded < st->ntuples || (final && st->nsubmitted < st->ntuples)))
	{
		size_t		chunkno = st->nencoded / chunk_records;
		size_t		chunk_end = Min(st->ntuples, (chunkno + 1) * chunk_records);
		char	   *why = NULL;
		uint64	   *keys;
		bool		relayout = false;

		if (st->nencoded < chunk_end)
		{
			keys = st->engine->methods->chunk(st->engine, chunkno, &why);
			if (keys == NULL)
			{
				engine_failed(st, why);
				continue;
			}
			for (size_t i = st->nencoded; i < chunk_end; i++)
			{
				if (!key_encode_tuple(&st->layout, st->tuples[i], st->work_slot,
									  keys + (i % chunk_records) * st->layout.key_words))
				{
					relayout = true;
					break;
				}
			}
			ExecClearTuple(st->work_slot);
			if (relayout)
			{
				key_layout_place(&st->layout);
				start_engine(st);
				continue;
			}
			st->nencoded = chunk_end;
		}

		/* submit a full chunk, or the last one when the input has ended */
		if (chunk_end % chunk_records != 0 && !final)
			break;
		(void) submit_chunk(st, chunkno, chunk_end);
	}
	st->stats.encode_ms += elapsed_ms(start);
}

/* ---------------------------------------------------------------------
 * Fallback to PostgreSQL's tuplesort
 * ---------------------------------------------------------------------
 */

/* sortcxt was reset: the inputs and the key threads are gone */
static void
forget_key_inputs(GpuSortState *st)
{
	memset(&st->inputs, 0, sizeof(st->inputs));
	st->input_states = NULL;
	st->ninputs = 0;
	st->inputs_bytes = 0;
	st->threadcxt = NULL;
	st->pool = NULL;
	st->chunk_tasks = NULL;
	st->chunk_builds = NULL;
}

/* For a generic layout: room for the inputs, and the key threads. */
static void
start_key_inputs(GpuSortState *st)
{
	KeyInputs  *in = &st->inputs;

	in->chunk_records = GPUSORT_CHUNK_RECORDS;
	in->ncols = st->layout.full_cols;
	in->nchunks = 0;
	in->values = MemoryContextAllocZero(st->sortcxt, sizeof(Datum *) * MAX_CHUNKS);
	in->isnull = MemoryContextAllocZero(st->sortcxt, sizeof(bool *) * MAX_CHUNKS);
	st->input_states = MemoryContextAllocZero(st->sortcxt, sizeof(uint8 *) * MAX_CHUNKS);
	st->chunk_tasks = MemoryContextAllocZero(st->sortcxt, sizeof(KeyTaskGroup) * MAX_CHUNKS);
	st->chunk_builds = MemoryContextAllocZero(st->sortcxt, sizeof(ChunkBuild *) * MAX_CHUNKS);
	start_key_threads(st);
}

static void
switch_to_tuplesort(GpuSortState *st, const char *why)
{
	TupleDesc	tupdesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;

	add_fallback_reason(st, why);
	st->tuplesort = tuplesort_begin_heap(tupdesc, st->info.numCols,
										 st->info.sortColIdx,
										 st->info.sortOperators,
										 st->info.collations,
										 st->info.nullsFirst,
										 work_mem, NULL,
										 st->random_access ? TUPLESORT_RANDOMACCESS : TUPLESORT_NONE);
	for (size_t i = 0; i < st->ntuples; i++)
	{
		ExecStoreMinimalTuple(st->tuples[i], st->work_slot, false);
		tuplesort_puttupleslot(st->tuplesort, st->work_slot);
	}
	ExecClearTuple(st->work_slot);

	/* the tuples now live in the tuplesort */
	if (st->pool)
		keythreads_wait_all(st->pool);
	if (st->engine)
		st->engine->methods->end(st->engine);
	st->engine = NULL;
	MemoryContextReset(st->sortcxt);
	forget_key_inputs(st);
	st->tuples = NULL;
	st->ntuples = st->maxtuples = 0;
	st->block_left = 0;
	st->arena_bytes = 0;
	strlcpy(st->stats.engine, "PostgreSQL tuplesort", sizeof(st->stats.engine));
	st->stats.algorithm[0] = '\0';
}


/* ---------------------------------------------------------------------
 * The sort
 * ---------------------------------------------------------------------
 */

static void
reset_sort(GpuSortState *st)
{
	if (st->engine)
		st->engine->methods->end(st->engine);
	st->engine = NULL;
	if (st->tuplesort)
		tuplesort_end(st->tuplesort);
	st->tuplesort = NULL;
	MemoryContextReset(st->sortcxt);	/* stops key threads first */
	forget_key_inputs(st);
	st->tuples = NULL;
	st->ntuples = st->maxtuples = 0;
	st->block_free = NULL;
	st->block_left = 0;
	st->next_block_size = ARENA_MIN_BLOCK;
	st->arena_bytes = 0;
	st->sorted = NULL;
	st->nencoded = st->nsubmitted = 0;
	st->gpu_failed = false;
	st->pos = -1;
	st->markpos = -1;
	st->sort_done = false;
}

/*
 * Order what the engine's keys left equal: on the fixed path, runs of equal
 * inexact keys go to the comparators; on the generic path, runs of equal
 * prefixes are refined on further key bytes, what the full keys leave equal
 * goes to the comparators, and libc order is certified.  If refinement or
 * the check cannot be done (an engine or key building failed), the sort
 * goes to tuplesort.
 */
static void
resolve_order(GpuSortState *st, uint32 *perm)
{
	Tiebreak	tb;
	int64		resolved = 0;
	instr_time	start;

	tb.layout = &st->layout;
	tb.ssup = st->ssup;
	tb.abbrev = st->abbrev;
	tb.slot = st->work_slot;
	tb.slot2 = st->work_slot2;
	tb.tuples = st->tuples;

	if (!st->layout.generic)
	{
		INSTR_TIME_SET_CURRENT(start);
		gpusort_resolve_ties(&tb, &st->engine->keys, perm, st->ntuples, &resolved);
		st->stats.resolved += resolved;
		st->stats.resolve_ms += elapsed_ms(start);
		return;
	}
	else
	{
		RefineContext rc;
		SortRun    *runs = NULL;
		size_t		nruns = 0;
		char	   *why = NULL;
		MemoryContext refinecxt;

		/* the key threads are idle now: the prefixes were all built */
		memset(&rc, 0, sizeof(rc));
		refinecxt = AllocSetContextCreate(st->sortcxt, "GpuSort refine",
										  ALLOCSET_DEFAULT_SIZES);
		rc.layout = &st->layout;
		rc.inputs = &st->inputs;
		rc.pool = st->pool;
		rc.cxt = refinecxt;
		rc.use_gpu = st->engine_is_gpu;
		rc.tb = &tb;

		INSTR_TIME_SET_CURRENT(start);
		if (!gpusort_refine(&rc, st->engine, perm, st->ntuples,
							&runs, &nruns, &why))
		{
			MemoryContextDelete(refinecxt);
			switch_to_tuplesort(st, psprintf("refinement failed: %s", why));
			return;
		}
		st->stats.refine_ms += elapsed_ms(start);

		INSTR_TIME_SET_CURRENT(start);
		gpusort_sort_runs(&tb, perm, runs, nruns, &resolved);
		st->stats.resolved += resolved;
		st->stats.resolve_ms += elapsed_ms(start);

		if (st->layout.verify)
		{
			INSTR_TIME_SET_CURRENT(start);
			if (!gpusort_certify_libc_order(&rc, perm, st->ntuples, &why))
			{
				MemoryContextDelete(refinecxt);
				switch_to_tuplesort(st, psprintf("order check failed: %s", why));
				return;
			}
			st->stats.check_ms += elapsed_ms(start);
		}
		st->stats.refine_rounds += rc.rounds;
		st->stats.refined += rc.refined;
		st->stats.refined_on_gpu |= rc.rounds_on_gpu;
		st->stats.checked_pairs += rc.checked_pairs;
		st->stats.repaired += rc.repaired;
		st->stats.key_build_ms = keythreads_busy_ms(st->pool);
		MemoryContextDelete(refinecxt);
	}
}

/* a task of gather_sorted_tuples: sorted[from .. to-1] */
typedef struct GatherTuples
{
	MinimalTuple *sorted;
	MinimalTuple *tuples;
	const uint32 *perm;
	size_t		n;
} GatherTuples;

static bool
gather_tuple_pointers(KeyBuildContext *ctx, void *arg, size_t from, size_t to)
{
	GatherTuples *g = (GatherTuples *) arg;

	for (size_t i = from; i < to; i++)
	{
		if (i + EMIT_PREFETCH < g->n)
			prefetch_tuple(&g->tuples[g->perm[i + EMIT_PREFETCH]]);
		g->sorted[i] = g->tuples[g->perm[i]];
	}
	return true;
}

/*
 * The result as the tuples' pointers in sorted order, gathered once (in
 * the key threads where the sort has them) rather than looked up through
 * the permutation at each row emitted: emitting then waits for one cache
 * miss per row, the tuple, instead of two.  The load-order pointers are
 * not needed any more and go.
 */
static void
gather_sorted_tuples(GpuSortState *st, const uint32 *perm)
{
	GatherTuples g;

	g.sorted = sort_alloc(st, Max(st->ntuples, 1) * sizeof(MinimalTuple));
	g.tuples = st->tuples;
	g.perm = perm;
	g.n = st->ntuples;
	if (st->pool && st->ntuples >= GPUSORT_CHUNK_RECORDS)
		keythreads_parallel_for(st->pool, gather_tuple_pointers, &g, st->ntuples,
								GPUSORT_CHUNK_RECORDS / 2);
	else
		gather_tuple_pointers(NULL, &g, 0, st->ntuples);
	st->sorted = g.sorted;
	if (st->tuples)
		hostmem_free(st->tuples, st->maxtuples * sizeof(MinimalTuple));
	st->tuples = NULL;
	st->maxtuples = 0;
}

static void
load_and_sort(GpuSortState *st)
{
	PlanState  *outer = outerPlanState(st);
	TupleDesc	tupdesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	instr_time	start;
	double		load_start_encode_ms;
	uint32	   *perm = NULL;
	char	   *why = NULL;

	reset_sort(st);
	st->stats.sorts++;
	st->stats.fallback = NULL;
	strlcpy(st->stats.engine, "", sizeof(st->stats.engine));

	{
		MemoryContext oldcxt = MemoryContextSwitchTo(st->sortcxt);

		key_layout_init(&st->layout, tupdesc, st->info.numCols,
						st->info.sortColIdx, st->info.sortOperators,
						st->info.collations, st->info.nullsFirst,
						gpusort_key_width);
		MemoryContextSwitchTo(oldcxt);
	}
	if (st->layout.generic)
		start_key_inputs(st);
	start_engine(st);

	/* 1-2: load, encoding and submitting each chunk as it fills */
	INSTR_TIME_SET_CURRENT(start);
	load_start_encode_ms = st->stats.encode_ms;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(outer);

		if (TupIsNull(slot))
			break;
		if (st->tuplesort)
		{
			tuplesort_puttupleslot(st->tuplesort, slot);
			continue;
		}
		if (!arena_store(st, slot))
		{
			switch_to_tuplesort(st, st->arena_over_limit ?
								"gpusort.max_memory exceeded" :
								"out of memory for the tuples");
			tuplesort_puttupleslot(st->tuplesort, slot);
			continue;
		}
		if (st->ntuples % ENCODE_BATCH == 0)
		{
			gpusort_fault_point(GPUSORT_PHASE_LOAD);
			if (st->ntuples >= (size_t) PG_UINT32_MAX)
				switch_to_tuplesort(st, "more rows than 32-bit record indexes address");
			else if (over_memory_limit(st, st->ntuples, 0))
				switch_to_tuplesort(st, "gpusort.max_memory exceeded");
			else
				encode_records(st, false);
		}
	}
	if (!st->tuplesort && over_memory_limit(st, st->ntuples, 0))
		switch_to_tuplesort(st, "gpusort.max_memory exceeded");
	st->stats.load_ms += elapsed_ms(start) - (st->stats.encode_ms - load_start_encode_ms);

	/*
	 * 2-3: the last chunk, then the engine's sort; the CPU engine if the GPU
	 * fails, tuplesort if the CPU engine runs out of memory.
	 */
	while (st->tuplesort == NULL)
	{
		encode_records(st, true);
		if (st->tuplesort)
			break;
		gpusort_fault_point(GPUSORT_PHASE_SORT);
		st->engine->want_ties = st->layout.generic;
		INSTR_TIME_SET_CURRENT(start);
		if (st->engine->methods->sort(st->engine, st->ntuples, &perm, &why))
		{
			st->stats.sort_ms += elapsed_ms(start);
			break;
		}
		st->stats.sort_ms += elapsed_ms(start);
		engine_failed(st, why);
	}

	/* 4: order what the keys left equal */
	if (st->tuplesort == NULL)
	{
		gpusort_fault_point(GPUSORT_PHASE_RESOLVE);
		resolve_order(st, perm);
	}

	if (st->tuplesort)
	{
		INSTR_TIME_SET_CURRENT(start);
		tuplesort_performsort(st->tuplesort);
		st->stats.sort_ms += elapsed_ms(start);
		st->sort_done = true;
		elog(DEBUG1, "gpusort: sorted by PostgreSQL tuplesort; fallback: %s",
			 st->stats.fallback);
		return;
	}

	/* keep the order in our memory; the engine's buffers can go */
	gather_sorted_tuples(st, perm);

	{
		SortEngineStats *es = &st->engine->stats;

		strlcpy(st->stats.engine, es->engine, sizeof(st->stats.engine));
		strlcpy(st->stats.algorithm, es->algorithm, sizeof(st->stats.algorithm));
		st->stats.transfer_ms += es->transfer_ms;
		st->stats.device_sort_ms += es->device_sort_ms;
		st->stats.device_memory = Max(st->stats.device_memory, es->device_bytes);
	}
	st->stats.memory = Max(st->stats.memory,
						   MemoryContextMemAllocated(st->sortcxt, true) +
						   hostmem_owned(st->sortcxt));
	st->engine->methods->end(st->engine);
	st->engine = NULL;

	st->stats.key_words = st->layout.key_words;
	st->stats.exact = st->layout.exact;
	st->stats.key_kind = key_layout_describe(&st->layout);
	st->stats.generic_keys = st->layout.generic;
	st->stats.records += st->ntuples;
	st->sort_done = true;

	/*
	 * One line per sort, for test/gpu/run.sh to see which engine sorted,
	 * with the times of the phases so far (without EXPLAIN ANALYZE's
	 * per-row instrumentation in them).
	 */
	elog(DEBUG1, "gpusort: %zu records sorted by %s, %s%s%s (load %.0f ms, encode %.0f ms, key build %.0f ms busy, sort %.0f ms, refine %.0f ms, check %.0f ms, comparators %.0f ms)",
		 st->ntuples, st->stats.engine, st->stats.algorithm,
		 st->stats.fallback ? "; fallback: " : "",
		 st->stats.fallback ? st->stats.fallback : "",
		 st->stats.load_ms, st->stats.encode_ms, st->stats.key_build_ms,
		 st->stats.sort_ms, st->stats.refine_ms, st->stats.check_ms,
		 st->stats.resolve_ms);
}

/* ---------------------------------------------------------------------
 * Executor callbacks
 * ---------------------------------------------------------------------
 */

static TupleTableSlot *
gpusort_exec(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	bool		forward = ScanDirectionIsForward(node->ss.ps.state->es_direction);
	Instrumentation *instr = node->ss.ps.instrument;
	instr_time	start;
	bool		timed = (instr != NULL && instr->need_timer);

	if (!st->sort_done)
		load_and_sort(st);
	gpusort_fault_point(GPUSORT_PHASE_EMIT);

	if (timed)
		INSTR_TIME_SET_CURRENT(start);

	if (st->tuplesort)
	{
		(void) tuplesort_gettupleslot(st->tuplesort, forward, false, slot, NULL);
	}
	else
	{
		/* pos stays within [-1, n]: one step past either end */
		if (forward)
			st->pos = Min(st->pos + 1, (int64) st->ntuples);
		else
			st->pos = Max(st->pos - 1, (int64) -1);

		if (st->pos >= 0 && st->pos < (int64) st->ntuples)
		{
			int64		ahead = st->pos + (forward ? EMIT_PREFETCH : -EMIT_PREFETCH);

			/*
			 * The tuples lie in load order, so each emitted tuple is a cache
			 * miss: fetch the tuple some steps ahead, so that it has arrived
			 * when the executor asks.
			 */
			if (ahead >= 0 && ahead < (int64) st->ntuples)
				prefetch_tuple(st->sorted[ahead]);
			ExecStoreMinimalTuple(st->sorted[st->pos], slot, false);
		}
		else
			ExecClearTuple(slot);
	}

	if (timed)
		st->stats.emit_ms += elapsed_ms(start);
	return slot;
}

static void
gpusort_end(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	reset_sort(st);
	ExecDropSingleTupleTableSlot(st->work_slot);
	ExecDropSingleTupleTableSlot(st->work_slot2);
	MemoryContextDelete(st->sortcxt);
	ExecEndNode(outerPlanState(node));
}

static void
gpusort_rescan(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;
	PlanState  *outer = outerPlanState(node);

	/* not sorted yet: the child, if its parameters changed, rescans itself */
	if (!st->sort_done)
		return;

	ExecClearTuple(node->ss.ss_ScanTupleSlot);

	/*
	 * Sort again if the input may differ, or if the sorted result cannot be
	 * rewound (a tuplesort made without random access); else just rewind.
	 */
	if (outer->chgParam != NULL || (st->tuplesort && !st->random_access))
	{
		reset_sort(st);
		if (outer->chgParam == NULL)
			ExecReScan(outer);
	}
	else if (st->tuplesort)
		tuplesort_rescan(st->tuplesort);
	else
	{
		st->pos = -1;
		st->markpos = -1;
	}
}

static void
gpusort_mark(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (!st->sort_done)
		return;
	if (st->tuplesort)
		tuplesort_markpos(st->tuplesort);
	else
		st->markpos = st->pos;
}

static void
gpusort_restore(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (!st->sort_done)
		return;
	if (st->tuplesort)
		tuplesort_restorepos(st->tuplesort);
	else
		st->pos = st->markpos;
}

static void
gpusort_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortState *st = (GpuSortState *) node;

	gpusort_explain_node(node, &st->info, st->stats.sorts > 0 ? &st->stats : NULL,
						 st->tuplesort, ancestors, es);
}

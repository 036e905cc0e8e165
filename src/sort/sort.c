/*-------------------------------------------------------------------------
 *
 * sort.c
 *	  gpusort's sort module: a sort of any size, in sorted runs under the
 *	  backend's memory budget, merged on the way out.
 *
 * The module sits under the executor node (nodeGpuSort.c) as tuplesort.c
 * sits under nodeSort.c, with the same contract (sort.h).  The tuples put
 * into it go into a batch (batch.h): loaded into an arena, encoded
 * into normalized keys and handed chunk by chunk to a sort engine (the GPU,
 * or the CPU engine) while the input is still read.
 *
 * The batch may hold what the backend's budget (gpusort.max_memory) leaves
 * to this sort, or less where the server's budget (gpusort.server_memory)
 * has less left: sort_memory.c decides what a batch may hold, when it is to
 * spill and when it gives its keys up; this file follows.  When the batch
 * is full, it is sorted and written to a temporary file as a sorted run
 * (run_write.c), its memory is freed, and loading goes on into an empty
 * batch; the last batch but one is cut short where the planner's estimate
 * of the input says so, so that the last batch, which is never written, is
 * a full one (balance_runs).
 *
 * With gpusort.write_behind, a run is written by its batch's pool threads
 * while the backend loads the next batch: the batch is moved aside
 * (`writing`) and freed when its run is written, and until then the next
 * batch may hold only what the budget leaves beside it; a batch that will
 * not take the rest of the input is spilled early, so that the next has
 * room to load meanwhile (sort_memory_spill_early), and it waits for the
 * writer only when it has filled that.  At most one run is written at a
 * time.  At the end of the input:
 *	- if nothing was written, the batch is sorted and its tuples are
 *	  returned straight from the arena, as they lie;
 *	- otherwise the last batch is sorted and stays in memory, and the runs
 *	  and it are merged (in several passes where there are more runs than
 *	  the merge memory can read at once), the final merge on the fly, or,
 *	  with random access, onto a tape of its own.
 * So size alone never sends a sort elsewhere, and more rows than a batch's
 * 32-bit record indexes address are just more runs.
 *
 * The executor nodes call it through sort.h: gpusort_sort_begin; the input
 * put in with gpusort_sort_puttupleslot, gpusort_sort_puttuple and, from a
 * parallel load, gpusort_sort_putblocks; gpusort_sort_performsort; the
 * result read with gpusort_sort_gettupleslot, gpusort_sort_markpos,
 * gpusort_sort_restorepos and gpusort_sort_rescan; gpusort_sort_reset for a
 * new input; gpusort_sort_get_stats; gpusort_sort_end; whether a column
 * has a key at all (gpusort_sort_column_has_key); and, for a parallel load's
 * blocks, gpusort_sort_load_share, gpusort_sort_load_pair,
 * gpusort_sort_load_room,
 * gpusort_sort_load_reserve, gpusort_sort_load_hold and
 * gpusort_sort_load_held.
 *
 * A parallel load's blocks are held in a share of the budget of their own
 * (gpusort_sort_load_share), which this file gives the load node over
 * sort_memory.c, so that the node needs nothing of the module but sort.h.
 *
 * src/README says in which file each stage of a sort lives.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"

#include "batch/batch.h"
#include "keys/keys.h"
#include "runs/run.h"
#include "runs/run_merge.h"
#include "sort/sort.h"
#include "sort/sort_memory.h"
#include "support/faults.h"
#include "support/hostmem.h"
#include "support/settings.h"
#include "support/stat.h"
#include "support/threadpool.h"

/* how many tuples ahead of the read position emitting prefetches */
#define EMIT_PREFETCH		16

/* bytes a record takes at the least (tuple, pointers, key, order) */
#define MIN_RECORD_BYTES	64

typedef enum SortStatus
{
	SORT_LOADING,				/* taking tuples */
	SORT_IN_MEMORY,				/* sorted, one batch: read from the arena */
	SORT_MERGED					/* sorted runs, read through the merge */
} SortStatus;

struct Sorter
{
	/* what begin was given, kept for gpusort_sort_reset() */
	TupleDesc	tupdesc;
	int			nkeys;
	AttrNumber *attNums;		/* the keys' columns, 1-based */
	Oid		   *sortOperators;
	Oid		   *sortCollations;
	bool	   *nullsFirstFlags;
	double		expected_rows;
	bool		random_access;
	bool		time_emit;		/* time the tuples returned (ANALYZE) */
	bool		maintenance;	/* an index build's (GPUSORT_SORT_MAINTENANCE) */

	/* what the sorts did, over every sort since begin: the caller's memory */
	GpuSortStats stats;

	MemoryContext cxt;			/* everything else of the sort */
	SortStatus	status;
	SortBatchShared sh;
	SortBatch	batch;
	bool		batch_started;	/* the batch has its limit and engine */
	size_t		last_batch_records;
	size_t		batch_record_cap;	/* 0, or the most records the batch
									 * takes: see balance_runs() */
	bool		runs_balanced;	/* a batch was cut short: not again */
	int64		tuples_put;		/* over all batches */
	double		full_batch_records; /* records a full batch holds, as the
									 * last spilled batch measured it */
	SortRuns   *runs;			/* NULL until a run is written */
	RunsMerge  *merge;			/* the runs' merge, once started */
	SortBatch	writing;		/* a batch whose run is written behind */
	bool		writing_active;
	SortMemory	memory;			/* its budget, the batch's ceiling and
								 * what the batch written behind holds */

	/* SORT_IN_MEMORY: the read position */
	int64		pos;			/* last returned, -1 before the first */
	int64		markpos;
	EmitCopy   *emit_copy;		/* the result copied in order ahead of pos
								 * (batch_emit.c), or NULL */

	/* the load phase's time: see load_phase_done() */
	instr_time	load_start;
	double		load_start_other_ms;	/* phases_during_load_ms() then */
};

/*
 * The time of the phases that may run while the input loads, as full
 * batches are encoded, sorted and written: the load phase is the rest.
 */
static double
phases_during_load_ms(const GpuSortStats *stats)
{
	return stats->encode_ms + stats->spill_ms + stats->sort_ms +
		stats->resolve_ms + stats->refine_ms + stats->check_ms;
}

/*
 * The input has been read (performsort): load time is the time spent
 * reading and storing the input since the sort began, less what the other
 * phases took meanwhile, which they report as their own.
 */
static void
load_phase_done(Sorter *state)
{
	GpuSortStats *stats = state->sh.stats;

	stats->load_ms += gpusort_elapsed_ms(state->load_start) -
		(phases_during_load_ms(stats) - state->load_start_other_ms);
}

/*
 * Set up an empty sort in a new memory context under parent: the sort
 * keys' support, the work slots, the key layout and an empty batch.
 */
static void
sort_start(Sorter *state, MemoryContext parent)
{
	GpuSortStats *stats = &state->stats;
	MemoryContext cxt = AllocSetContextCreate(parent, "GpuSort",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	SortBatchShared *sh = &state->sh;

	state->cxt = cxt;
	state->status = SORT_LOADING;
	state->pos = state->markpos = -1;
	budget_join(&state->memory.budget, cxt);
	state->memory.budget.maintenance = state->maintenance;

	sh->expected_rows = state->expected_rows;
	sh->stats = stats;
	sh->stats_cxt = parent;
	sh->ssup = palloc0(sizeof(SortSupportData) * state->nkeys);
	sh->abbrev = palloc0(sizeof(SortSupportData) * state->nkeys);
	for (int c = 0; c < state->nkeys; c++)
	{
		for (int abbreviate = 0; abbreviate <= 1; abbreviate++)
		{
			SortSupport ssup = abbreviate ? &sh->abbrev[c] : &sh->ssup[c];

			ssup->ssup_cxt = cxt;
			ssup->ssup_collation = state->sortCollations[c];
			ssup->ssup_nulls_first = state->nullsFirstFlags[c];
			ssup->ssup_attno = state->attNums[c];
			ssup->abbreviate = (abbreviate == 1);
			PrepareSortSupportFromOrderingOp(state->sortOperators[c], ssup);
		}
	}
	sh->work_slot = MakeSingleTupleTableSlot(state->tupdesc, &TTSOpsMinimalTuple);
	sh->work_slot2 = MakeSingleTupleTableSlot(state->tupdesc, &TTSOpsMinimalTuple);
	key_layout_init(&sh->layout, state->tupdesc, state->nkeys,
					state->attNums, state->sortOperators,
					state->sortCollations, state->nullsFirstFlags,
					gpusort_key_width);
	batch_init(&state->batch, sh, cxt);

	stats->sorts++;
	stats->fallback = NULL;
	stats->engine = SORT_ENGINE_NONE;
	stats->device[0] = '\0';
	stats->algorithm[0] = '\0';
	stats->budget = budget_total();
	stats->server_limited = false;
	state->load_start_other_ms = phases_during_load_ms(stats);
	INSTR_TIME_SET_CURRENT(state->load_start);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Free what the sort holds but its statistics: memory, engine, pool
 * threads, temporary files.
 */
static void
sort_release(Sorter *state)
{
	/* the writer's thread first: it reads the batch and writes a run */
	if (state->writing_active)
		batch_destroy(&state->writing);
	state->writing_active = false;
	/* the merge above the runs first: it reads them */
	if (state->merge)
		runs_merge_end(state->merge);
	if (state->runs)
		runs_end(state->runs);
	batch_destroy(&state->batch);
	ExecDropSingleTupleTableSlot(state->sh.work_slot);
	ExecDropSingleTupleTableSlot(state->sh.work_slot2);
	MemoryContextDelete(state->cxt);	/* gives the budget back */
}

/*
 * Begin a sort of tuples of tupdesc by nkeys keys: each key's column,
 * ordering operator, collation and nulls first, as tuplesort_begin_heap
 * takes them, copied here; tupdesc must outlive the sort.  expected_rows is
 * the planner's estimate of the input, by which the runs are balanced.
 * sortopt: GPUSORT_SORT_RANDOMACCESS, GPUSORT_SORT_TIMED,
 * GPUSORT_SORT_MAINTENANCE (sort.h).
 */
Sorter *
gpusort_sort_begin(TupleDesc tupdesc, int nkeys, const AttrNumber *attNums,
				   const Oid *sortOperators, const Oid *sortCollations,
				   const bool *nullsFirstFlags, double expected_rows,
				   int sortopt)
{
	Sorter	   *state = palloc0(sizeof(Sorter));

	Assert(nkeys > 0);
	state->tupdesc = tupdesc;
	state->nkeys = nkeys;
	state->attNums = palloc(sizeof(AttrNumber) * nkeys);
	memcpy(state->attNums, attNums, sizeof(AttrNumber) * nkeys);
	state->sortOperators = palloc(sizeof(Oid) * nkeys);
	memcpy(state->sortOperators, sortOperators, sizeof(Oid) * nkeys);
	state->sortCollations = palloc(sizeof(Oid) * nkeys);
	memcpy(state->sortCollations, sortCollations, sizeof(Oid) * nkeys);
	state->nullsFirstFlags = palloc(sizeof(bool) * nkeys);
	memcpy(state->nullsFirstFlags, nullsFirstFlags, sizeof(bool) * nkeys);
	state->expected_rows = expected_rows;
	state->random_access = (sortopt & GPUSORT_SORT_RANDOMACCESS) != 0;
	state->time_emit = (sortopt & GPUSORT_SORT_TIMED) != 0;
	state->maintenance = (sortopt & GPUSORT_SORT_MAINTENANCE) != 0;
	sort_start(state, CurrentMemoryContext);
	return state;
}

/*
 * Forget the tuples and free what they held, so that the same sort takes
 * a new input, as tuplesort_reset() does; its statistics add up over every
 * sort since begin, which is what EXPLAIN ANALYZE shows of a rescanned node.
 */
void
gpusort_sort_reset(Sorter *state)
{
	MemoryContext parent = MemoryContextGetParent(state->cxt);

	sort_release(state);
	memset(((char *) state) + offsetof(Sorter, cxt), 0,
		   sizeof(Sorter) - offsetof(Sorter, cxt));
	sort_start(state, parent);
}

/* What the sort's sorts did, since begin. */
const GpuSortStats *
gpusort_sort_get_stats(Sorter *state)
{
	return &state->stats;
}

/*
 * Cut the last batch but one short, so that the last batch is a full one.
 *
 * The last batch is not written; it is merged from memory.  Batches that
 * all fill up leave the last one with whatever remains, often a sliver,
 * and then nearly the whole input goes through the temporary files.  Once
 * the planner's estimate of the input says that what remains needs two
 * batches, the first of them takes only what the last cannot, so that the
 * last holds close to a full batch: up to a batch's worth less is written
 * and read back.  A full batch is reckoned from the last one (until a batch
 * is cut short, every batch before the last was spilled because it was
 * full): seven eighths of it if that was the first, which left no memory
 * to the merge, less a tenth, since rows differ in size.  An
 * estimate that is too high only cuts a run short that was not the last
 * but one.  One that is too low by more than that tenth leaves the last
 * batch more than it holds: it is written too, and a sliver is merged
 * from memory, one run more than an exact estimate gives.
 */
static void
balance_runs(Sorter *state)
{
	double		remaining = state->sh.expected_rows - (double) state->tuples_put;
	double		full = 0.9 * state->full_batch_records;

	state->batch_record_cap = 0;
	if (state->runs_balanced || state->runs == NULL)
		return;
	if (runs_written(state->runs) == 1)
		full *= 7.0 / 8.0;
	if (full >= 1 && remaining > full && remaining <= 2 * full)
	{
		state->batch_record_cap = (size_t) (remaining - full);
		state->runs_balanced = true;
	}
}

/* Start a batch: its limit, its keys and its engine. */
static void
start_batch(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		ceiling;

	sort_memory_start_batch(&state->memory, batch, state->runs != NULL,
							state->writing_active);
	ceiling = state->memory.ceiling;
	balance_runs(state);
	sort_memory_cap_arena_block(&state->memory, batch);
	state->batch_started = true;

	if (!sort_memory_keys_fit(&state->memory, &state->sh))
	{
		/*
		 * No engine.  Expected: more records than the batch can hold (each
		 * takes a tuple and a 16-byte item), so that the tuple pointers'
		 * array has room to become the items where it lies, and the arena's
		 * blocks are not sized to a rest of the input that fits.
		 */
		batch_give_up_keys(batch, "the keys do not fit in the sort's memory: PostgreSQL's comparators sort each batch, as Sort would");
		batch->expected_records = ceiling / (2 * sizeof(Datum));
		return;
	}
	if (state->last_batch_records > 0)
		batch->expected_records = state->last_batch_records;
	else
		batch->expected_records = (size_t) Min(state->sh.expected_rows,
											   (double) (ceiling / MIN_RECORD_BYTES));
	batch_start_keys(batch);
	batch_start_engine(batch);
}

/* Sort the batch; with keep_keys, for a merge. */
static void
sort_batch(Sorter *state, bool keep_keys)
{
	SortBatch  *batch = &state->batch;
	GpuSortStats *stats = state->sh.stats;
	Size		held_before;
	Size		mapped_before;

	if (!state->batch_started)
		start_batch(state);
	batch_end_load(batch);
	/* the peak: what the engine takes only while it sorts counts too */
	held_before = batch_held(batch);
	mapped_before = hostmem_peak_reset();
	batch_encode(batch, true);
	batch_sort(batch, keep_keys);
	stats->memory = Max(stats->memory,
						Max(Max(batch_held(batch), batch->peak_held),
							held_before + (hostmem_peak() - mapped_before)) +
						state->memory.writing_held);
	stats->records += batch->ntuples;
	state->last_batch_records = batch->ntuples;
}

/*
 * Wait for the run written behind the backend, if any, and free its batch.
 * The time waited counts as the spill's.
 */
static void
finish_writing(Sorter *state)
{
	instr_time	start;

	if (!state->writing_active)
		return;
	INSTR_TIME_SET_CURRENT(start);
	runs_finish_write(state->runs);
	batch_destroy(&state->writing);
	state->writing_active = false;
	state->memory.writing_held = 0;
	state->sh.stats->spill_ms += gpusort_elapsed_ms(start);
}

/* The batch is full: sort it, write it as a run, and empty it. */
static void
spill_batch(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		held;
	Size		room = batch->limit + state->memory.writing_held;
	instr_time	start;

	batch_end_load(batch);
	held = batch_memory(batch, batch->ntuples, 0);

	/* for balance_runs: the records the batch would hold, had it filled */
	if (held > 0)
		state->full_batch_records = (double) batch->ntuples *
			Max((double) room / (double) held, 1.0);
	sort_batch(state, true);
	if (state->memory.budget.server_bound)
		state->sh.stats->server_limited = true;
	stat_count_run(state->memory.budget.server_bound);
	if (state->runs == NULL)
		state->runs = runs_create(&state->sh, state->cxt);
	/* the previous run's writer, which wrote while this batch loaded */
	finish_writing(state);
	INSTR_TIME_SET_CURRENT(start);
	if (runs_write_batch(state->runs, batch, gpusort_write_behind))
	{
		batch_move(batch, &state->writing);
		state->writing_active = true;
		state->memory.writing_held = batch_held(&state->writing);
	}
	else
		batch_reset(batch);
	state->sh.stats->spill_ms += gpusort_elapsed_ms(start);
	state->batch_started = false;
	budget_hold(&state->memory.budget, state->memory.writing_held);
}

/*
 * Whether the batch gives its keys up, to be sorted in memory by the
 * comparators (sort_memory_without_keys says when).
 */
static bool
without_keys(Sorter *state)
{
	return sort_memory_without_keys(&state->memory, &state->batch,
									state->tuples_put, state->runs != NULL,
									state->writing_active,
									state->batch_record_cap);
}

/*
 * The run written behind is done: what its batch held goes back to the
 * budgets, and the batch's ceiling is taken again.
 */
static void
writing_done(Sorter *state)
{
	finish_writing(state);
	(void) sort_memory_reserve_batch(&state->memory, &state->batch,
									 state->batch.limit);
	sort_memory_take_ceiling(&state->memory, state->runs != NULL,
							 state->writing_active);
}

/*
 * The batch has no room: if a run written behind holds memory, wait for
 * it, and let the batch grow into what it gave back.  True if that freed
 * memory.
 */
static bool
make_room(Sorter *state)
{
	if (!state->writing_active)
		return false;
	writing_done(state);
	(void) sort_memory_grow_batch(&state->memory, &state->batch);
	return true;
}

/*
 * Whether a batch that refused a tuple was at its limit, rather than out of
 * memory that the system did not give (where its keys are kept, and it is
 * spilled as it is).
 */
static bool
batch_at_limit(SortBatch *batch)
{
	return batch_memory(batch, batch->ntuples + 1, batch->next_block_size) >
		batch->limit;
}

/* Copy the slot's tuple, or (slot NULL) tuple, into the batch's arena. */
static inline bool
store_tuple(SortBatch *batch, TupleTableSlot *slot, MinimalTuple tuple)
{
	return slot ? batch_store(batch, slot) : batch_store_tuple(batch, tuple);
}

/*
 * Check what the batch holds, beside the arena too, against its limit, and
 * take its ceiling again: reserve ahead while the budgets allow, so that
 * the limit stays about twice what the batch holds; a batch past its limit
 * that cannot grow is spilled.  True if it was.
 */
static bool
hold_batch_memory(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		held = batch_memory(batch, batch->ntuples, 0);

	/* a run written behind that is done gives its memory back */
	if (state->writing_active && runs_write_done(state->runs))
		writing_done(state);
	else
		sort_memory_take_ceiling(&state->memory, state->runs != NULL,
								 state->writing_active);
	sort_memory_cap_arena_block(&state->memory, batch);
	if (batch_memory(batch, batch->ntuples, batch->next_block_size) >
		batch->limit / 2)
		(void) sort_memory_grow_batch(&state->memory, batch);
	if (held > batch->limit && !sort_memory_grow_batch(&state->memory, batch))
		make_room(state);
	if (held <= batch->limit &&
		(state->batch_record_cap == 0 || batch->ntuples < state->batch_record_cap) &&
		!sort_memory_spill_early(&state->memory, batch, held,
								 state->tuples_put, state->runs != NULL))
		return false;
	if (without_keys(state))
		return false;
	spill_batch(state);
	return true;
}

/*
 * Store one tuple, copied into the arena: the slot's, or (slot NULL) a
 * MinimalTuple.  A full batch is sorted into a run first.
 */
static void
put_tuple(Sorter *state, TupleTableSlot *slot, MinimalTuple tuple)
{
	SortBatch  *batch = &state->batch;

	Assert(state->status == SORT_LOADING);
	if (!state->batch_started)
		start_batch(state);
	while (!store_tuple(batch, slot, tuple))
	{
		/*
		 * More room reserved, a run written behind done, or the keys given
		 * up: try again
		 */
		if (sort_memory_grow_batch(&state->memory, batch) || make_room(state) ||
			(batch_at_limit(batch) && without_keys(state)))
			continue;
		spill_batch(state);
		start_batch(state);
		if (!store_tuple(batch, slot, tuple))
			elog(ERROR, "gpusort: an empty batch refused a tuple");
		break;
	}
	if (++state->tuples_put % ENCODE_BATCH == 0)
		gpusort_fault_point(GPUSORT_PHASE_LOAD);

	/* what the tuples need beside the arena grows with each: check often */
	if (batch->ntuples % MEMORY_CHECK_TUPLES == 0 && hold_batch_memory(state))
		return;
	if (batch->ntuples % ENCODE_BATCH == 0)
		batch_encode(batch, false);
}

void
gpusort_sort_puttupleslot(Sorter *state, TupleTableSlot *slot)
{
	put_tuple(state, slot, NULL);
}

/* Put a MinimalTuple (a parallel load's, from shared memory), copied. */
void
gpusort_sort_puttuple(Sorter *state, MinimalTuple tuple)
{
	put_tuple(state, NULL, tuple);
}

/*
 * Put blocks of MinimalTuples (a parallel load's blocks), copied into the
 * arena by the pool threads (batch_load.c).  A batch without room for the
 * next block is spilled first.  Returns how many blocks were put, from the
 * first: one that even an empty batch cannot take stops it, and the caller
 * puts the rest a tuple at a time.
 */
int
gpusort_sort_putblocks(Sorter *state, const TupleBlock *blocks, int nblocks)
{
	SortBatch  *batch = &state->batch;
	int			nput = 0;

	Assert(state->status == SORT_LOADING);
	while (nput < nblocks)
	{
		size_t		before;
		int			n;

		if (!state->batch_started)
			start_batch(state);
		before = batch->ntuples;
		n = batch_store_blocks(batch, blocks + nput, nblocks - nput);
		if (n == 0)
		{
			if (sort_memory_grow_batch(&state->memory, batch) || make_room(state) ||
				(batch_at_limit(batch) && without_keys(state)))
				continue;
			if (before == 0)
				break;
			spill_batch(state);
			continue;
		}
		nput += n;
		state->tuples_put += batch->ntuples - before;
		gpusort_fault_point(GPUSORT_PHASE_LOAD);
		if (!hold_batch_memory(state))
			batch_encode(batch, false);
	}
	return nput;
}

/*
 * Have the pool threads copy the result in order ahead of the rows returned
 * (batch_emit.c), if the budget grants the copy's memory beside the batch.
 * Only for a forward scan: a sort that may be read backward or from a mark
 * reads the arena in place.
 */
static void
start_emit_copy(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		want = emit_copy_bytes(batch);
	Size		held = batch_held(batch);

	if (want == 0)
		return;
	if (sort_memory_reserve_emit_copy(&state->memory, held, want))
		state->emit_copy = emit_copy_start(batch);
}

/* Return to reading the arena in place: the copy's memory goes. */
static void
end_emit_copy(Sorter *state)
{
	if (state->emit_copy == NULL)
		return;
	emit_copy_end(state->emit_copy);
	state->emit_copy = NULL;
	budget_hold(&state->memory.budget, batch_held(&state->batch));
}

void
gpusort_sort_performsort(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	GpuSortStats *stats = state->sh.stats;
	KeyLayout  *layout = &state->sh.layout;

	Assert(state->status == SORT_LOADING);
	load_phase_done(state);
	if (state->runs == NULL)
	{
		/* one batch: sorted in memory, read from the arena */
		sort_batch(state, false);
		budget_hold(&state->memory.budget, batch_held(batch));
		state->status = SORT_IN_MEMORY;
	}
	else
	{
		Size		merge_memory;
		instr_time	start;

		/*
		 * The last batch stays in memory for the merge where the merge's
		 * read buffers fit beside it; else it is written as a run too.
		 */
		if (batch->ntuples > 0)
		{
			if (sort_memory_merge_fits(&state->memory, batch_held(batch) +
									   state->memory.writing_held))
				sort_batch(state, true);
			else
				spill_batch(state);
		}
		finish_writing(state);
		merge_memory = sort_memory_for_merge(&state->memory, batch_held(batch));
		stats->memory = Max(stats->memory, batch_held(batch) + merge_memory);
		INSTR_TIME_SET_CURRENT(start);
		state->merge = runs_merge_start(state->runs, batch, merge_memory,
										state->random_access);
		stats->merge_ms += gpusort_elapsed_ms(start);
		if (state->random_access)
		{
			/* the merged result lies on a tape of its own: the batch can go */
			batch_reset(batch);
			state->batch_started = false;
			budget_hold(&state->memory.budget, BLCKSZ);
		}
		stats->runs_written = runs_written(state->runs);
		stats->runs_behind = runs_written_behind(state->runs);
		stats->merge_passes = runs_merge_passes(state->merge);
		stats->merge_threads = runs_merge_threads(state->merge);
		stats->disk_kb = runs_disk_kb(state->runs);
		state->status = SORT_MERGED;
	}
	/* the rows now go out without the pool threads: leave the CPUs to others */
	if (batch->pool)
		threadpool_idle(batch->pool);
	if (state->status == SORT_IN_MEMORY && !state->random_access)
		start_emit_copy(state);

	stats->key_words = layout->key_words;
	stats->exact = layout->exact;
	stats->key_kind = key_layout_describe(layout);
	stats->generic_keys = layout->generic;

	/* gpusort_stat: one sort, by the engine of its last batch (sorted) */
	Assert(stats->engine != SORT_ENGINE_NONE);
	stat_count_sort(stats->engine, (uint64) stats->records);

	/*
	 * One line per sort at DEBUG1, as trace_sort gives one for Sort
	 * (docs/monitoring.md): which engine sorted, and the times of the
	 * phases so far, which EXPLAIN ANALYZE shows only with its per-row
	 * timing, whose cost would be in them.
	 */
	elog(DEBUG1, "gpusort: " INT64_FORMAT " records sorted by %s%s%s, %s%s%s in %d runs (load %.0f ms, encode %.0f ms, key build %.0f ms busy, sort %.0f ms, refine %.0f ms, check %.0f ms, comparators %.0f ms, spill %.0f ms, merge %.0f ms)",
		 stats->records, sort_engine_name(stats->engine),
		 stats->device[0] ? ": " : "", stats->device, stats->algorithm,
		 stats->fallback ? "; fallback: " : "",
		 stats->fallback ? stats->fallback : "",
		 state->runs ? runs_written(state->runs) + 1 : 1,
		 stats->load_ms, stats->encode_ms, stats->key_build_ms,
		 stats->sort_ms, stats->refine_ms, stats->check_ms,
		 stats->resolve_ms, stats->spill_ms, stats->merge_ms);
}

static bool
next_tuple(Sorter *state, bool forward, TupleTableSlot *slot)
{
	SortBatch  *batch = &state->batch;
	MinimalTuple tuple = NULL;

	if (state->status == SORT_MERGED)
		tuple = runs_merge_next(state->merge, forward);
	else
	{
		int64		n = (int64) batch->ntuples;

		Assert(state->status == SORT_IN_MEMORY);
		if (state->emit_copy && !forward)
			end_emit_copy(state);
		if (!sort_step_position(&state->pos, n, forward))
			tuple = NULL;
		else if (state->emit_copy)
			tuple = emit_copy_next(state->emit_copy, state->pos);
		else
		{
			int64		ahead = state->pos + (forward ? EMIT_PREFETCH : -EMIT_PREFETCH);

			/*
			 * The tuples lie in load order, so each emitted tuple is a cache
			 * miss: fetch the tuple some steps ahead, so that it has arrived
			 * when the executor asks.
			 */
			if (ahead >= 0 && ahead < n)
				gs_prefetch(batch->sorted[ahead]);
			tuple = batch->sorted[state->pos];
		}
	}
	if (tuple == NULL)
	{
		ExecClearTuple(slot);
		return false;
	}
	ExecStoreMinimalTuple(tuple, slot, false);
	return true;
}

/*
 * The next tuple in the given direction, into slot (which does not own
 * it: it stays valid until the next call); false, slot cleared, past the
 * end.
 */
bool
gpusort_sort_gettupleslot(Sorter *state, bool forward, TupleTableSlot *slot)
{
	instr_time	start;
	bool		found;

	if (!state->time_emit)
		return next_tuple(state, forward, slot);
	INSTR_TIME_SET_CURRENT(start);
	found = next_tuple(state, forward, slot);
	state->sh.stats->emit_ms += gpusort_elapsed_ms(start);
	return found;
}

void
gpusort_sort_markpos(Sorter *state)
{
	if (state->status == SORT_MERGED)
		runs_merge_markpos(state->merge);
	else
	{
		end_emit_copy(state);
		state->markpos = state->pos;
	}
}

void
gpusort_sort_restorepos(Sorter *state)
{
	if (state->status == SORT_MERGED)
		runs_merge_restorepos(state->merge);
	else
	{
		end_emit_copy(state);
		state->pos = state->markpos;
	}
}

/* Rewind to the first tuple; false if the sort cannot (no random access). */
bool
gpusort_sort_rescan(Sorter *state)
{
	if (state->status == SORT_MERGED)
	{
		if (!state->random_access)
			return false;
		runs_merge_rewind(state->merge);
		return true;
	}
	end_emit_copy(state);
	state->pos = -1;
	state->markpos = -1;
	return true;
}

/* Free everything: memory, engine, pool threads, temporary files. */
void
gpusort_sort_end(Sorter *state)
{
	sort_release(state);
	if (state->stats.fallback)
		pfree(state->stats.fallback);
	pfree(state);
}

/*
 * Whether a sort column of type typid, ordered by sortop under collation,
 * has a normalized key: without one, every record ties on its key and the
 * comparators order them all, more slowly than PostgreSQL's own sort.
 */
bool
gpusort_sort_column_has_key(Oid typid, Oid sortop, Oid collation)
{
	return key_column_has_key(typid, sortop, collation);
}

/* A parallel load's share of the budget (sort.h), for its blocks. */
struct SortLoadShare
{
	BudgetShare budget;
};

/*
 * A parallel load's share of the budget for its blocks, in
 * CurrentMemoryContext and given back with it, which counts the load's
 * workers, as planned, for the backend's default budget while it lives
 * (work_mem each, as a parallel Sort has: sort_memory.c).
 */
SortLoadShare *
gpusort_sort_load_share(int workers)
{
	SortLoadShare *share = palloc(sizeof(SortLoadShare));

	budget_join(&share->budget, CurrentMemoryContext);
	budget_count_workers(&share->budget, workers);
	return share;
}

/*
 * The load's blocks are in flight to sort from now: the two have the
 * minimum a sort may always hold between them, the blocks none of their
 * own (budget_pair_load), so that a sort loaded in parallel stays within a
 * budget that a serial one stays within.
 */
void
gpusort_sort_load_pair(SortLoadShare *share, Sorter *sort)
{
	budget_pair_load(&sort->memory.budget, &share->budget);
}

/*
 * What the budgets leave the load's blocks now, beside everything else its
 * sorts hold: an answer, not a promise (gpusort_sort_load_reserve).
 */
Size
gpusort_sort_load_room(SortLoadShare *share)
{
	return budget_available(&share->budget);
}

/*
 * Make what the load's blocks hold want bytes, or as near as the budgets
 * grant, and return what they hold then.
 */
Size
gpusort_sort_load_reserve(SortLoadShare *share, Size want)
{
	return budget_reserve(&share->budget, want);
}

/* The load's blocks hold bytes now: less gives the rest back. */
void
gpusort_sort_load_hold(SortLoadShare *share, Size bytes)
{
	budget_hold(&share->budget, bytes);
}

/* What the load's blocks hold of the budget. */
Size
gpusort_sort_load_held(const SortLoadShare *share)
{
	return share->budget.held;
}

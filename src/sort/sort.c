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
 * The batch may hold what the backend's budget (gpusort.max_memory,
 * sort_budget.c) leaves to this sort, or less where the server's budget
 * (gpusort.server_memory) has less left.  When it is full, it is sorted and
 * written to a temporary file as a sorted run (run_write.c), its memory is
 * freed, and loading goes on into an empty batch; once the sort has
 * spilled, each later batch leaves an eighth of what it may take to the
 * merge's read buffers, and the last batch but one is cut short where the
 * planner's estimate of the input says so, so that the last batch, which
 * is never written, is a full one (balance_runs).
 *
 * With gpusort.write_behind, a run is written by its batch's pool threads
 * while the backend loads the next batch: the batch is moved aside
 * (`writing`) and freed when its run is written, and until then the next
 * batch may hold only what the budget leaves beside it.  So that it has
 * room to load meanwhile, a batch that will not take the rest of the input
 * is spilled at seven eighths of what a batch may hold once runs exist
 * (spill_early), about 77% of the budget, so that the next batch has about
 * a ninth of the budget to load into while the run is written; it waits
 * for the writer only when it has filled that.  At most one run is
 * written at a time.  At the end of the input:
 *	- if nothing was written, the batch is sorted and its tuples are
 *	  returned straight from the arena, as they lie;
 *	- otherwise the last batch is sorted and stays in memory, and the runs
 *	  and it are merged (in several passes where there are more runs than
 *	  the merge memory can read at once), the final merge on the fly, or,
 *	  with random access, onto a tape of its own.
 * So size alone never sends a sort elsewhere, and more rows than a batch's
 * 32-bit record indexes address are just more runs.
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
#include "runs/run.h"
#include "runs/run_merge.h"
#include "sort/sort.h"
#include "sort/sort_budget.h"
#include "support/faults.h"
#include "support/hostmem.h"
#include "support/settings.h"
#include "support/stat.h"
#include "support/threadpool.h"

/* how many tuples ahead of the read position emitting prefetches */
#define EMIT_PREFETCH		16

/* tuples between checks of the batch's memory against its limit */
#define MEMORY_CHECK_TUPLES	64

/* a batch to be written behind leaves 1/WRITE_BEHIND_ROOM for the next */
#define WRITE_BEHIND_ROOM	8

/* bytes a record takes at the least (tuple, pointers, key, order) */
#define MIN_RECORD_BYTES	64

/*
 * What PostgreSQL's Sort holds for a row in memory beside the tuple: its
 * SortTuple (24 bytes), and the header of the tuple's memory chunk, in a
 * generation context before 17 (24 bytes in 15, a MemoryChunk's 8 in 16)
 * and a bump context, which has none, from 17 on.
 */
#if PG_VERSION_NUM >= 170000
#define NATIVE_ROW_OVERHEAD	24
#elif PG_VERSION_NUM >= 160000
#define NATIVE_ROW_OVERHEAD	(24 + 8)
#else
#define NATIVE_ROW_OVERHEAD	(24 + 24)
#endif

/* the least a batch reserves of the budgets at a time */
#define BATCH_RESERVE_STEP	((Size) 8 * 1024 * 1024)

/* keys take at most 1/KEYS_FIXED_SHARE of a batch's memory: sort_keys_fit */
#define KEYS_FIXED_SHARE	2

/*
 * an arena block takes at most 1/ARENA_BLOCK_SHARE of a batch's memory,
 * and ARENA_LEAST_BLOCK at the least: cap_arena_block
 */
#define ARENA_BLOCK_SHARE	16
#define ARENA_LEAST_BLOCK	((Size) 16 * 1024)

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

	/* what the sorts did, over every sort since begin: the caller's memory */
	GpuSortStats stats;

	MemoryContext cxt;			/* everything else of the sort */
	SortStatus	status;
	bool		keys_decided;	/* keys_fit is set: sort_keys_fit() */
	bool		keys_fit;
	SortBatchShared sh;
	SortBatch	batch;
	bool		batch_started;	/* the batch has its limit and engine */
	Size		batch_ceiling;	/* what the batch may grow to: batch_ceiling() */
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
	Size		writing_held;	/* what it holds of the budget */
	BudgetShare budget;

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
	budget_join(&state->budget, cxt);

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
	stats->engine[0] = '\0';
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
 * sortopt: GPUSORT_SORT_RANDOMACCESS, GPUSORT_SORT_TIMED (sort.h).
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
 * What the batch may grow to now: what the other sorts leave of the
 * budgets, less the merge's share once runs exist.  It is taken again as
 * the batch grows, so that a sort that starts while another still loads
 * (a sort in a subplan of the other's input) finds the other's memory as
 * it is, not as it may become.
 *
 * The batch's limit, which its loads never pass, is what it has reserved
 * of the budgets (budget_reserve), not this: a batch reserves as it grows,
 * twice what it holds while the budgets allow, so that sorts that grow at
 * once cannot take the same memory, and gpusort.server_memory holds.
 */
static Size
batch_ceiling(Sorter *state)
{
	Size		limit = budget_available(&state->budget);

	if (state->runs)
		limit -= limit / 8;
	/* the batch whose run is written behind holds its memory until then */
	if (state->writing_active)
		limit -= Min(limit, state->writing_held);
	return limit;
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

/*
 * Reserve for the batch, beside what a run written behind holds, want
 * bytes within its ceiling, or what the budgets grant of them, and make
 * that its limit.  Less than it holds gives the rest back.  True if the
 * limit grew.
 */
static bool
reserve_batch(Sorter *state, Size want)
{
	SortBatch  *batch = &state->batch;
	Size		before = batch->limit;
	Size		granted;

	want = Min(want, Max(state->batch_ceiling, before));
	granted = budget_reserve(&state->budget, want + state->writing_held);
	batch->limit = (granted > state->writing_held) ?
		granted - state->writing_held : 0;
	return batch->limit > before;
}

/*
 * Let the batch grow: reserve twice its limit, at least a step more and
 * room for its next arena block, within its ceiling.  True if its limit
 * grew; false if the ceiling or the budgets left it where it was.
 */
static bool
grow_batch(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		need = batch_memory(batch, batch->ntuples + MEMORY_CHECK_TUPLES,
									batch->next_block_size);

	if (batch->limit >= state->batch_ceiling)
		return false;
	return reserve_batch(state,
						 Max(Max(2 * batch->limit, batch->limit + BATCH_RESERVE_STEP),
							 2 * need));
}

/*
 * Whether the sort's batches have keys.  Keys take memory whatever the
 * records (batch_keys_fixed_bytes: the engine's chunk of keys, which it
 * takes whole, and a generic layout's chunk of inputs and its arrays),
 * which a small budget cannot hold beside the rows: at 1 MB a text key's
 * took all of it and more, and the batches spilled at 64 rows, far over
 * the budget.  Where that memory is more than a KEYS_FIXED_SHARE-th of
 * what the first batch may hold, every batch of the sort goes without
 * keys and is sorted by the comparators, as Sort sorts (batch_sort.c: a
 * tuple and 16 bytes a row, where Sort holds a tuple and
 * NATIVE_ROW_OVERHEAD), so that a run holds more rows than Sort's in the
 * same memory; its runs carry no keys, and the merges compare by the
 * comparators, as Sort's do.  Decided once for the sort, by its first
 * batch, so that its runs are all of one kind.
 */
static bool
sort_keys_fit(Sorter *state, Size ceiling)
{
	if (!state->keys_decided)
	{
		state->keys_fit = batch_keys_fixed_bytes(&state->sh) <=
			ceiling / KEYS_FIXED_SHARE;
		state->keys_decided = true;
	}
	return state->keys_fit;
}

/*
 * Keep the arena's blocks within a ARENA_BLOCK_SHARE-th of what the batch
 * may hold: blocks double from ARENA_MIN_BLOCK (batch_load.c), so that at a
 * small budget the first would take more than the budget (256 kB of 64 kB),
 * and the block a batch cannot take any more leaves up to half its memory
 * unused.  Taken again as the batch loads, since each block doubles the
 * next.
 */
static void
cap_arena_block(Sorter *state)
{
	Size		cap = MAXALIGN(Max(state->batch_ceiling / ARENA_BLOCK_SHARE,
								   ARENA_LEAST_BLOCK));

	state->batch.next_block_size = Min(state->batch.next_block_size, cap);
}

/* Start a batch: its limit, its keys and its engine. */
static void
start_batch(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		ceiling;

	ceiling = batch_ceiling(state);
	state->batch_ceiling = ceiling;
	batch->limit = 0;
	(void) reserve_batch(state, BATCH_RESERVE_STEP);
	balance_runs(state);
	cap_arena_block(state);
	state->batch_started = true;

	if (!sort_keys_fit(state, ceiling))
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
						state->writing_held);
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
	state->writing_held = 0;
	state->sh.stats->spill_ms += gpusort_elapsed_ms(start);
}

/* The batch is full: sort it, write it as a run, and empty it. */
static void
spill_batch(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	Size		held;
	Size		room = batch->limit + state->writing_held;
	instr_time	start;

	batch_end_load(batch);
	held = batch_memory(batch, batch->ntuples, 0);

	/* for balance_runs: the records the batch would hold, had it filled */
	if (held > 0)
		state->full_batch_records = (double) batch->ntuples *
			Max((double) room / (double) held, 1.0);
	sort_batch(state, true);
	if (state->budget.server_bound)
		state->sh.stats->server_limited = true;
	stat_count_run(state->budget.server_bound);
	if (state->runs == NULL)
		state->runs = runs_create(&state->sh, state->cxt);
	/* the previous run's writer, which wrote while this batch loaded */
	finish_writing(state);
	INSTR_TIME_SET_CURRENT(start);
	if (runs_write_batch(state->runs, batch, gpusort_write_behind))
	{
		batch_move(batch, &state->writing);
		state->writing_active = true;
		state->writing_held = batch_held(&state->writing);
	}
	else
		batch_reset(batch);
	state->sh.stats->spill_ms += gpusort_elapsed_ms(start);
	state->batch_started = false;
	budget_hold(&state->budget, state->writing_held);
}

/*
 * What the batch would hold with more tuples: each takes its records, as
 * batch_memory counts them, and its arena bytes, as those so far took
 * theirs; the arena's free room, a block taken ahead too, takes the first
 * of them.  Not what the batch holds now over its tuples, which counts
 * arrays grown ahead and the arena's free room as if every tuple took its
 * share of them: that overestimate wrote a run where the rows fitted.
 */
static double
batch_memory_with(SortBatch *batch, double more)
{
	Size		room = batch->block_left + batch->ahead_size;
	double		per_tuple = batch_tuple_bytes(batch);
	double		arena_more = Max(more * per_tuple - (double) room, 0.0);

	return (double) batch_memory(batch, batch->ntuples + (size_t) more, 0) +
		arena_more;
}

/*
 * Whether to spill the batch before it is full, so that the next batch has
 * room to load while this one's run is written behind the backend: a batch
 * that holds all but WRITE_BEHIND_ROOM of what it may hold (once a run
 * being written is done) is spilled there if the rest of the input will not
 * fit beside it.  The rest is the planner's estimate less what was put;
 * past the estimate, the input is taken to go on if runs were written
 * already, and to end soon if none was.  A run is written several times
 * faster than the backend loads one (on the GPU host, 50M rows of (int8,
 * text): runs of 1.9 GB written in 0.6 s, the load 6.7 s), so little room
 * keeps the load going; more would mean more runs, and a merge of more
 * inputs.
 */
static bool
spill_early(Sorter *state, Size held)
{
	SortBatch  *batch = &state->batch;
	Size		full = Max(state->batch_ceiling, batch->limit) + state->writing_held;
	Size		room = full;
	double		remaining = state->sh.expected_rows - (double) state->tuples_put;

	/*
	 * The first batch is measured against what batches may hold once runs
	 * exist (less the merge's eighth), or the next one would have no room;
	 * but it is kept whole if the rest fits into all it may hold.
	 */
	if (state->runs == NULL)
		room -= room / 8;
	if (!gpusort_write_behind || batch->ntuples < RUN_WRITE_BEHIND_MIN_RECORDS ||
		held < room - room / WRITE_BEHIND_ROOM || held >= full ||
		batch_threads(batch) == 0)
		return false;
	if (remaining <= 0)
		return state->runs != NULL;
	return batch_memory_with(batch, remaining) > (double) full;
}

/*
 * Whether the first batch, which its keys would make spill, is to give them
 * up instead and be sorted in memory by the comparators.  PostgreSQL's Sort
 * holds a row in its tuple and NATIVE_ROW_OVERHEAD; a batch holds the tuple
 * and a record (the tuple's pointer, its key, its place in the order, its
 * sorted pointer and, on the CPU, the radix sort's workspace), which can
 * take more.  Just above what Sort needs to sort in memory, a batch with
 * keys would then write a run where Sort writes nothing.  Without keys a
 * batch holds the tuple and 16 bytes (the comparator sort's item: the
 * pointer and the first column's datum, batch_sort.c), less than Sort: so
 * where the planner's estimate of the input, not yet passed, at the arena's
 * bytes per tuple so far and Sort's overhead, fits the memory the batch may
 * have, the batch sorts as Sort does, in memory by the comparators, and
 * needs no temporary space where Sort needs none.  Below that, Sort writes
 * runs too, and the keys sort faster.  Where gpusort.server_memory, which
 * Sort does not know, is what stops the batch, it spills as it would:
 * other sorts hold the server's memory only for a while, and the keys sort
 * the runs faster.
 */
static bool
sort_without_keys(Sorter *state)
{
	SortBatch  *batch = &state->batch;
	double		rows = state->sh.expected_rows;

	/*
	 * An input past the planner's estimate may go on for long: the batch
	 * keeps its keys, which sort its runs faster.
	 */
	if ((double) state->tuples_put > rows ||
		batch->comparator_sort || state->runs != NULL ||
		state->writing_active || batch->ntuples == 0 ||
		state->budget.server_bound ||
		(state->batch_record_cap != 0 && batch->ntuples >= state->batch_record_cap))
		return false;
	if (rows * (batch_tuple_bytes(batch) + NATIVE_ROW_OVERHEAD) >
		(double) Max(state->batch_ceiling, batch->limit))
		return false;
	batch_give_up_keys(batch, "the keys do not fit in the sort's memory beside the rows: PostgreSQL's comparators sort the rows in memory, as Sort would");
	return true;
}

/*
 * The run written behind is done: what its batch held goes back to the
 * budgets, and the batch's ceiling is taken again.
 */
static void
writing_done(Sorter *state)
{
	finish_writing(state);
	(void) reserve_batch(state, state->batch.limit);
	state->batch_ceiling = batch_ceiling(state);
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
	(void) grow_batch(state);
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
		state->batch_ceiling = batch_ceiling(state);
	cap_arena_block(state);
	if (batch_memory(batch, batch->ntuples, batch->next_block_size) >
		batch->limit / 2)
		(void) grow_batch(state);
	if (held > batch->limit && !grow_batch(state))
		make_room(state);
	if (held <= batch->limit &&
		(state->batch_record_cap == 0 || batch->ntuples < state->batch_record_cap) &&
		!spill_early(state, held))
		return false;
	if (sort_without_keys(state))
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
		if (grow_batch(state) || make_room(state) ||
			(batch_at_limit(batch) && sort_without_keys(state)))
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
 * Put blocks of MinimalTuples (a parallel load's chunks), copied into the
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
			if (grow_batch(state) || make_room(state) ||
				(batch_at_limit(batch) && sort_without_keys(state)))
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
	if (budget_reserve(&state->budget, held + want) >= held + want)
		state->emit_copy = emit_copy_start(batch);
	else
		budget_hold(&state->budget, held);
}

/* Return to reading the arena in place: the copy's memory goes. */
static void
end_emit_copy(Sorter *state)
{
	if (state->emit_copy == NULL)
		return;
	emit_copy_end(state->emit_copy);
	state->emit_copy = NULL;
	budget_hold(&state->budget, batch_held(&state->batch));
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
		budget_hold(&state->budget, batch_held(batch));
		state->status = SORT_IN_MEMORY;
	}
	else
	{
		Size		merge_memory;
		instr_time	start;
		Size		held;
		Size		available;
		Size		granted;

		if (batch->ntuples > 0)
			sort_batch(state, true);
		finish_writing(state);
		held = batch_held(batch);

		/*
		 * The eighth of the budget that the batches left to the merge,
		 * reserved with what the last batch holds; at least a merge's
		 * least, which the server may no longer grant
		 */
		available = budget_available(&state->budget);
		merge_memory = Max(available / 8, RUN_MERGE_MIN_MEMORY);
		granted = budget_reserve(&state->budget, held + merge_memory);
		if (granted < held + merge_memory)
		{
			merge_memory = Max(granted > held ? granted - held : 0,
							   RUN_MERGE_MIN_MEMORY);
			budget_hold(&state->budget, held + merge_memory);
		}
		INSTR_TIME_SET_CURRENT(start);
		state->merge = runs_merge_start(state->runs, batch, merge_memory,
										state->random_access);
		stats->merge_ms += gpusort_elapsed_ms(start);
		if (state->random_access)
		{
			/* the merged result lies on a tape of its own: the batch can go */
			batch_reset(batch);
			state->batch_started = false;
			budget_hold(&state->budget, BLCKSZ);
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

	/* gpusort_stat: one sort, by the engine of its last batch */
	stat_count_sort(strncmp(stats->engine, "GPU", 3) == 0 ? STAT_ENGINE_GPU :
					strncmp(stats->engine, "PostgreSQL", 10) == 0 ?
					STAT_ENGINE_COMPARATORS : STAT_ENGINE_CPU,
					(uint64) stats->records);

	/*
	 * One line per sort, for test/gpu/run.sh to see which engine sorted,
	 * with the times of the phases so far (without EXPLAIN ANALYZE's
	 * per-row instrumentation in them).
	 */
	elog(DEBUG1, "gpusort: " INT64_FORMAT " records sorted by %s%s%s, %s%s%s in %d runs (load %.0f ms, encode %.0f ms, key build %.0f ms busy, sort %.0f ms, refine %.0f ms, check %.0f ms, comparators %.0f ms, spill %.0f ms, merge %.0f ms)",
		 stats->records, stats->engine,
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

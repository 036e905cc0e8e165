/*-------------------------------------------------------------------------
 *
 * sort_memory.h
 *	  The sort module's memory (sort_memory.c): the budgets of GpuSort, the
 *	  backend's for all its GpuSorts together and the server's for all
 *	  GpuSorts, and the policy by which a sort's batches take of them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_MEMORY_H
#define GPUSORT_SORT_MEMORY_H

#include "postgres.h"

#include "lib/stringinfo.h"

#include "batch/batch.h"

/* What one sort holds of the budget; lives in the sort's memory. */
typedef struct BudgetShare
{
	Size		held;
	int			workers;		/* parallel workers counted for it */
	bool		server_bound;	/* budget_available's answer was the server's */
	bool		maintenance;	/* an index build's sort: its floor is
								 * maintenance_work_mem, not work_mem */
	bool		no_minimum;		/* a load's blocks: budget_pair_load */
	struct BudgetShare *partner;	/* the sort's, or its load's blocks' */
	MemoryContextCallback release;
} BudgetShare;

extern void budget_join(BudgetShare *share, MemoryContext owner);
extern void budget_count_workers(BudgetShare *share, int workers);
extern void budget_pair_load(BudgetShare *sort, BudgetShare *blocks);
extern void budget_hold(BudgetShare *share, Size bytes);
extern Size budget_available(BudgetShare *share);
extern Size budget_reserve(BudgetShare *share, Size want);
extern Size budget_total(void);
extern Size budget_server_limit(void);
extern void budget_describe_memory(StringInfo buf);

/* what a sort may always hold, whatever the others hold */
#define BUDGET_SORT_MINIMUM		((Size) 1024 * 1024)

/*
 * gpusort.max_memory = -1: the least it resolves to, and what it resolves
 * to where the machine's memory is unknown (budget_total)
 */
#define BUDGET_DERIVED_MINIMUM	((Size) 64 * 1024 * 1024)
#define BUDGET_DERIVED_UNKNOWN	((Size) 1024 * 1024 * 1024)

/* tuples between checks of the batch's memory against its limit */
#define MEMORY_CHECK_TUPLES	64

/*
 * A sort's memory: its share of the budgets, and what its batches may take
 * of it (sort_memory.c says how).  Lives in the sort's state.
 */
typedef struct SortMemory
{
	BudgetShare budget;			/* what the sort holds of the budgets */
	Size		ceiling;		/* what the batch may grow to:
								 * sort_memory_take_ceiling() */
	Size		writing_held;	/* what the batch whose run is written
								 * behind holds of the budget; 0 if none */
	bool		keys_decided;	/* keys_fit is set: sort_memory_keys_fit() */
	bool		keys_fit;
} SortMemory;

extern void sort_memory_take_ceiling(SortMemory *mem, bool spilled,
									 bool writing);
extern void sort_memory_start_batch(SortMemory *mem, SortBatch *batch,
									bool spilled, bool writing);
extern bool sort_memory_reserve_batch(SortMemory *mem, SortBatch *batch,
									  Size want);
extern bool sort_memory_grow_batch(SortMemory *mem, SortBatch *batch);
extern bool sort_memory_spill_early(SortMemory *mem, SortBatch *batch,
									Size held, int64 tuples_put,
									bool spilled);
extern bool sort_memory_without_keys(SortMemory *mem, SortBatch *batch,
									 int64 tuples_put, bool spilled,
									 bool writing, size_t record_cap);
extern bool sort_memory_reserve_emit_copy(SortMemory *mem, Size held,
										  Size want);
extern bool sort_memory_merge_fits(SortMemory *mem, Size held);
extern Size sort_memory_for_merge(SortMemory *mem, Size held);
extern bool sort_memory_keys_fit(SortMemory *mem, SortBatchShared *sh);
extern void sort_memory_cap_arena_block(SortMemory *mem, SortBatch *batch);

#endif							/* GPUSORT_SORT_MEMORY_H */

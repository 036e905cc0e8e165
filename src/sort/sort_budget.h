/*-------------------------------------------------------------------------
 *
 * sort_budget.h
 *	  The memory budgets of GpuSort: the backend's, for all its GpuSorts
 *	  together, and the server's, for all GpuSorts (sort_budget.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_BUDGET_H
#define GPUSORT_SORT_BUDGET_H

#include "postgres.h"

#include "lib/stringinfo.h"

/* What one sort holds of the budget; lives in the sort's memory. */
typedef struct BudgetShare
{
	Size		held;
	int			workers;		/* parallel workers counted for it */
	bool		server_bound;	/* budget_available's answer was the server's */
	MemoryContextCallback release;
} BudgetShare;

extern void budget_join(BudgetShare *share, MemoryContext owner);
extern void budget_count_workers(BudgetShare *share, int workers);
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

#endif							/* GPUSORT_SORT_BUDGET_H */

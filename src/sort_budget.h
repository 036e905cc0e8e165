/*-------------------------------------------------------------------------
 *
 * sort_budget.h
 *	  The backend's memory budget for all its GpuSorts together
 *	  (sort_budget.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_BUDGET_H
#define GPUSORT_SORT_BUDGET_H

#include "postgres.h"

/* What one sort holds of the budget; lives in the sort's memory. */
typedef struct BudgetShare
{
	Size		held;
	MemoryContextCallback release;
} BudgetShare;

extern void budget_join(BudgetShare *share, MemoryContext owner);
extern void budget_hold(BudgetShare *share, Size bytes);
extern Size budget_available(BudgetShare *share);
extern Size budget_total(void);

/* what a sort may always hold, whatever the others hold */
#define BUDGET_SORT_MINIMUM		((Size) 1024 * 1024)

#endif							/* GPUSORT_SORT_BUDGET_H */

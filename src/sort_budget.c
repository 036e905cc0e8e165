/*-------------------------------------------------------------------------
 *
 * sort_budget.c
 *	  One memory budget, gpusort.max_memory, for every GpuSort of a backend
 *	  together.
 *
 * PostgreSQL's Sort takes work_mem for each sort node, so a plan with five
 * sorts may hold five times work_mem.  GpuSort instead keeps one budget per
 * backend: each sort registers what it holds (its batch of tuples, keys and
 * workspace, as it grows; its merge buffers), and a sort's batch may grow to
 * what the others leave of the budget at that moment.  When the others hold it all, a sort
 * still gets BUDGET_SORT_MINIMUM (or the budget, if smaller) and spills in
 * runs of that size, so that it finishes rather than fail; so the budget
 * can be passed by at most that much per sort that runs at the same time.
 *
 * A sort's share lives in its memory context and is given back by that
 * context's reset callback, so an ERROR, a cancel or the end of a portal
 * give it back with the memory, and the count never leaks.  Parallel
 * workers are backends of their own: each has its own budget.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "gpusort.h"
#include "sort_budget.h"

/* what the backend's sorts hold together */
static Size backend_in_use = 0;

static void
budget_release(void *arg)
{
	BudgetShare *share = (BudgetShare *) arg;

	Assert(backend_in_use >= share->held);
	backend_in_use -= share->held;
	share->held = 0;
}

/* A new sort, whose share lives as long as owner's memory. */
void
budget_join(BudgetShare *share, MemoryContext owner)
{
	share->held = 0;
	share->release.func = budget_release;
	share->release.arg = share;
	MemoryContextRegisterResetCallback(owner, &share->release);
}

/* The sort holds bytes now. */
void
budget_hold(BudgetShare *share, Size bytes)
{
	backend_in_use -= share->held;
	share->held = bytes;
	backend_in_use += bytes;
}

Size
budget_total(void)
{
	return (Size) gpusort_max_memory_kb * 1024;
}

/* What the sort may hold in all: what the other sorts leave of the budget. */
Size
budget_available(BudgetShare *share)
{
	Size		total = budget_total();
	Size		others = backend_in_use - share->held;
	Size		left = (others < total) ? total - others : 0;

	return Max(left, Min(total, BUDGET_SORT_MINIMUM));
}

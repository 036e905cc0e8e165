/*-------------------------------------------------------------------------
 *
 * nodeGpuSort.c
 *	  Executor of Custom Scan (GpuSort): a Sort node whose sort is gpusort's
 *	  sort module (sort.c).
 *
 * The node behaves as nodeSort.c does, seen from above, and is as thin: on
 * the first fetch it puts its whole input into the sort, performs it, then
 * returns tuples in order.  It supports rescan (rewinding when its input's
 * parameters have not changed and the sort can rewind; sorting again
 * otherwise), backward scan and mark/restore, so it can stand wherever a
 * Sort stood; like Sort, it asks its sort for a result it can read again
 * when the plan may rewind it.  The sort's tuples are returned as they
 * lie, without a copy: the node's slot is a MinimalTuple slot that does not
 * own them.
 *
 * The sort module times its phases and keeps its statistics; EXPLAIN
 * ANALYZE (explain.c) shows what gpusort_sort_get_stats() returns.  A
 * rescan that sorts again resets the sort rather than ending it, so that
 * the figures add up over the sorts, as they do for Sort.
 *
 * A parallel GpuSort (planner.c) has a Gather below it, and below that the
 * load node (nodeGpuSortLoad.c) that copies each worker's rows into blocks
 * of the query's shared memory.  Before the Gather starts, the node hands
 * the leader's load node its sort, which the load node moves the blocks
 * into.  Rows that come up through the Gather (a worker that found no
 * room) are put into the sort as a serial GpuSort puts them, and when the
 * Gather has ended the load node moves the blocks that are left.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"

#include "exec/explain.h"
#include "exec/nodeGpuSort.h"
#include "exec/nodeGpuSortLoad.h"
#include "exec/plan_info.h"
#include "sort/sort.h"
#include "support/compat.h"
#include "support/faults.h"

typedef struct GpuSortState
{
	CustomScanState css;

	GpuSortPlanInfo info;
	bool		random_access;	/* rewind, backward scan or mark/restore */
	Sorter	   *sort;			/* the sort, once the first fetch began it */
	bool		sort_done;		/* it has its whole input, sorted */

	GpuSortLoadState *load;		/* a parallel GpuSort's load, or NULL */
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
	gpusort_load_executor_init();
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
	 * ExecInitCustomScan gave us a virtual scan slot; we return the sort's
	 * tuples without copying them, which needs a MinimalTuple slot.  Our
	 * target list is the scan tuple itself (planner.c), so the scan slot is
	 * also the result and no projection was set up over the old slot.
	 */
	if (node->ss.ps.ps_ProjInfo != NULL)
		elog(ERROR, "GpuSort node must not project");
	gpusort_init_scan_slot(estate, &node->ss, tupdesc, &TTSOpsMinimalTuple);
	node->ss.ps.resultops = &TTSOpsMinimalTuple;
	node->ss.ps.resultopsfixed = true;
	node->ss.ps.resultopsset = true;

	/*
	 * As for Sort: a plan that will rewind us (REWIND), scan us backward or
	 * mark and restore wants a result it can read again.  In memory any
	 * result can; a spilled one is then merged onto a tape of its own.
	 */
	st->random_access = (eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD |
								   EXEC_FLAG_MARK)) != 0;

	/* like Sort, we materialize: the child needs no rewind or backward scan */
	outerPlanState(st) = ExecInitNode(outerPlan(cscan), estate,
									  eflags & ~(EXEC_FLAG_REWIND |
												 EXEC_FLAG_BACKWARD |
												 EXEC_FLAG_MARK));

	st->load = gpusort_load_below(outerPlanState(st));
}

/*
 * Put the whole input into the sort, begun now or reset by a rescan, and
 * perform it.
 */
static void
load_and_sort(GpuSortState *st)
{
	PlanState  *outer = outerPlanState(st);
	TupleDesc	tupdesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;

	if (st->sort == NULL)
	{
		int			sortopt = 0;

		if (st->random_access)
			sortopt |= GPUSORT_SORT_RANDOMACCESS;
		if (gpusort_instr_timed(st->css.ss.ps.instrument))
			sortopt |= GPUSORT_SORT_TIMED;
		st->sort = gpusort_sort_begin(tupdesc, st->info.numCols,
									  st->info.sortColIdx,
									  st->info.sortOperators,
									  st->info.collations,
									  st->info.nullsFirst,
									  outer->plan->plan_rows, sortopt);
	}
	if (st->load)
		gpusort_load_start(st->load, st->sort);
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(outer);

		if (TupIsNull(slot))
			break;
		gpusort_sort_puttupleslot(st->sort, slot);
	}
	if (st->load)
		gpusort_load_finish(st->load);
	gpusort_sort_performsort(st->sort);
	st->sort_done = true;
}


static TupleTableSlot *
gpusort_exec(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	bool		forward = ScanDirectionIsForward(node->ss.ps.state->es_direction);

	if (!st->sort_done)
		load_and_sort(st);
	gpusort_fault_point(GPUSORT_PHASE_EMIT);
	(void) gpusort_sort_gettupleslot(st->sort, forward, slot);
	return slot;
}

static void
gpusort_end(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (st->sort)
		gpusort_sort_end(st->sort);
	st->sort = NULL;
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
	 * rewound (spilled runs merged without random access); else rewind.
	 */
	if (outer->chgParam != NULL || !gpusort_sort_rescan(st->sort))
	{
		gpusort_sort_reset(st->sort);
		st->sort_done = false;
		if (outer->chgParam == NULL)
			ExecReScan(outer);
	}
}

static void
gpusort_mark(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (st->sort_done)
		gpusort_sort_markpos(st->sort);
}

static void
gpusort_restore(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (st->sort_done)
		gpusort_sort_restorepos(st->sort);
}

static void
gpusort_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortState *st = (GpuSortState *) node;

	gpusort_explain_node(node, &st->info,
						 st->sort ? gpusort_sort_get_stats(st->sort) : NULL,
						 ancestors, es);
}

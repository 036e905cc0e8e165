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
 * A parallel GpuSort (planner.c) has a Gather below it, and below that the
 * load node (nodeGpuSortLoad.c) that copies each participant's rows into
 * the query's shared memory.  Before the Gather starts, the node gives the
 * load two thirds of what the backend's budget leaves (the rest is for the
 * keys and order of the sort, and for the rows the load passes up when it
 * is full); the rows that come up through the Gather are put into the sort
 * as a serial GpuSort puts them, and when the Gather has ended the loaded
 * rows are put in where they lie.  Those lie in the Gather's shared memory,
 * which the executor's shutdown of the plan (ExecShutdownNode) destroys:
 * the sort ends with it, and a later rescan starts the Gather again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "portability/instr_time.h"

#include "faults.h"
#include "gpusort.h"
#include "nodeGpuSortLoad.h"
#include "sort.h"
#include "sort_budget.h"

typedef struct GpuSortState
{
	CustomScanState css;

	GpuSortPlanInfo info;
	bool		random_access;	/* rewind, backward scan or mark/restore */
	Gpusortstate *sort;			/* the sort, once the first fetch began it */
	bool		sort_done;
	GpuSortStats stats;

	/* a parallel GpuSort: its load, and the budget share the load holds */
	GpuSortLoadState *load;
	MemoryContext load_cxt;
	BudgetShare load_budget;
	bool		sorted_in_place;	/* the sort holds rows of the load */
	bool		shut_down;		/* the Gather's shared memory is gone */
} GpuSortState;

static Node *gpusort_create_state(CustomScan *cscan);
static void gpusort_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *gpusort_exec(CustomScanState *node);
static void gpusort_end(CustomScanState *node);
static void gpusort_rescan(CustomScanState *node);
static void gpusort_mark(CustomScanState *node);
static void gpusort_restore(CustomScanState *node);
static void gpusort_shutdown(CustomScanState *node);
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
	.ShutdownCustomScan = gpusort_shutdown,
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
	ExecInitScanTupleSlot(estate, &node->ss, tupdesc, &TTSOpsMinimalTuple);
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
	if (st->load)
	{
		st->load_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "GpuSort parallel load",
											 ALLOCSET_SMALL_SIZES);
		budget_join(&st->load_budget, st->load_cxt);
	}
}

/* Put the whole input into a new sort, and perform it. */
static void
load_and_sort(GpuSortState *st)
{
	PlanState  *outer = outerPlanState(st);
	TupleDesc	tupdesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	instr_time	start;
	double		encode_ms_before;
	double		spill_ms_before;
	double		sort_ms_before;

	if (st->load)
	{
		Size		limit = budget_available(&st->load_budget) / 3 * 2;

		budget_hold(&st->load_budget, limit);
		gpusort_load_set_limit(st->load, limit);
	}
	st->sort = gpusort_sort_begin(tupdesc, &st->info, outer->plan->plan_rows,
								  st->random_access, &st->stats);

	/*
	 * Load time is the time spent reading and storing the input: what the
	 * sort does meanwhile (encoding, sorting and writing full batches) is
	 * reported as its own phases.
	 */
	INSTR_TIME_SET_CURRENT(start);
	encode_ms_before = st->stats.encode_ms;
	spill_ms_before = st->stats.spill_ms;
	sort_ms_before = st->stats.sort_ms + st->stats.resolve_ms + st->stats.refine_ms +
		st->stats.check_ms;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(outer);

		if (TupIsNull(slot))
			break;
		gpusort_sort_puttupleslot(st->sort, slot);
	}
	if (st->load)
	{
		/* the Gather has ended: every participant has linked its chunks */
		budget_hold(&st->load_budget, gpusort_load_bytes(st->load));
		st->sorted_in_place = (gpusort_load_put_all(st->load, st->sort) > 0);
	}
	st->stats.load_ms += gpusort_elapsed_ms(start) -
		(st->stats.encode_ms - encode_ms_before) -
		(st->stats.spill_ms - spill_ms_before) -
		(st->stats.sort_ms + st->stats.resolve_ms + st->stats.refine_ms +
		 st->stats.check_ms - sort_ms_before);

	gpusort_sort_performsort(st->sort);
	st->sort_done = true;
}

/* End the sort, if any, and free what it holds. */
static void
end_sort(GpuSortState *st)
{
	if (st->sort)
		gpusort_sort_end(st->sort);
	st->sort = NULL;
	st->sort_done = false;
	st->sorted_in_place = false;
}

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
	(void) gpusort_sort_gettupleslot(st->sort, forward, slot);
	if (timed)
		st->stats.emit_ms += gpusort_elapsed_ms(start);
	return slot;
}

static void
gpusort_end(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	end_sort(st);
	if (st->load_cxt)
		MemoryContextDelete(st->load_cxt);	/* gives the budget back */
	ExecEndNode(outerPlanState(node));
}

static void
gpusort_rescan(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;
	PlanState  *outer = outerPlanState(node);

	/* the Gather was shut down: start it again, unless it will itself */
	if (st->shut_down)
	{
		st->shut_down = false;
		if (outer->chgParam == NULL)
			ExecReScan(outer);
		return;
	}

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
		end_sort(st);
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

/*
 * The plan is shut down (its end, or a Limit's): the Gather below has
 * already destroyed the shared memory where the loaded rows lay, so a sort
 * that holds them ends now.  Only a plan that ran in parallel loaded rows,
 * and such a plan is run once, to its end or its Limit.
 */
static void
gpusort_shutdown(CustomScanState *node)
{
	GpuSortState *st = (GpuSortState *) node;

	if (!st->sorted_in_place)
		return;
	ExecClearTuple(node->ss.ss_ScanTupleSlot);
	end_sort(st);
	st->shut_down = true;
}

static void
gpusort_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortState *st = (GpuSortState *) node;

	gpusort_explain_node(node, &st->info, st->stats.sorts > 0 ? &st->stats : NULL,
						 ancestors, es);
}

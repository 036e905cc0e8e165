/*-------------------------------------------------------------------------
 *
 * nodeGpuSortLoad.c
 *	  Executor of Custom Scan (GpuSortLoad): the parallel load of a GpuSort.
 *
 * A parallel GpuSort (planner.c) is planned as
 *
 *		Custom Scan (GpuSort)			the leader: one sort of all the rows
 *		  ->  Gather					workers, and the leader if it takes part
 *				->  Custom Scan (GpuSortLoad)
 *					  ->  Parallel Seq Scan (or any partial plan)
 *
 * Each worker's GpuSortLoad reads its share of the partial plan and copies
 * every tuple, as a MinimalTuple, into blocks of the query's shared memory
 * area (the DSA of the Gather's parallel context; the block pool,
 * load_blocks.c), and returns nothing: the scan and the forming of the
 * tuples, the serial part of a GpuSort's load, run in every worker at
 * once, and no row goes through the Gather's tuple queues.
 *
 * The leader's GpuSortLoad (the one the Gather runs in the leader) moves
 * the workers' blocks into the GpuSort's sort while the workers scan, and
 * between blocks scans rows of its own and puts them straight into the
 * sort.  One backend moves every row of the load, so it moves them with
 * the sort's pool threads, or the load would run at its pace rather than
 * the workers'.  When its share of the scan ends it returns nothing to the
 * Gather, which waits for the workers; the GpuSort then has it move the
 * blocks that are left (gpusort_load_finish).
 *
 * The blocks count in the budget, in a share of the load's own that the
 * GpuSort gives it when it finds the load (gpusort_load_below), within a
 * limit that the pool keeps.  A worker that finds no room (the leader is
 * behind, or the input outgrows the budget), or that has no shared memory
 * at all, returns its row instead: it travels through the Gather to the
 * GpuSort, which puts it into the sort as a serial GpuSort would; the
 * worker tries for a block again some rows later.  The leader, once it
 * sees that a worker did so, returns its own next row too
 * (load_blocks_workers_passing): the Gather reads the workers' queues only
 * between the leader's rows, and a worker whose queue is full waits, so a
 * leader that kept scanning would hold the workers up, and scan what they
 * would have, until its own share ended.
 *
 * EXPLAIN ANALYZE (explain.c) shows the rows loaded and passed up, and
 * with VERBOSE (as PostgreSQL shows its nodes' per-worker figures), per
 * participant the rows it loaded (a worker: into blocks; the leader: of its
 * own scan, and moved from blocks), the rows it passed up and its load
 * time; the figures are copied out of shared memory when the node is shut
 * down, before the Gather destroys it.
 *
 * The GpuSort node calls gpusort_load_executor_init at load time, and
 * gpusort_load_below, gpusort_load_start and gpusort_load_finish as it
 * sorts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/extensible.h"

#include "exec/explain.h"
#include "exec/load_blocks.h"
#include "exec/nodeGpuSortLoad.h"

/* rows a worker passes up before it tries for a block again */
#define LOAD_RETRY_ROWS		256

struct GpuSortLoadState
{
	CustomScanState css;

	/* set by the GpuSort above, in the leader, before the Gather starts */
	SortLoadShare *share;		/* the blocks' share of the budget */
	instr_time	sort_start;		/* when the GpuSort began reading */

	/* this participant's side of the block pool, and its figures */
	LoadBlocks	blocks;

	/* this participant's load */
	bool		started;
	bool		finished;
	int64		retry_at;		/* passed: try for a block again */
	instr_time	start;
};

static Node *load_create_state(CustomScan *cscan);
static void load_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *load_exec(CustomScanState *node);
static void load_end(CustomScanState *node);
static void load_rescan(CustomScanState *node);
static Size load_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void load_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
static void load_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								  void *coordinate);
static void load_initialize_worker(CustomScanState *node, shm_toc *toc,
								   void *coordinate);
static void load_shutdown(CustomScanState *node);
static void load_explain(CustomScanState *node, List *ancestors, ExplainState *es);

CustomScanMethods gpusort_load_scan_methods = {
	.CustomName = GPUSORT_LOAD_NODE_NAME,
	.CreateCustomScanState = load_create_state,
};

static const CustomExecMethods load_exec_methods = {
	.CustomName = GPUSORT_LOAD_NODE_NAME,
	.BeginCustomScan = load_begin,
	.ExecCustomScan = load_exec,
	.EndCustomScan = load_end,
	.ReScanCustomScan = load_rescan,
	.EstimateDSMCustomScan = load_estimate_dsm,
	.InitializeDSMCustomScan = load_initialize_dsm,
	.ReInitializeDSMCustomScan = load_reinitialize_dsm,
	.InitializeWorkerCustomScan = load_initialize_worker,
	.ShutdownCustomScan = load_shutdown,
	.ExplainCustomScan = load_explain,
};

void
gpusort_load_executor_init(void)
{
	RegisterCustomScanMethods(&gpusort_load_scan_methods);
}

static Node *
load_create_state(CustomScan *cscan)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) newNode(sizeof(GpuSortLoadState),
														T_CustomScanState);

	ls->css.methods = &load_exec_methods;
	ls->css.flags = cscan->flags;
	return (Node *) ls;
}

static void
load_begin(CustomScanState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
}

/* The participant's input has ended: link its last block, publish figures. */
static void
finish_load(GpuSortLoadState *ls)
{
	if (ls->finished || ls->blocks.shared == NULL)
		return;
	ls->finished = true;
	load_blocks_finish(&ls->blocks, ls->start);
}

/*
 * The leader: move the workers' blocks as they come, and between them put
 * rows of its own scan straight into the sort.  Returns no row, but where
 * workers have returned rows to the Gather (load_blocks_workers_passing),
 * its current one: the Gather then takes the workers' rows from its queues
 * before it asks for another.
 */
static TupleTableSlot *
leader_load(GpuSortLoadState *ls)
{
	PlanState  *child = outerPlanState(ls);

	for (;;)
	{
		TupleTableSlot *slot;

		load_blocks_drain(&ls->blocks);
		slot = ExecProcNode(child);
		if (TupIsNull(slot))
		{
			finish_load(ls);
			return NULL;
		}
		if (load_blocks_workers_passing(&ls->blocks))
		{
			ls->blocks.figures.passed++;
			return slot;
		}
		gpusort_sort_puttupleslot(ls->blocks.sort, slot);
		ls->blocks.figures.loaded++;
	}
}

static TupleTableSlot *
load_exec(CustomScanState *node)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	PlanState  *child = outerPlanState(node);
	LoadFigures *figures = &ls->blocks.figures;

	if (!ls->started)
	{
		INSTR_TIME_SET_CURRENT(ls->start);
		ls->started = true;
	}
	if (ls->blocks.sort)
		return leader_load(ls);

	/* a worker */
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(child);

		if (TupIsNull(slot))
		{
			finish_load(ls);
			return NULL;
		}
		if (ls->blocks.shared && figures->passed >= ls->retry_at)
		{
			if (load_blocks_copy_slot(&ls->blocks, slot))
			{
				figures->loaded++;
				continue;
			}
			ls->retry_at = figures->passed + LOAD_RETRY_ROWS;
		}
		figures->passed++;
		load_blocks_passed_up(&ls->blocks);
		return slot;
	}
}

static void
load_end(CustomScanState *node)
{
	ExecEndNode(outerPlanState(node));
}

/* This participant's load starts again (the shared state is reset apart). */
static void
reset_participant(GpuSortLoadState *ls)
{
	ls->started = false;
	ls->finished = false;
	ls->retry_at = 0;
	load_blocks_reset_participant(&ls->blocks);
}

static void
load_rescan(CustomScanState *node)
{
	PlanState  *child = outerPlanState(node);

	reset_participant((GpuSortLoadState *) node);
	if (child->chgParam == NULL)
		ExecReScan(child);
}

static Size
load_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return load_blocks_shared_size(pcxt->nworkers);
}

static void
load_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	EState	   *estate = node->ss.ps.state;

	load_blocks_init_leader(&ls->blocks, coordinate, pcxt->nworkers,
							estate->es_query_dsa, estate->es_query_cxt);
}

static void
load_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;

	load_blocks_reinit(&ls->blocks);
	reset_participant(ls);
}

static void
load_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;

	load_blocks_init_worker(&ls->blocks, coordinate,
							node->ss.ps.state->es_query_dsa,
							ParallelWorkerNumber);
}

/* Keep what the participants did before the Gather destroys shared memory. */
static void
load_shutdown(CustomScanState *node)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;

	if (IsParallelWorker())
		return;
	load_blocks_keep_figures(&ls->blocks);
}

static void
load_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	const LoadFigures *parts;
	int			nparts;

	if (!es->analyze)
		return;
	parts = load_blocks_figures(&ls->blocks, &nparts);
	if (parts != NULL)
		gpusort_explain_load(parts, nparts, es);
}

/*
 * From the GpuSort's begin: the load node directly below the Gather that
 * is child, in the leader, now with a share of the backend's budget (in
 * the query's memory, CurrentMemoryContext) for the blocks in flight, which
 * counts the Gather's workers, as planned, for the backend's default budget
 * (work_mem each, as a parallel Sort has: gpusort_sort_load_share); NULL if
 * child is not such a Gather.
 */
GpuSortLoadState *
gpusort_load_below(PlanState *child)
{
	PlanState  *below;
	GpuSortLoadState *load;

	if (child == NULL || !IsA(child, GatherState))
		return NULL;
	below = outerPlanState(child);
	if (below == NULL || !IsA(below, CustomScanState) ||
		((CustomScanState *) below)->methods != &load_exec_methods)
		return NULL;
	load = (GpuSortLoadState *) below;
	load->share = gpusort_sort_load_share(((Gather *) child->plan)->num_workers);
	return load;
}

/*
 * Before the Gather starts: the sort the leader puts rows into; the blocks
 * in flight are held in the load's share of the budget from now on, paired
 * with the sort's (gpusort_sort_load_pair).
 */
void
gpusort_load_start(GpuSortLoadState *load, Sorter *sort)
{
	load->blocks.sort = sort;
	load->blocks.budget = load->share;
	gpusort_sort_load_pair(load->share, sort);
	INSTR_TIME_SET_CURRENT(load->sort_start);
}

/*
 * After the Gather has returned its last row to the GpuSort: move the
 * blocks that are left into the sort, and give back the budget they held.
 */
void
gpusort_load_finish(GpuSortLoadState *load)
{
	double		gather_ms = gpusort_elapsed_ms(load->sort_start);
	instr_time	drain_start;
	int64		moved;
	StringInfoData workers;

	INSTR_TIME_SET_CURRENT(drain_start);
	moved = load_blocks_drain_rest(&load->blocks);
	initStringInfo(&workers);
	load_blocks_describe(&load->blocks, &workers);
	elog(DEBUG1, "gpusort: parallel load: " INT64_FORMAT " rows moved from the workers' blocks, Gather %.0f ms, then %.0f ms moving the rest%s",
		 moved, gather_ms, gpusort_elapsed_ms(drain_start), workers.data);
	pfree(workers.data);
}

/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner hook: replaces large Sort nodes of finished plans with
 *	  Custom Scan (GpuSort).
 *
 * gpusort_planner_init, which _PG_init (gpusort.c) calls, installs the
 * hook.  The hook lets the standard planner (or the previous hook) finish,
 * then walks the plan tree and every subplan (SubPlans and InitPlans live
 * in PlannedStmt.subplans).  A Sort whose input is estimated at
 * gpusort.min_rows rows or more becomes a CustomScan that keeps the Sort's
 * keys, operators, collations and NULLS placement in custom_private, its
 * child as lefttree (so that EXPLAIN resolves its columns, and parameter
 * changes reach the child on rescan as they do for Sort), and its output
 * columns: the node returns its child's tuples unchanged, as Sort does.
 *
 * A sort key that is a column under another collation (ORDER BY pad
 * COLLATE "C") leaves a resjunk copy of the column, relabeled with that
 * collation, in the child's output (the Sort itself reads the column, with
 * the collation in its key), so the child must project every row to compute
 * it, and forming those rows costs more than the sort itself.  Where nothing
 * reads the Sort's resjunk columns (at the top of a SELECT, where the
 * executor's junk filter drops them), the child stops computing the copy
 * (drop_collation_copies); in a parallel sort, below, the partial plan
 * that the workers run.
 *
 * Parallel sorts.  A sort fed by parallel workers is planned as
 *
 *		Custom Scan (GpuSort)
 *		  ->  Gather
 *				->  Custom Scan (GpuSortLoad)		parallel aware
 *					  ->  the partial plan (Parallel Seq Scan, ...)
 *
 * The workers scan and copy their rows into shared memory, the leader's
 * GpuSort sorts them all at once and returns them (nodeGpuSortLoad.c).
 * This shape, rather than the other one a parallel sort could take
 * (workers that each sort a key range, from sampled splitters, under a
 * Gather Merge), because GpuSort's cost is not the sort, which takes
 * milliseconds on the GPU, but reading, copying and emitting the rows: one
 * sort in the leader needs no splitters, no second pass over the rows and
 * no merge, and emits as fast as a serial GpuSort; its keys are encoded in
 * the leader, as the workers copy more rows.  It is made
 *	- from PostgreSQL's own parallel sort, a Gather Merge over a Sort of a
 *	  partial plan, with the same workers (the planner chose them and the
 *	  partial plan), where the sort's input reaches gpusort.min_rows;
 *	- from a serial Sort of a sequential scan of a table, when the statement
 *	  may run in parallel (standard_planner's own test), the table gets
 *	  workers as the planner counts them (compute_parallel_worker), and the
 *	  scan's cost shared among them saves more than parallel_setup_cost.
 *	  PostgreSQL rarely plans a parallel sort for a whole table, since
 *	  every row would pass through the Gather at parallel_tuple_cost; here
 *	  none does.
 * Never below another Gather, nor in a subplan.
 *
 * Left to PostgreSQL:
 *	- small sorts (below gpusort.min_rows), and everything when gpusort is
 *	  disabled.  Whether a GPU is present does not matter here: with
 *	  gpusort.engine = auto the sort runs on the GPU when one is usable and
 *	  on the CPU engine otherwise (engine_chain.c decides, at execution), and
 *	  the CPU engine alone sorts faster than PostgreSQL's Sort from a
 *	  hundred thousand rows on (bench/results/cpu-engine.md);
 *	- bounded sorts (a Sort below a LIMIT, whose top-N heapsort reads its
 *	  input once and keeps only the bound): our node does not receive the
 *	  bound, and a top-N heap is cheaper than any full sort.  Only where the
 *	  bound is a constant of at least half the estimated input, where
 *	  tuplesort itself would not switch to a heap, is the Sort replaced;
 *	- sorts whose first column has no normalized key (keys_allow_gpusort),
 *	  which PostgreSQL's Sort orders faster than gpusort's comparators;
 *	- the Sort nodes chained inside an Agg for grouping sets, which nodeAgg
 *	  reads as sort descriptions and never executes;
 *	- Incremental Sort, which is a different node.
 *
 * The node keeps the Sort's keys in custom_private (plan_info.c), which
 * the executor nodes read back.
 *
 * Nothing here touches CUDA.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/table.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "exec/nodeGpuSort.h"
#include "exec/nodeGpuSortLoad.h"
#include "exec/plan_info.h"
#include "keys/keys.h"
#include "plan/planner.h"
#include "support/compat.h"
#include "support/settings.h"

static planner_hook_type prev_planner_hook = NULL;


/* What the walk over one statement's plans knows and finds. */
typedef struct ReplaceContext
{
	int			nreplaced;		/* Sorts replaced */
	bool		parallel_ok;	/* a Gather may be added here (not below one,
								 * nor in a subplan) */
	bool		parallel_added; /* a Gather was added: parallel mode needed */
	List	   *rtable;
	int			last_plan_node_id;	/* the highest plan_node_id in use */
} ReplaceContext;

static Plan *replace_sorts(Plan *plan, int64 bound, Bitmapset *unread,
						   ReplaceContext *cxt);

/*
 * The number of rows a Limit node will ask of its child, if known at plan
 * time; -1 if the Limit bounds its input by an amount known only at run time,
 * 0 if it does not bound it at all (OFFSET alone reads everything).
 */
static int64
limit_bound(Limit *limit)
{
	int64		count;
	int64		offset = 0;

	if (limit->limitCount == NULL)
		return 0;
	if (!IsA(limit->limitCount, Const))
		return -1;
	if (((Const *) limit->limitCount)->constisnull)
		return 0;				/* LIMIT NULL is LIMIT ALL */
	count = DatumGetInt64(((Const *) limit->limitCount)->constvalue);

	if (limit->limitOffset != NULL)
	{
		if (!IsA(limit->limitOffset, Const))
			return -1;
		if (!((Const *) limit->limitOffset)->constisnull)
			offset = DatumGetInt64(((Const *) limit->limitOffset)->constvalue);
	}
	if (count < 0 || offset < 0 || count > PG_INT64_MAX - offset)
		return -1;
	return count + offset;
}

/*
 * May a Sort with this bound (as limit_bound says) and this estimated input
 * be replaced?  tuplesort uses its top-N heap only when the input exceeds
 * twice the bound; below that it sorts everything, as we do.
 */
static bool
bound_allows_gpusort(int64 bound, double input_rows)
{
	if (bound == 0)
		return true;
	return bound > 0 && (double) bound * 2 >= input_rows;
}

/*
 * May a sort on these keys of input's columns be replaced?  Not where its
 * first column has no normalized key (a range, an array, jsonb, a type of
 * an extension's): its records would all tie on their keys, and
 * PostgreSQL's comparators would order every one of them, which is slower
 * than PostgreSQL's own Sort.  gpusort.keyless_sorts replaces them too
 * (the tests of the comparators).
 */
static bool
keys_allow_gpusort(Plan *input, AttrNumber *sortColIdx, Oid *sortOperators,
				   Oid *collations)
{
	TargetEntry *tle;

	if (gpusort_keyless_sorts)
		return true;
	tle = get_tle_by_resno(input->targetlist, sortColIdx[0]);
	if (tle == NULL)
		return false;
	return key_column_has_key(exprType((Node *) tle->expr), sortOperators[0],
							  collations[0]);
}

/*
 * If the child's output column resno is a copy of another of its columns
 * under another collation (a RelabelType that changes only the collation,
 * over a Var the child also returns), the resno of that column; else 0.
 */
static AttrNumber
collation_copy_of(Plan *child, AttrNumber resno)
{
	TargetEntry *tle = get_tle_by_resno(child->targetlist, resno);
	Node	   *expr;
	ListCell   *lc;

	if (tle == NULL || !IsA(tle->expr, RelabelType))
		return 0;
	expr = (Node *) tle->expr;
	while (IsA(expr, RelabelType))
	{
		RelabelType *relabel = (RelabelType *) expr;

		if (relabel->resulttype != exprType((Node *) relabel->arg))
			return 0;
		expr = (Node *) relabel->arg;
	}
	if (!IsA(expr, Var))
		return 0;
	foreach(lc, child->targetlist)
	{
		TargetEntry *other = lfirst_node(TargetEntry, lc);

		if (other->resno != resno && equal(other->expr, expr))
			return other->resno;
	}
	return 0;
}

/*
 * Point sort keys that read a collation copy (collation_copy_of) at the
 * column itself (the key keeps its collation, so the order is the same),
 * then drop the copies that no key reads from the end of the child's target
 * list, so that a scan below returns its tuples without projecting them.
 * copy_of[resno - 1] is set to the column a dropped copy duplicates, for
 * build_tlists; the GpuSort node then returns tuples that lack those
 * trailing columns, which read as NULL: only allowed for the columns
 * nothing reads (unread).
 */
static void
drop_collation_copies(Sort *sort, Bitmapset *unread, AttrNumber *sortColIdx,
					  AttrNumber *copy_of)
{
	Plan	   *child = sort->plan.lefttree;
	int			ncols = list_length(child->targetlist);

	for (int c = 0; c < sort->numCols; c++)
	{
		AttrNumber	base = collation_copy_of(child, sortColIdx[c]);

		if (base != 0)
			sortColIdx[c] = base;
	}
	if (!is_projection_capable_plan(child))
		return;

	while (ncols > 0)
	{
		AttrNumber	base = collation_copy_of(child, ncols);
		bool		read = !bms_is_member(ncols, unread);

		for (int c = 0; c < sort->numCols; c++)
			read |= (sortColIdx[c] == ncols);
		if (base == 0 || read)
			break;
		copy_of[ncols - 1] = base;
		ncols--;
	}
	child->targetlist = list_truncate(child->targetlist, ncols);
}

/*
 * Target lists for a CustomScan whose output, output (a Sort's, or a
 * child's), is its child's tuple, column for column: its scan tuple
 * description (Vars of the child's output, resolved by EXPLAIN through
 * lefttree) and its target list (Vars of the scan tuple, so the executor
 * needs no projection).  A column the child no longer returns (copy_of,
 * NULL if none) is described by its old expression over the column it
 * copies, which gives it the same type and, in EXPLAIN, the same text.
 */
static void
build_tlists(List *output, const AttrNumber *copy_of, List *dropped,
			 List **scan_tlist, List **tlist)
{
	ListCell   *lc;

	*scan_tlist = NIL;
	*tlist = NIL;
	foreach(lc, output)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;
		Node	   *scan_expr;
		Var		   *scan_var;

		scan_expr = (Node *) makeVar(OUTER_VAR, tle->resno, exprType(expr),
									 exprTypmod(expr), exprCollation(expr), 0);
		if (copy_of && copy_of[tle->resno - 1] != 0)
		{
			TargetEntry *old = get_tle_by_resno(dropped, tle->resno);
			Node	   *copy = copyObject((Node *) old->expr);
			RelabelType *inner = (RelabelType *) copy;
			Var		   *column;

			while (IsA(inner->arg, RelabelType))
				inner = (RelabelType *) inner->arg;
			column = (Var *) inner->arg;
			inner->arg = (Expr *) makeVar(OUTER_VAR, copy_of[tle->resno - 1],
										  column->vartype, column->vartypmod,
										  column->varcollid, 0);
			scan_expr = copy;
		}
		scan_var = makeVar(INDEX_VAR, tle->resno, exprType(expr),
						   exprTypmod(expr), exprCollation(expr), 0);
		*scan_tlist = lappend(*scan_tlist,
							  makeTargetEntry((Expr *) scan_expr, tle->resno,
											  tle->resname, tle->resjunk));
		*tlist = lappend(*tlist,
						 makeTargetEntry((Expr *) scan_var, tle->resno,
										 tle->resname, tle->resjunk));
	}
}

/*
 * What a GpuSort reads of its Sort's input: the sort keys' columns, and the
 * collation copies dropped from the input (drop_collation_copies, where
 * unread allows).
 */
typedef struct GpuSortInput
{
	AttrNumber *sortColIdx;
	AttrNumber *copy_of;
	List	   *child_tlist;	/* the input's target list before */
} GpuSortInput;

static GpuSortInput
prepare_gpusort_input(Sort *sort, Bitmapset *unread)
{
	GpuSortInput input;
	int			nout = list_length(sort->plan.targetlist);

	input.sortColIdx = palloc(sizeof(AttrNumber) * sort->numCols);
	input.copy_of = palloc0(sizeof(AttrNumber) * Max(nout, 1));
	input.child_tlist = list_copy(sort->plan.lefttree->targetlist);
	memcpy(input.sortColIdx, sort->sortColIdx, sizeof(AttrNumber) * sort->numCols);
	if (!bms_is_empty(unread) && list_length(input.child_tlist) == nout)
		drop_collation_copies(sort, unread, input.sortColIdx, input.copy_of);
	return input;
}

/* The GpuSort that replaces sort, over sort's input as input describes it. */
static CustomScan *
build_gpusort(Sort *sort, GpuSortInput *input)
{
	CustomScan *cscan = makeNode(CustomScan);
	GpuSortPlanInfo info;
	List	   *scan_tlist;
	List	   *tlist;
	AttrNumber *sortColIdx = input->sortColIdx;

	/* costs, row estimate, node id, parameters and InitPlans stay the same */
	cscan->scan.plan = sort->plan;
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;

	build_tlists(sort->plan.targetlist, input->copy_of, input->child_tlist,
				 &scan_tlist, &tlist);
	cscan->scan.plan.targetlist = tlist;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN | CUSTOMPATH_SUPPORT_MARK_RESTORE;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_relids = NULL;
	cscan->methods = &gpusort_scan_methods;

	info.numCols = sort->numCols;
	info.sortColIdx = sortColIdx;
	info.sortOperators = sort->sortOperators;
	info.collations = sort->collations;
	info.nullsFirst = sort->nullsFirst;
	cscan->custom_private = gpusort_plan_info_to_list(&info);
	return cscan;
}

/*
 * The GpuSort that replaces sort; unread: the resnos of its output columns
 * that nothing above reads (replace_sorts).
 */
static CustomScan *
make_gpusort(Sort *sort, Bitmapset *unread)
{
	GpuSortInput input = prepare_gpusort_input(sort, unread);

	return build_gpusort(sort, &input);
}

static List *
replace_sorts_in_list(List *plans, int64 bound, ReplaceContext *cxt)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = replace_sorts((Plan *) lfirst(lc), bound, NULL, cxt);
	return plans;
}

/*
 * A parallel GpuSort: sort (whose keys, costs and output the GpuSort
 * keeps) over a Gather of nworkers over a load node (nodeGpuSortLoad.c)
 * over partial, a partial plan that each participant runs on its share of
 * the input.  The columns of sort's output in unread (make_gpusort) may
 * be dropped from partial's, which then may not have to project.
 */
static CustomScan *
make_parallel_gpusort(Sort *sort, Plan *partial, int nworkers, int rescan_param,
					  Bitmapset *initParam, Bitmapset *unread, ReplaceContext *cxt)
{
	CustomScan *load = makeNode(CustomScan);
	Gather	   *gather = makeNode(Gather);
	List	   *scan_tlist;
	List	   *tlist;
	ListCell   *lc;
	GpuSortInput input;

	sort->plan.lefttree = partial;
	input = prepare_gpusort_input(sort, unread);

	load->scan.plan.startup_cost = partial->startup_cost;
	load->scan.plan.total_cost = partial->total_cost;
	load->scan.plan.plan_rows = partial->plan_rows;
	load->scan.plan.plan_width = partial->plan_width;
	load->scan.plan.parallel_aware = true;
	load->scan.plan.parallel_safe = true;
	load->scan.plan.plan_node_id = ++cxt->last_plan_node_id;
	load->scan.plan.extParam = bms_copy(partial->extParam);
	load->scan.plan.allParam = bms_copy(partial->allParam);
	load->scan.plan.lefttree = partial;
	load->scan.scanrelid = 0;
	build_tlists(partial->targetlist, NULL, NIL, &scan_tlist, &tlist);
	load->scan.plan.targetlist = tlist;
	load->custom_scan_tlist = scan_tlist;
	load->methods = &gpusort_load_scan_methods;

	/* the Gather moves no rows (unless the load is full): no tuple cost */
	gather->plan.startup_cost = partial->startup_cost + parallel_setup_cost;
	gather->plan.total_cost = partial->total_cost + parallel_setup_cost;
	gather->plan.plan_rows = sort->plan.plan_rows;
	gather->plan.plan_width = partial->plan_width;
	gather->plan.parallel_safe = false;
	gather->plan.plan_node_id = ++cxt->last_plan_node_id;
	gather->plan.extParam = bms_copy(partial->extParam);
	gather->plan.allParam = bms_copy(partial->allParam);
	gather->plan.lefttree = (Plan *) load;
	foreach(lc, load->scan.plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) copyObject(tle->expr);

		var->varno = OUTER_VAR;
		gather->plan.targetlist = lappend(gather->plan.targetlist,
										  makeTargetEntry((Expr *) var, tle->resno,
														  tle->resname, false));
	}
	gather->num_workers = nworkers;
	gather->rescan_param = rescan_param;
	gather->single_copy = false;
	gather->invisible = false;
	gather->initParam = initParam;

	sort->plan.lefttree = (Plan *) gather;
	cxt->parallel_added = true;
	return build_gpusort(sort, &input);
}

/* Does tlist return its child's columns as they are, and nothing else? */
static bool
tlist_passes_child_through(List *tlist, List *child_tlist)
{
	ListCell   *lc;

	if (list_length(tlist) != list_length(child_tlist))
		return false;
	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!IsA(var, Var) || var->varno != OUTER_VAR || var->varattno != tle->resno)
			return false;
	}
	return true;
}

/*
 * A Gather Merge over a Sort of a partial plan, PostgreSQL's parallel
 * sort, as a parallel GpuSort: the same workers load, one sort.  NULL if
 * it does not qualify (the caller walks it as any other node).  A Gather
 * Merge may project (a SubPlan evaluated in the leader, over columns the
 * workers return); GpuSort does not, so a Result above it does that.
 */
static Plan *
parallel_gpusort_for_gather_merge(GatherMerge *gm, int64 bound, Bitmapset *unread,
								  ReplaceContext *cxt)
{
	Sort	   *inner = (Sort *) gm->plan.lefttree;
	Sort	   *sort;
	CustomScan *gpusort;
	Plan	   *partial;
	bool		projects;
	bool		saved_parallel_ok = cxt->parallel_ok;

	if (inner == NULL || !IsA(inner, Sort) || inner->plan.lefttree == NULL ||
		inner->plan.initPlan != NIL || gm->num_workers <= 0 ||
		inner->numCols != gm->numCols ||
		gm->plan.plan_rows < (double) gpusort_min_rows ||
		!bound_allows_gpusort(bound, gm->plan.plan_rows) ||
		!keys_allow_gpusort(inner->plan.lefttree, gm->sortColIdx,
							gm->sortOperators, gm->collations))
		return NULL;

	/* the partial plan runs in the workers: no Gather below ours */
	cxt->parallel_ok = false;
	partial = replace_sorts(inner->plan.lefttree, 0, NULL, cxt);
	cxt->parallel_ok = saved_parallel_ok;

	/*
	 * A Sort that stands where the Gather Merge stood, with its keys (which
	 * name columns of its input, as the Sort's do) and its output: the
	 * Gather Merge's, column names included, unless it projects; then the
	 * Sort's, and the Result above has the Gather Merge's
	 */
	projects = !tlist_passes_child_through(gm->plan.targetlist, inner->plan.targetlist);
	sort = makeNode(Sort);
	sort->plan = gm->plan;
	sort->plan.type = T_Sort;
	if (projects)
		sort->plan.targetlist = inner->plan.targetlist;
	sort->numCols = gm->numCols;
	sort->sortColIdx = gm->sortColIdx;
	sort->sortOperators = gm->sortOperators;
	sort->collations = gm->collations;
	sort->nullsFirst = gm->nullsFirst;
	cxt->nreplaced++;
	gpusort = make_parallel_gpusort(sort, partial, gm->num_workers,
									gm->rescan_param, gm->initParam,
									projects ? NULL : unread, cxt);
	if (projects)
	{
		Result	   *result = makeNode(Result);

		result->plan = gm->plan;
		result->plan.type = T_Result;
		result->plan.initPlan = NIL;	/* they stay with the GpuSort */
		result->plan.plan_node_id = ++cxt->last_plan_node_id;
		result->plan.lefttree = (Plan *) gpusort;
		result->plan.righttree = NULL;
		result->resconstantqual = NULL;
		return (Plan *) result;
	}
	return (Plan *) gpusort;
}

/*
 * The share of a parallel scan's rows each participant reads the planner
 * counts on: the workers, and what the leader adds (get_parallel_divisor).
 */
static double
parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	return divisor;
}

/*
 * Workers for a parallel scan of the table of seqscan, as the planner
 * counts them (compute_parallel_worker: the table's size against
 * min_parallel_table_scan_size, its parallel_workers option,
 * max_parallel_workers_per_gather), if the scan so shared costs less than
 * alone, parallel_setup_cost included; else 0.
 */
static int
parallel_scan_workers(SeqScan *seqscan, ReplaceContext *cxt)
{
	Plan	   *plan = (Plan *) seqscan;
	RangeTblEntry *rte = rt_fetch(seqscan->scan.scanrelid, cxt->rtable);
	RelOptInfo *relinfo;
	Relation	rel;
	BlockNumber pages;
	int			workers;

	if (rte->rtekind != RTE_RELATION || !plan->parallel_safe || plan->parallel_aware ||
		!bms_is_empty(plan->extParam) || plan->initPlan != NIL)
		return 0;

	rel = table_open(rte->relid, NoLock);	/* the planner locked it */
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_MATVIEW)
	{
		table_close(rel, NoLock);
		return 0;
	}
	pages = RelationGetNumberOfBlocks(rel);
	relinfo = makeNode(RelOptInfo);
	relinfo->reloptkind = RELOPT_BASEREL;
	relinfo->rel_parallel_workers = RelationGetParallelWorkers(rel, -1);
	table_close(rel, NoLock);

	workers = compute_parallel_worker(relinfo, (double) pages, -1,
									  max_parallel_workers_per_gather);
	if (workers <= 0)
		return 0;

	if (plan->total_cost / parallel_divisor(workers) + parallel_setup_cost >=
		plan->total_cost)
		return 0;
	return workers;
}

/*
 * A serial Sort of a sequential scan, where the statement may run in
 * parallel, as a parallel GpuSort whose participants share the scan; NULL
 * if it does not qualify or would not pay for its workers.
 */
static Plan *
parallel_gpusort_for_seqscan(Sort *sort, Bitmapset *unread, ReplaceContext *cxt)
{
	Plan	   *scan = sort->plan.lefttree;
	int			workers;
	double		divisor;

	if (!cxt->parallel_ok || !IsA(scan, SeqScan) || sort->plan.initPlan != NIL)
		return NULL;
	workers = parallel_scan_workers((SeqScan *) scan, cxt);
	if (workers == 0)
		return NULL;

	/* the scan becomes a Parallel Seq Scan; its estimates, per participant */
	divisor = parallel_divisor(workers);
	scan->parallel_aware = true;
	scan->plan_rows = clamp_row_est(scan->plan_rows / divisor);
	scan->total_cost = scan->startup_cost + (scan->total_cost - scan->startup_cost) / divisor;
	return (Plan *) make_parallel_gpusort(sort, scan, workers, -1, NULL, unread, cxt);
}

/* The highest plan_node_id of plan and everything below it. */
static int
max_plan_node_id(Plan *plan)
{
	int			max;
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return -1;
	max = plan->plan_node_id;
	max = Max(max, max_plan_node_id(plan->lefttree));
	max = Max(max, max_plan_node_id(plan->righttree));
	switch (nodeTag(plan))
	{
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_SubqueryScan:
			max = Max(max, max_plan_node_id(((SubqueryScan *) plan)->subplan));
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		default:
			break;
	}
	foreach(lc, children)
		max = Max(max, max_plan_node_id((Plan *) lfirst(lc)));
	return max;
}

/*
 * Returns the plan with its eligible Sorts replaced.  bound is the bound a
 * LIMIT above passes down to this node, as limit_bound() says
 * (ExecSetTupleBound passes it through the node types handled below, and no
 * others).  unread: the resnos of this node's output columns that nothing
 * above reads (the resjunk columns at the top of a SELECT, and below a
 * Limit there, which passes its child's tuples on).
 */
static Plan *
replace_sorts(Plan *plan, int64 bound, Bitmapset *unread, ReplaceContext *cxt)
{
	int64		child_bound = 0;
	Bitmapset  *child_unread = NULL;
	bool		saved_parallel_ok = cxt->parallel_ok;

	if (plan == NULL)
		return NULL;

	if (IsA(plan, GatherMerge))
	{
		Plan	   *parallel = parallel_gpusort_for_gather_merge((GatherMerge *) plan,
																 bound, unread, cxt);

		if (parallel)
			return parallel;
	}
	/* below a Gather, the plan runs in workers: no Gather of ours there */
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		cxt->parallel_ok = false;

	switch (nodeTag(plan))
	{
		case T_Limit:
			child_bound = limit_bound((Limit *) plan);
			child_unread = unread;
			break;
		case T_Result:
		case T_SubqueryScan:
		case T_Append:
		case T_MergeAppend:
		case T_Gather:
		case T_GatherMerge:
			child_bound = bound;
			break;
		default:
			break;
	}

	plan->lefttree = replace_sorts(plan->lefttree, child_bound, child_unread, cxt);
	plan->righttree = replace_sorts(plan->righttree, 0, NULL, cxt);

	switch (nodeTag(plan))
	{
		case T_Append:
			replace_sorts_in_list(((Append *) plan)->appendplans,
								  child_bound, cxt);
			break;
		case T_MergeAppend:
			replace_sorts_in_list(((MergeAppend *) plan)->mergeplans,
								  child_bound, cxt);
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				replace_sorts(((SubqueryScan *) plan)->subplan,
							  child_bound, NULL, cxt);
			break;
		case T_CustomScan:
			replace_sorts_in_list(((CustomScan *) plan)->custom_plans,
								  0, cxt);
			break;
		case T_Agg:
			/* Agg.chain holds sort descriptions, not executable Sorts */
			break;
		default:
			break;
	}

	cxt->parallel_ok = saved_parallel_ok;

	if (IsA(plan, Sort) && plan->lefttree != NULL &&
		plan->lefttree->plan_rows >= (double) gpusort_min_rows &&
		bound_allows_gpusort(bound, plan->lefttree->plan_rows) &&
		keys_allow_gpusort(plan->lefttree, ((Sort *) plan)->sortColIdx,
						   ((Sort *) plan)->sortOperators, ((Sort *) plan)->collations))
	{
		Plan	   *parallel = parallel_gpusort_for_seqscan((Sort *) plan, unread, cxt);

		cxt->nreplaced++;
		if (parallel)
			return parallel;
		return (Plan *) make_gpusort((Sort *) plan, unread);
	}
	return plan;
}

/*
 * May the statement use parallel workers?  standard_planner's own test
 * (its parallelModeOK), made on the query before planning changes it.
 */
static bool
parallel_mode_ok(Query *parse, int cursorOptions)
{
	return (cursorOptions & CURSOR_OPT_PARALLEL_OK) != 0 &&
		IsUnderPostmaster &&
		parse->commandType == CMD_SELECT &&
		!parse->hasModifyingCTE &&
		max_parallel_workers_per_gather > 0 &&
		!IsParallelWorker() &&
		max_parallel_hazard(parse) != PROPARALLEL_UNSAFE;
}

static PlannedStmt *
gpusort_planner(GPUSORT_PLANNER_PARAMS)
{
	PlannedStmt *stmt;
	bool		parallel_ok = gpusort_enabled && parallel_mode_ok(parse, cursorOptions);

	if (prev_planner_hook)
		stmt = prev_planner_hook(GPUSORT_PLANNER_ARGS);
	else
		stmt = standard_planner(GPUSORT_PLANNER_ARGS);

	if (gpusort_enabled)
	{
		ReplaceContext cxt = {0};
		Bitmapset  *unread = NULL;
		ListCell   *lc;

		/* a SELECT's junk filter is the only reader of its resjunk columns */
		if (stmt->commandType == CMD_SELECT)
		{
			foreach(lc, stmt->planTree->targetlist)
			{
				TargetEntry *tle = lfirst_node(TargetEntry, lc);

				if (tle->resjunk)
					unread = bms_add_member(unread, tle->resno);
			}
		}
		cxt.rtable = stmt->rtable;
		cxt.last_plan_node_id = max_plan_node_id(stmt->planTree);
		foreach(lc, stmt->subplans)
			cxt.last_plan_node_id = Max(cxt.last_plan_node_id,
										max_plan_node_id((Plan *) lfirst(lc)));
		cxt.parallel_ok = parallel_ok;
		stmt->planTree = replace_sorts(stmt->planTree, 0, unread, &cxt);
		cxt.parallel_ok = false;
		replace_sorts_in_list(stmt->subplans, 0, &cxt);
		if (cxt.parallel_added)
			stmt->parallelModeNeeded = true;
	}
	return stmt;
}

void
gpusort_planner_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = gpusort_planner;
}

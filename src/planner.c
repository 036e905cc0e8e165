/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner hook: replaces large Sort nodes of finished plans with
 *	  Custom Scan (GpuSort).
 *
 * The hook lets the standard planner (or the previous hook) finish, then
 * walks the plan tree and every subplan (SubPlans and InitPlans live in
 * PlannedStmt.subplans).  A Sort whose input is estimated at
 * gpusort.min_rows rows or more becomes a CustomScan that keeps the Sort's
 * keys, operators, collations and NULLS placement in custom_private, its
 * child as lefttree (so that EXPLAIN resolves its columns, and parameter
 * changes reach the child on rescan as they do for Sort), and its output
 * columns: the node returns its child's tuples unchanged, as Sort does.
 *
 * Left to PostgreSQL:
 *	- small sorts (below gpusort.min_rows), and everything when gpusort is
 *	  disabled or, with gpusort.engine = auto, when no GPU is present;
 *	- bounded sorts (a Sort below a LIMIT, whose top-N heapsort reads its
 *	  input once and keeps only the bound): our node does not receive the
 *	  bound, and a top-N heap is cheaper than any full sort.  Only where the
 *	  bound is a constant of at least half the estimated input, where
 *	  tuplesort itself would not switch to a heap, is the Sort replaced;
 *	- the Sort nodes chained inside an Agg for grouping sets, which nodeAgg
 *	  reads as sort descriptions and never executes;
 *	- Incremental Sort, which is a different node.
 *
 * Nothing here initializes CUDA: whether a GPU is present is judged from the
 * driver's device files (gpusort_gpu_maybe_present).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"

#include "gpusort.h"

static planner_hook_type prev_planner_hook = NULL;

static Plan *replace_sorts(Plan *plan, int64 bound, int *nreplaced);

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
 * The Sort's output is its child's tuple, column for column.  Build the
 * CustomScan's scan tuple description (Vars of the child's output,
 * resolved by EXPLAIN through lefttree) and its target list (Vars of the
 * scan tuple, so the executor needs no projection).
 */
static void
build_tlists(Sort *sort, List **scan_tlist, List **tlist)
{
	ListCell   *lc;

	*scan_tlist = NIL;
	*tlist = NIL;
	foreach(lc, sort->plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;
		Var		   *outer_var;
		Var		   *scan_var;

		outer_var = makeVar(OUTER_VAR, tle->resno, exprType(expr),
							exprTypmod(expr), exprCollation(expr), 0);
		scan_var = makeVar(INDEX_VAR, tle->resno, exprType(expr),
						   exprTypmod(expr), exprCollation(expr), 0);
		*scan_tlist = lappend(*scan_tlist,
							  makeTargetEntry((Expr *) outer_var, tle->resno,
											  tle->resname, tle->resjunk));
		*tlist = lappend(*tlist,
						 makeTargetEntry((Expr *) scan_var, tle->resno,
										 tle->resname, tle->resjunk));
	}
}

static CustomScan *
make_gpusort(Sort *sort)
{
	CustomScan *cscan = makeNode(CustomScan);
	GpuSortPlanInfo info;
	List	   *scan_tlist;
	List	   *tlist;

	/* costs, row estimate, node id, parameters and InitPlans stay the same */
	cscan->scan.plan = sort->plan;
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;

	build_tlists(sort, &scan_tlist, &tlist);
	cscan->scan.plan.targetlist = tlist;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN | CUSTOMPATH_SUPPORT_MARK_RESTORE;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_relids = NULL;
	cscan->methods = &gpusort_scan_methods;

	info.numCols = sort->numCols;
	info.sortColIdx = sort->sortColIdx;
	info.sortOperators = sort->sortOperators;
	info.collations = sort->collations;
	info.nullsFirst = sort->nullsFirst;
	cscan->custom_private = gpusort_plan_info_to_list(&info);
	return cscan;
}

static List *
replace_sorts_in_list(List *plans, int64 bound, int *nreplaced)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = replace_sorts((Plan *) lfirst(lc), bound, nreplaced);
	return plans;
}

/*
 * Returns the plan with its eligible Sorts replaced.  bound is the bound a
 * LIMIT above passes down to this node, as limit_bound() says
 * (ExecSetTupleBound passes it through the node types handled below, and no
 * others).
 */
static Plan *
replace_sorts(Plan *plan, int64 bound, int *nreplaced)
{
	int64		child_bound = 0;

	if (plan == NULL)
		return NULL;

	switch (nodeTag(plan))
	{
		case T_Limit:
			child_bound = limit_bound((Limit *) plan);
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

	plan->lefttree = replace_sorts(plan->lefttree, child_bound, nreplaced);
	plan->righttree = replace_sorts(plan->righttree, 0, nreplaced);

	switch (nodeTag(plan))
	{
		case T_Append:
			replace_sorts_in_list(((Append *) plan)->appendplans,
								  child_bound, nreplaced);
			break;
		case T_MergeAppend:
			replace_sorts_in_list(((MergeAppend *) plan)->mergeplans,
								  child_bound, nreplaced);
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				replace_sorts(((SubqueryScan *) plan)->subplan,
							  child_bound, nreplaced);
			break;
		case T_CustomScan:
			replace_sorts_in_list(((CustomScan *) plan)->custom_plans,
								  0, nreplaced);
			break;
		case T_Agg:
			/* Agg.chain holds sort descriptions, not executable Sorts */
			break;
		default:
			break;
	}

	if (IsA(plan, Sort) && plan->lefttree != NULL &&
		plan->lefttree->plan_rows >= (double) gpusort_min_rows &&
		bound_allows_gpusort(bound, plan->lefttree->plan_rows))
	{
		(*nreplaced)++;
		return (Plan *) make_gpusort((Sort *) plan);
	}
	return plan;
}

static bool
gpusort_wanted(void)
{
	if (!gpusort_enabled)
		return false;
	if (gpusort_engine == GPUSORT_ENGINE_AUTO)
		return gpusort_gpu_maybe_present();
	return true;
}

static PlannedStmt *
gpusort_planner(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	PlannedStmt *stmt;

	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);

	if (gpusort_wanted())
	{
		int			nreplaced = 0;

		stmt->planTree = replace_sorts(stmt->planTree, 0, &nreplaced);
		replace_sorts_in_list(stmt->subplans, 0, &nreplaced);
	}
	return stmt;
}

void
gpusort_planner_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = gpusort_planner;
}

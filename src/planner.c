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
 * A sort key that is a column under another collation (ORDER BY pad
 * COLLATE "C") leaves a resjunk copy of the column, relabeled with that
 * collation, in the child's output (the Sort itself reads the column, with
 * the collation in its key), so the child must project every row to compute
 * it, and forming those rows costs more than the sort itself.  Where nothing
 * reads the Sort's resjunk columns (at the top of a SELECT, where the
 * executor's junk filter drops them), the child stops computing the copy
 * (drop_collation_copies).
 *
 * Left to PostgreSQL:
 *	- small sorts (below gpusort.min_rows), and everything when gpusort is
 *	  disabled.  Whether a GPU is present does not matter here: with
 *	  gpusort.engine = auto the sort runs on the GPU when one is usable and
 *	  on the CPU engine otherwise (sort_batch.c decides, at execution), and
 *	  the CPU engine alone sorts faster than PostgreSQL's Sort from a
 *	  hundred thousand rows on (bench/results/cpu-engine.md);
 *	- bounded sorts (a Sort below a LIMIT, whose top-N heapsort reads its
 *	  input once and keeps only the bound): our node does not receive the
 *	  bound, and a top-N heap is cheaper than any full sort.  Only where the
 *	  bound is a constant of at least half the estimated input, where
 *	  tuplesort itself would not switch to a heap, is the Sort replaced;
 *	- the Sort nodes chained inside an Agg for grouping sets, which nodeAgg
 *	  reads as sort descriptions and never executes;
 *	- Incremental Sort, which is a different node.
 *
 * Nothing here touches CUDA.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"

#include "gpusort.h"

static planner_hook_type prev_planner_hook = NULL;

static Plan *replace_sorts(Plan *plan, int64 bound, Bitmapset *unread,
						   int *nreplaced);

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
 * list, so that a scan below returns its tuples without projecting them.  copy_of[resno - 1] is set to the column a dropped copy
 * duplicates, for build_tlists; the GpuSort node then returns tuples that
 * lack those trailing columns, which read as NULL: only allowed for the
 * columns nothing reads (unread).
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
 * The Sort's output is its child's tuple, column for column.  Build the
 * CustomScan's scan tuple description (Vars of the child's output,
 * resolved by EXPLAIN through lefttree) and its target list (Vars of the
 * scan tuple, so the executor needs no projection).  A column the child no
 * longer returns (copy_of) is described by its old expression over the
 * column it copies, which gives it the same type and, in EXPLAIN, the same
 * text.
 */
static void
build_tlists(Sort *sort, const AttrNumber *copy_of, List *dropped,
			 List **scan_tlist, List **tlist)
{
	ListCell   *lc;

	*scan_tlist = NIL;
	*tlist = NIL;
	foreach(lc, sort->plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;
		Node	   *scan_expr;
		Var		   *scan_var;

		scan_expr = (Node *) makeVar(OUTER_VAR, tle->resno, exprType(expr),
									 exprTypmod(expr), exprCollation(expr), 0);
		if (copy_of[tle->resno - 1] != 0)
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

static CustomScan *
make_gpusort(Sort *sort, Bitmapset *unread)
{
	CustomScan *cscan = makeNode(CustomScan);
	GpuSortPlanInfo info;
	List	   *scan_tlist;
	List	   *tlist;
	int			nout = list_length(sort->plan.targetlist);
	AttrNumber *sortColIdx = palloc(sizeof(AttrNumber) * sort->numCols);
	AttrNumber *copy_of = palloc0(sizeof(AttrNumber) * Max(nout, 1));
	List	   *child_tlist = list_copy(sort->plan.lefttree->targetlist);

	memcpy(sortColIdx, sort->sortColIdx, sizeof(AttrNumber) * sort->numCols);
	if (!bms_is_empty(unread) && list_length(child_tlist) == nout)
		drop_collation_copies(sort, unread, sortColIdx, copy_of);

	/* costs, row estimate, node id, parameters and InitPlans stay the same */
	cscan->scan.plan = sort->plan;
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;

	build_tlists(sort, copy_of, child_tlist, &scan_tlist, &tlist);
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

static List *
replace_sorts_in_list(List *plans, int64 bound, int *nreplaced)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = replace_sorts((Plan *) lfirst(lc), bound, NULL, nreplaced);
	return plans;
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
replace_sorts(Plan *plan, int64 bound, Bitmapset *unread, int *nreplaced)
{
	int64		child_bound = 0;
	Bitmapset  *child_unread = NULL;

	if (plan == NULL)
		return NULL;

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

	plan->lefttree = replace_sorts(plan->lefttree, child_bound, child_unread,
								   nreplaced);
	plan->righttree = replace_sorts(plan->righttree, 0, NULL, nreplaced);

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
							  child_bound, NULL, nreplaced);
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
		return (Plan *) make_gpusort((Sort *) plan, unread);
	}
	return plan;
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

	if (gpusort_enabled)
	{
		int			nreplaced = 0;
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
		stmt->planTree = replace_sorts(stmt->planTree, 0, unread, &nreplaced);
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

/*-------------------------------------------------------------------------
 *
 * plan_info.c
 *	  What a GpuSort plan node keeps of the Sort node it replaced, in its
 *	  CustomScan's custom_private: the planner hook (planner.c) writes it
 *	  (gpusort_plan_info_to_list), the executor node (nodeGpuSort.c) reads
 *	  it back (gpusort_plan_info_from_list) and hands it to EXPLAIN
 *	  (explain.c).
 *
 * It sits below both, so that the planner, which makes the nodes, and the
 * nodes, which read what it made, do not depend on each other's files.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pg_list.h"

#include "exec/plan_info.h"

/*
 * GpuSortPlanInfo <-> custom_private: a list of four lists, so that the
 * plan survives copyObject() and nodeToString() for parallel workers.
 */
List *
gpusort_plan_info_to_list(const GpuSortPlanInfo *info)
{
	List	   *cols = NIL;
	List	   *ops = NIL;
	List	   *colls = NIL;
	List	   *nulls = NIL;

	for (int i = 0; i < info->numCols; i++)
	{
		cols = lappend_int(cols, info->sortColIdx[i]);
		ops = lappend_oid(ops, info->sortOperators[i]);
		colls = lappend_oid(colls, info->collations[i]);
		nulls = lappend_int(nulls, info->nullsFirst[i] ? 1 : 0);
	}
	return list_make4(cols, ops, colls, nulls);
}

void
gpusort_plan_info_from_list(List *private, GpuSortPlanInfo *info)
{
	List	   *cols = linitial(private);
	List	   *ops = lsecond(private);
	List	   *colls = lthird(private);
	List	   *nulls = lfourth(private);
	int			i;
	ListCell   *lc;

	info->numCols = list_length(cols);
	info->sortColIdx = palloc(sizeof(AttrNumber) * info->numCols);
	info->sortOperators = palloc(sizeof(Oid) * info->numCols);
	info->collations = palloc(sizeof(Oid) * info->numCols);
	info->nullsFirst = palloc(sizeof(bool) * info->numCols);

	i = 0;
	foreach(lc, cols)
		info->sortColIdx[i++] = (AttrNumber) lfirst_int(lc);
	i = 0;
	foreach(lc, ops)
		info->sortOperators[i++] = lfirst_oid(lc);
	i = 0;
	foreach(lc, colls)
		info->collations[i++] = lfirst_oid(lc);
	i = 0;
	foreach(lc, nulls)
		info->nullsFirst[i++] = lfirst_int(lc) != 0;
}

/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  The planner hook that puts GpuSort into plans (planner.c), and what a
 *	  GpuSort plan node keeps of the Sort node it replaced.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_PLANNER_H
#define GPUSORT_PLANNER_H

#include "postgres.h"

#include "nodes/pg_list.h"

/*
 * What a GpuSort plan node sorts by: the Sort node's keys, kept in the
 * CustomScan's custom_private so that plans can be copied and sent to
 * parallel workers.
 */
typedef struct GpuSortPlanInfo
{
	int			numCols;
	AttrNumber *sortColIdx;		/* scan tuple columns, 1-based */
	Oid		   *sortOperators;
	Oid		   *collations;
	bool	   *nullsFirst;
} GpuSortPlanInfo;

extern void gpusort_plan_info_from_list(List *private, GpuSortPlanInfo *info);

extern void gpusort_planner_init(void);

#endif							/* GPUSORT_PLANNER_H */

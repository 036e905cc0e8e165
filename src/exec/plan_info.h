/*-------------------------------------------------------------------------
 *
 * plan_info.h
 *	  What a GpuSort plan node keeps of the Sort node it replaced
 *	  (plan_info.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_PLAN_INFO_H
#define GPUSORT_PLAN_INFO_H

#include "postgres.h"

#include "access/attnum.h"
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

extern List *gpusort_plan_info_to_list(const GpuSortPlanInfo *info);
extern void gpusort_plan_info_from_list(List *private, GpuSortPlanInfo *info);

#endif							/* GPUSORT_PLAN_INFO_H */

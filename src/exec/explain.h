/*-------------------------------------------------------------------------
 *
 * explain.h
 *	  EXPLAIN output of a GpuSort node (explain.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_EXPLAIN_H
#define GPUSORT_EXPLAIN_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "exec/plan_info.h"
#include "support/sort_stats.h"

struct ExplainState;

extern void gpusort_explain_node(CustomScanState *node, const GpuSortPlanInfo *info,
								 const GpuSortStats *stats,
								 List *ancestors, struct ExplainState *es);

#endif							/* GPUSORT_EXPLAIN_H */

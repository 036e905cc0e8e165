/*-------------------------------------------------------------------------
 *
 * explain.h
 *	  EXPLAIN output of the GpuSort nodes (explain.c): GpuSort's, and its
 *	  parallel load's (GpuSortLoad).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_EXPLAIN_H
#define GPUSORT_EXPLAIN_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "exec/load_blocks.h"
#include "exec/plan_info.h"
#include "support/sort_stats.h"

struct ExplainState;

extern void gpusort_explain_node(CustomScanState *node, const GpuSortPlanInfo *info,
								 const GpuSortStats *stats,
								 List *ancestors, struct ExplainState *es);
extern void gpusort_explain_load(const LoadFigures *parts, int nparts,
								 struct ExplainState *es);

#endif							/* GPUSORT_EXPLAIN_H */

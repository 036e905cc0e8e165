/*-------------------------------------------------------------------------
 *
 * nodeGpuSortLoad.h
 *	  The parallel load of a GpuSort: Custom Scan (GpuSortLoad), which runs
 *	  in each participant of a Gather below a GpuSort and copies its share
 *	  of the input into the query's shared memory (nodeGpuSortLoad.c).
 *
 * The GpuSort above the Gather (nodeGpuSort.c) finds the leader's load
 * node below the Gather and, before the Gather starts, gives it its sort and
 * the budget share that holds the chunks in flight; the leader's load
 * moves the workers' rows into that sort while they scan, and once the
 * Gather has returned its last row the GpuSort moves what is left.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_NODE_GPUSORT_LOAD_H
#define GPUSORT_NODE_GPUSORT_LOAD_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "sort.h"
#include "sort_budget.h"

#define GPUSORT_LOAD_NODE_NAME	"GpuSortLoad"

typedef struct GpuSortLoadState GpuSortLoadState;

extern CustomScanMethods gpusort_load_scan_methods;
extern void gpusort_load_executor_init(void);

extern GpuSortLoadState *gpusort_load_below(PlanState *child);
extern void gpusort_load_start(GpuSortLoadState *load, Gpusortstate *sort,
							   BudgetShare *budget);
extern int64 gpusort_load_drain(GpuSortLoadState *load);
extern void gpusort_load_describe(GpuSortLoadState *load, StringInfo buf);

#endif							/* GPUSORT_NODE_GPUSORT_LOAD_H */

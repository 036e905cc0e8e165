/*-------------------------------------------------------------------------
 *
 * nodeGpuSortLoad.h
 *	  The parallel load of a GpuSort: Custom Scan (GpuSortLoad), which runs
 *	  in each participant of a Gather below a GpuSort and copies its share
 *	  of the input into the query's shared memory (nodeGpuSortLoad.c).
 *
 * The GpuSort above the Gather (nodeGpuSort.c) finds the leader's load
 * node below the Gather (gpusort_load_below, which also gives the load a
 * share of the backend's budget for the blocks in flight) and, before the
 * Gather starts, gives it its sort (gpusort_load_start); the leader's load
 * moves the workers' rows into that sort while they scan, and once the
 * Gather has returned its last row, gpusort_load_finish moves what is
 * left.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_NODE_GPUSORT_LOAD_H
#define GPUSORT_NODE_GPUSORT_LOAD_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "sort/sort.h"

#define GPUSORT_LOAD_NODE_NAME	"GpuSortLoad"

typedef struct GpuSortLoadState GpuSortLoadState;

extern CustomScanMethods gpusort_load_scan_methods;
extern void gpusort_load_executor_init(void);

extern GpuSortLoadState *gpusort_load_below(PlanState *child);
extern void gpusort_load_start(GpuSortLoadState *load, Sorter *sort);
extern void gpusort_load_finish(GpuSortLoadState *load);

#endif							/* GPUSORT_NODE_GPUSORT_LOAD_H */

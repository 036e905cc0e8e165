/*-------------------------------------------------------------------------
 *
 * nodeGpuSortLoad.h
 *	  The parallel load of a GpuSort: Custom Scan (GpuSortLoad), which runs
 *	  in each participant of a Gather below a GpuSort and copies its share
 *	  of the input into the query's shared memory (nodeGpuSortLoad.c).
 *
 * The GpuSort above the Gather (nodeGpuSort.c) finds the leader's load
 * node below the Gather, tells it how much shared memory the load may take
 * before the Gather starts, and, once the Gather has returned its last
 * tuple, puts every loaded tuple into its sort where it lies.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_NODE_GPUSORT_LOAD_H
#define GPUSORT_NODE_GPUSORT_LOAD_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "sort.h"

#define GPUSORT_LOAD_NODE_NAME	"GpuSortLoad"

typedef struct GpuSortLoadState GpuSortLoadState;

extern CustomScanMethods gpusort_load_scan_methods;
extern void gpusort_load_executor_init(void);

extern GpuSortLoadState *gpusort_load_below(PlanState *child);
extern void gpusort_load_set_limit(GpuSortLoadState *load, Size limit);
extern Size gpusort_load_bytes(GpuSortLoadState *load);
extern int64 gpusort_load_put_all(GpuSortLoadState *load, Gpusortstate *sort);

#endif							/* GPUSORT_NODE_GPUSORT_LOAD_H */

/*-------------------------------------------------------------------------
 *
 * nodeGpuSort.h
 *	  Custom Scan (GpuSort), the executor node that stands where a Sort
 *	  stood (nodeGpuSort.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_NODE_GPUSORT_H
#define GPUSORT_NODE_GPUSORT_H

#include "postgres.h"

#include "nodes/extensible.h"

#define GPUSORT_NODE_NAME	"GpuSort"

extern CustomScanMethods gpusort_scan_methods;
extern void gpusort_executor_init(void);

#endif							/* GPUSORT_NODE_GPUSORT_H */

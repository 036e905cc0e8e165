/*-------------------------------------------------------------------------
 *
 * wait_events.h
 *	  What a gpusort process waits for, as pg_stat_activity shows it
 *	  (wait_events.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_WAIT_EVENTS_H
#define GPUSORT_WAIT_EVENTS_H

#include "postgres.h"

typedef enum GpuSortWait
{
	GPUSORT_WAIT_GPU_ADMISSION,	/* a request queued for room on a GPU */
	GPUSORT_WAIT_GPU_RESULT,	/* the GPU's sort and its permutation */
	GPUSORT_WAIT_STAGING_SLOT,	/* a free staging slot for keys */
	GPUSORT_WAIT_SERVICE_MAIN,	/* the GPU service, for work */
	GPUSORT_WAIT_SERVICE_GPU,	/* the GPU service, for a GPU's copies or kernels */
	GPUSORT_WAIT_INJECTED_DELAY,	/* gpusort.inject_fault's delay */
	NUM_GPUSORT_WAITS
} GpuSortWait;

extern uint32 gpusort_wait_event(GpuSortWait wait);

#endif							/* GPUSORT_WAIT_EVENTS_H */

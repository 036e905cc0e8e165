/*-------------------------------------------------------------------------
 *
 * wait_events.c
 *	  The wait event a gpusort process shows in pg_stat_activity while it
 *	  waits for one of gpusort's own things (wait_events.h):
 *	  gpusort_wait_event, which the GPU engine, the GPU service and an
 *	  injected delay (faults.c) wait under.
 *
 * From 17 on each has a name of its own, registered on first use
 * (pg_wait_events lists it from then on); before 17 all are the generic
 * "Extension".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/wait_event.h"

#include "support/wait_events.h"

uint32
gpusort_wait_event(GpuSortWait wait)
{
#if PG_VERSION_NUM >= 170000
	static const char *const names[NUM_GPUSORT_WAITS] = {
		[GPUSORT_WAIT_GPU_ADMISSION] = "GpuSortGpuAdmission",
		[GPUSORT_WAIT_GPU_RESULT] = "GpuSortGpuResult",
		[GPUSORT_WAIT_STAGING_SLOT] = "GpuSortStagingSlot",
		[GPUSORT_WAIT_SERVICE_MAIN] = "GpuSortServiceMain",
		[GPUSORT_WAIT_SERVICE_GPU] = "GpuSortServiceGpu",
		[GPUSORT_WAIT_INJECTED_DELAY] = "GpuSortInjectedDelay",
	};
	static uint32 events[NUM_GPUSORT_WAITS];

	if (events[wait] == 0)
		events[wait] = WaitEventExtensionNew(names[wait]);
	return events[wait];
#else
	return PG_WAIT_EXTENSION;
#endif
}

/*-------------------------------------------------------------------------
 *
 * faults.c
 *	  Fault and delay injection points, for the reliability tests.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "faults.h"

void
gpusort_fault_point(GpuSortPhase phase)
{
}

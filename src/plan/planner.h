/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  The planner hook that puts GpuSort into plans (planner.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_PLANNER_H
#define GPUSORT_PLANNER_H

#include "postgres.h"

extern void gpusort_planner_init(void);

#endif							/* GPUSORT_PLANNER_H */

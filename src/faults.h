/*-------------------------------------------------------------------------
 *
 * faults.h
 *	  Fault and delay injection points, for the reliability tests.
 *
 * The executor calls gpusort_fault_point() as a sort enters each of its
 * phases; what happens there (nothing, by default) is decided by faults.c
 * from superuser-only settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_FAULTS_H
#define GPUSORT_FAULTS_H

typedef enum GpuSortPhase
{
	GPUSORT_PHASE_LOAD,			/* reading the child's tuples */
	GPUSORT_PHASE_ENCODE,		/* building normalized keys */
	GPUSORT_PHASE_SORT,			/* the engine's sort */
	GPUSORT_PHASE_RESOLVE,		/* refinement, comparator pass, verification */
	GPUSORT_PHASE_EMIT			/* returning tuples */
} GpuSortPhase;

extern void gpusort_fault_point(GpuSortPhase phase);

#endif							/* GPUSORT_FAULTS_H */

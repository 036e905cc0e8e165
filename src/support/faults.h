/*-------------------------------------------------------------------------
 *
 * faults.h
 *	  Fault and delay injection points, for the reliability tests.
 *
 * Each stage of a sort calls gpusort_fault_point() in its phase: as it
 * enters it, or, for the phases that run all along, again and again (the
 * load every ENCODE_BATCH tuples and at each block of a parallel load, the
 * emit in the node before every tuple it returns); what happens there
 * (nothing, by default) is decided by faults.c from the superuser-only
 * setting gpusort.inject_fault, whose value names one fault:
 *
 *	''  or 'none'		nothing (the default)
 *	'error:PHASE'		an ordinary ERROR as the sort enters PHASE
 *	'delay:PHASE:MS'	a sleep of MS milliseconds in PHASE, once per
 *						statement, that a cancel or statement_timeout ends
 *	'arena_oom'			the arena's next block (after the first) cannot be
 *						allocated: each batch ends after its first block
 *						and is written as a sorted run
 *	'cpu_alloc'			the CPU engine cannot allocate its key chunks
 *						after the first two (out of memory): comparators
 *						order the batch
 *	'gpu_init'			GPU steps, for every sort on the GPU: context
 *	'gpu_alloc'			creation, device allocation, host-to-device copy,
 *	'gpu_h2d'			kernel launch, kernel execution, device-to-host copy
 *	'gpu_launch'		(each fails; the sort goes on with the CPU engine),
 *	'gpu_kernel'		and a GPU that is lost after the first chunk (a
 *	'gpu_d2h'			sticky error: this backend uses no GPU again)
 *	'gpu_lost'
 *	'gpu_busy'			no failure: a kernel keeps the GPU busy for five
 *						seconds before each sort on the GPU, so that
 *						tests can see what the GPU service does while it
 *						waits for a long sort
 *
 * PHASE is load, encode, threads (the backend waits for pool threads that
 * still work), sort, resolve, spill, merge, emit or replay (an index
 * build's sorted rows handed to btbuild, index_build.c).  A gpu_* value names
 * one of the CUDA side's fault points (GsCudaFault, cuda/gscuda_faults.h,
 * the one list of them), which the GPU engine posts with its request and
 * the GPU service arms in the CUDA side.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_FAULTS_H
#define GPUSORT_FAULTS_H

#include "utils/guc.h"

#include "gscuda_faults.h"

typedef enum GpuSortPhase
{
	GPUSORT_PHASE_LOAD,			/* reading the child's tuples */
	GPUSORT_PHASE_ENCODE,		/* building normalized keys */
	GPUSORT_PHASE_THREADS,	/* waiting for pool threads that still work */
	GPUSORT_PHASE_SORT,			/* the engine's sort */
	GPUSORT_PHASE_RESOLVE,		/* refine, comparator pass, collation check */
	GPUSORT_PHASE_SPILL,		/* writing a sorted run to a temporary file */
	GPUSORT_PHASE_MERGE,		/* merge passes, before the first tuple */
	GPUSORT_PHASE_EMIT,			/* returning tuples */
	GPUSORT_PHASE_REPLAY		/* an index build's sorted rows handed to
								 * btbuild */
} GpuSortPhase;

/* gpusort.inject_fault (settings.c) and its hooks */
extern char *gpusort_inject_fault;
extern bool gpusort_inject_fault_check(char **newval, void **extra, GucSource source);
extern void gpusort_inject_fault_assign(const char *newval, void *extra);

/* the executor, as a sort enters each phase */
extern void gpusort_fault_point(GpuSortPhase phase);

/* the GPU engine, as a sort starts: the GPU fault to arm (or NONE) */
extern GsCudaFault gpusort_fault_gpu(void);

/*
 * The arena, before it takes a new block when it already holds
 * arena_bytes: true if the allocation is to fail (arena_oom).
 */
extern bool gpusort_fault_arena_oom(Size arena_bytes);

/* The CPU engine, before it allocates key chunk chunkno: true to fail. */
extern bool gpusort_fault_cpu_alloc(size_t chunkno);

#endif							/* GPUSORT_FAULTS_H */

/*-------------------------------------------------------------------------
 *
 * gscuda_types.h
 *	  The types and limits of the CUDA side that its C interface
 *	  (gscuda_api.h) and its lowest layer (gscuda_common.cuh) share.
 *
 * The C interface declares its functions over these; every layer of the
 * engine sees them through gscuda_common.cuh, which includes this header and
 * not the interface above it.  Plain C, so that src/, nvcc and the kernel
 * tests read it alike.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_TYPES_H
#define GSCUDA_TYPES_H

#include <stddef.h>

#include "gscuda_faults.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GSCUDA_MAX_KEY_WORDS 4

/* Which GPU algorithm sorts the records. */
typedef enum GsCudaAlgorithm
{
	GSCUDA_ALGO_AUTO = 0,		/* the faster one for the key width */
	GSCUDA_ALGO_BUCKET,			/* deterministic sample sort (GPU BUCKET
								 * SORT) */
	GSCUDA_ALGO_RADIX			/* CUB DeviceRadixSort */
} GsCudaAlgorithm;

/* What a finished sort reports, for EXPLAIN ANALYZE. */
typedef struct GsCudaStats
{
	char		algorithm[32];	/* "bucket sort", "radix sort",
								 * "presorted", ... */
	double		h2d_ms;			/* host-to-device copies (sum of chunk
								 * copies) */
	double		sort_ms;		/* kernels after the last chunk arrived */
	double		d2h_ms;			/* permutation copy back */
	size_t		device_bytes;	/* peak GPU memory held by this sort */
	int			presorted;		/* 1: input already in order, 2: exactly
								 * reversed */
} GsCudaStats;

/* One sort, from gscuda_sort_begin() to gscuda_sort_end(). */
typedef struct GsCudaSort GsCudaSort;

/*
 * Called between polls while this process waits for a GPU (waiting = 1),
 * and once when the wait is over (waiting = 0); returning 0 gives the wait
 * up, which fails the sort (gscuda_set_wait_hook).
 */
typedef int (*GsCudaWaitHook) (int waiting);

#ifdef __cplusplus
}
#endif

#endif							/* GSCUDA_TYPES_H */

/*-------------------------------------------------------------------------
 *
 * hostmem.h
 *	  Large host memory for a sort (the tuple arena, the tuple pointers, the
 *	  order and the CPU engine's workspace), kept mapped between sorts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_HOSTMEM_H
#define GPUSORT_HOSTMEM_H

#include "postgres.h"

/* requests below this size are served by palloc */
#define HOSTMEM_MIN_REQUEST		((Size) 1024 * 1024)

extern void *hostmem_alloc(MemoryContext owner, Size size);
extern void *hostmem_grow(void *p, Size oldsize, Size newsize);
extern void hostmem_free(void *p, Size size);
extern Size hostmem_owned(MemoryContext owner);
extern Size hostmem_peak_reset(void);
extern Size hostmem_peak(void);
extern Size hostmem_cached(void);
extern void hostmem_assign_cache_limit(int newval_kb, void *extra);

#endif							/* GPUSORT_HOSTMEM_H */

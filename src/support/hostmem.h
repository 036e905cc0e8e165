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

/* the transparent huge page, the unit that hostmem_populate works in best */
#define HOSTMEM_HUGE_PAGE		((Size) 2 * 1024 * 1024)

/* hostmem_alloc's flags */
#define HOSTMEM_HUGE			0x01	/* accessed at random: huge pages pay */

extern void *hostmem_alloc(MemoryContext owner, Size size, int flags);
extern void *hostmem_reserve(MemoryContext owner, Size size, Size room,
							 int flags);
extern bool hostmem_fresh(void *p);
extern bool hostmem_populate(void *p, Size len);
extern void *hostmem_grow(void *p, Size oldsize, Size newsize);
extern void hostmem_free(void *p, Size size);
extern Size hostmem_owned(MemoryContext owner);
extern Size hostmem_peak_reset(void);
extern Size hostmem_peak(void);
extern Size hostmem_cached(void);
extern void hostmem_assign_cache_limit(int newval_kb, void *extra);

#endif							/* GPUSORT_HOSTMEM_H */

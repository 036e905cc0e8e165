/*-------------------------------------------------------------------------
 *
 * cpu_radix.h
 *	  The CPU engine's record sort: a stable LSD radix sort of key-index
 *	  records, in plain C (no PostgreSQL calls), so that the GPU kernel
 *	  tests can link it as their reference.
 *
 * Records are described as in cuda/gpusort_cuda.h: key_words 64-bit words
 * per record (word 0 most significant, unsigned), stored in chunks of
 * chunk_records records; the index of a record is its position.  The result
 * is the permutation sorted by (key, index).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CPU_RADIX_H
#define CPU_RADIX_H

#include <stddef.h>
#include <stdint.h>

/*
 * Called between radix passes and every few million records within one, if
 * set: the PostgreSQL side checks for cancel there (it may not return).
 */
extern void (*gs_cpu_radix_progress) (void);

/* Bytes of workspace gs_cpu_radix_sort() needs for n records. */
extern size_t gs_cpu_radix_workspace(size_t n, int key_words);

/*
 * Sort n records; chunks[c] holds records c*chunk_records ...; perm receives
 * n indexes.  workspace must be gs_cpu_radix_workspace() bytes, 8-aligned.
 * Returns the number of radix passes that were needed (0 when the input was
 * already in order).
 */
extern int	gs_cpu_radix_sort(uint64_t *const *chunks, size_t chunk_records,
							  size_t n, int key_words,
							  uint32_t *perm, void *workspace);

#endif							/* CPU_RADIX_H */

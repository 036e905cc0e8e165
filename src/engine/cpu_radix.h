/*-------------------------------------------------------------------------
 *
 * cpu_radix.h
 *	  The CPU engine's record sort: a stable radix sort of key-index
 *	  records, in plain C (no PostgreSQL calls), so that the GPU kernel
 *	  tests can link it as their reference.
 *
 * Records are described as in cuda/gscuda_api.h: key_words 64-bit words
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

#include "keys/key_order.h"

/*
 * Called every few million records of a sort in one thread, if set: the
 * PostgreSQL side checks for cancel there (it may not return).  A threaded
 * sort leaves that to GsRadixThreads.run.
 */
extern void (*gs_cpu_radix_progress) (void);

/*
 * Threads a sort may use: run(arg, task, task_arg, ntasks, grain) calls
 * task(task_arg, from, to) over [0, ntasks) in pieces of grain, in any
 * threads, and returns when every piece is done.  ntasks: how many
 * pieces keep the threads busy (threads and the caller together).  Tasks
 * call nothing of the caller's; run() may check for cancel while it waits.
 */
typedef void (*GsRadixTask) (void *task_arg, size_t from, size_t to);

typedef struct GsRadixThreads
{
	int			ntasks;
	void		(*run) (void *arg, GsRadixTask task, void *task_arg,
						size_t ntasks, size_t grain);
	void	   *arg;
} GsRadixThreads;


/* fewer records than this are sorted in one thread, whatever the threads */
#define GS_RADIX_PARALLEL_MIN_RECORDS	((size_t) 1 << 18)

/* Bytes of workspace gs_cpu_radix_sort() needs for n records. */
extern size_t gs_cpu_radix_workspace(size_t n, int key_words);

/*
 * Sort n records (n < 2^32: the indexes are 32-bit); chunks[c] holds records
 * c*chunk_records ...; perm receives n indexes.  workspace must be
 * gs_cpu_radix_workspace() bytes, 8-aligned.
 * threads, if not NULL, share the work of a large sort; the result is the
 * same.  Returns the number of digits that needed a pass (0 when the input
 * was already in order).
 */
extern int	gs_cpu_radix_sort(uint64_t *const *chunks, size_t chunk_records,
							  size_t n, int key_words,
							  uint32_t *perm, void *workspace,
							  const GsRadixThreads *threads);

#endif							/* CPU_RADIX_H */

/*-------------------------------------------------------------------------
 *
 * keythreads.h
 *	  The key threads: the sort's pool of threads, named for its main job
 *	  (building keys, keys_build.c), to which the other stages lend work
 *	  (keythreads.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_KEYTHREADS_H
#define GPUSORT_KEYTHREADS_H

#include "postgres.h"

#include "keys.h"

typedef struct KeyThreadPool KeyThreadPool;

/*
 * A task: do items [from, to) of arg's work with the builder context ctx.
 * Runs in a pool thread or in the backend; must not call into PostgreSQL.
 * Returns false on failure, with the reason in ctx (key_build_error).
 */
typedef bool (*KeyTaskFn) (KeyBuildContext *ctx, void *arg, size_t from, size_t to);

/*
 * A counter of unfinished tasks that the backend can wait for.  Running
 * tasks decrement it, so it must live in the sort's memory, never on the
 * stack: keythreads_group_create, or an array in the sort's context.
 */
typedef struct KeyTaskGroup
{
	volatile int pending;		/* under the pool's lock */
	bool		always_run;		/* its tasks run even after another task
								 * failed: work that later work needs,
								 * such as copying tuples (batch_load.c) */
} KeyTaskGroup;

extern int	keythreads_wanted(void);
extern KeyThreadPool *keythreads_start(const KeyLayout *layout, int nthreads,
									   MemoryContext cxt);
extern int	keythreads_count(KeyThreadPool *pool);
extern void keythreads_idle(KeyThreadPool *pool);
extern KeyBuildContext *keythreads_backend_context(KeyThreadPool *pool);
extern KeyTaskGroup *keythreads_group_create(KeyThreadPool *pool);
extern void keythreads_submit(KeyThreadPool *pool, KeyTaskGroup *group,
							  KeyTaskFn fn, void *arg, size_t from, size_t to);
extern bool keythreads_group_done(KeyThreadPool *pool, KeyTaskGroup *group);
extern void keythreads_wait(KeyThreadPool *pool, KeyTaskGroup *group);
extern void keythreads_wait_all(KeyThreadPool *pool);
extern void keythreads_forget_group(KeyThreadPool *pool, KeyTaskGroup *group);
extern void keythreads_parallel_for(KeyThreadPool *pool, KeyTaskFn fn, void *arg,
									size_t n, size_t grain);
extern const char *keythreads_failure(KeyThreadPool *pool);
extern double keythreads_busy_ms(KeyThreadPool *pool);

#endif							/* GPUSORT_KEYTHREADS_H */

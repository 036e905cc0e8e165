/*-------------------------------------------------------------------------
 *
 * threadpool.h
 *	  The sort's thread pool (threadpool.c): threads that run, beside the
 *	  backend, the work any stage lends them as tasks (building keys,
 *	  copying a parallel load's blocks, writing runs, merging windows,
 *	  resolving ties), none of which calls into PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_THREADPOOL_H
#define GPUSORT_THREADPOOL_H

#include "postgres.h"

#include "keys/keys.h"

typedef struct ThreadPool ThreadPool;

/*
 * A task: do items [from, to) of arg's work with the builder context ctx.
 * Runs in a pool thread or in the backend; must not call into PostgreSQL.
 * Returns false on failure, with the reason in ctx (key_build_error).
 */
typedef bool (*TaskFn) (KeyBuildContext *ctx, void *arg, size_t from, size_t to);

/*
 * A counter of unfinished tasks that the backend can wait for.  Running
 * tasks decrement it, so it must live in the sort's memory, never on the
 * stack: threadpool_group_create, or an array in the sort's context.
 */
typedef struct TaskGroup
{
	volatile int pending;		/* under the pool's lock */
	bool		always_run;		/* its tasks run even after another task
								 * failed: work that later work needs,
								 * such as copying tuples (batch_load.c) */
} TaskGroup;

extern int	threadpool_wanted(void);
extern ThreadPool *threadpool_start(const KeyLayout *layout, int nthreads,
									   MemoryContext cxt);
extern int	threadpool_count(ThreadPool *pool);
extern void threadpool_idle(ThreadPool *pool);
extern KeyBuildContext *threadpool_backend_context(ThreadPool *pool);
extern TaskGroup *threadpool_group_create(ThreadPool *pool);
extern void threadpool_submit(ThreadPool *pool, TaskGroup *group,
							  TaskFn fn, void *arg, size_t from, size_t to);
extern bool threadpool_group_done(ThreadPool *pool, TaskGroup *group);
extern void threadpool_wait(ThreadPool *pool, TaskGroup *group);
extern void threadpool_wait_all(ThreadPool *pool);
extern void threadpool_forget_group(ThreadPool *pool, TaskGroup *group);
extern void threadpool_parallel_for(ThreadPool *pool, TaskFn fn, void *arg,
									size_t n, size_t grain);
extern const char *threadpool_failure(ThreadPool *pool);
extern double threadpool_busy_ms(ThreadPool *pool);

#endif							/* GPUSORT_THREADPOOL_H */

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

typedef struct ThreadPool ThreadPool;

/*
 * A task: do items [from, to) of arg's work with state, the state of the
 * thread that runs it (ThreadStates).  Runs in a pool thread or in the
 * backend; must not call into PostgreSQL.  Returns false on failure, with
 * the reason in state (ThreadStates.failure).
 */
typedef bool (*TaskFn) (void *state, void *arg, size_t from, size_t to);

/*
 * What each thread carries for the tasks it runs, which the pool's owner
 * makes and the pool only hands on: states[i] is thread i's, states[n] the
 * backend's for a pool of n threads (the sort's key builders, batch.c).
 */
typedef struct ThreadStates
{
	void	  **states;			/* n + 1 of them; the pool copies the array */
	/* why a task that returned false with this state failed */
	const char *(*failure) (void *state);
	/* free a state: at the pool's end, once no thread runs */
	void		(*release) (void *state);
} ThreadStates;

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
extern ThreadPool *threadpool_start(int nthreads, const ThreadStates *states,
									MemoryContext cxt);
extern volatile bool *threadpool_stop_flag(ThreadPool *pool);
extern int	threadpool_count(ThreadPool *pool);
extern void threadpool_idle(ThreadPool *pool);
extern void *threadpool_backend_state(ThreadPool *pool);
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

/*-------------------------------------------------------------------------
 *
 * threadpool.c
 *	  The sort's thread pool: threads beside the backend that run the tasks
 *	  every stage lends them: building keys (keys_build.c) and the others'
 *	  work.
 *
 * Collation keys are the costliest per-row work of a text sort (glibc's
 * strxfrm takes about a microsecond for a 32-character string, more than
 * the GPU spends per record), so a sort that needs them builds them in a
 * few threads while the backend goes on reading its input.  Other stages
 * lend the pool their work too, as tasks (TaskFn) they hand it: the
 * load copies a parallel load's blocks of tuples into the arena
 * (batch_load.c), the encode stage encodes fixed keys once the input has
 * ended (batch_encode.c), the CPU engine runs its radix sort's passes
 * (engine_cpu.c), resolve compares neighbouring keys (resolve.c, refine.c),
 * the gather builds the sorted tuple pointers (batch_sort.c), runs are
 * written (run_write.c), and the final merge reads and merges them
 * (run_merge_window.c).  The pool knows none of them: it runs tasks, and
 * hands each the state of the thread that runs it, which the pool's owner
 * makes and describes (ThreadStates: the sort's key builders, batch.c).
 * The threads run only code that never calls into PostgreSQL
 * (TaskFn): they walk tuples with the same arithmetic as
 * heap_deform_tuple, but every PostgreSQL call (detoasting, slots, errors)
 * stays in the backend.  They block every signal, so signals keep going to
 * the backend.
 *
 * By default a sort gets half the CPUs, and no more than its share of them
 * among the sorts of the server that are loading or sorting at once
 * (threadpool_wanted): each pool is counted in the extension's shared
 * memory from its start until its sort has sorted (threadpool_idle), or
 * until it is stopped, and again if it is given work after that.  A sort
 * that is returning its rows, perhaps slowly through a cursor, keeps its
 * threads asleep and takes no share, so that open cursors do not starve
 * the sorts that start after them.
 *
 * The pool belongs to a memory context of the sort: deleting or resetting
 * it (the sort ending, an error, a cancel) tells running tasks to stop and
 * joins the threads first, before any memory they might write into goes
 * away.  Task groups are allocated in the sort's memory
 * (threadpool_group_create), and threadpool_parallel_for uses one the pool
 * owns, because running tasks decrement them after an ERROR may have
 * unwound the backend's stack.  The backend waits for its tasks with
 * interrupts checked every few milliseconds, pausing the pool before it may
 * be cancelled, and runs queued tasks itself while it waits; an error
 * raised there drops the queued tasks, so that only threadpool_parallel_for
 * (which waits for its tasks before it returns) may hand tasks arguments
 * on its caller's stack.
 *
 * What the others call: threadpool_wanted (how many threads a sort would
 * get) and threadpool_start, its stop flag (threadpool_stop_flag), size
 * (threadpool_count) and the backend's own thread state
 * (threadpool_backend_state); tasks, in groups (threadpool_group_create,
 * threadpool_submit, threadpool_group_done, threadpool_wait,
 * threadpool_wait_all, threadpool_forget_group) or at once
 * (threadpool_parallel_for); threadpool_idle once a sort has sorted;
 * threadpool_failure, a failed task's reason; and threadpool_busy_ms, the
 * threads' busy time for EXPLAIN.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "support/settings.h"
#include "support/shmem.h"
#include "support/threadpool.h"

#define QUEUE_CAPACITY		1024
#define MAX_POOL_THREADS		64
#define WAIT_SLICE_NS		(5 * 1000 * 1000)

struct ThreadPool;

typedef struct WorkerStart
{
	struct ThreadPool *pool;
	int			index;
} WorkerStart;

typedef struct KeyTask
{
	TaskFn	fn;
	void	   *arg;
	size_t		from;
	size_t		to;
	TaskGroup  *group;
} KeyTask;

struct ThreadPool
{
	int			nthreads;
	int			nstarted;
	pthread_t	threads[MAX_POOL_THREADS];
	WorkerStart starts[MAX_POOL_THREADS];
	const char *(*failure_of) (void *state);	/* ThreadStates.failure */
	void		(*release) (void *state);

	pthread_mutex_t lock;
	pthread_cond_t work_ready;	/* workers wait here for tasks */
	pthread_cond_t work_done;	/* the backend waits here for completions */
	KeyTask		queue[QUEUE_CAPACITY];
	size_t		head;
	size_t		count;
	int			running;
	bool		paused;			/* no task may start: see wait_for() */
	volatile bool stop;			/* running tasks are to give up */
	bool		shutdown;
	bool		failed;
	char		failure[256];
	double		busy_ns;
	TaskGroup parallel_for_group;	/* threadpool_parallel_for's tasks */

	MemoryContextCallback stop_callback;
	bool		counted;		/* in the server's sorts_with_threads */

	int			nstates;		/* nthreads as asked + 1 */
	void	   *states[FLEXIBLE_ARRAY_MEMBER];	/* the last: the backend's */
};

/* pools of this backend counted in sorts_with_threads */
static int	my_counted_pools = 0;

/*
 * gpusort.threads, resolved.  -1 is half the online CPUs, at most 16,
 * and, where the library is preloaded, no more than the CPUs leave to each
 * of the sorts of the server that run at once (CPUs / sorts - 1, the
 * backends' own threads counted).  Threads beyond the CPUs add nothing to a
 * busy server's throughput and take CPU time from its backends (and from
 * the GPU service): measured with test/gpu/pgbench.sh at 200 clients on
 * 16 CPUs, each backend starting 8 threads, 2 threads each gave 16% more
 * transactions per second.
 */
int
threadpool_wanted(void)
{
	long		cpus;
	long		threads;

	if (gpusort_threads >= 0)
		return Min(gpusort_threads, MAX_POOL_THREADS);
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	threads = Min(cpus / 2, 16);
	if (gpusort_shared != NULL)
	{
		uint32		others = pg_atomic_read_u32(&gpusort_shared->sorts_with_threads);

		threads = Min(threads, cpus / ((long) others + 1) - 1);
	}
	return (int) Max(threads, 0);
}

/* A backend that exits with pools still counted takes them out. */
static void
uncount_pools_at_exit(int code, Datum arg)
{
	if (gpusort_shared != NULL && my_counted_pools > 0)
		pg_atomic_fetch_sub_u32(&gpusort_shared->sorts_with_threads,
								(uint32) my_counted_pools);
	my_counted_pools = 0;
}

/* Count a pool in the server's sorts with pool threads (once). */
static void
count_pool(ThreadPool *pool)
{
	static bool exit_hook = false;

	if (gpusort_shared == NULL)
		return;
	if (!exit_hook)
	{
		on_shmem_exit(uncount_pools_at_exit, 0);
		exit_hook = true;
	}
	pg_atomic_fetch_add_u32(&gpusort_shared->sorts_with_threads, 1);
	my_counted_pools++;
	pool->counted = true;
}

static void
uncount_pool(ThreadPool *pool)
{
	if (!pool->counted || gpusort_shared == NULL)
		return;
	pool->counted = false;
	if (my_counted_pools > 0)
	{
		pg_atomic_fetch_sub_u32(&gpusort_shared->sorts_with_threads, 1);
		my_counted_pools--;
	}
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Run one task, with the lock released; called with it held. */
static void
run_task_locked(ThreadPool *pool, KeyTask task, void *state)
{
	bool		ok = true;
	double		start;

	pool->running++;
	pthread_mutex_unlock(&pool->lock);

	start = now_ns();
	if (!pool->failed || task.group->always_run)
		ok = task.fn(state, task.arg, task.from, task.to);

	pthread_mutex_lock(&pool->lock);
	pool->busy_ns += now_ns() - start;
	if (!ok && !pool->failed)
	{
		pool->failed = true;
		strlcpy(pool->failure, pool->failure_of(state), sizeof(pool->failure));
	}
	task.group->pending--;
	pool->running--;
	pthread_cond_broadcast(&pool->work_done);
}

static bool
pop_task_locked(ThreadPool *pool, KeyTask *task)
{
	if (pool->count == 0)
		return false;
	*task = pool->queue[pool->head];
	pool->head = (pool->head + 1) % QUEUE_CAPACITY;
	pool->count--;
	return true;
}

static void *
worker_main(void *arg)
{
	WorkerStart *start = (WorkerStart *) arg;
	ThreadPool *pool = start->pool;
	void	   *state = pool->states[start->index];

	pthread_mutex_lock(&pool->lock);
	for (;;)
	{
		KeyTask		task;

		while (!pool->shutdown && (pool->paused || pool->count == 0))
			pthread_cond_wait(&pool->work_ready, &pool->lock);
		if (pool->shutdown)
			break;
		if (pop_task_locked(pool, &task))
			run_task_locked(pool, task, state);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Stop and join the threads, free their states; the pool's memory stays. */
static void
threadpool_stop(void *arg)
{
	ThreadPool *pool = (ThreadPool *) arg;

	pthread_mutex_lock(&pool->lock);
	pool->shutdown = true;
	pool->stop = true;			/* running tasks give up at their next check */
	pool->count = 0;			/* queued tasks are dropped */
	pthread_cond_broadcast(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->nstarted; i++)
		pthread_join(pool->threads[i], NULL);
	pool->nstarted = 0;
	for (int i = 0; i < pool->nstates; i++)
	{
		pool->release(pool->states[i]);
		pool->states[i] = NULL;
	}
	pthread_cond_destroy(&pool->work_ready);
	pthread_cond_destroy(&pool->work_done);
	pthread_mutex_destroy(&pool->lock);
	uncount_pool(pool);
}

/*
 * Start nthreads threads (0: the backend does all the work), living as long
 * as cxt, with the nthreads + 1 states of states, which the pool releases
 * when it stops.  Fewer threads start if the system refuses more.
 */
ThreadPool *
threadpool_start(int nthreads, const ThreadStates *states, MemoryContext cxt)
{
	int			nstates = Max(nthreads, 0) + 1;
	ThreadPool *pool;
	sigset_t	all;
	sigset_t	saved;

	/* the states are the pool's from here on, released if it cannot start */
	pool = MemoryContextAllocExtended(cxt, offsetof(ThreadPool, states) +
									  nstates * sizeof(void *),
									  MCXT_ALLOC_ZERO | MCXT_ALLOC_NO_OOM);
	if (pool == NULL)
	{
		for (int i = 0; i < nstates; i++)
			states->release(states->states[i]);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	pool->nthreads = Min(Max(nthreads, 0), MAX_POOL_THREADS);
	pool->nstates = nstates;
	memcpy(pool->states, states->states, nstates * sizeof(void *));
	pool->failure_of = states->failure;
	pool->release = states->release;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_ready, NULL);
	pthread_cond_init(&pool->work_done, NULL);
	pool->stop_callback.func = threadpool_stop;
	pool->stop_callback.arg = pool;
	MemoryContextRegisterResetCallback(cxt, &pool->stop_callback);
	count_pool(pool);

	/* threads inherit the signal mask: start them with every signal blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (int i = 0; i < pool->nthreads; i++)
	{
		pool->starts[i].pool = pool;
		pool->starts[i].index = i;
		if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->starts[i]) != 0)
			break;
		pool->nstarted++;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return pool;
}

int
threadpool_count(ThreadPool *pool)
{
	return pool->nstarted;
}

/* the state for work the backend does itself */
void *
threadpool_backend_state(ThreadPool *pool)
{
	return pool->states[pool->nstates - 1];
}

/*
 * The flag that tells running tasks to give up (the sort ending, a
 * cancel): what the states' owner makes the tasks watch.
 */
volatile bool *
threadpool_stop_flag(ThreadPool *pool)
{
	return &pool->stop;
}

/*
 * The sort has done the work it had its threads for (it now returns its
 * rows): it no longer counts among the server's sorts that share the CPUs.
 * The threads stay, asleep; work given to them later counts it again.
 */
void
threadpool_idle(ThreadPool *pool)
{
	uncount_pool(pool);
}

/* Queue a task; without threads, run it now. */
void
threadpool_submit(ThreadPool *pool, TaskGroup *group,
				  TaskFn fn, void *arg, size_t from, size_t to)
{
	KeyTask		task = {fn, arg, from, to, group};

	if (!pool->counted)
		count_pool(pool);
	pthread_mutex_lock(&pool->lock);
	group->pending++;
	if (pool->nstarted == 0)
	{
		run_task_locked(pool, task, threadpool_backend_state(pool));
		pthread_mutex_unlock(&pool->lock);
		return;
	}
	while (pool->count == QUEUE_CAPACITY)
	{
		KeyTask		queued;

		/* a full queue: lend a hand rather than wait */
		if (pop_task_locked(pool, &queued))
			run_task_locked(pool, queued, threadpool_backend_state(pool));
	}
	pool->queue[(pool->head + pool->count) % QUEUE_CAPACITY] = task;
	pool->count++;
	pthread_cond_signal(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);
}

bool
threadpool_group_done(ThreadPool *pool, TaskGroup *group)
{
	bool		done;

	pthread_mutex_lock(&pool->lock);
	done = (group->pending == 0);
	pthread_mutex_unlock(&pool->lock);
	return done;
}

/*
 * Wait until group's tasks (or, with group NULL, all tasks) are done,
 * running queued tasks meanwhile and checking for interrupts.
 */
static void
wait_for(ThreadPool *pool, TaskGroup *group)
{
	for (;;)
	{
		KeyTask		task;
		bool		busy;

		pthread_mutex_lock(&pool->lock);
		busy = group ? group->pending > 0 : (pool->count > 0 || pool->running > 0);
		if (!busy)
		{
			pthread_mutex_unlock(&pool->lock);
			return;
		}
		if (pop_task_locked(pool, &task))
			run_task_locked(pool, task, threadpool_backend_state(pool));
		else
		{
			struct timespec deadline;

			clock_gettime(CLOCK_REALTIME, &deadline);
			deadline.tv_nsec += WAIT_SLICE_NS;
			if (deadline.tv_nsec >= 1000000000L)
			{
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&pool->work_done, &pool->lock, &deadline);
		}
		pthread_mutex_unlock(&pool->lock);

		if (INTERRUPTS_PENDING_CONDITION())
		{
			/*
			 * A cancel may leave this function by longjmp, and tasks may
			 * refer to our caller's stack: let no task run from here on
			 * until we know that we stay.  (The threads themselves are
			 * stopped when the sort's memory goes.)
			 */
			pthread_mutex_lock(&pool->lock);
			pool->paused = true;

			/*
			 * A cancel or terminate will end the sort: running tasks give
			 * up at once rather than finish (a task of long strings can
			 * take seconds).
			 */
			if (QueryCancelPending || ProcDiePending)
				pool->stop = true;
			while (pool->running > 0)
				pthread_cond_wait(&pool->work_done, &pool->lock);
			pthread_mutex_unlock(&pool->lock);

			PG_TRY();
			{
				CHECK_FOR_INTERRUPTS();
			}
			PG_CATCH();
			{
				/*
				 * The error ends the sort.  Queued tasks may refer to the
				 * frames it unwinds (threadpool_parallel_for's callers pass
				 * their own): drop them, so that nothing runs them before
				 * the pool is stopped.
				 */
				pthread_mutex_lock(&pool->lock);
				pool->count = 0;
				pool->stop = true;
				if (!pool->failed)
				{
					pool->failed = true;
					strlcpy(pool->failure, "the sort was interrupted",
							sizeof(pool->failure));
				}
				pthread_mutex_unlock(&pool->lock);
				PG_RE_THROW();
			}
			PG_END_TRY();

			pthread_mutex_lock(&pool->lock);
			pool->paused = false;
			pthread_cond_broadcast(&pool->work_ready);
			pthread_mutex_unlock(&pool->lock);
		}
	}
}

void
threadpool_wait(ThreadPool *pool, TaskGroup *group)
{
	wait_for(pool, group);
}

void
threadpool_wait_all(ThreadPool *pool)
{
	wait_for(pool, NULL);
}

/*
 * Drop group's queued tasks and wait until no task runs, with no interrupt
 * checked: for a reset callback of memory that group's tasks write into,
 * which may run during an abort.  Running tasks give up at their next check
 * only if the pool was stopped; ours are short.  Tasks dropped on an error
 * (wait_for) are not counted out of their group, so this never waits for
 * the group's count.
 */
void
threadpool_forget_group(ThreadPool *pool, TaskGroup *group)
{
	size_t		kept = 0;

	pthread_mutex_lock(&pool->lock);
	for (size_t i = 0; i < pool->count; i++)
	{
		KeyTask		task = pool->queue[(pool->head + i) % QUEUE_CAPACITY];

		if (task.group == group)
			group->pending--;
		else
			pool->queue[(pool->head + kept++) % QUEUE_CAPACITY] = task;
	}
	pool->count = kept;
	while (pool->running > 0)
		pthread_cond_wait(&pool->work_done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

/*
 * A group for tasks, in the pool's memory: it outlives an ERROR raised
 * while its tasks still run, until the pool is stopped.
 */
TaskGroup *
threadpool_group_create(ThreadPool *pool)
{
	return MemoryContextAllocZero(GetMemoryChunkContext(pool), sizeof(TaskGroup));
}

/*
 * Run fn over [0, n) in pieces of grain items, and wait for it.  Not
 * reentrant: the tasks count in the pool's own group, which an ERROR
 * leaves to the pool's end (see the file header).
 */
void
threadpool_parallel_for(ThreadPool *pool, TaskFn fn, void *arg,
						size_t n, size_t grain)
{
	TaskGroup  *group = &pool->parallel_for_group;

	grain = Max(grain, 1);
	for (size_t from = 0; from < n; from += grain)
		threadpool_submit(pool, group, fn, arg, from, Min(n, from + grain));
	wait_for(pool, group);
}

/* why a task failed, or NULL */
const char *
threadpool_failure(ThreadPool *pool)
{
	return pool->failed ? pool->failure : NULL;
}

/* time spent in tasks, all threads and the backend together */
double
threadpool_busy_ms(ThreadPool *pool)
{
	return pool->busy_ns / 1e6;
}

/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  gpusort's extension-wide shared memory (shmem.h): reserved by the
 *	  postmaster when gpusort is in shared_preload_libraries, laid out at
 *	  shared memory startup.
 *
 * _PG_init calls gpusort_shmem_init, which does nothing unless gpusort is
 * being preloaded.  The GPU service's own shared memory (its request
 * table, staging slots and devices) is reserved apart, by service_shmem.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "support/shmem.h"

GpuSortShared *gpusort_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
gpusort_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(GpuSortShared)));
}

static void
gpusort_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gpusort_shared = ShmemInitStruct("gpusort", sizeof(GpuSortShared), &found);
	if (!found)
	{
		GpuSortShared *shared = gpusort_shared;

		memset(shared, 0, sizeof(GpuSortShared));
		pg_atomic_init_u64(&shared->sort_memory_held, 0);
		pg_atomic_init_u64(&shared->sort_memory_peak, 0);
		SpinLockInit(&shared->roles_lock);
		for (int i = 0; i < GPUSORT_ROLE_SLOTS; i++)
			pg_atomic_init_u64(&shared->roles[i].held, 0);
		pg_atomic_init_u32(&shared->sorts_with_threads, 0);
		for (int i = 0; i < NUM_SORT_ENGINES; i++)
		{
			pg_atomic_init_u64(&shared->sorts[i], 0);
			pg_atomic_init_u64(&shared->rows[i], 0);
			pg_atomic_init_u64(&shared->index_builds[i], 0);
		}
		for (int i = 0; i < NUM_INDEX_LEFT; i++)
			pg_atomic_init_u64(&shared->index_builds_left[i], 0);
		for (int i = 0; i < NUM_SERVICE_FALLBACKS; i++)
			pg_atomic_init_u64(&shared->fallbacks[i], 0);
		pg_atomic_init_u64(&shared->runs_for_backend_budget, 0);
		pg_atomic_init_u64(&shared->runs_for_server_budget, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init in the postmaster (shared_preload_libraries). */
void
gpusort_shmem_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = gpusort_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = gpusort_shmem_startup;
}

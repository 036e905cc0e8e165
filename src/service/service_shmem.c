/*-------------------------------------------------------------------------
 *
 * service_shmem.c
 *	  The shared memory of the GPU service (service.h): its layout, the
 *	  registration of the worker, and gpusort_gpus(), the function behind
 *	  the view of the service's GPUs.
 *
 * All of it exists only when gpusort is in shared_preload_libraries: the
 * postmaster reserves the memory (request table, staging slots) and
 * registers the worker; loaded any other way, gpusort_service stays NULL,
 * no sort reaches a GPU, and the view shows no device.  The extension's
 * other shared memory (shmem.c) and the counters of gpusort_stat (stat.c)
 * are apart.  Nothing here touches CUDA.
 *
 * What the others call: service_shmem_init (_PG_init); for the GPU
 * engine, service_running and service_no_gpu_reason (whether it can take
 * a request, and why not), service_wake_service; for both sides,
 * service_slot_data (a staging slot's bytes); for the worker,
 * service_wake_backend.
 *
 * A build without CUDA has no GPU to serve, so it registers no worker: a
 * process attached to shared memory that the OOM killer or anyone might
 * kill, taking the whole server through a crash restart with it, for
 * nothing.  It reserves the service's header alone (no request table, no
 * staging slot), already final: no device, the reason in its status, the
 * counters of gpusort_stat at zero for good.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "service/service.h"
#include "support/settings.h"

ServiceShared *gpusort_service = NULL;

#define NO_CUDA_REASON "no usable GPU: gpusort was built without CUDA"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * One request entry for every process that can sort, and some spare; none
 * without CUDA, where no backend ever posts one.
 */
static int
service_request_count(void)
{
#ifdef GPUSORT_USE_CUDA
	return MaxBackends + 8;
#else
	return 0;
#endif
}

/*
 * A build without CUDA has no GPU to stage keys for: it reserves no slots,
 * whatever gpusort.service_staging says.
 */
static int
service_slot_count(void)
{
#ifdef GPUSORT_USE_CUDA
	return Max(SERVICE_MIN_SLOTS,
			   (int) (((Size) gpusort_service_staging_kb * 1024) / SERVICE_SLOT_BYTES));
#else
	return 0;
#endif
}

static Size
service_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(ServiceShared));

	size = add_size(size, mul_size(service_request_count(), sizeof(ServiceRequest)));
	size = add_size(size, mul_size(service_slot_count(), sizeof(StagingSlot)));
	size = add_size(size, SERVICE_STAGING_ALIGN);
	size = add_size(size, mul_size(service_slot_count(), SERVICE_SLOT_BYTES));
	return size;
}

static void
service_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(service_shmem_size());
	RequestNamedLWLockTranche("gpusort", 1);
}

static void
service_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gpusort_service = ShmemInitStruct("gpusort service", service_shmem_size(), &found);
	if (!found)
	{
		ServiceShared *svc = gpusort_service;
		char	   *p = (char *) svc;

		memset(svc, 0, sizeof(ServiceShared));
		svc->lock = &(GetNamedLWLockTranche("gpusort"))->lock;
		ConditionVariableInit(&svc->slot_freed);
		pg_atomic_init_u64(&svc->next_request_id, 1);
		pg_atomic_init_u64(&svc->bytes_to_gpu, 0);
		pg_atomic_init_u64(&svc->bytes_from_gpu, 0);
		pg_atomic_init_u64(&svc->gpu_time_us, 0);
		pg_atomic_init_u64(&svc->queue_wait_us, 0);
		for (int i = 0; i < SERVICE_MAX_DEVICES; i++)
		{
			pg_atomic_init_u64(&svc->devices[i].served, 0);
			pg_atomic_init_u64(&svc->devices[i].failed, 0);
		}
#ifdef GPUSORT_USE_CUDA
		strlcpy(svc->status, "the GPU service has not started yet", sizeof(svc->status));
#else
		/* no worker will ever say more */
		strlcpy(svc->status, NO_CUDA_REASON, sizeof(svc->status));
		svc->ready = true;
#endif

		svc->nrequests = service_request_count();
		svc->nslots = service_slot_count();
		p += MAXALIGN(sizeof(ServiceShared));
		svc->requests = (ServiceRequest *) p;
		memset(p, 0, sizeof(ServiceRequest) * svc->nrequests);
		p += sizeof(ServiceRequest) * svc->nrequests;
		svc->slots = (StagingSlot *) p;
		memset(p, 0, sizeof(StagingSlot) * svc->nslots);
		p += sizeof(StagingSlot) * svc->nslots;
		svc->staging = (char *) TYPEALIGN(SERVICE_STAGING_ALIGN, p);
	}
	LWLockRelease(AddinShmemInitLock);
}

#ifdef GPUSORT_USE_CUDA
static void
register_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	/*
	 * A connection without a database: that makes the worker a backend of
	 * its own kind in pg_stat_activity, which pg_terminate_backend() can
	 * stop.  From consistent state on, so that a hot standby's sorts reach
	 * the GPU too.
	 */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	/* restarted a second after it exits, whatever the reason */
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "gpusort", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "gpusort_service_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "gpusort GPU service", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "gpusort GPU service", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}
#endif

/*
 * From _PG_init in the postmaster (shared_preload_libraries): reserve the
 * shared memory and, in a build with CUDA, register the worker.
 */
void
service_shmem_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = service_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = service_shmem_startup;
#ifdef GPUSORT_USE_CUDA
	register_worker();
#endif
}

/*
 * Is the service's word on the GPUs in: is the worker up, with its devices
 * known?  In a preloaded build without CUDA it always is: there is no
 * worker to wait for, and no GPU (its status says why).
 */
bool
service_running(void)
{
#ifdef GPUSORT_USE_CUDA
	return gpusort_service != NULL && gpusort_service->ready &&
		gpusort_service->service_pid != 0;
#else
	return gpusort_service != NULL;
#endif
}

/*
 * Why the service has no GPU to sort on, in the user's terms (palloc'd);
 * NULL where it has one.
 */
char *
service_no_gpu_reason(void)
{
	ServiceShared *svc = gpusort_service;
	char	   *why = NULL;

#ifndef GPUSORT_USE_CUDA
	/* preloaded or not, the build is the reason */
	return pstrdup(NO_CUDA_REASON);
#endif
	if (svc == NULL)
		return pstrdup("the GPU service is not running: gpusort is not in "
					   "shared_preload_libraries");
	if (!service_running())
		return pstrdup("the GPU service is not running");
	LWLockAcquire(svc->lock, LW_SHARED);
	if (svc->ndevices == 0)
		why = pstrdup(svc->status);
	LWLockRelease(svc->lock);
	return why;
}

char *
service_slot_data(int slot)
{
	return gpusort_service->staging + (Size) slot * SERVICE_SLOT_BYTES;
}

void
service_wake_backend(ServiceRequest *req)
{
	SetLatch(&ProcGlobal->allProcs[req->backend_procno].procLatch);
}

void
service_wake_service(void)
{
	int			procno = gpusort_service->service_procno;

	if (gpusort_service->service_pid != 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/*
 * gpusort_gpus(): one row per GPU the service uses; with none, a NOTICE
 * says why, so that an empty view is not a puzzle.
 */
PG_FUNCTION_INFO_V1(gpusort_gpus);
Datum
gpusort_gpus(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ServiceShared *svc = gpusort_service;
	char	   *why;

	InitMaterializedSRF(fcinfo, 0);
	why = service_no_gpu_reason();
	if (why != NULL)
	{
		ereport(NOTICE,
				(errmsg("%s", why),
				 errhint("gpusort sorts on its CPU engine.")));
		PG_RETURN_VOID();
	}

	LWLockAcquire(svc->lock, LW_SHARED);
	for (int i = 0; i < svc->ndevices; i++)
	{
		ServiceDevice *dev = &svc->devices[i];
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = Int32GetDatum(dev->cuda_device);
		values[1] = CStringGetTextDatum(dev->name);
		values[2] = Int64GetDatum((int64) dev->total_bytes);
		values[3] = Int64GetDatum((int64) dev->budget_bytes);
		values[4] = Int64GetDatum((int64) dev->reserved_bytes);
		values[5] = Int32GetDatum(dev->running);
		values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->served));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->failed));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(svc->lock);
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 *
 * service_worker.c
 *	  The GPU service: the background worker that owns every CUDA context
 *	  of the server and sorts the key-index records of all backends; its
 *	  life, from start to exit, and the pass of its main loop.
 *
 * The postmaster starts it (service_shmem.c registers it) and restarts it
 * a second after it exits.  At start it fails whatever requests an earlier
 * incarnation left, so that their backends sort on the CPU, opens the GPUs
 * that gpusort.gpu_devices allows, publishes them (gpusort_gpus), pins the
 * staging slots for them and sets each one's budget.  Then it loops, woken
 * by its latch, a pass at a time:
 *
 *	- withdrawn requests (a cancel, an error, an exit in the backend): the
 *	  sort is closed and its GPU memory goes back to the budget at once;
 *	- queued requests, oldest first: admitted while their GPU memory fits
 *	  (service_admission.c), and their sorts opened (service_sort.c);
 *	- keys in staging slots: shipped to the device at once
 *	  (service_transfer.c), or, for a request split by key range across
 *	  GPUs, dealt to its parts (service_split.c);
 *	- finishing requests: sorted (service_sort.c), and the permutation
 *	  streamed back through free slots (service_transfer.c).
 *
 * A failed CUDA call fails only the request it belongs to.  A sticky error
 * leaves the device's context unusable: the service then fails every
 * request in flight and exits, and the postmaster starts a fresh one with
 * new contexts a second later; the other backends' sorts finish on the CPU.
 *
 * The worker is one thread: CUDA is called from the loop only, and the
 * GPU's own concurrency (streams) carries the overlap.  Its state, which
 * the other files of the service share (service_internal.h), is set here.
 *
 * It behaves as PostgreSQL's own auxiliary processes do.  Between passes
 * and, through the CUDA side's wait hook, while it waits for a GPU, it
 * absorbs ProcSignal barriers (DROP DATABASE, DROP TABLESPACE, ALTER
 * DATABASE SET TABLESPACE and their replay on a standby wait until every
 * process has) and answers pg_log_backend_memory_contexts(); it reloads its
 * settings on SIGHUP and stops on SIGTERM, giving up a wait for the GPU at
 * once (the sort fails, and its backend finishes it on the CPU).  Each of
 * its waits shows as a wait event of its own.  A cancel (SIGINT) has no
 * query to cancel here and is ignored.
 *
 * Its one entry point is gpusort_service_main() (service.h), which the
 * postmaster calls by name.  A build without CUDA has no GPU to serve:
 * the service's files are empty there, and service_shmem.c registers no
 * worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef GPUSORT_USE_CUDA

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "service/service_internal.h"
#include "support/compat.h"
#include "support/settings.h"
#include "support/wait_events.h"

ServiceShared *svc;
ActiveSort *active;				/* one per request entry */
bool		device_lost = false;
bool		staging_pinned = false; /* the GPUs read the slots by DMA */

/* ---------- interrupts ---------- */

/*
 * What PostgreSQL asks of every process with a PGPROC, between pieces of
 * work.  Not CHECK_FOR_INTERRUPTS(): the service is not in a transaction,
 * and an ERROR would end the process.
 */
static void
service_absorb_interrupts(void)
{
	if (ProcSignalBarrierPending)
		ProcessProcSignalBarrier();
	if (LogMemoryContextPending)
		ProcessLogMemoryContextInterrupt();
}

/*
 * The CUDA side's wait hook: called between polls while the service waits
 * for a GPU's copies or kernels.  The wait shows as GpuSortServiceGpu; a
 * barrier is absorbed within the poll interval however long the sort; a
 * shutdown gives the wait up.  The sleep is short, since most waits are for
 * a few milliseconds of kernels.
 */
static int
service_gpu_wait(int waiting)
{
	static bool reported = false;

	if (!waiting)
	{
		if (reported)
			pgstat_report_wait_end();
		reported = false;
		return 1;
	}
	if (!reported)
	{
		pgstat_report_wait_start(gpusort_wait_event(GPUSORT_WAIT_SERVICE_GPU));
		reported = true;
	}
	service_absorb_interrupts();
	if (ShutdownRequestPending)
		return 0;
	pg_usleep(50);
	return 1;
}

/* ---------- start and exit ---------- */

/* The backends of requests still open learn that the service is gone. */
static void
service_exit(int code, Datum arg)
{
	if (svc == NULL || svc->service_pid != MyProcPid)
		return;
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	svc->service_pid = 0;
	svc->ready = false;
	for (int i = 0; i < svc->nrequests; i++)
	{
		ServiceRequest *req = &svc->requests[i];

		if (req->state != REQUEST_FREE && req->state != REQUEST_WITHDRAWN)
			service_wake_backend(req);
	}
	LWLockRelease(svc->lock);
	ConditionVariableBroadcast(&svc->slot_freed);
}

/*
 * Requests and slots left by an earlier incarnation: fail the requests (their
 * backends sort on the CPU) and free everything that nobody will finish.
 */
static void
fail_stale_requests(void)
{
	for (int i = 0; i < svc->nrequests; i++)
	{
		ServiceRequest *req = &svc->requests[i];

		switch (req->state)
		{
			case REQUEST_FREE:
			case REQUEST_FAILED:
			case REQUEST_DONE:
				break;
			case REQUEST_WITHDRAWN:
				req->state = REQUEST_FREE;
				break;
			default:
				strlcpy(req->error, "the GPU service restarted", sizeof(req->error));
				req->failure = FALLBACK_SERVICE_LOST;
				req->state = REQUEST_FAILED;
				service_wake_backend(req);
				break;
		}
	}
	/* a slot being filled stays its backend's until it posts or withdraws */
	for (int i = 0; i < svc->nslots; i++)
		if (svc->slots[i].state != SLOT_FILLING)
			svc->slots[i].state = SLOT_FREE;
	for (int i = 0; i < svc->ndevices; i++)
	{
		svc->devices[i].reserved_bytes = 0;
		svc->devices[i].running = 0;
	}
}

/*
 * Open the GPUs that gpusort.gpu_devices allows.  Fills svc->devices and,
 * when none is usable, svc->status with the reason in the user's terms.
 */
static void
open_devices(void)
{
	ServiceDevice devs[SERVICE_MAX_DEVICES];
	int			ndevs = 0;
	char		status[SERVICE_ERROR_LEN] = "";

	int			wanted[SERVICE_MAX_DEVICES];
	int			nwanted = 0;
	char		err[256];
	const char *list = gpusort_gpu_devices ? gpusort_gpu_devices : "";

	if (pg_strcasecmp(list, "none") == 0 || list[0] == '\0')
		snprintf(status, sizeof(status), "no GPU is allowed (gpusort.gpu_devices = '%s')", list);
	else if (pg_strcasecmp(list, "all") == 0)
	{
		int			count = gscuda_device_count(err, sizeof(err));

		if (count < 0)
			snprintf(status, sizeof(status),
					 "no usable GPU: the NVIDIA driver is missing or older than this "
					 "build's CUDA needs; check nvidia-smi and the driver version (%s)", err);
		for (int i = 0; i < count && nwanted < SERVICE_MAX_DEVICES; i++)
			wanted[nwanted++] = i;
		if (count == 0)
			snprintf(status, sizeof(status), "no usable GPU: the driver reports no CUDA device");
	}
	else
	{
		char	   *copy = pstrdup(list);
		char	   *tok;
		char	   *save;

		for (tok = strtok_r(copy, ", ", &save); tok && nwanted < SERVICE_MAX_DEVICES;
			 tok = strtok_r(NULL, ", ", &save))
			wanted[nwanted++] = atoi(tok);
	}

	for (int i = 0; i < nwanted; i++)
	{
		char		name[256];
		size_t		free_bytes;
		size_t		total_bytes;
		ServiceDevice *dev = &devs[ndevs];

		if (gscuda_init(wanted[i], name, sizeof(name), &free_bytes, &total_bytes,
						err, sizeof(err)) != 0)
		{
			ereport(LOG,
					(errmsg("gpusort GPU service: CUDA device %d is not usable: %s",
							wanted[i], err)));
			if (status[0] == '\0' || i == 0)
				snprintf(status, sizeof(status),
						 "no usable GPU: CUDA device %d: %s; check nvidia-smi, the "
						 "driver version and gpusort.gpu_devices", wanted[i], err);
			continue;
		}
		memset(dev, 0, sizeof(*dev));
		dev->cuda_device = wanted[i];
		strlcpy(dev->name, name, sizeof(dev->name));
		dev->total_bytes = total_bytes;
		ndevs++;
	}
	gscuda_set_pinned_cache((size_t) gpusort_pinned_cache_kb * 1024);

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < ndevs; i++)
	{
		ServiceDevice *dev = &svc->devices[i];

		dev->cuda_device = devs[i].cuda_device;
		strlcpy(dev->name, devs[i].name, sizeof(dev->name));
		dev->total_bytes = devs[i].total_bytes;
		dev->reserved_bytes = 0;
		dev->running = 0;
	}
	svc->ndevices = ndevs;
	if (ndevs > 0)
		status[0] = '\0';
	strlcpy(svc->status, status, sizeof(svc->status));
	LWLockRelease(svc->lock);
	if (ndevs == 0)
		ereport(LOG, (errmsg("gpusort GPU service: %s; sorts run on the CPU", status)));
	else
		ereport(LOG, (errmsg("gpusort GPU service: sorting on %d GPU%s (%s%s)",
							 ndevs, ndevs == 1 ? "" : "s", svc->devices[0].name,
							 ndevs > 1 ? ", ..." : "")));
}

/*
 * Pin the staging slots for the GPUs, so that keys go from a slot to the
 * device by DMA.  The service is one process among all the server's
 * backends, and on a busy server it waits for a CPU longer than it runs:
 * whatever it copies itself keeps slots, and the sorts behind them, waiting
 * (test/gpu/pgbench.sh at 200 clients on 16 CPUs: the service spent three
 * times as long runnable as running while it copied every key).  If the
 * slots cannot be pinned, keys go through each sort's pinned chunk buffers,
 * copied by the service, as before.
 */
static void
pin_staging(void)
{
	char		err[256];

	staging_pinned = false;
	if (svc->ndevices == 0 || svc->nslots == 0)
		return;
	(void) gscuda_select_device(svc->devices[0].cuda_device);
	if (gscuda_register_host(service_slot_data(0), (Size) svc->nslots * SERVICE_SLOT_BYTES,
							 err, sizeof(err)) == 0)
		staging_pinned = true;
	else
		ereport(LOG,
				(errmsg("gpusort GPU service: the staging slots could not be pinned (%s); "
						"keys are copied through pinned buffers", err)));
}

/* The budget of each device, from gpusort.service_gpu_memory_percent. */
static void
set_budgets(void)
{
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->ndevices; i++)
		svc->devices[i].budget_bytes = (Size)
			((double) svc->devices[i].total_bytes * gpusort_service_gpu_memory_pct / 100.0);
	LWLockRelease(svc->lock);
}

/* ---------- the main loop ---------- */

/* seq order of key slots */
static int
compare_key_slots(const void *a, const void *b)
{
	uint64		sa = svc->slots[*(const int *) a].seq;
	uint64		sb = svc->slots[*(const int *) b].seq;

	return sa < sb ? -1 : (sa > sb ? 1 : 0);
}

/*
 * One pass over the shared state.  Returns whether work is left that does
 * not need a wake-up to go on (slots ran out while delivering).
 */
static bool
service_pass(void)
{
	int		   *withdrawn = palloc(sizeof(int) * svc->nrequests);
	int		   *admitted = palloc(sizeof(int) * svc->nrequests);
	int		   *finishing = palloc(sizeof(int) * svc->nrequests);
	int		   *sorted = palloc(sizeof(int) * svc->nrequests);
	int		   *keys = palloc(sizeof(int) * svc->nslots);
	int			nwithdrawn = 0,
				nadmitted = 0,
				nfinishing = 0,
				nsorted = 0,
				nkeys = 0;
	bool		more = false;

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->nrequests; i++)
	{
		ServiceRequest *req = &svc->requests[i];

		if (req->state == REQUEST_WITHDRAWN)
			withdrawn[nwithdrawn++] = i;
	}
	nadmitted = admit_queued(admitted);
	for (int s = 0; s < svc->nslots; s++)
		if (svc->slots[s].state == SLOT_TO_SERVICE)
			keys[nkeys++] = s;
	LWLockRelease(svc->lock);

	/* withdrawn: close, and give the entry back */
	for (int k = 0; k < nwithdrawn; k++)
	{
		int			i = withdrawn[k];

		close_sort(i, false);
		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		if (svc->requests[i].state == REQUEST_WITHDRAWN)
			svc->requests[i].state = REQUEST_FREE;
		LWLockRelease(svc->lock);
	}

	/* keys, in the order their backends posted them */
	qsort(keys, nkeys, sizeof(int), compare_key_slots);
	for (int k = 0; k < nadmitted; k++)
		open_sort(admitted[k]);
	for (int k = 0; k < nkeys && !device_lost; k++)
		take_keys(keys[k]);
	wait_uploads();
	if (nkeys > 0)
	{
		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		for (int k = 0; k < nkeys; k++)
			svc->slots[keys[k]].state = SLOT_FREE;
		LWLockRelease(svc->lock);
		ConditionVariableBroadcast(&svc->slot_freed);
	}

	/* requests whose keys have all arrived */
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->nrequests; i++)
	{
		ServiceRequest *req = &svc->requests[i];

		if (req->state == REQUEST_FINISHING && active[i].id == req->id)
		{
			bool		keys_pending = false;

			for (int s = 0; s < svc->nslots && !keys_pending; s++)
				keys_pending = svc->slots[s].request == i &&
					svc->slots[s].request_id == req->id &&
					(svc->slots[s].state == SLOT_TO_SERVICE ||
					 svc->slots[s].state == SLOT_FILLING);
			if (!keys_pending)
				finishing[nfinishing++] = i;
		}
	}
	LWLockRelease(svc->lock);

	for (int k = 0; k < nfinishing && !device_lost; k++)
		finish_sort(finishing[k]);

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->nrequests; i++)
		if (svc->requests[i].state == REQUEST_SORTED && active[i].id == svc->requests[i].id)
			sorted[nsorted++] = i;
	LWLockRelease(svc->lock);
	for (int k = 0; k < nsorted; k++)
		more |= deliver(sorted[k]);

	pfree(withdrawn);
	pfree(admitted);
	pfree(finishing);
	pfree(sorted);
	pfree(keys);
	return more;
}

void
gpusort_service_main(Datum arg)
{
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, PG_SIG_IGN);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("gpusort GPU service");

	svc = gpusort_service;
	if (svc == NULL)
		proc_exit(0);			/* not preloaded: nothing to serve */
	active = MemoryContextAllocZero(TopMemoryContext,
									sizeof(ActiveSort) * svc->nrequests);
	on_shmem_exit(service_exit, 0);

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	svc->generation++;
	svc->service_pid = MyProcPid;
	svc->service_procno = gpusort_my_procno();
	svc->ready = false;
	fail_stale_requests();
	LWLockRelease(svc->lock);
	ConditionVariableBroadcast(&svc->slot_freed);

	open_devices();
	pin_staging();
	gscuda_set_wait_hook(service_gpu_wait);
	set_budgets();
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	svc->ready = true;
	LWLockRelease(svc->lock);

	for (;;)
	{
		bool		more;

		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			break;
		service_absorb_interrupts();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			set_budgets();
			gscuda_set_pinned_cache((size_t) gpusort_pinned_cache_kb * 1024);
			elog(DEBUG1, "gpusort GPU service: reloaded its configuration: "
				 "service_gpu_memory_percent = %d, pinned_cache = %d kB",
				 gpusort_service_gpu_memory_pct, gpusort_pinned_cache_kb);
		}
		more = service_pass();
		if (device_lost)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 more ? 1 : 1000, gpusort_wait_event(GPUSORT_WAIT_SERVICE_MAIN));
	}

	/* in-flight requests: their backends sort on the CPU */
	for (int i = 0; i < svc->nrequests; i++)
		if (active[i].id != 0)
			fail_request(i, FALLBACK_SERVICE_LOST, device_lost ? "the GPU failed; the GPU service restarts" :
						 "the GPU service stopped");
	proc_exit(1);
}

#endif							/* GPUSORT_USE_CUDA */

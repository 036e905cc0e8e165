/*-------------------------------------------------------------------------
 *
 * service_worker.c
 *	  The GPU service: the background worker that owns every CUDA context
 *	  of the server and sorts the key-index records of all backends.
 *
 * The postmaster starts it (service_shmem.c registers it) and restarts it
 * a second after it exits.  At start it opens the GPUs that
 * gpusort.gpu_devices allows, publishes them (gpusort_gpus), and fails
 * whatever requests an earlier incarnation left, so that their backends
 * sort on the CPU.  Then it loops, woken by its latch:
 *
 *	- withdrawn requests (a cancel, an error, an exit in the backend): the
 *	  sort is closed and its GPU memory goes back to the budget at once;
 *	- queued requests, oldest first: admitted on the GPU with the most room
 *	  in its budget (gpusort.service_gpu_memory_percent of the device) if
 *	  their estimate fits; otherwise they wait, without holding up those
 *	  behind them that fit, and their backend gives up after
 *	  gpusort.service_max_wait;
 *	- keys in staging slots: shipped to the device at once, by DMA from the
 *	  slots, which the service pins for the GPUs at start (where they cannot
 *	  be pinned, the service copies them into the sort's pinned chunk
 *	  buffers first); each sort has its own stream, so the transfers of many
 *	  backends overlap one another and their loads;
 *	- finishing requests: sorted, and the permutation streamed back through
 *	  free slots.
 *
 * A request too large for any one GPU's budget (or expected at
 * gpusort.service_split_rows or more, where that is set), where there are
 * several GPUs, is split by key range: the splitters come from a sample of
 * its first chunk, each record goes to the range its key falls in (equal
 * keys to the same one, in arrival order) with its number in the request,
 * and each range is sorted on its own GPU, all at once.  A range's sort
 * maps its result to the request's record numbers on the GPU and keeps it
 * there; the ranges' results, one after another, are the request's, and go
 * from the GPUs into the result slots as an unsplit result does.
 *
 * A sort may grow past its estimate into what its device's budget has left;
 * what it really holds is then reserved, and a sort that would need more
 * than the budget has left fails (its backend sorts on the CPU).
 * A failed CUDA call fails only the request it belongs to.  A sticky error
 * leaves the device's context unusable: the service then fails every
 * request in flight and exits, and the postmaster starts a fresh one with
 * new contexts a second later; the other backends' sorts finish on the CPU.
 *
 * The worker is one thread: CUDA is called from the loop only, and the
 * GPU's own concurrency (streams) carries the overlap.
 *
 * It behaves as PostgreSQL's own auxiliary processes do.  Between passes
 * and, through the CUDA engine's wait hook, while it waits for a GPU, it
 * absorbs ProcSignal barriers (DROP DATABASE, DROP TABLESPACE, ALTER
 * DATABASE SET TABLESPACE and their replay on a standby wait until every
 * process has) and answers pg_log_backend_memory_contexts(); it reloads its
 * settings on SIGHUP and stops on SIGTERM, giving up a wait for the GPU at
 * once (the sort fails, and its backend finishes it on the CPU).  Each of
 * its waits shows as a wait event of its own.  A cancel (SIGINT) has no
 * query to cancel here and is ignored.
 *
 * A build without CUDA has no GPU to serve: this file is empty there, and
 * service_shmem.c registers no worker.
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
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "keys/key_order.h"
#include "keys/keys.h"
#include "service/service.h"
#include "support/compat.h"
#include "support/settings.h"
#include "support/stat.h"
#include "support/wait_events.h"

#include "gscuda_api.h"

/*
 * One part of an admitted request: the whole request, or, for a request
 * split across GPUs, the records of one key range.
 */
typedef struct SortPart
{
	int			device;			/* index in svc->devices */
	GsCudaSort *sort;
	Size		reserved;		/* GPU memory reserved in its device's budget */
	Size		n;				/* records it holds */
	Size		first;			/* sorted: where its results start in the request's */
	uint64	   *chunk;			/* split: keys of the chunk being filled */
	uint32	   *chunk_index;	/* split: their record numbers in the request */
} SortPart;

/* the service's side of an admitted request */
typedef struct ActiveSort
{
	uint64		id;				/* 0: none */
	int			nparts;			/* 1, or the key ranges of a split sort */
	SortPart	parts[SERVICE_MAX_DEVICES];
	uint64	   *splitters;		/* split: nparts - 1 keys, ascending */
	uint64	   *pending;		/* split: the request's chunk being received */
	bool		uploading;		/* keys were uploaded from slots this pass */
	const uint32 *perm;			/* after the sort, on the host; NULL: on the
								 * device(s), each part's kept by its sort */
	Size		delivered;		/* indexes handed to slots */
	instr_time	started;
	instr_time	deal_time;		/* split: spent dealing records to parts */
	instr_time	sorted_at;		/* when the sort was done (its timing line) */
} ActiveSort;

static ServiceShared *svc;
static ActiveSort *active;		/* one per request entry */
static bool device_lost = false;
static bool staging_pinned = false; /* the GPUs read the slots by DMA */

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
 * The CUDA engine's wait hook: called between polls while the service waits
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

/* ---------- the requests ---------- */

/* Close the service's side of request i; the caller holds no lock. */
static void
close_sort(int i, bool count_served)
{
	ActiveSort *as = &active[i];
	ServiceRequest *req = &svc->requests[i];

	if (as->id == 0)
	{
		memset(as, 0, sizeof(*as));
		return;
	}
	for (int p = 0; p < as->nparts; p++)
	{
		SortPart   *part = &as->parts[p];
		ServiceDevice *dev = &svc->devices[part->device];

		if (part->sort)
		{
			(void) gscuda_select_device(dev->cuda_device);
			gscuda_sort_end(part->sort);
		}
		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		dev->reserved_bytes -= Min(dev->reserved_bytes, part->reserved);
		if (dev->running > 0)
			dev->running--;
		LWLockRelease(svc->lock);
		pg_atomic_fetch_add_u64(count_served ? &dev->served : &dev->failed, 1);
	}
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	if (req->id == as->id)
		req->reserved_bytes = 0;
	LWLockRelease(svc->lock);
	if (as->splitters)
		pfree(as->splitters);
	if (as->pending)
		pfree(as->pending);
	memset(as, 0, sizeof(*as));
}

/* Fail request i (unless withdrawn meanwhile) and wake its backend. */
static void
fail_request(int i, ServiceFallback reason, const char *why)
{
	ServiceRequest *req = &svc->requests[i];
	uint64		id = active[i].id;

	close_sort(i, false);
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	if (req->id == id || id == 0)
	{
		if (req->state == REQUEST_WITHDRAWN)
			req->state = REQUEST_FREE;
		else if (req->state != REQUEST_FREE)
		{
			strlcpy(req->error, why, sizeof(req->error));
			req->failure = reason;
			req->state = REQUEST_FAILED;
			service_wake_backend(req);
		}
	}
	LWLockRelease(svc->lock);
}

/* After a failed CUDA call: a lost device ends this incarnation. */
static void
check_device_lost(void)
{
	char		err[256];

	if (gscuda_lost(err, sizeof(err)))
	{
		ereport(LOG, (errmsg("gpusort GPU service: %s; restarting", err)));
		device_lost = true;
	}
}

/*
 * Bytes a request needs reserved for n records: the CUDA side's estimate,
 * with the source indexes that the parts of a split sort carry, and room
 * for what it allocates beside its arrays (statistics, a partial last
 * chunk), so that a sort that keeps to its estimate keeps to its
 * reservation.
 */
static Size
request_bytes(ServiceRequest *req, Size n, bool split)
{
	Size		estimate = gscuda_sort_bytes(req->key_words,
											 (GsCudaAlgorithm) req->algorithm,
											 Max(n, (Size) 1));

	if (split)
		estimate += gscuda_sort_index_bytes(Max(n, (Size) 1));
	return estimate + estimate / 16 + ((Size) 16 << 20);
}

static Size
device_room(ServiceDevice *dev)
{
	return dev->budget_bytes > dev->reserved_bytes ?
		dev->budget_bytes - dev->reserved_bytes : 0;
}

/*
 * How many key ranges a request is split into, where there are several
 * GPUs: one per GPU for a request that no one GPU's budget could hold, and
 * for one expected at gpusort.service_split_rows or more where that is set.
 * A split costs the service's one thread the dealing of every record to its
 * range, and on the GPU host that took longer than sorting the whole on one
 * GPU (100M one-word keys: 14 ms of kernels unsplit, 1.9 s more split;
 * bench/results/service.md), so by default only what one GPU cannot hold
 * is split.  The session's gpusort.gpu_split_parts forces a number (tests,
 * and a machine with one GPU).
 */
static int
request_parts(ServiceRequest *req)
{
	Size		largest_budget = 0;

	if (req->split_parts > 0)
		return Min(req->split_parts, SERVICE_MAX_DEVICES);
	if (svc->ndevices < 2)
		return 1;
	if (gpusort_service_split_rows > 0 &&
		req->expected_records >= (Size) gpusort_service_split_rows)
		return svc->ndevices;
	for (int d = 0; d < svc->ndevices; d++)
		largest_budget = Max(largest_budget, svc->devices[d].budget_bytes);
	if (request_bytes(req, req->expected_records, false) > largest_budget)
		return svc->ndevices;
	return 1;
}

/*
 * Records each part of a request is sized for: all of them, or for a split
 * request a share with a quarter's headroom, since the splitters come from a
 * sample and a part may get a little more than its share.  Its sort is
 * opened for that many (so that its device arrays need not double for a
 * few records over the share) and its reservation covers them.
 */
static Size
part_records(ServiceRequest *req, int nparts)
{
	if (nparts == 1)
		return req->expected_records;
	return req->expected_records / nparts + req->expected_records / (4 * nparts);
}

/* queued requests, oldest first */
static int
compare_queued_at(const void *a, const void *b)
{
	const ServiceRequest *ra = &svc->requests[*(const int *) a];
	const ServiceRequest *rb = &svc->requests[*(const int *) b];

	if (ra->queued_at != rb->queued_at)
		return ra->queued_at < rb->queued_at ? -1 : 1;
	return 0;
}

/*
 * Admit what fits, oldest first; the caller holds the lock.  Each part
 * goes to the GPU with the most room left in its budget.  A request that
 * does not fit yet keeps waiting, but holds up none behind it that does:
 * otherwise one large sort (or one role's, with a long
 * gpusort.service_max_wait) would send every later sort of the server to
 * the CPU.  Its own wait is bounded by its backend's service_max_wait, a
 * superuser's setting.  One that could never fit fails at once.  Returns
 * the requests admitted, whose sorts the caller opens without the lock.
 */
static int
admit_queued(int *admitted)
{
	int		   *queued = palloc(sizeof(int) * svc->nrequests);
	int			nqueued = 0;
	int			nadmitted = 0;

	for (int i = 0; i < svc->nrequests; i++)
		if (svc->requests[i].state == REQUEST_QUEUED &&
			svc->requests[i].generation == svc->generation)
			queued[nqueued++] = i;
	qsort(queued, nqueued, sizeof(int), compare_queued_at);

	for (int q = 0; q < nqueued; q++)
	{
		int			i = queued[q];
		ServiceRequest *req = &svc->requests[i];
		int			nparts = request_parts(req);
		Size		need = request_bytes(req, part_records(req, nparts), nparts > 1);
		Size		room[SERVICE_MAX_DEVICES];
		int			chosen[SERVICE_MAX_DEVICES];
		bool		fits = true;
		bool		could_ever = false;

		for (int d = 0; d < svc->ndevices; d++)
		{
			room[d] = device_room(&svc->devices[d]);
			could_ever |= svc->devices[d].budget_bytes >= need;
		}
		for (int p = 0; p < nparts && fits; p++)
		{
			int			best = -1;

			for (int d = 0; d < svc->ndevices; d++)
				if (room[d] >= need && (best < 0 || room[d] > room[best]))
					best = d;
			if (best < 0)
				fits = false;
			else
			{
				chosen[p] = best;
				room[best] -= need;
			}
		}
		if (!fits)
		{
			if (could_ever)
				continue;		/* waits for room; the next may fit */
			snprintf(req->error, sizeof(req->error),
					 "needs about %zu MB of GPU memory, more than the budget of any GPU "
					 "(gpusort.service_gpu_memory_percent)", need >> 20);
			req->failure = FALLBACK_TOO_LARGE;
			req->state = REQUEST_FAILED;
			service_wake_backend(req);
			continue;
		}

		memset(&active[i], 0, sizeof(ActiveSort));
		active[i].id = req->id;
		active[i].nparts = nparts;
		req->reserved_bytes = 0;
		for (int p = 0; p < nparts; p++)
		{
			ServiceDevice *dev = &svc->devices[chosen[p]];

			active[i].parts[p].device = chosen[p];
			active[i].parts[p].reserved = need;
			dev->reserved_bytes += need;
			dev->running++;
			req->reserved_bytes += need;
		}
		req->device = chosen[0];
		req->state = REQUEST_ADMITTED;
		admitted[nadmitted++] = i;
		pg_atomic_fetch_add_u64(&svc->queue_wait_us,
								(uint64) Max(GetCurrentTimestamp() - req->queued_at, 0));
	}
	pfree(queued);
	return nadmitted;
}

/*
 * The GPU memory part p of request i may take: past its reservation (its
 * estimate) into what its device's budget has left, but no further, and
 * never past the session's gpusort.gpu_memory.
 */
static Size
part_limit(int i, int p)
{
	ServiceRequest *req = &svc->requests[i];
	SortPart   *part = &active[i].parts[p];
	Size		limit;

	LWLockAcquire(svc->lock, LW_SHARED);
	limit = part->reserved + device_room(&svc->devices[part->device]);
	LWLockRelease(svc->lock);
	if (req->mem_limit > 0)
		limit = Min(limit, req->mem_limit);
	return Max(limit, (Size) 1);
}

/* Before a call that may allocate on the device: its current limit. */
static void
set_part_limit(int i, int p)
{
	gscuda_sort_set_mem_limit(active[i].parts[p].sort, part_limit(i, p));
}

/* After it: what the part really holds is reserved, if more. */
static void
account_part(int i, int p)
{
	ServiceRequest *req = &svc->requests[i];
	SortPart   *part = &active[i].parts[p];
	ServiceDevice *dev = &svc->devices[part->device];
	Size		used = gscuda_sort_memory(part->sort);

	if (used <= part->reserved)
		return;
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	dev->reserved_bytes += used - part->reserved;
	if (req->id == active[i].id)
		req->reserved_bytes += used - part->reserved;
	part->reserved = used;
	LWLockRelease(svc->lock);
}

/* Open the sorts of an admitted request, one per part, on their GPUs. */
static void
open_sort(int i)
{
	ServiceRequest *req = &svc->requests[i];
	ActiveSort *as = &active[i];
	char		err[256];

	for (int p = 0; p < as->nparts; p++)
	{
		SortPart   *part = &as->parts[p];

		if (gscuda_select_device(svc->devices[part->device].cuda_device) != 0)
		{
			fail_request(i, FALLBACK_GPU_ERROR, "the GPU could not be selected");
			return;
		}
		gscuda_set_fault(req->fault);
		part->sort = gscuda_sort_begin(req->key_words, GPUSORT_CHUNK_RECORDS,
									   part_records(req, as->nparts),
									   (GsCudaAlgorithm) req->algorithm, part_limit(i, p),
									   err, sizeof(err));
		/* a part's records are a subset: its sort maps them to the request's */
		if (part->sort == NULL ||
			(as->nparts > 1 && gscuda_sort_carry_index(part->sort, err, sizeof(err)) != 0))
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
			return;
		}
		account_part(i, p);
	}
	if (as->nparts > 1)
		as->pending = MemoryContextAllocHuge(TopMemoryContext,
											 GPUSORT_CHUNK_RECORDS * req->key_words *
											 sizeof(uint64));
	INSTR_TIME_SET_CURRENT(as->started);
	service_wake_backend(req);
}

/* Ship chunk chunkno of part p, holding nrecords records. */
static bool
submit_part_chunk(int i, int p, Size chunkno, Size nrecords)
{
	SortPart   *part = &active[i].parts[p];
	char		err[256];

	(void) gscuda_select_device(svc->devices[part->device].cuda_device);
	set_part_limit(i, p);
	if (gscuda_sort_submit(part->sort, chunkno, nrecords, err, sizeof(err)) != 0)
	{
		check_device_lost();
		fail_request(i, FALLBACK_GPU_ERROR, err);
		return false;
	}
	account_part(i, p);
	return true;
}

/* ---------- split sorts ---------- */

/*
 * gs_compare_key_words in qsort's form, for the sample; the key's width is
 * set before
 */
static int	sample_key_words;

static int
compare_sample_keys(const void *a, const void *b)
{
	return gs_compare_key_words(a, b, sample_key_words);
}

/*
 * The splitters of a split request, from an even sample of its first chunk:
 * nparts - 1 keys that cut the sample into equal parts.  Any choice gives
 * the right order; a skewed one only balances the GPUs less well.
 */
static void
choose_splitters(ActiveSort *as, int key_words, Size nrecords)
{
	Size		nsample = Min(nrecords, (Size) 4096);
	uint64	   *sample = palloc(sizeof(uint64) * key_words * Max(nsample, 1));

	for (Size s = 0; s < nsample; s++)
		memcpy(sample + s * key_words, as->pending + (s * nrecords / nsample) * key_words,
			   sizeof(uint64) * key_words);
	sample_key_words = key_words;
	qsort(sample, nsample, sizeof(uint64) * key_words, compare_sample_keys);
	as->splitters = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(uint64) * key_words * as->nparts);
	for (int j = 0; j + 1 < as->nparts && nsample > 0; j++)
		memcpy(as->splitters + j * key_words,
			   sample + ((j + 1) * nsample / as->nparts) * key_words,
			   sizeof(uint64) * key_words);
	pfree(sample);
}

/*
 * The part of a key: the number of splitters at or below it.  Equal keys
 * always land in the same part, and each part receives its records in the
 * request's order, so that concatenating the parts' results gives exactly
 * the unsplit result, ties in input order.  A linear scan: there are at
 * most 15 splitters (gpusort.gpu_split_parts, or one part a GPU), and with
 * keys of one word, the common case, the comparison is a single one.
 */
static inline int
part_of(const ActiveSort *as, const uint64 *key, int key_words)
{
	int			p = 0;

	while (p < as->nparts - 1 &&
		   gs_compare_key_words(as->splitters + p * key_words, key, key_words) <= 0)
		p++;
	return p;
}

/*
 * Part p's next chunk starts: the pinned buffers for its keys and for their
 * record numbers.  False, with the request failed, if they cannot be had.
 */
static bool
start_part_chunk(int i, int p)
{
	SortPart   *part = &active[i].parts[p];
	Size		chunkno = part->n / GPUSORT_CHUNK_RECORDS;
	char		err[256];

	(void) gscuda_select_device(svc->devices[part->device].cuda_device);
	part->chunk = gscuda_sort_chunk(part->sort, chunkno, err, sizeof(err));
	part->chunk_index = part->chunk == NULL ? NULL :
		gscuda_sort_index_chunk(part->sort, chunkno, err, sizeof(err));
	if (part->chunk_index == NULL)
	{
		check_device_lost();
		fail_request(i, FALLBACK_GPU_ERROR, err);
		return false;
	}
	return true;
}

/*
 * Deal a received chunk's records to the parts, in the request's order.
 * Each record's key goes into its part's pinned chunk buffer and its number
 * in the request beside it; both travel to the part's device with the
 * chunk, so that the part's sort gives request record numbers.
 */
static bool
split_chunk(int i, Size chunkno, Size nrecords)
{
	ServiceRequest *req = &svc->requests[i];
	ActiveSort *as = &active[i];
	int			kw = req->key_words;
	uint32		recno = (uint32) (chunkno * GPUSORT_CHUNK_RECORDS);
	instr_time	start,
				done;

	INSTR_TIME_SET_CURRENT(start);
	if (as->splitters == NULL)
		choose_splitters(as, kw, nrecords);
	for (Size r = 0; r < nrecords; r++)
	{
		const uint64 *key = as->pending + r * kw;
		int			p = part_of(as, key, kw);
		SortPart   *part = &as->parts[p];
		Size		at = part->n % GPUSORT_CHUNK_RECORDS;

		if (at == 0 && !start_part_chunk(i, p))
			return false;
		if (kw == 1)
			part->chunk[at] = key[0];
		else
			memcpy(part->chunk + at * kw, key, sizeof(uint64) * kw);
		part->chunk_index[at] = recno + (uint32) r;
		part->n++;
		if (at + 1 == GPUSORT_CHUNK_RECORDS &&
			!submit_part_chunk(i, p, part->n / GPUSORT_CHUNK_RECORDS - 1, GPUSORT_CHUNK_RECORDS))
			return false;
	}
	INSTR_TIME_SET_CURRENT(done);
	INSTR_TIME_ACCUM_DIFF(as->deal_time, done, start);
	return true;
}

/*
 * Wait until the keys uploaded from slots in this pass are on the devices,
 * so that the slots can be freed.
 */
static void
wait_uploads(void)
{
	char		err[256];

	for (int i = 0; i < svc->nrequests; i++)
	{
		ActiveSort *as = &active[i];

		if (device_lost)
			return;				/* every request fails as the service exits */
		if (!as->uploading)
			continue;
		as->uploading = false;
		if (as->id == 0 || as->parts[0].sort == NULL)
			continue;
		(void) gscuda_select_device(svc->devices[as->parts[0].device].cuda_device);
		if (gscuda_sort_wait_copies(as->parts[0].sort, err, sizeof(err)) != 0)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
		}
	}
}

/* Send one slot of keys to its sort, and ship a full chunk. */
static void
take_keys(int slotno)
{
	StagingSlot *slot = &svc->slots[slotno];
	int			i = slot->request;
	ActiveSort *as = &active[i];
	char		err[256];
	uint64	   *chunk;

	if (as->id == 0 || as->id != slot->request_id || as->parts[0].sort == NULL)
		return;					/* failed or withdrawn: the keys are dropped */
	pg_atomic_fetch_add_u64(&svc->bytes_to_gpu, slot->nwords * sizeof(uint64));
	if (as->nparts > 1)
	{
		memcpy(as->pending + slot->word_offset, service_slot_data(slotno),
			   slot->nwords * sizeof(uint64));
		if (slot->chunk_records > 0)
			(void) split_chunk(i, slot->chunkno, slot->chunk_records);
		return;
	}

	(void) gscuda_select_device(svc->devices[as->parts[0].device].cuda_device);
	if (staging_pinned)
	{
		/* by DMA from the slot, which stays ours until the copy is done */
		if (gscuda_sort_upload(as->parts[0].sort, slot->chunkno, slot->word_offset,
							   (const uint64 *) service_slot_data(slotno), slot->nwords,
							   err, sizeof(err)) != 0)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
			return;
		}
		as->uploading = true;
	}
	else
	{
		chunk = gscuda_sort_chunk(as->parts[0].sort, slot->chunkno, err, sizeof(err));
		if (chunk == NULL)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
			return;
		}
		memcpy(chunk + slot->word_offset, service_slot_data(slotno),
			   slot->nwords * sizeof(uint64));
	}
	if (slot->chunk_records > 0)
		(void) submit_part_chunk(i, 0, slot->chunkno, slot->chunk_records);
}

/*
 * Sort a finishing request; its permutation then goes out slot by slot.
 * Every part's sort is started before any is waited for, so that the parts
 * of a split request sort at once (on their GPUs, or on their streams of
 * one GPU).  A split request's parts keep their results on their devices,
 * already in the request's record numbers (their sorts carry them), and
 * fill_result_slots() copies each slot's range from the part or parts it
 * falls in: the parts' results, concatenated in part order, are the
 * request's.
 */
static void
finish_sort(int i)
{
	ServiceRequest *req = &svc->requests[i];
	ActiveSort *as = &active[i];
	GsCudaStats total;
	char		err[256];
	Size		out = 0;
	instr_time	t_begin,
				t_started,
				t_done,
				elapsed;

	INSTR_TIME_SET_CURRENT(t_begin);
	memset(&total, 0, sizeof(total));
	if (as->nparts == 1)
		as->parts[0].n = req->nrecords;
	for (int p = 0; p < as->nparts; p++)
	{
		SortPart   *part = &as->parts[p];

		if (as->nparts > 1 && part->n % GPUSORT_CHUNK_RECORDS != 0 &&
			!submit_part_chunk(i, p, part->n / GPUSORT_CHUNK_RECORDS,
							   part->n % GPUSORT_CHUNK_RECORDS))
			return;
		part->first = out;
		out += part->n;
	}
	if (out != req->nrecords)
	{
		fail_request(i, FALLBACK_GPU_ERROR, "the parts of a split sort lost records");
		return;
	}

	/* start them all ... */
	for (int p = 0; p < as->nparts; p++)
	{
		SortPart   *part = &as->parts[p];

		if (part->n == 0)
			continue;
		(void) gscuda_select_device(svc->devices[part->device].cuda_device);
		set_part_limit(i, p);

		/*
		 * fill_result_slots() downloads a permutation kept on the device: by
		 * DMA into pinned slots.  A split one is kept even where the slots
		 * are not pinned (the copy into them is then staged by CUDA), since
		 * it is not in the request's order until its parts are put together.
		 */
		if (as->nparts > 1 || staging_pinned)
			gscuda_sort_keep_permutation(part->sort);
		if (gscuda_sort_finish_start(part->sort, part->n, err, sizeof(err)) != 0)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
			return;
		}
		/* what it took counts before the next part's limit is set */
		account_part(i, p);
	}
	INSTR_TIME_SET_CURRENT(t_started);

	/* ... then wait for each */
	for (int p = 0; p < as->nparts; p++)
	{
		SortPart   *part = &as->parts[p];
		const uint32_t *perm = NULL;
		GsCudaStats stats;

		if (part->n == 0)
			continue;
		memset(&stats, 0, sizeof(stats));
		(void) gscuda_select_device(svc->devices[part->device].cuda_device);
		if (gscuda_sort_finish_wait(part->sort, &perm, &stats, err, sizeof(err)) != 0)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
			return;
		}
		account_part(i, p);
		if (as->nparts == 1)
			as->perm = perm;	/* NULL: kept on the device */
		else
			elog(DEBUG1, "gpusort GPU service: request " UINT64_FORMAT " part %d: %zu records "
				 "on GPU %d, %s, transfer %.1f ms, kernels %.1f ms, %zu MB of GPU memory",
				 as->id, p, part->n, svc->devices[part->device].cuda_device,
				 stats.algorithm, stats.h2d_ms + stats.d2h_ms, stats.sort_ms,
				 stats.device_bytes >> 20);
		strlcpy(total.algorithm, stats.algorithm, sizeof(total.algorithm));
		total.h2d_ms += stats.h2d_ms;
		total.d2h_ms += stats.d2h_ms;
		total.sort_ms += stats.sort_ms;
		total.device_bytes += stats.device_bytes;
	}
	INSTR_TIME_SET_CURRENT(t_done);
	as->sorted_at = t_done;
	if (as->nparts > 1)
	{
		as->perm = NULL;
		snprintf(total.algorithm + strlen(total.algorithm),
				 sizeof(total.algorithm) - strlen(total.algorithm), ", %d parts", as->nparts);
	}
	elapsed = t_started;
	INSTR_TIME_SUBTRACT(elapsed, t_begin);
	INSTR_TIME_SUBTRACT(t_done, t_started);
	/* every sort's timing at DEBUG2; a split one's, the rarer case, at DEBUG1 */
	elog(as->nparts > 1 ? DEBUG1 : DEBUG2,
		 "gpusort GPU service: request " UINT64_FORMAT " sorted, %zu records in %d "
		 "part%s: %.1f ms dealing them to parts, %.1f ms to start the sorts, %.1f ms waiting "
		 "for them",
		 as->id, (Size) req->nrecords, as->nparts, as->nparts == 1 ? "" : "s",
		 INSTR_TIME_GET_MILLISEC(as->deal_time), INSTR_TIME_GET_MILLISEC(elapsed),
		 INSTR_TIME_GET_MILLISEC(t_done));
	as->delivered = 0;
	pg_atomic_fetch_add_u64(&svc->gpu_time_us,
							(uint64) ((total.sort_ms + total.h2d_ms + total.d2h_ms) * 1000.0));

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	if (req->id == as->id && req->state == REQUEST_FINISHING)
	{
		strlcpy(req->algorithm_name, total.algorithm, sizeof(req->algorithm_name));
		req->transfer_ms = total.h2d_ms + total.d2h_ms;
		req->device_sort_ms = total.sort_ms;
		req->device_bytes = total.device_bytes;
		req->state = REQUEST_SORTED;
	}
	LWLockRelease(svc->lock);
}

/*
 * Fill result slots with indexes of request i's permutation: slots[k] gets
 * count[k] indexes from first[k] on.  A permutation kept on the device(s)
 * comes by DMA, a slot's range from each part it overlaps (a split
 * request's parts hold consecutive ranges of its result); one on the host
 * is copied.  False, with the request failed, if a device failed.
 */
static bool
fill_result_slots(int i, const int *slots, const Size *first, const Size *count, int n)
{
	ActiveSort *as = &active[i];

	if (as->perm == NULL)
	{
		bool		used[SERVICE_MAX_DEVICES] = {false};
		char		err[256];
		char		wait_err[256];
		bool		ok = true;

		for (int k = 0; k < n && ok; k++)
		{
			uint32	   *dst = (uint32 *) service_slot_data(slots[k]);
			Size		at = first[k];
			Size		left = count[k];
			int			p = 0;

			while (left > 0 && ok)
			{
				SortPart   *part;
				Size		take;

				while (p < as->nparts && at >= as->parts[p].first + as->parts[p].n)
					p++;
				if (p == as->nparts)
				{
					strlcpy(err, "a result slot lies beyond the sorted records", sizeof(err));
					ok = false;
					break;
				}
				part = &as->parts[p];
				take = Min(left, part->first + part->n - at);
				(void) gscuda_select_device(svc->devices[part->device].cuda_device);
				ok = gscuda_sort_download(part->sort, at - part->first, take, dst,
										  err, sizeof(err)) == 0;
				used[p] = true;
				dst += take;
				at += take;
				left -= take;
			}
		}
		/* nothing may still write into the slots once this returns */
		for (int p = 0; p < as->nparts; p++)
		{
			if (!used[p])
				continue;
			(void) gscuda_select_device(svc->devices[as->parts[p].device].cuda_device);
			if (gscuda_sort_wait_copies(as->parts[p].sort, wait_err, sizeof(wait_err)) != 0 &&
				ok)
			{
				strlcpy(err, wait_err, sizeof(err));
				ok = false;
			}
		}
		if (!ok)
		{
			check_device_lost();
			fail_request(i, FALLBACK_GPU_ERROR, err);
		}
		return ok;
	}
	for (int k = 0; k < n; k++)
		memcpy(service_slot_data(slots[k]), as->perm + first[k], count[k] * sizeof(uint32));
	return true;
}

/*
 * Hand a finished sort's permutation to free slots, as many at a time as
 * are free; when all of it is out, the sort is closed (its GPU memory
 * returns to the budget) and the request is DONE.  Returns whether slots
 * ran out before the end.
 */
static bool
deliver(int i)
{
	ServiceRequest *req = &svc->requests[i];
	ActiveSort *as = &active[i];
	const Size	per_slot = SERVICE_SLOT_BYTES / sizeof(uint32);
	int		   *slots = palloc(sizeof(int) * svc->nslots);
	Size	   *first = palloc(sizeof(Size) * svc->nslots);
	Size	   *count = palloc(sizeof(Size) * svc->nslots);
	bool		ran_out = false;
	bool		gone = false;

	while (as->delivered < req->nrecords)
	{
		Size		at = as->delivered;
		int			n = 0;
		bool		filled;

		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		gone = req->id != as->id || req->state != REQUEST_SORTED;
		for (int s = 0; s < svc->nslots && !gone && at < req->nrecords; s++)
			if (svc->slots[s].state == SLOT_FREE)
			{
				svc->slots[s].state = SLOT_RESULT;
				slots[n] = s;
				first[n] = at;
				count[n] = Min(per_slot, req->nrecords - at);
				at += count[n++];
			}
		LWLockRelease(svc->lock);
		if (gone)
			break;				/* withdrawn: cleaned up by the next pass */
		if (n == 0)
		{
			ran_out = true;
			break;
		}

		filled = fill_result_slots(i, slots, first, count, n);
		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		gone = !filled || req->id != as->id || req->state != REQUEST_SORTED;
		for (int k = 0; k < n; k++)
		{
			StagingSlot *slot = &svc->slots[slots[k]];

			if (gone)
			{
				/* failed, or withdrawn while the slots were filled: nobody reads them */
				slot->state = SLOT_FREE;
				continue;
			}
			slot->request = i;
			slot->request_id = as->id;
			slot->first_record = first[k];
			slot->nrecords = count[k];
			slot->state = SLOT_TO_BACKEND;
		}
		if (!gone)
			service_wake_backend(req);
		LWLockRelease(svc->lock);
		if (gone)
		{
			ConditionVariableBroadcast(&svc->slot_freed);
			break;
		}
		as->delivered = at;
		pg_atomic_fetch_add_u64(&svc->bytes_from_gpu, (at - first[0]) * sizeof(uint32));
	}
	pfree(slots);
	pfree(first);
	pfree(count);
	if (gone || ran_out)
		return ran_out;

	if (message_level_is_interesting(as->nparts > 1 ? DEBUG1 : DEBUG2))
	{
		instr_time	now;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, as->sorted_at);
		elog(as->nparts > 1 ? DEBUG1 : DEBUG2,
			 "gpusort GPU service: request " UINT64_FORMAT " delivered, %zu indexes "
			 "in %.1f ms after its sort (waits for free slots included)",
			 as->id, (Size) req->nrecords, INSTR_TIME_GET_MILLISEC(now));
	}

	/* all of it is in slots: the GPU's part is over */
	close_sort(i, true);
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	if (req->state == REQUEST_SORTED)
		req->state = REQUEST_DONE;
	service_wake_backend(req);
	LWLockRelease(svc->lock);
	return false;
}

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

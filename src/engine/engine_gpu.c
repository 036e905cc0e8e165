/*-------------------------------------------------------------------------
 *
 * engine_gpu.c
 *	  The GPU sort engine: the engine interface of engine.h as a client of
 *	  the GPU service (service.h, service_worker.c).
 *
 * The backend never starts CUDA.  gpu_engine_begin() posts a request in
 * the service's table and returns at once; the load goes on while the
 * request waits for admission.  Keys are written into chunk buffers in the
 * batch's own memory, exactly as the CPU engine keeps them, and every
 * submitted chunk is copied to the service through staging slots as soon
 * as the request is admitted and a slot is free, so that the transfer to
 * the GPU overlaps the load.  sort() sends what is left, asks for the sort
 * and copies the permutation back from the slots.
 *
 * Because the keys stay here, nothing the service or the GPU does can cost
 * the sort its answer: if the request is not admitted within
 * gpusort.service_max_wait, fails on the GPU, or loses its service, sort()
 * hands the same keys to the CPU engine's radix sort and says why
 * (SortEngine.fallback).  A cancel or an error withdraws the request
 * through a reset callback on the sort's memory context, and the service
 * frees the sort's GPU memory at once; a backend that exits withdraws what
 * it still has posted.
 *
 * The engine chain starts it (gpu_engine_begin) where a GPU may be there
 * (gpusort_gpu_maybe_present); gpusort_info() (views.c) says whether one
 * is usable (gpu_engine_available) and which (gpu_engine_describe).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "engine/engine.h"
#include "service/service.h"
#include "support/compat.h"
#include "support/faults.h"
#include "support/hostmem.h"
#include "support/settings.h"
#include "support/stat.h"
#include "support/wait_events.h"

/* how often a waiting backend looks at the service even without a wake-up */
#define SERVICE_POLL_MS		100

typedef struct GpuEngine
{
	SortEngine	base;
	int			request;		/* index in the request table; -1: none */
	uint64		request_id;
	uint32		generation;
	TimestampTz posted_at;

	Size	   *chunk_records;	/* per submitted chunk; 0: not submitted */
	Size		nchunk_records; /* length of chunk_records */
	Size		ship_chunk;		/* next chunk to send ... */
	Size		ship_word;		/* ... from this word */

	ServiceFallback failure;	/* when the request failed */
	char	   *failure_detail;
	MemoryContextCallback release;
} GpuEngine;

static bool exit_callback_registered = false;

/* ---------- the request ---------- */

/*
 * Give request i back, the caller holding the lock: an entry the service
 * is done with is freed, one it still works on is marked withdrawn (the
 * service closes its sort); the slots it holds for the backend are freed.
 * Returns whether the service has something to do.
 */
static bool
withdraw_locked(ServiceShared *svc, int i)
{
	ServiceRequest *req = &svc->requests[i];
	bool		wake = false;

	if (req->state == REQUEST_FAILED || req->state == REQUEST_DONE ||
		req->state == REQUEST_QUEUED)
		req->state = REQUEST_FREE;
	else if (req->state != REQUEST_FREE)
	{
		req->state = REQUEST_WITHDRAWN;
		wake = true;
	}
	/* slots of ours: keys being copied in, results not read */
	for (int s = 0; s < svc->nslots; s++)
	{
		StagingSlot *slot = &svc->slots[s];

		if (slot->request == i && slot->request_id == req->id &&
			(slot->state == SLOT_FILLING || slot->state == SLOT_TO_BACKEND))
			slot->state = SLOT_FREE;
	}
	return wake;
}

/* Give the request back: the service closes its sort, or it is just freed. */
static void
withdraw_request(GpuEngine *gpu)
{
	ServiceShared *svc = gpusort_service;
	bool		wake = false;

	if (gpu->request < 0 || svc == NULL)
		return;
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	if (svc->requests[gpu->request].id == gpu->request_id)
		wake = withdraw_locked(svc, gpu->request);
	LWLockRelease(svc->lock);
	gpu->request = -1;
	ConditionVariableBroadcast(&svc->slot_freed);
	if (wake)
		service_wake_service();
}

static void
gpu_engine_release(void *arg)
{
	withdraw_request((GpuEngine *) arg);
}

/* At backend exit: anything still posted by this process is withdrawn. */
static void
withdraw_all_at_exit(int code, Datum arg)
{
	ServiceShared *svc = gpusort_service;

	if (svc == NULL)
		return;
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->nrequests; i++)
		if (svc->requests[i].backend_pid == MyProcPid)
			(void) withdraw_locked(svc, i);
	LWLockRelease(svc->lock);
	service_wake_service();
}

/*
 * Whether the request can still go on: false, with gpu->failure set, when
 * the service failed it or went away.  The caller holds the lock.
 */
static bool
request_alive(GpuEngine *gpu, ServiceRequestState *state)
{
	ServiceShared *svc = gpusort_service;
	ServiceRequest *req = &svc->requests[gpu->request];

	if (req->id != gpu->request_id)
	{
		gpu->failure = FALLBACK_SERVICE_LOST;
		gpu->failure_detail = pstrdup("the request was lost");
		return false;
	}
	*state = req->state;
	if (req->state == REQUEST_FAILED)
	{
		gpu->failure = (ServiceFallback) req->failure;
		gpu->failure_detail = pstrdup(req->error);
		return false;
	}
	if (svc->generation != gpu->generation || svc->service_pid == 0)
	{
		gpu->failure = FALLBACK_SERVICE_LOST;
		gpu->failure_detail = pstrdup("the GPU service exited during the sort");
		return false;
	}
	return true;
}

/* Sleep until a wake-up or the poll interval; a cancel is an ERROR here. */
static void
wait_for_service(long timeout_ms, GpuSortWait what)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 Max(Min(timeout_ms, SERVICE_POLL_MS), 1), gpusort_wait_event(what));
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * A free staging slot for keys, or -1: at once, or (wait) until one is
 * freed or the request fails.
 */
static int
take_slot(GpuEngine *gpu, bool wait)
{
	ServiceShared *svc = gpusort_service;
	int			slotno = -1;

	for (;;)
	{
		ServiceRequestState state;
		bool		alive;

		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		alive = request_alive(gpu, &state);
		if (alive)
			for (int s = 0; s < svc->nslots; s++)
				if (svc->slots[s].state == SLOT_FREE)
				{
					slotno = s;
					svc->slots[s].state = SLOT_FILLING;
					svc->slots[s].request = gpu->request;
					svc->slots[s].request_id = gpu->request_id;
					break;
				}
		LWLockRelease(svc->lock);
		if (slotno >= 0 || !alive || !wait)
			break;
		(void) ConditionVariableTimedSleep(&svc->slot_freed, SERVICE_POLL_MS,
										   gpusort_wait_event(GPUSORT_WAIT_STAGING_SLOT));
	}
	ConditionVariableCancelSleep();
	return slotno;
}

/*
 * Send the keys of submitted chunks that have not gone yet, a slot at a
 * time; without wait, only while slots are free.  False if the request
 * failed meanwhile.
 */
static bool
ship_keys(GpuEngine *gpu, bool wait)
{
	ServiceShared *svc = gpusort_service;
	const Size	slot_words = SERVICE_SLOT_BYTES / sizeof(uint64);
	int			key_words = gpu->base.keys.key_words;

	while (gpu->ship_chunk < gpu->nchunk_records &&
		   gpu->chunk_records[gpu->ship_chunk] > 0)
	{
		Size		chunk_words = gpu->chunk_records[gpu->ship_chunk] * key_words;
		Size		nwords = Min(slot_words, chunk_words - gpu->ship_word);
		bool		last = gpu->ship_word + nwords == chunk_words;
		int			slotno = take_slot(gpu, wait);
		StagingSlot *slot;

		if (slotno < 0)
			return gpu->failure_detail == NULL;
		memcpy(service_slot_data(slotno),
			   gpu->base.keys.chunks[gpu->ship_chunk] + gpu->ship_word,
			   nwords * sizeof(uint64));

		LWLockAcquire(svc->lock, LW_EXCLUSIVE);
		slot = &svc->slots[slotno];
		if (slot->state == SLOT_FILLING && slot->request_id == gpu->request_id)
		{
			slot->chunkno = gpu->ship_chunk;
			slot->word_offset = gpu->ship_word;
			slot->nwords = nwords;
			slot->chunk_records = last ? gpu->chunk_records[gpu->ship_chunk] : 0;
			slot->seq = svc->slot_seq++;
			slot->state = SLOT_TO_SERVICE;
		}
		LWLockRelease(svc->lock);
		service_wake_service();

		if (last)
		{
			gpu->ship_chunk++;
			gpu->ship_word = 0;
		}
		else
			gpu->ship_word += nwords;
	}
	return true;
}

/*
 * Wait for admission until gpusort.service_max_wait after posting.  False
 * with gpu->failure set if it does not come.
 */
static bool
wait_for_admission(GpuEngine *gpu)
{
	ServiceShared *svc = gpusort_service;

	for (;;)
	{
		ServiceRequestState state;
		bool		alive;
		long		waited_ms;

		LWLockAcquire(svc->lock, LW_SHARED);
		alive = request_alive(gpu, &state);
		LWLockRelease(svc->lock);
		if (!alive)
			return false;
		if (state != REQUEST_QUEUED)
			return true;
		waited_ms = (long) ((GetCurrentTimestamp() - gpu->posted_at) / 1000);
		if (waited_ms >= gpusort_service_max_wait_ms)
		{
			gpu->failure = FALLBACK_WAIT;
			gpu->failure_detail =
				psprintf("no room on a GPU within gpusort.service_max_wait (%d ms)",
						 gpusort_service_max_wait_ms);
			return false;
		}
		wait_for_service(gpusort_service_max_wait_ms - waited_ms, GPUSORT_WAIT_GPU_ADMISSION);
	}
}

/* Ask for the sort and copy the permutation back. */
static bool
receive_permutation(GpuEngine *gpu, size_t n, uint32 *perm)
{
	ServiceShared *svc = gpusort_service;
	ServiceRequest *req = &svc->requests[gpu->request];
	Size		received = 0;

	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	req->nrecords = n;
	if (req->id == gpu->request_id && req->state == REQUEST_ADMITTED)
		req->state = REQUEST_FINISHING;
	LWLockRelease(svc->lock);
	service_wake_service();

	while (received < n)
	{
		ServiceRequestState state;
		int			ready[64];
		int			nready = 0;
		bool		alive;

		LWLockAcquire(svc->lock, LW_SHARED);
		alive = request_alive(gpu, &state);
		for (int s = 0; s < svc->nslots && nready < lengthof(ready); s++)
			if (svc->slots[s].state == SLOT_TO_BACKEND &&
				svc->slots[s].request == gpu->request &&
				svc->slots[s].request_id == gpu->request_id)
				ready[nready++] = s;
		LWLockRelease(svc->lock);
		if (!alive)
			return false;

		for (int k = 0; k < nready; k++)
		{
			StagingSlot *slot = &svc->slots[ready[k]];

			memcpy(perm + slot->first_record, service_slot_data(ready[k]),
				   slot->nrecords * sizeof(uint32));
			received += slot->nrecords;
			LWLockAcquire(svc->lock, LW_EXCLUSIVE);
			slot->state = SLOT_FREE;
			LWLockRelease(svc->lock);
		}
		if (nready > 0)
		{
			ConditionVariableBroadcast(&svc->slot_freed);
			service_wake_service();
			continue;
		}
		wait_for_service(SERVICE_POLL_MS, GPUSORT_WAIT_GPU_RESULT);
	}

	LWLockAcquire(svc->lock, LW_SHARED);
	strlcpy(gpu->base.stats.algorithm, req->algorithm_name, sizeof(gpu->base.stats.algorithm));
	gpu->base.stats.transfer_ms = req->transfer_ms;
	gpu->base.stats.device_sort_ms = req->device_sort_ms;
	gpu->base.stats.device_bytes = req->device_bytes;
	strlcpy(gpu->base.stats.device, svc->devices[req->device].name,
			sizeof(gpu->base.stats.device));
	LWLockRelease(svc->lock);
	return true;
}

/* ---------- the engine interface ---------- */

static bool
gpu_engine_submit(SortEngine *engine, size_t chunkno, size_t nrecords, char **why)
{
	GpuEngine  *gpu = (GpuEngine *) engine;

	if (chunkno >= gpu->nchunk_records)
	{
		Size		newlen = Max(Max(gpu->nchunk_records * 2, 16), chunkno + 1);

		if (gpu->chunk_records == NULL)
			gpu->chunk_records = MemoryContextAllocZero(engine->mcxt, sizeof(Size) * newlen);
		else
		{
			gpu->chunk_records = repalloc(gpu->chunk_records, sizeof(Size) * newlen);
			memset(gpu->chunk_records + gpu->nchunk_records, 0,
				   sizeof(Size) * (newlen - gpu->nchunk_records));
		}
		gpu->nchunk_records = newlen;
	}
	gpu->chunk_records[chunkno] = nrecords;

	/* send what can go now; a full queue or a failure waits for sort() */
	if (gpu->request >= 0 && gpu->failure_detail == NULL)
	{
		ServiceShared *svc = gpusort_service;
		ServiceRequestState state = REQUEST_QUEUED;
		bool		alive;

		LWLockAcquire(svc->lock, LW_SHARED);
		alive = request_alive(gpu, &state);
		LWLockRelease(svc->lock);
		if (alive && state == REQUEST_ADMITTED)
			(void) ship_keys(gpu, false);
	}
	return true;
}

static bool
gpu_engine_sort(SortEngine *engine, size_t n, uint32 **perm, char **why)
{
	GpuEngine  *gpu = (GpuEngine *) engine;
	uint32	   *result;

	if (gpu->failure_detail == NULL && wait_for_admission(gpu) &&
		ship_keys(gpu, true))
	{
		result = hostmem_alloc(engine->mcxt, Max(n, 1) * sizeof(uint32), 0);
		if (result == NULL)
		{
			*why = pstrdup("out of memory for the permutation");
			return false;
		}
		if (receive_permutation(gpu, n, result))
		{
			withdraw_request(gpu);
			*perm = result;
			return true;
		}
	}

	/* the same keys, on the CPU */
	if (gpu->failure_detail == NULL)
	{
		gpu->failure = FALLBACK_GPU_ERROR;
		gpu->failure_detail = pstrdup("the GPU service did not sort");
	}
	withdraw_request(gpu);
	stat_count_fallback(gpu->failure);
	engine->fallback = psprintf("GPU service: %s", gpu->failure_detail);
	engine->stats.engine = SORT_ENGINE_CPU;
	engine->stats.device[0] = '\0';
	return engine_cpu_sort_keys(engine, n, perm, why);
}

static void
gpu_engine_end(SortEngine *engine)
{
	withdraw_request((GpuEngine *) engine);
}

static const SortEngineMethods gpu_engine_methods = {
	.chunk = engine_local_chunk,
	.submit = gpu_engine_submit,
	.sort = gpu_engine_sort,
	.end = gpu_engine_end,
};

/*
 * Whether this server's GPU service runs and has a GPU; false with *why
 * (when why is not NULL) in the user's terms.
 */
bool
gpu_engine_available(char **why)
{
	char	   *reason = service_no_gpu_reason();

	if (reason == NULL)
		return true;
	if (why)
		*why = reason;
	else
		pfree(reason);
	return false;
}

SortEngine *
gpu_engine_begin(MemoryContext mcxt, int key_words, size_t expected_records,
				 char **why)
{
	ServiceShared *svc = gpusort_service;
	GpuEngine  *gpu;
	int			request = -1;
	uint64		id;

	if (!gpu_engine_available(why))
	{
		stat_count_fallback(svc != NULL && service_running() ?
							FALLBACK_NO_DEVICE : FALLBACK_NO_SERVICE);
		return NULL;
	}
	if (!exit_callback_registered)
	{
		before_shmem_exit(withdraw_all_at_exit, 0);
		exit_callback_registered = true;
	}

	gpu = MemoryContextAllocZero(mcxt, sizeof(GpuEngine));
	gpu->base.methods = &gpu_engine_methods;
	gpu->base.mcxt = mcxt;
	gpu->base.keys.chunk_records = GPUSORT_CHUNK_RECORDS;
	gpu->base.keys.key_words = key_words;
	gpu->base.stats.engine = SORT_ENGINE_GPU;
	gpu->request = -1;

	id = pg_atomic_fetch_add_u64(&svc->next_request_id, 1);
	LWLockAcquire(svc->lock, LW_EXCLUSIVE);
	for (int i = 0; i < svc->nrequests; i++)
		if (svc->requests[i].state == REQUEST_FREE)
		{
			ServiceRequest *req = &svc->requests[i];

			memset(req, 0, sizeof(*req));
			req->id = id;
			req->backend_procno = gpusort_my_procno();
			req->backend_pid = MyProcPid;
			req->generation = svc->generation;
			req->queued_at = GetCurrentTimestamp();
			req->key_words = key_words;
			req->algorithm = gpusort_gpu_algorithm;
			req->fault = gpusort_fault_gpu();
			req->expected_records = expected_records;
			req->mem_limit = (Size) gpusort_gpu_memory_kb * 1024;
			req->split_parts = gpusort_gpu_split_parts;
			req->state = REQUEST_QUEUED;
			request = i;
			gpu->generation = req->generation;
			gpu->posted_at = req->queued_at;
			break;
		}
	LWLockRelease(svc->lock);
	if (request < 0)
	{
		stat_count_fallback(FALLBACK_QUEUE_FULL);
		*why = pstrdup("GPU service: its request table is full");
		pfree(gpu);
		return NULL;
	}
	gpu->request = request;
	gpu->request_id = id;

	/* withdrawn with the sort's memory, whatever ends the query */
	gpu->release.func = gpu_engine_release;
	gpu->release.arg = gpu;
	MemoryContextRegisterResetCallback(mcxt, &gpu->release);
	service_wake_service();
	return &gpu->base;
}

/* gpusort_info()'s description of the GPUs. */
void
gpu_engine_describe(StringInfo buf)
{
	ServiceShared *svc = gpusort_service;
	char	   *why = NULL;

	if (!gpu_engine_available(&why))
	{
		appendStringInfoString(buf, why);
		return;
	}
	LWLockAcquire(svc->lock, LW_SHARED);
	for (int i = 0; i < svc->ndevices; i++)
		appendStringInfo(buf, "%sdevice %d: %s, %zu MB, budget %zu MB",
						 i > 0 ? "; " : "", svc->devices[i].cuda_device,
						 svc->devices[i].name, svc->devices[i].total_bytes >> 20,
						 svc->devices[i].budget_bytes >> 20);
	LWLockRelease(svc->lock);
}

/* Whether a plan may count on a GPU: the service runs and has one. */
bool
gpusort_gpu_maybe_present(void)
{
	return gpu_engine_available(NULL);
}

/*-------------------------------------------------------------------------
 *
 * service_sort.c
 *	  The CUDA sorts of an admitted request, one per part: opened on their
 *	  GPUs, fed chunk by chunk, finished, closed; and a request's failure.
 *
 * A request's sorts open once it is admitted (service_admission.c); its
 * keys then arrive chunk by chunk (service_transfer.c, and for a split
 * request service_split.c, which deals them to its parts), each full
 * chunk shipped to the device at once, on the sort's own stream, so that
 * the transfers of many backends overlap one another and their loads.
 * When all its keys are in, the request is sorted: every part's sort is
 * started before any is waited for, so that the parts of a split request
 * sort at once.  Before each CUDA call that may allocate, the part's
 * memory limit is set, and after it what the part holds is reserved
 * (service_admission.c).  Closing a request's sorts gives their memory
 * back to the budget.
 *
 * A failed CUDA call fails only the request it belongs to: its backend
 * sorts the same keys on the CPU.  A sticky error leaves the device's
 * context unusable: check_device_lost() then marks the device lost, and
 * the worker fails every request in flight and exits (service_worker.c).
 *
 * Called by the other files of the service: open_sort() and finish_sort()
 * (the worker's pass), submit_part_chunk() (service_transfer.c,
 * service_split.c), close_sort(), fail_request() and check_device_lost()
 * (all of them).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef GPUSORT_USE_CUDA

#include "utils/memutils.h"

#include "keys/keys.h"
#include "service/service_internal.h"

/* Close the service's side of request i; the caller holds no lock. */
void
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
void
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
void
check_device_lost(void)
{
	char		err[256];

	if (gscuda_lost(err, sizeof(err)))
	{
		ereport(LOG, (errmsg("gpusort GPU service: %s; restarting", err)));
		device_lost = true;
	}
}

/* Open the sorts of an admitted request, one per part, on their GPUs. */
void
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
bool
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
void
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

#endif							/* GPUSORT_USE_CUDA */

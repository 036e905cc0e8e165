/*-------------------------------------------------------------------------
 *
 * service_transfer.c
 *	  Keys from the staging slots to the GPUs, and the sorted permutation
 *	  from the GPUs back into slots for the backend.
 *
 * Keys in staging slots are shipped to the device at once, by DMA from the
 * slots, which the service pins for the GPUs at start (service_worker.c);
 * where they cannot be pinned, the service copies them into the sort's
 * pinned chunk buffers first.  A slot goes back to the backends once its
 * keys are on the device (wait_uploads).  A split request's keys are
 * gathered into its pending chunk instead and dealt to its parts
 * (service_split.c).
 *
 * A sorted request's permutation is streamed back through free slots, as
 * many at a time as are free: by DMA from the device(s) where the sort kept
 * it there, a slot's range from each part it overlaps, else copied from
 * the host.  When all of it is out, the request's sorts close
 * (service_sort.c) and it is DONE.
 *
 * Called by the worker's pass (service_worker.c): take_keys(),
 * wait_uploads() and deliver().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef GPUSORT_USE_CUDA

#include "service/service_internal.h"

/*
 * Wait until the keys uploaded from slots in this pass are on the devices,
 * so that the slots can be freed.
 */
void
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
void
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
bool
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

#endif							/* GPUSORT_USE_CUDA */

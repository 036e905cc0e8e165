/*-------------------------------------------------------------------------
 *
 * service_admission.c
 *	  Which requests the GPU service admits, and the GPU memory each one
 *	  holds in its device's budget.
 *
 * Each GPU has a budget, gpusort.service_gpu_memory_percent of its memory
 * (service_worker.c sets it).  Queued requests are taken oldest first: a
 * request is admitted on the GPU with the most room in its budget if its
 * estimate fits; otherwise it waits, without holding up those behind it
 * that fit, and its backend gives up after gpusort.service_max_wait.  One
 * that could never fit fails at once.  A request too large for any one
 * GPU's budget (or expected at gpusort.service_split_rows or more, where
 * that is set), where there are several GPUs, is admitted in parts, one per
 * GPU, that service_split.c fills by key range.
 *
 * A sort may grow past its estimate into what its device's budget has left;
 * what it really holds is then reserved, and a sort that would need more
 * than the budget has left fails (its backend sorts on the CPU).  The
 * reservations go back to the budget as the sort closes (service_sort.c).
 *
 * Called by the other files of the service: admit_queued() (the worker's
 * pass), part_records(), part_limit(), set_part_limit() and account_part()
 * (service_sort.c, around each CUDA call that may allocate).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef GPUSORT_USE_CUDA

#include "utils/timestamp.h"

#include "service/service_internal.h"
#include "support/settings.h"

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
Size
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
int
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
Size
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
void
set_part_limit(int i, int p)
{
	gscuda_sort_set_mem_limit(active[i].parts[p].sort, part_limit(i, p));
}

/* After it: what the part really holds is reserved, if more. */
void
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

#endif							/* GPUSORT_USE_CUDA */

/*-------------------------------------------------------------------------
 *
 * service_internal.h
 *	  The GPU service's own state, shared by the files of the worker
 *	  alone: service_worker.c, service_transfer.c, service_split.c,
 *	  service_sort.c and service_admission.c.  Backends, and engine_gpu.c,
 *	  see service.h.
 *
 * Each admitted request has an ActiveSort beside its entry in the shared
 * request table (active[i] for svc->requests[i]): what only the service
 * knows of it, its CUDA sorts above all.  A request is sorted in one part,
 * or, split by key range (service_split.c), in one part per range, each on
 * its own GPU.  The worker is one thread, so none of this needs a lock;
 * what the backends see (the request table, the slots, the devices'
 * reservations) is under svc->lock.
 *
 * Only a build with CUDA has a worker: the files that include this are
 * empty without it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SERVICE_INTERNAL_H
#define GPUSORT_SERVICE_INTERNAL_H

#include "postgres.h"

#include "portability/instr_time.h"

#include "service/service.h"
#include "support/shmem.h"

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

/* service_worker.c: set as the worker starts, and as a device is lost */
extern ServiceShared *svc;
extern ActiveSort *active;		/* one per request entry */
extern bool device_lost;
extern bool staging_pinned;		/* the GPUs read the slots by DMA */

/* service_transfer.c */
extern void wait_uploads(void);
extern void take_keys(int slotno);
extern bool deliver(int i);

/* service_split.c */
extern bool split_chunk(int i, Size chunkno, Size nrecords);

/* service_sort.c */
extern void close_sort(int i, bool count_served);
extern void fail_request(int i, ServiceFallback reason, const char *why);
extern void check_device_lost(void);
extern void open_sort(int i);
extern bool submit_part_chunk(int i, int p, Size chunkno, Size nrecords);
extern void finish_sort(int i);

/* service_admission.c */
extern Size part_records(ServiceRequest *req, int nparts);
extern int	admit_queued(int *admitted);
extern Size part_limit(int i, int p);
extern void set_part_limit(int i, int p);
extern void account_part(int i, int p);

#endif							/* GPUSORT_SERVICE_INTERNAL_H */

/*-------------------------------------------------------------------------
 *
 * service.h
 *	  The GPU service: one background worker per server that owns the
 *	  GPUs, and the shared memory through which backends reach it.
 *
 * Backends never start CUDA.  A backend whose batch is to be sorted on the
 * GPU (engine_gpu.c) posts a request in the shared request table and goes
 * on loading; the service (service_worker.c) admits requests in arrival
 * order while its GPU memory budget allows (service_admission.c), opens a
 * sort on the GPU with the most room left in its budget, and sorts there
 * (service_sort.c).  Keys and results travel through staging slots
 * (service_transfer.c): fixed buffers in the server's main shared memory
 * (gpusort.service_staging), so the transfer needs neither a dynamic
 * segment per sort nor room in /dev/shm.  The service pins the
 * slots for its GPUs, which read keys from them by DMA.
 *
 *	 backend                       shared memory                service
 *	 -------                       -------------                -------
 *	 keys of chunk i  --memcpy-->  slot (TO_SERVICE)  ----DMA---->  GPU
 *	 finish(n)        ---------->  request FINISHING  -- sort on the GPU
 *	 permutation      <--memcpy--  slot (TO_BACKEND)  <--memcpy--  pinned
 *
 * A backend keeps its own copy of every key (it needs them afterwards to
 * resolve ties), so whatever happens to the request (no room on the GPU
 * in time, a GPU error, the service restarting), the same keys are sorted
 * by the CPU engine, and the answer is the same.
 *
 * The request table and the slots are protected by one LWLock; copies are
 * made outside it, by whoever holds the slot (its state says who).  Latches
 * carry the wake-ups both ways; a condition variable wakes backends that
 * wait for a free slot.
 *
 * shmem_startup (service_shmem.c) only lays the memory out: the postmaster
 * never touches CUDA.  What the sorts of all backends share apart from the
 * service (the server's memory budget, the pool threads' count, the
 * counters of gpusort_stat) is in the extension's shared memory (shmem.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SERVICE_H
#define GPUSORT_SERVICE_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#define SERVICE_MAX_DEVICES		16
#define SERVICE_SLOT_BYTES		((Size) 1024 * 1024)
#define SERVICE_MIN_SLOTS		4
#define SERVICE_STAGING_ALIGN	4096
#define SERVICE_ERROR_LEN		256

/* Life of a request.  Who moves it on is in brackets. */
typedef enum ServiceRequestState
{
	REQUEST_FREE = 0,
	REQUEST_QUEUED,				/* [backend] waiting for admission */
	REQUEST_ADMITTED,			/* [service] a sort is open on a device */
	REQUEST_FINISHING,			/* [backend] all keys sent; sort them */
	REQUEST_SORTED,				/* [service] the permutation is on its way */
	REQUEST_DONE,				/* [service] all of it was delivered */
	REQUEST_FAILED,				/* [service] see error; the backend sorts */
	REQUEST_WITHDRAWN			/* [backend] gone; the service cleans up */
} ServiceRequestState;

typedef struct ServiceRequest
{
	ServiceRequestState state;
	uint64		id;				/* unique while the entry is in use */
	int			backend_procno; /* whose latch to set */
	int			backend_pid;
	uint32		generation;		/* the service generation it was posted to */
	TimestampTz queued_at;

	/* the sort (set by the backend when posting) */
	int			key_words;
	int			algorithm;		/* GsCudaAlgorithm */
	int			fault;			/* GsCudaFault to inject: tests only */
	Size		expected_records;
	Size		mem_limit;		/* gpusort.gpu_memory of the session, 0: none */
	int			split_parts;	/* gpusort.gpu_split_parts of the session */

	/* set by the service */
	int			device;
	Size		reserved_bytes; /* GPU memory reserved in the device's budget */
	char		error[SERVICE_ERROR_LEN];	/* REQUEST_FAILED: why ... */
	int			failure;		/* ... and its ServiceFallback (stat.h) */
	char		algorithm_name[32];
	double		transfer_ms;
	double		device_sort_ms;
	Size		device_bytes;

	/* set by the backend at finish */
	Size		nrecords;
} ServiceRequest;

typedef enum StagingSlotState
{
	SLOT_FREE = 0,
	SLOT_FILLING,				/* a backend copies keys in */
	SLOT_TO_SERVICE,			/* keys for the service */
	SLOT_RESULT,				/* the service copies a permutation piece in */
	SLOT_TO_BACKEND				/* a permutation piece for the backend */
} StagingSlotState;

typedef struct StagingSlot
{
	StagingSlotState state;
	int			request;		/* index in the request table */
	uint64		request_id;
	uint64		seq;			/* keys: the backend's posting order */
	Size		chunkno;		/* keys: which chunk ... */
	Size		word_offset;	/* ... from which word ... */
	Size		nwords;			/* ... how many words */
	Size		chunk_records;	/* keys: records in the chunk when this is its
								 * last piece, else 0 */
	Size		first_record;	/* result: position of the first index */
	Size		nrecords;		/* result: indexes in the slot */
} StagingSlot;

/* What the service knows of one GPU (the view gpusort_gpus). */
typedef struct ServiceDevice
{
	int			cuda_device;
	char		name[64];
	Size		total_bytes;
	Size		budget_bytes;	/* gpusort.service_gpu_memory of this GPU */
	Size		reserved_bytes; /* by admitted requests */
	int			running;		/* admitted requests */
	pg_atomic_uint64 served;
	pg_atomic_uint64 failed;
} ServiceDevice;

typedef struct ServiceShared
{
	LWLock	   *lock;			/* requests, slots, devices' reservations */
	ConditionVariable slot_freed;

	/* the worker: set by it, read by everyone */
	int			service_pid;	/* 0: not running */
	int			service_procno;
	uint32		generation;		/* bumped at each start */
	bool		ready;			/* devices are known */
	int			ndevices;
	char		status[SERVICE_ERROR_LEN];	/* no device: why, in user terms */
	ServiceDevice devices[SERVICE_MAX_DEVICES];

	pg_atomic_uint64 next_request_id;

	/* the service's counters (the view gpusort_stat, stat.c) */
	pg_atomic_uint64 bytes_to_gpu;
	pg_atomic_uint64 bytes_from_gpu;
	pg_atomic_uint64 gpu_time_us;
	pg_atomic_uint64 queue_wait_us;

	int			nrequests;
	int			nslots;
	uint64		slot_seq;		/* next key slot's posting order */
	ServiceRequest *requests;	/* nrequests entries */
	StagingSlot *slots;			/* nslots entries */
	char	   *staging;		/* nslots * SERVICE_SLOT_BYTES */
} ServiceShared;

/* service_shmem.c */
extern ServiceShared *gpusort_service;	/* NULL unless preloaded */
extern void service_shmem_init(void);
extern bool service_running(void);
extern char *service_no_gpu_reason(void);
extern char *service_slot_data(int slot);
extern void service_wake_backend(ServiceRequest *req);
extern void service_wake_service(void);

/* service_worker.c */
extern PGDLLEXPORT void gpusort_service_main(Datum arg);

#endif							/* GPUSORT_SERVICE_H */

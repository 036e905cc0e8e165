/*-------------------------------------------------------------------------
 *
 * stat.c
 *	  The server-wide counters of gpusort's sorts (stat.h), and
 *	  gpusort_stat(), the function behind the view gpusort_stat.
 *
 * The sort module counts sorts and runs, the engines count fallbacks from
 * the GPU; the GPU service counts what it moved and how long requests
 * waited, in its own shared memory (service.h), which gpusort_stat reads
 * too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "service.h"
#include "shmem.h"
#include "sort_budget.h"
#include "stat.h"

static const char *const fallback_names[NUM_SERVICE_FALLBACKS] = {
	[FALLBACK_NO_SERVICE] = "service not running",
	[FALLBACK_NO_DEVICE] = "no usable GPU",
	[FALLBACK_QUEUE_FULL] = "request table full",
	[FALLBACK_WAIT] = "waited too long for GPU memory",
	[FALLBACK_TOO_LARGE] = "larger than the GPU memory budget",
	[FALLBACK_GPU_ERROR] = "GPU error",
	[FALLBACK_SERVICE_LOST] = "service exited during the sort",
	[FALLBACK_SMALL] = "below gpusort.gpu_min_rows",
	[FALLBACK_CANCELLED] = "cancelled",
};

static const char *const engine_names[NUM_STAT_ENGINES] = {
	[STAT_ENGINE_GPU] = "GPU",
	[STAT_ENGINE_CPU] = "CPU",
	[STAT_ENGINE_COMPARATORS] = "PostgreSQL comparators",
};

void
stat_count_fallback(ServiceFallback reason)
{
	if (gpusort_shared)
		pg_atomic_fetch_add_u64(&gpusort_shared->fallbacks[reason], 1);
}

void
stat_count_sort(StatEngineKind engine, uint64 rows)
{
	if (gpusort_shared)
	{
		pg_atomic_fetch_add_u64(&gpusort_shared->sorts[engine], 1);
		pg_atomic_fetch_add_u64(&gpusort_shared->rows[engine], rows);
	}
}

/* A sorted run was written: because of which budget (sort_budget.c)? */
void
stat_count_run(bool for_server_budget)
{
	if (gpusort_shared)
		pg_atomic_fetch_add_u64(for_server_budget ?
								&gpusort_shared->runs_for_server_budget :
								&gpusort_shared->runs_for_backend_budget, 1);
}

/*
 * gpusort_stat(): counters since the server started, one row per figure,
 * (what, detail, value): sorts and rows by engine, fallbacks by reason,
 * bytes moved to and from the GPUs, GPU time, time spent queued, runs
 * written because of each memory budget; as "now", the requests open,
 * the staging slots in use, and the host memory all GpuSorts hold against
 * gpusort.server_memory (0: no limit) at this moment; and, as "peak", the
 * most they have held at once.
 */
PG_FUNCTION_INFO_V1(gpusort_stat);
Datum
gpusort_stat(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GpuSortShared *shared = gpusort_shared;
	ServiceShared *svc = gpusort_service;
	Datum		values[3];
	bool		nulls[3] = {0};

#define STAT_ROW(what, detail, value) \
	do { \
		values[0] = CStringGetTextDatum(what); \
		values[1] = CStringGetTextDatum(detail); \
		values[2] = Int64GetDatum((int64) (value)); \
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); \
	} while (0)

	InitMaterializedSRF(fcinfo, 0);
	/* both exist, or neither: they are reserved at preload together */
	if (shared == NULL || svc == NULL)
		PG_RETURN_VOID();

	for (int i = 0; i < NUM_STAT_ENGINES; i++)
		STAT_ROW("sorts", engine_names[i], pg_atomic_read_u64(&shared->sorts[i]));
	for (int i = 0; i < NUM_STAT_ENGINES; i++)
		STAT_ROW("rows", engine_names[i], pg_atomic_read_u64(&shared->rows[i]));
	for (int i = 0; i < NUM_SERVICE_FALLBACKS; i++)
		STAT_ROW("fallbacks", fallback_names[i], pg_atomic_read_u64(&shared->fallbacks[i]));
	STAT_ROW("bytes", "to GPU", pg_atomic_read_u64(&svc->bytes_to_gpu));
	STAT_ROW("bytes", "from GPU", pg_atomic_read_u64(&svc->bytes_from_gpu));
	STAT_ROW("time_ms", "GPU", pg_atomic_read_u64(&svc->gpu_time_us) / 1000);
	STAT_ROW("time_ms", "queued", pg_atomic_read_u64(&svc->queue_wait_us) / 1000);
	STAT_ROW("runs written", "for gpusort.max_memory",
			 pg_atomic_read_u64(&shared->runs_for_backend_budget));
	STAT_ROW("runs written", "for gpusort.server_memory",
			 pg_atomic_read_u64(&shared->runs_for_server_budget));
	{
		int			slots_busy = 0;
		int			requests_open = 0;

		LWLockAcquire(svc->lock, LW_SHARED);
		for (int i = 0; i < svc->nslots; i++)
			slots_busy += svc->slots[i].state != SLOT_FREE;
		for (int i = 0; i < svc->nrequests; i++)
			requests_open += svc->requests[i].state != REQUEST_FREE;
		LWLockRelease(svc->lock);
		/* gauges, not counters: what is in use now */
		STAT_ROW("now", "requests open", requests_open);
		STAT_ROW("now", "staging slots in use", slots_busy);
		STAT_ROW("now", "staging slots", svc->nslots);
		STAT_ROW("now", "sort memory held",
				 pg_atomic_read_u64(&shared->sort_memory_held));
		STAT_ROW("now", "sort memory limit", budget_server_limit());
		STAT_ROW("peak", "sort memory held",
				 pg_atomic_read_u64(&shared->sort_memory_peak));
	}
#undef STAT_ROW
	PG_RETURN_VOID();
}

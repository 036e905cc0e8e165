/*-------------------------------------------------------------------------
 *
 * views.c
 *	  The SQL functions of gpusort's views and functions: gpusort_info()
 *	  (the build, its GPUs, the memory its budgets come from),
 *	  gpusort_backend_memory() (the calling backend's host memory; its two
 *	  pinned-memory columns, kept in its SQL signature, are always 0) and
 *	  gpusort_stat() (the server-wide counters, behind the view
 *	  gpusort_stat).  PostgreSQL calls them by name (sql/).
 *
 * They read what the layers below publish: the GPU service's shared memory
 * (service.h), the budgets (sort_memory.h), the counters (stat.c, in
 * shmem.h) and host memory (hostmem.h).  Like gpusort.c, this file is the
 * top: nothing else calls into it.
 *
 * Who may call them is the install script's rule (sql/gpusort--0.3.sql);
 * gpusort_info(), open to every role, also keeps the host's details (the
 * GPUs' models and driver messages, the machine's memory and cgroup path)
 * to the roles that may read every setting, as PostgreSQL keeps its
 * settings that name paths on the host.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "engine/engine.h"
#include "service/service.h"
#include "sort/sort_memory.h"
#include "support/hostmem.h"
#include "support/shmem.h"
#include "support/sort_stats.h"
#include "support/stat.h"

#define GPUSORT_VERSION "0.3"

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

/*
 * gpusort_info(): one row describing this build of gpusort, the GPUs its
 * service uses (or why there are none), as the service published them, and
 * the memory its default budgets are taken from (sort_memory.c).  The
 * column memory came with 0.3: declared by an older version's SQL, which
 * runs this library until ALTER EXTENSION UPDATE, the row has the first
 * four columns only.
 *
 * gpus and memory describe the host: the GPUs' models and memory, or the
 * driver's message for why none is usable; the machine's physical memory
 * and its cgroup's limit and path.  They are NULL but for superusers and
 * members of pg_read_all_settings (pg_monitor is one), the roles that see
 * the settings PostgreSQL keeps from others (data_directory and the like);
 * version, build and engines, the build's facts and whether the GPU engine
 * is usable, are every role's.
 */
PG_FUNCTION_INFO_V1(gpusort_info);
Datum
gpusort_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	StringInfoData gpus;
	StringInfoData memory;
	char	   *why = NULL;
	bool		gpu_ok;
	bool		host_visible;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != 4 && tupdesc->natts != 5)
		elog(ERROR, "gpusort_info() must return 4 or 5 columns, not %d", tupdesc->natts);
	tupdesc = BlessTupleDesc(tupdesc);

	gpu_ok = gpu_engine_available(&why);
	host_visible = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS);

	values[0] = CStringGetTextDatum(GPUSORT_VERSION);
#ifdef GPUSORT_USE_CUDA
	values[1] = CStringGetTextDatum("CUDA");
#else
	values[1] = CStringGetTextDatum("CPU-only");
#endif
	values[2] = CStringGetTextDatum(gpu_ok ? "gpu, cpu" : "cpu");
	if (host_visible)
	{
		initStringInfo(&gpus);
		gpu_engine_describe(&gpus);
		values[3] = CStringGetTextDatum(gpus.data);
		initStringInfo(&memory);
		budget_describe_memory(&memory);
		values[4] = CStringGetTextDatum(memory.data);
	}
	else
		nulls[3] = nulls[4] = true;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * gpusort_backend_memory(): the large host blocks the calling backend's
 * running sorts hold, and what it keeps between sorts (gpusort.host_cache).
 * Only the caller's own backend: nothing about other sessions.  The two
 * pinned-memory columns stay in the function's SQL signature (0.2) and are
 * always 0: pinned memory belongs to the GPU service, never to a backend.
 */
PG_FUNCTION_INFO_V1(gpusort_backend_memory);
Datum
gpusort_backend_memory(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	values[0] = Int64GetDatum((int64) hostmem_owned(NULL));
	values[1] = Int64GetDatum((int64) hostmem_cached());
	values[2] = Int64GetDatum(0);
	values[3] = Int64GetDatum(0);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * gpusort_stat(): counters since the server started, one row per figure,
 * (what, detail, value): sorts and rows by what ordered them, fallbacks by
 * reason, bytes moved to and from the GPUs, GPU time, time spent queued, runs
 * written because of each memory budget, btree index builds sorted by each
 * engine and left to PostgreSQL by reason; as "now", the requests open,
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

	for (int i = 0; i < NUM_SORT_ENGINES; i++)
		STAT_ROW("sorts", sort_engine_name(i), pg_atomic_read_u64(&shared->sorts[i]));
	for (int i = 0; i < NUM_SORT_ENGINES; i++)
		STAT_ROW("rows", sort_engine_name(i), pg_atomic_read_u64(&shared->rows[i]));
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
	for (int i = 0; i < NUM_SORT_ENGINES; i++)
		STAT_ROW("index builds", sort_engine_name(i),
				 pg_atomic_read_u64(&shared->index_builds[i]));
	for (int i = 0; i < NUM_INDEX_LEFT; i++)
		STAT_ROW("index builds left", index_build_left_name(i),
				 pg_atomic_read_u64(&shared->index_builds_left[i]));
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

/*-------------------------------------------------------------------------
 *
 * gpusort.c
 *	  Module entry point: _PG_init, and the SQL functions that describe the
 *	  build, the GPUs and the calling backend's memory.
 *
 * _PG_init runs in the postmaster when gpusort is in
 * shared_preload_libraries, and in a backend on LOAD or
 * session_preload_libraries.  It calls each module's init: the settings
 * (settings.c), the executor nodes (nodeGpuSort.c), the planner hook
 * (planner.c) and, at preload only, the extension's shared memory
 * (shmem.c) and the GPU service's, with its worker in a build with CUDA
 * (service_shmem.c).
 * This file is the top: nothing else calls into it.  Nothing here touches
 * CUDA: only the service's worker does.
 *
 * The flow of a sort: the planner hook replaces a finished plan's Sort
 * node with Custom Scan (GpuSort); a parallel sort has a Gather below it
 * and, below that, Custom Scan (GpuSortLoad), through which the workers
 * copy their rows into the query's shared memory.  At execution the node
 * puts its input into the sort module (sort.c), which goes through the
 * stages: load (the tuples into batches under the backend's memory
 * budget), encode (one normalized key per tuple, built by pool threads
 * where they pay), engine (the CPU engine, or the GPU through the GPU
 * service's worker), resolve (refinement of inexact keys and PostgreSQL's
 * comparators among equal keys), runs (full batches written to temporary
 * files as sorted runs), merge (the runs merged on the way out) and emit.
 * If an engine fails the next one takes over; if keys cannot be built,
 * comparators alone order the batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "engine.h"
#include "hostmem.h"
#include "nodeGpuSort.h"
#include "planner.h"
#include "service.h"
#include "settings.h"
#include "shmem.h"
#include "sort_budget.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

#define GPUSORT_VERSION "0.3"

void
_PG_init(void)
{
	settings_init(hostmem_assign_cache_limit);
	gpusort_executor_init();
	gpusort_planner_init();
	gpusort_shmem_init();
	service_shmem_init();
}

/*
 * gpusort_info(): one row describing this build of gpusort, the GPUs its
 * service uses (or why there are none), as the service published them, and
 * the memory its default budgets are taken from (sort_budget.c).  The
 * column memory came with 0.3: declared by an older version's SQL, which
 * runs this library until ALTER EXTENSION UPDATE, the row has the first
 * four columns only.
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

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != 4 && tupdesc->natts != 5)
		elog(ERROR, "gpusort_info() must return 4 or 5 columns, not %d", tupdesc->natts);
	tupdesc = BlessTupleDesc(tupdesc);

	gpu_ok = gpu_engine_available(&why);
	initStringInfo(&gpus);
	gpu_engine_describe(&gpus);

	values[0] = CStringGetTextDatum(GPUSORT_VERSION);
#ifdef GPUSORT_USE_CUDA
	values[1] = CStringGetTextDatum("CUDA");
#else
	values[1] = CStringGetTextDatum("CPU-only");
#endif
	values[2] = CStringGetTextDatum(gpu_ok ? "gpu, cpu" : "cpu");
	values[3] = CStringGetTextDatum(gpus.data);
	initStringInfo(&memory);
	budget_describe_memory(&memory);
	values[4] = CStringGetTextDatum(memory.data);

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

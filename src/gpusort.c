/*-------------------------------------------------------------------------
 *
 * gpusort.c
 *	  Module entry point: _PG_init.  The SQL functions are views.c's.
 *
 * _PG_init runs in the postmaster when gpusort is in
 * shared_preload_libraries, and in a backend on LOAD or
 * session_preload_libraries.  It calls each module's init: the settings
 * (settings_init, given host memory's hook for gpusort.host_cache), the
 * executor nodes (gpusort_executor_init), the planner hook
 * (gpusort_planner_init), the route of btree index builds
 * (gpusort_index_build_init) and, at preload only, the extension's shared
 * memory (gpusort_shmem_init) and the GPU service's, with its worker in a
 * build with CUDA (service_shmem_init).  This file and views.c are the
 * top: nothing else calls into them.  Nothing here touches CUDA: only the
 * service's worker does.
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

#include "fmgr.h"

#include "exec/nodeGpuSort.h"
#include "index/index_build.h"
#include "plan/planner.h"
#include "service/service.h"
#include "support/hostmem.h"
#include "support/settings.h"
#include "support/shmem.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	settings_init(hostmem_assign_cache_limit);
	gpusort_executor_init();
	gpusort_planner_init();
	gpusort_index_build_init();
	gpusort_shmem_init();
	service_shmem_init();
}

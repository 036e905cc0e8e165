/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The gpusort.* settings (settings.h): their variables, their
 *	  definitions and their check hooks.
 *
 * settings_init() runs from _PG_init (gpusort.c).  The GPU service's
 * server-start settings are defined only while shared_preload_libraries
 * is processed: a library loaded later may not define them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "support/faults.h"
#include "support/settings.h"

bool		gpusort_enabled = true;
int			gpusort_min_rows = 100000;
int			gpusort_engine = GPUSORT_ENGINE_AUTO;
int			gpusort_key_width = GPUSORT_MAX_KEY_BYTES;
int			gpusort_max_memory_kb = -1;	/* -1: derived, work_mem at least
												 * (sort_memory.c) */
int			gpusort_server_memory_kb = -1;	/* -1: half the machine's memory */
int			gpusort_gpu_memory_kb = 0;	/* 0: whatever the GPU has free */
int			gpusort_gpu_algorithm = GPUSORT_ALGO_AUTO;
int			gpusort_gpu_min_rows = 1000000;
int			gpusort_pinned_cache_kb = 512 * 1024;	/* 512 MB */
char	   *gpusort_gpu_devices = NULL;
int			gpusort_service_gpu_memory_pct = 50;
int			gpusort_service_staging_kb = 64 * 1024; /* 64 MB */
int			gpusort_service_max_wait_ms = 1000;
int			gpusort_service_split_rows = 0;
int			gpusort_gpu_split_parts = 0;
int			gpusort_host_cache_kb = 2 * 1024 * 1024; /* 2 GB */
int			gpusort_threads = -1;	/* -1: half the CPUs, at most 16 */
bool		gpusort_key_overlap = true;
bool		gpusort_write_behind = true;
bool		gpusort_emit_copy = true;
char	   *gpusort_inject_fault = NULL;	/* faults.h: tests only */

static const struct config_enum_entry engine_options[] = {
	{"auto", GPUSORT_ENGINE_AUTO, false},
	{"gpu", GPUSORT_ENGINE_GPU, false},
	{"cpu", GPUSORT_ENGINE_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpu_algorithm_options[] = {
	{"auto", GPUSORT_ALGO_AUTO, false},
	{"bucket", GPUSORT_ALGO_BUCKET, false},
	{"radix", GPUSORT_ALGO_RADIX, false},
	{NULL, 0, false}
};

static bool
check_key_width(int *newval, void **extra, GucSource source)
{
	if (*newval % 8 != 0)
	{
		GUC_check_errdetail("gpusort.key_width must be a multiple of 8 bytes.");
		return false;
	}
	return true;
}

/* gpusort.max_memory: -1 (derived, sort_memory.c) or at least 64 kB */
static bool
check_max_memory(int *newval, void **extra, GucSource source)
{
	if (*newval != -1 && *newval < 64)
	{
		GUC_check_errdetail("gpusort.max_memory must be -1 or at least 64kB.");
		return false;
	}
	return true;
}

void
settings_init(GucIntAssignHook host_cache_assign)
{
	DefineCustomBoolVariable("gpusort.enabled",
							 "Replaces large Sort nodes with GpuSort.",
							 NULL,
							 &gpusort_enabled,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.min_rows",
							"Estimated input rows below which a Sort is left to PostgreSQL.",
							NULL,
							&gpusort_min_rows,
							100000, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.engine",
							 "What sorts the records: auto (the GPU when one is usable, "
							 "else the CPU engine), gpu, or cpu.",
							 NULL,
							 &gpusort_engine,
							 GPUSORT_ENGINE_AUTO,
							 engine_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.key_width",
							"Most bytes of normalized key per record (8, 16, 24 or 32).",
							"Narrower keys sort faster; columns that do not fit are "
							"ordered by PostgreSQL's comparators among equal keys.",
							&gpusort_key_width,
							GPUSORT_MAX_KEY_BYTES, 8, GPUSORT_MAX_KEY_BYTES,
							PGC_USERSET, 0,
							check_key_width, NULL, NULL);

	DefineCustomIntVariable("gpusort.max_memory",
							"Host memory all GpuSorts of a backend may hold together "
							"(tuples, keys, workspace, merge buffers).",
							"A sort whose input outgrows what is left to it writes "
							"sorted runs to temporary files and merges them.  -1 means "
							"the larger of work_mem for each process that sorts (the "
							"backend and the workers of its parallel GpuSorts) and an "
							"eighth of gpusort.server_memory, or a sixteenth of the "
							"server's memory (physical, or its cgroup's limit where "
							"lower) where there is no server budget; each sort may "
							"then hold work_mem, whatever the others hold.",
							&gpusort_max_memory_kb,
							-1, -1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							check_max_memory, NULL, NULL);

	DefineCustomIntVariable("gpusort.server_memory",
							"Host memory the GpuSorts of all backends may hold together.",
							"-1 means half the server's memory (its physical memory, "
							"or its cgroup's memory limit where that is lower), 0 no "
							"limit beyond each backend's gpusort.max_memory.  Needs "
							"gpusort in shared_preload_libraries.",
							&gpusort_server_memory_kb,
							-1, -1, MAX_KILOBYTES,
							PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.gpu_memory",
							"GPU memory one sort may take; 0 means what the GPU has free.",
							NULL,
							&gpusort_gpu_memory_kb,
							0, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.gpu_algorithm",
							 "GPU sort algorithm: bucket (deterministic sample sort), "
							 "radix (CUB), or auto (the faster for the key width).",
							 NULL,
							 &gpusort_gpu_algorithm,
							 GPUSORT_ALGO_AUTO,
							 gpu_algorithm_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.gpu_min_rows",
							"Estimated rows below which gpusort.engine = auto sorts on the CPU "
							"engine rather than on the GPU.",
							"A trip to the GPU service and back has fixed costs that a "
							"small sort does not repay.",
							&gpusort_gpu_min_rows,
							1000000, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/*
	 * The GPU service's server-start settings exist only where the service
	 * does: a library loaded after server start may not define them.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("gpusort.gpu_devices",
								   "CUDA devices the GPU service sorts on: all, none, or a "
								   "comma-separated list of device numbers.",
								   NULL,
								   &gpusort_gpu_devices,
								   "all",
								   PGC_POSTMASTER, 0,
								   NULL, NULL, NULL);

		DefineCustomIntVariable("gpusort.service_staging",
								"Shared memory through which backends and the GPU service "
								"exchange keys and results.",
								"Reserved at server start, in slots of 1 MB; at least 4 slots; "
								"none in a build without CUDA.",
								&gpusort_service_staging_kb,
								64 * 1024, 4 * 1024, 16 * 1024 * 1024,
								PGC_POSTMASTER, GUC_UNIT_KB,
								NULL, NULL, NULL);
	}

	DefineCustomIntVariable("gpusort.service_gpu_memory_percent",
							"Share of each GPU's memory that the GPU service's sorts may "
							"hold together, in percent.",
							"Requests that do not fit wait for room, at most "
							"gpusort.service_max_wait, then sort on the CPU.",
							&gpusort_service_gpu_memory_pct,
							50, 1, 95,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.service_max_wait",
							"Longest a sort waits for room on a GPU before it sorts on the CPU.",
							"Counted from the start of the sort's input: the wait overlaps "
							"reading it.",
							&gpusort_service_max_wait_ms,
							1000, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.service_split_rows",
							"Expected rows from which the GPU service splits a sort across "
							"its GPUs by key range even where one GPU could hold it; 0: "
							"only sorts too large for one GPU are split.",
							"Each GPU sorts one key range, chosen from a sample of the first "
							"keys; only with two or more GPUs.",
							&gpusort_service_split_rows,
							0, 0, INT_MAX,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.gpu_split_parts",
							"Key ranges the GPU service splits this session's GPU sorts "
							"into, whatever their size and the GPUs; 0 leaves it to the "
							"service.",
							"For tests: a split sort on one GPU.",
							&gpusort_gpu_split_parts,
							0, 0, 16,
							PGC_SUSET, GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.pinned_cache",
							"Pinned host memory the GPU service keeps between sorts.",
							"Pinning memory for transfers is slow; the service keeps up to "
							"this much for the next sorts.  0 frees it after each sort.",
							&gpusort_pinned_cache_kb,
							512 * 1024, 0, MAX_KILOBYTES,
							PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.host_cache",
							"Host memory a backend keeps mapped between sorts for its next ones.",
							"Memory fresh from the kernel is zeroed on first touch, which "
							"costs a large sort more than copying its tuples; a backend keeps "
							"up to this much of its sorts' large blocks, marked free to the "
							"kernel (MADV_FREE) so that memory pressure can still take it.  "
							"0 unmaps them after each sort.",
							&gpusort_host_cache_kb,
							2 * 1024 * 1024, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, host_cache_assign, NULL);

	DefineCustomIntVariable("gpusort.threads",
							"Threads beside the backend that each sort uses to build its keys "
							"(collation keys while the input is read), run the CPU engine's "
							"radix sort, and write and merge its runs; -1 means half the CPUs, at most 16, and "
							"no more than the CPUs leave to each sort loading or sorting on the server.",
							"0 leaves every key and sort to the backend itself.",
							&gpusort_threads,
							-1, -1, 64,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("gpusort.inject_fault",
							   "Fault to inject, for tests: error:PHASE, delay:PHASE:MS, "
							   "arena_oom, cpu_alloc, gpu_init, gpu_alloc, gpu_h2d, gpu_launch, "
							   "gpu_kernel, gpu_d2h, gpu_lost or gpu_busy; empty for none.",
							   "PHASE is load, encode, sort, resolve or emit.",
							   &gpusort_inject_fault,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   gpusort_inject_fault_check,
							   gpusort_inject_fault_assign,
							   NULL);

	DefineCustomBoolVariable("gpusort.write_behind",
							 "Writes a sorted run in a pool thread while the next run loads.",
							 "Off: the backend writes each run before it reads on.",
							 &gpusort_write_behind,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.emit_copy",
							 "Has the pool threads copy a sort's result held in memory, in order, "
							 "ahead of the rows returned.",
							 "Off: the backend returns each row from where it was loaded.",
							 &gpusort_emit_copy,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.key_overlap",
							 "Builds collation keys (libc, ICU) while the input is still being read.",
							 "Off: after the whole input is read, with every pool thread "
							 "and the backend, as cheaper keys always are; faster where "
							 "the threads would share the backend's cores.",
							 &gpusort_key_overlap,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("gpusort");
}

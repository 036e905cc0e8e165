/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The gpusort.* settings (settings.h): their variables, their
 *	  definitions and their check hooks.
 *
 * settings_init() runs from _PG_init (gpusort.c), which hands it host
 * memory's assign hook of gpusort.host_cache.  The GPU service's
 * server-start settings are defined only while shared_preload_libraries
 * is processed: a library loaded later may not define them.
 *
 * The settings that decide the plan (gpusort.enabled, gpusort.min_rows),
 * the engine that sorts it (gpusort.engine, gpusort.gpu_min_rows), its
 * keys (gpusort.key_width) and its memory (gpusort.max_memory, as work_mem
 * is PostgreSQL's Sort's) carry GUC_EXPLAIN, so that EXPLAIN (SETTINGS)
 * and auto_explain.log_settings show them where they differ from their
 * defaults.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/scansup.h"
#include "utils/guc.h"

#include "support/compat.h"
#include "support/faults.h"
#include "support/settings.h"

/*
 * A string setting's value, which a check hook may replace, is freed by
 * the GUC machinery: with free() up to 15, with guc_free() from 16 on
 * (compat.h gives guc_malloc its side of the same rule).
 */
#if PG_VERSION_NUM < 160000
#define guc_free(ptr) free(ptr)
#endif

bool		gpusort_enabled = true;
int			gpusort_min_rows = 100000;
bool		gpusort_keyless_sorts = false;
int			gpusort_index_builds = GPUSORT_INDEX_BUILDS_AUTO;
int			gpusort_engine = GPUSORT_ENGINE_AUTO;
int			gpusort_key_width = GPUSORT_MAX_KEY_BYTES;
int			gpusort_max_memory_kb = -1;	/* -1: derived, work_mem at least
												 * (sort_memory.c) */
int			gpusort_server_memory_kb = -1;	/* -1: half the machine's memory */
int			gpusort_role_memory_kb = -1;	/* -1: a quarter of the server's */
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

static const struct config_enum_entry index_builds_options[] = {
	{"auto", GPUSORT_INDEX_BUILDS_AUTO, false},
	{"on", GPUSORT_INDEX_BUILDS_ON, false},
	{"off", GPUSORT_INDEX_BUILDS_OFF, false},
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

/* str with the spaces around it cut off, in place */
static char *
trim_spaces(char *str)
{
	char	   *end;

	while (scanner_isspace(*str))
		str++;
	end = str + strlen(str);
	while (end > str && scanner_isspace(end[-1]))
		*--end = '\0';
	return str;
}

/*
 * gpusort.gpu_devices' list of device numbers, written into canonical as
 * "0,2"; false, with the detail of the error, where list is not one.
 */
static bool
parse_device_list(char *list, StringInfo canonical)
{
	bool		listed[GPUSORT_MAX_GPUS] = {false};

	for (;;)
	{
		char	   *comma = strchr(list, ',');
		char	   *item;
		char	   *digit;
		long		device;

		if (comma)
			*comma = '\0';
		item = trim_spaces(list);
		if (*item == '\0')
		{
			GUC_check_errdetail("The list has an empty entry: list device numbers "
								"separated by commas, or write all or none.");
			return false;
		}
		for (digit = item; isdigit((unsigned char) *digit); digit++)
			;
		if (*digit != '\0')
		{
			if (item[0] == '-' && isdigit((unsigned char) item[1]))
				GUC_check_errdetail("Device number %s is negative: CUDA numbers "
									"its devices from 0.", item);
			else
				GUC_check_errdetail("\"%s\" is not a device number: list device "
									"numbers separated by commas, or write all "
									"or none.", item);
			return false;
		}
		/* a number of more than three digits is out of range anyway */
		device = strlen(item) > 3 ? GPUSORT_MAX_GPUS : strtol(item, NULL, 10);
		if (device >= GPUSORT_MAX_GPUS)
		{
			GUC_check_errdetail("Device number %s is out of range: gpusort "
								"sorts on CUDA devices 0 to %d.",
								item, GPUSORT_MAX_GPUS - 1);
			return false;
		}
		if (listed[device])
		{
			GUC_check_errdetail("Device %ld is listed twice.", device);
			return false;
		}
		listed[device] = true;
		appendStringInfo(canonical, "%s%ld", canonical->len > 0 ? "," : "", device);
		if (comma == NULL)
			return true;
		list = comma + 1;
	}
}

/*
 * gpusort.gpu_devices: all, none, the empty string (none, too), or a
 * comma-separated list of distinct device numbers from 0 to
 * GPUSORT_MAX_GPUS - 1, with spaces allowed around each, as PostgreSQL's
 * own list settings take them.  What cannot be known without CUDA, whether
 * a device exists, the GPU service finds at its start (gpusort_info() says
 * why it has no GPU).  A value accepted is rewritten in one spelling
 * ("all", "none", "", or "0,2"), which SHOW gives and the GPU service
 * reads: the service (service_worker.c) takes all and none only spelt so.
 */
static bool
check_gpu_devices(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	char	   *value = trim_spaces(copy);
	StringInfoData canonical;
	bool		ok = true;
	char	   *result;

	initStringInfo(&canonical);
	if (pg_strcasecmp(value, "all") == 0)
		appendStringInfoString(&canonical, "all");
	else if (pg_strcasecmp(value, "none") == 0)
		appendStringInfoString(&canonical, "none");
	else if (*value != '\0')
		ok = parse_device_list(value, &canonical);
	pfree(copy);

	if (ok && strcmp(canonical.data, *newval) != 0)
	{
		result = guc_malloc(LOG, canonical.len + 1);
		if (result == NULL)
			ok = false;
		else
		{
			memcpy(result, canonical.data, canonical.len + 1);
			guc_free(*newval);
			*newval = result;
		}
	}
	pfree(canonical.data);
	return ok;
}

void
settings_init(GucIntAssignHook host_cache_assign)
{
	DefineCustomBoolVariable("gpusort.enabled",
							 "Replaces large Sort nodes with GpuSort.",
							 NULL,
							 &gpusort_enabled,
							 true,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.min_rows",
							"Estimated input rows below which a Sort is left to PostgreSQL.",
							NULL,
							&gpusort_min_rows,
							100000, 0, INT_MAX,
							PGC_USERSET, GUC_EXPLAIN,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.keyless_sorts",
							 "Also replaces a Sort whose first column has no normalized key.",
							 "Its records then all tie, and PostgreSQL's comparators order "
							 "them, more slowly than PostgreSQL's Sort; for tests.",
							 &gpusort_keyless_sorts,
							 false,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.index_builds",
							 "Which btree index builds gpusort sorts: auto (those whose "
							 "comparisons are costly), on (every one with a key for its "
							 "first column), or off.",
							 "Smaller builds than gpusort.min_rows rows, and builds of "
							 "CREATE or REINDEX INDEX CONCURRENTLY, stay PostgreSQL's.",
							 &gpusort_index_builds,
							 GPUSORT_INDEX_BUILDS_AUTO,
							 index_builds_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.engine",
							 "What sorts the records: auto (the GPU when one is usable, "
							 "else the CPU engine), gpu, or cpu.",
							 NULL,
							 &gpusort_engine,
							 GPUSORT_ENGINE_AUTO,
							 engine_options,
							 PGC_USERSET, GUC_EXPLAIN,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.key_width",
							"Most bytes of normalized key per record (8, 16, 24 or 32).",
							"Narrower keys sort faster; columns that do not fit are "
							"ordered by PostgreSQL's comparators among equal keys.",
							&gpusort_key_width,
							GPUSORT_MAX_KEY_BYTES, 8, GPUSORT_MAX_KEY_BYTES,
							PGC_USERSET, GUC_EXPLAIN,
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
							PGC_SUSET, GUC_UNIT_KB | GUC_EXPLAIN,
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

	DefineCustomIntVariable("gpusort.role_memory",
							"Host memory the GpuSorts of one role's sessions may hold "
							"together, of gpusort.server_memory.",
							"-1 means a quarter of gpusort.server_memory, 0 no bound "
							"beyond it.  Superusers' sessions are not bound by it.",
							&gpusort_role_memory_kb,
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
							PGC_USERSET, GUC_EXPLAIN,
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
								   check_gpu_devices, NULL, NULL);

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

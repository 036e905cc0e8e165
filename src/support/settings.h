/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The gpusort.* settings, defined in settings.c; what the modules below
 *	  the entry point (gpusort.c) read of them.
 *
 * Settings that belong to the GPU service (gpusort.gpu_devices and the
 * gpusort.service_* ones) are here too: settings.c defines them all, and
 * those read only at server start exist only when gpusort is preloaded.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SETTINGS_H
#define GPUSORT_SETTINGS_H

#include "postgres.h"

#include "utils/guc.h"

/* the widest key the engines sort: gpusort.key_width's maximum */
#define GPUSORT_MAX_KEY_BYTES	32

/*
 * The most GPUs the GPU service sorts on, and one past the highest device
 * number gpusort.gpu_devices takes: the service's and the CUDA side's
 * tables of devices (SERVICE_MAX_DEVICES, GSCUDA_MAX_DEVICES) hold as many.
 */
#define GPUSORT_MAX_GPUS		16

/* gpusort.engine */
typedef enum GpuSortEngineChoice
{
	GPUSORT_ENGINE_AUTO,
	GPUSORT_ENGINE_GPU,
	GPUSORT_ENGINE_CPU
} GpuSortEngineChoice;

/* gpusort.index_builds */
typedef enum GpuSortIndexBuilds
{
	GPUSORT_INDEX_BUILDS_AUTO,
	GPUSORT_INDEX_BUILDS_ON,
	GPUSORT_INDEX_BUILDS_OFF
} GpuSortIndexBuilds;

/* gpusort.gpu_algorithm; values match GsCudaAlgorithm */
typedef enum GpuSortGpuAlgorithm
{
	GPUSORT_ALGO_AUTO = 0,
	GPUSORT_ALGO_BUCKET = 1,
	GPUSORT_ALGO_RADIX = 2
} GpuSortGpuAlgorithm;

/* planning */
extern bool gpusort_enabled;
extern int	gpusort_min_rows;
extern bool gpusort_keyless_sorts;

/* index builds (index_build.c) */
extern int	gpusort_index_builds;

/* the sort and its engines */
extern int	gpusort_engine;
extern int	gpusort_key_width;
extern int	gpusort_max_memory_kb;
extern int	gpusort_server_memory_kb;
extern int	gpusort_role_memory_kb;
extern int	gpusort_gpu_memory_kb;
extern int	gpusort_gpu_algorithm;
extern int	gpusort_gpu_min_rows;
extern int	gpusort_gpu_split_parts;
extern int	gpusort_host_cache_kb;
extern int	gpusort_threads;
extern bool gpusort_key_overlap;
extern bool gpusort_write_behind;
extern bool gpusort_emit_copy;

/* the GPU service */
extern char *gpusort_gpu_devices;
extern int	gpusort_pinned_cache_kb;
extern int	gpusort_service_gpu_memory_pct;
extern int	gpusort_service_staging_kb;
extern int	gpusort_service_max_wait_ms;
extern int	gpusort_service_split_rows;

/*
 * host_cache_assign: what a change of gpusort.host_cache does at once (the
 * host memory cache trims itself, hostmem.c).  _PG_init gives it, so that
 * the settings, which every module reads, call none of them.
 */
extern void settings_init(GucIntAssignHook host_cache_assign);

#endif							/* GPUSORT_SETTINGS_H */

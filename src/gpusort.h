/*-------------------------------------------------------------------------
 *
 * gpusort.h
 *	  Declarations shared by the parts of gpusort: settings (gpusort.c), the
 *	  planner hook (planner.c), the GpuSort executor node (nodeGpuSort.c),
 *	  what a sort reports and its EXPLAIN output (explain.c).
 *
 * The flow of a sort: planner.c replaces a finished plan's Sort node with a
 * CustomScan whose methods live in nodeGpuSort.c.  At execution the node
 * puts its child's tuples into gpusort's sort module (sort.c), which loads
 * them into batches under the backend's memory budget (sort_budget.c),
 * encodes one normalized key per tuple (keys.c) into a sort engine
 * (engine.h: the CPU engine or the CUDA one), orders equal inexact keys
 * with PostgreSQL's comparators (tiebreak.c), writes full batches to
 * temporary files as sorted runs and merges them on the way out
 * (sort_runs.c).  If an engine fails the next one takes over; if keys
 * cannot be built, comparators alone order the batch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_H
#define GPUSORT_H

#include "postgres.h"

#include "nodes/extensible.h"
#include "nodes/plannodes.h"
#include "portability/instr_time.h"
#include "utils/sortsupport.h"

#define GPUSORT_NODE_NAME	"GpuSort"

/* gpusort.engine */
typedef enum GpuSortEngineChoice
{
	GPUSORT_ENGINE_AUTO,
	GPUSORT_ENGINE_GPU,
	GPUSORT_ENGINE_CPU
} GpuSortEngineChoice;

/* gpusort.gpu_algorithm; values match GsCudaAlgorithm */
typedef enum GpuSortGpuAlgorithm
{
	GPUSORT_ALGO_AUTO = 0,
	GPUSORT_ALGO_BUCKET = 1,
	GPUSORT_ALGO_RADIX = 2
} GpuSortGpuAlgorithm;

/* settings, defined in gpusort.c */
/*
 * What a gpusort process waits for, as pg_stat_activity shows it
 * (gpusort_wait_event)
 */
typedef enum GpuSortWait
{
	GPUSORT_WAIT_GPU_ADMISSION,	/* a request queued for room on a GPU */
	GPUSORT_WAIT_GPU_RESULT,	/* the GPU's sort and its permutation */
	GPUSORT_WAIT_STAGING_SLOT,	/* a free staging slot for keys */
	GPUSORT_WAIT_SERVICE_MAIN,	/* the GPU service, for work */
	GPUSORT_WAIT_SERVICE_GPU,	/* the GPU service, for a GPU's copies or kernels */
	GPUSORT_WAIT_INJECTED_DELAY,	/* gpusort.inject_fault's delay */
	NUM_GPUSORT_WAITS
} GpuSortWait;

extern uint32 gpusort_wait_event(GpuSortWait wait);

extern bool gpusort_enabled;
extern int	gpusort_min_rows;
extern int	gpusort_engine;
extern int	gpusort_key_width;
extern int	gpusort_max_memory_kb;
extern int	gpusort_server_memory_kb;
extern int	gpusort_gpu_memory_kb;
extern int	gpusort_gpu_algorithm;
extern int	gpusort_gpu_min_rows;
extern int	gpusort_pinned_cache_kb;
extern int	gpusort_host_cache_kb;
extern int	gpusort_key_threads;
extern bool gpusort_key_overlap;
extern bool gpusort_write_behind;

/*
 * What a GpuSort plan node sorts by: the Sort node's keys, kept in the
 * CustomScan's custom_private so that plans can be copied and sent to
 * parallel workers.
 */
typedef struct GpuSortPlanInfo
{
	int			numCols;
	AttrNumber *sortColIdx;		/* scan tuple columns, 1-based */
	Oid		   *sortOperators;
	Oid		   *collations;
	bool	   *nullsFirst;
} GpuSortPlanInfo;

extern List *gpusort_plan_info_to_list(const GpuSortPlanInfo *info);
extern void gpusort_plan_info_from_list(List *private, GpuSortPlanInfo *info);

/*
 * What one execution of a GpuSort node did, for EXPLAIN ANALYZE.  Times are
 * in milliseconds; a rescan that sorts again adds to them.
 */
typedef struct GpuSortStats
{
	int			sorts;			/* times the node sorted (rescans re-sort) */
	char		engine[32];		/* "CPU", "GPU", "PostgreSQL comparators" */
	char		device[64];		/* the GPU's name; empty for the others */
	char		algorithm[40];	/* the engine's algorithm */
	char	   *fallback;		/* why not the GPU / why comparators, or NULL */
	int			key_words;
	bool		exact;			/* keys decide the order alone */
	int64		records;
	int64		resolved;		/* records in runs ordered by comparators */
	const char *key_kind;		/* key_layout_describe() */
	bool		generic_keys;	/* keys built by keys_build.c */
	int			key_threads;	/* threads that built keys (generic path) */
	int			refine_rounds;	/* refinement rounds (refine.c) */
	int64		refined;		/* records sorted again, over all rounds */
	bool		refined_on_gpu;
	int64		checked_pairs;	/* adjacent pairs certified (libc) */
	int64		repaired;		/* records the libc check moved */
	Size		memory;			/* peak host memory of a batch, bytes */
	Size		budget;			/* gpusort.max_memory when the sort began */
	bool		server_limited; /* gpusort.server_memory cut a batch short */
	int			runs_written;	/* sorted runs written to temporary files */
	int			runs_behind;	/* of them, written while the next loaded */
	int			merge_passes;	/* merges of runs, the final one included */
	int64		disk_kb;		/* peak temporary file space, kB */
	Size		device_memory;	/* peak GPU memory, bytes */
	double		load_ms;
	double		encode_ms;
	double		sort_ms;
	double		transfer_ms;	/* GPU part of sort_ms: copies */
	double		device_sort_ms; /* GPU part of sort_ms: kernels */
	double		resolve_ms;
	double		key_build_ms;	/* key threads' busy time, all together */
	double		refine_ms;
	double		check_ms;
	double		spill_ms;		/* writing runs */
	double		merge_ms;		/* merge passes before the first tuple */
	double		emit_ms;
} GpuSortStats;

static inline double
gpusort_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* explain.c */
struct ExplainState;
extern void gpusort_explain_node(CustomScanState *node, const GpuSortPlanInfo *info,
								 const GpuSortStats *stats,
								 List *ancestors, struct ExplainState *es);

/* planner.c */
extern void gpusort_planner_init(void);
extern bool gpusort_gpu_maybe_present(void);

/* nodeGpuSort.c */
extern CustomScanMethods gpusort_scan_methods;
extern void gpusort_executor_init(void);

#endif							/* GPUSORT_H */

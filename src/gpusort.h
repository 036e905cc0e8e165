/*-------------------------------------------------------------------------
 *
 * gpusort.h
 *	  Declarations shared by the parts of gpusort: settings (gpusort.c), the
 *	  planner hook (planner.c), the GpuSort executor node (nodeGpuSort.c) and
 *	  its EXPLAIN output (explain.c).
 *
 * The flow of a sort: planner.c replaces a finished plan's Sort node with a
 * CustomScan whose methods live in nodeGpuSort.c.  At execution the node
 * loads its child's tuples into an arena, encodes one normalized key per
 * tuple (keys.c) into a sort engine (engine.h: the CPU engine or the CUDA
 * one), orders equal inexact keys with PostgreSQL's comparators
 * (tiebreak.c), and returns the tuples in that order.  If anything goes
 * wrong it hands the tuples to PostgreSQL's tuplesort instead.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_H
#define GPUSORT_H

#include "postgres.h"

#include "nodes/extensible.h"
#include "nodes/plannodes.h"
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
extern bool gpusort_enabled;
extern int	gpusort_min_rows;
extern int	gpusort_engine;
extern int	gpusort_key_width;
extern int	gpusort_max_memory_kb;
extern int	gpusort_gpu_memory_kb;
extern int	gpusort_gpu_algorithm;
extern int	gpusort_gpu_min_rows;
extern int	gpusort_gpu_device;
extern int	gpusort_pinned_cache_kb;
extern int	gpusort_host_cache_kb;
extern int	gpusort_key_threads;
extern bool gpusort_key_overlap;

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
	char		engine[80];		/* "CPU", "GPU: <name>", "PostgreSQL tuplesort" */
	char		algorithm[40];	/* the engine's algorithm */
	char	   *fallback;		/* why not the GPU / why tuplesort, or NULL */
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
	Size		memory;			/* peak host memory of the sort, bytes */
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
	double		emit_ms;
} GpuSortStats;

/* explain.c */
struct ExplainState;
struct Tuplesortstate;
extern void gpusort_explain_node(CustomScanState *node, const GpuSortPlanInfo *info,
								 const GpuSortStats *stats,
								 struct Tuplesortstate *tuplesort,
								 List *ancestors, struct ExplainState *es);

/* planner.c */
extern void gpusort_planner_init(void);
extern bool gpusort_gpu_maybe_present(void);

/* nodeGpuSort.c */
extern CustomScanMethods gpusort_scan_methods;
extern void gpusort_executor_init(void);

#endif							/* GPUSORT_H */

/*-------------------------------------------------------------------------
 *
 * sort_stats.h
 *	  What one GpuSort node's sorts did, as the sort module (sort.c) and its
 *	  stages record it and EXPLAIN ANALYZE (explain.c) shows it.
 *
 * The node reads the figures through gpusort_sort_get_stats() (sort.h), as
 * nodeSort.c reads tuplesort's.  Times are in milliseconds; a rescan that
 * sorts again adds to them.  What ordered the records (SortEngineKind)
 * is the engines' word and gpusort_stat's too, named here for EXPLAIN and
 * the view alike (sort_engine_name).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_SORT_STATS_H
#define GPUSORT_SORT_STATS_H

#include "postgres.h"

#include "portability/instr_time.h"

/*
 * What ordered a sort's records: the GPU engine or the CPU engine
 * (engine.h), or PostgreSQL's comparators alone where the keys were given
 * up (batch_sort.c).  gpusort_stat counts sorts and rows by it.
 */
typedef enum SortEngineKind
{
	SORT_ENGINE_NONE = -1,		/* nothing sorted yet */
	SORT_ENGINE_GPU = 0,
	SORT_ENGINE_CPU,
	SORT_ENGINE_COMPARATORS,
	NUM_SORT_ENGINES
} SortEngineKind;

typedef struct GpuSortStats
{
	int			sorts;			/* times the node sorted (rescans re-sort) */
	SortEngineKind engine;		/* of the last batch sorted */
	char		device[64];		/* the GPU's name; empty for the others */
	char		algorithm[40];	/* the engine's algorithm */
	char	   *fallback;		/* why not the GPU / why comparators, or NULL */
	int			key_words;
	bool		exact;			/* keys decide the order alone */
	int64		records;
	int64		resolved;		/* records the comparators ordered */
	const char *key_kind;		/* key_layout_describe() */
	bool		generic_keys;	/* keys built by keys_build.c */
	int			threads;		/* the pool's threads that built keys (generic path) */
	int			refine_rounds;	/* refinement rounds (refine.c) */
	int64		refined;		/* records sorted again, over all rounds */
	bool		refined_on_gpu;
	int64		collated;		/* records of the collation sort (refine.c) */
	int64		checked_pairs;	/* adjacent pairs checked (libc) */
	int64		repaired;		/* records the collation check moved */
	Size		memory;			/* peak host memory of a batch, bytes */
	Size		budget;			/* gpusort.max_memory when the sort began */
	bool		server_limited; /* gpusort.server_memory cut a batch short */
	int			runs_written;	/* sorted runs written to temporary files */
	int			runs_behind;	/* of them, written while the next loaded */
	int			merge_passes;	/* merges of runs, the final one included */
	int			merge_threads;	/* that do the final merge (run_merge_window.c) */
	int64		disk_kb;		/* peak temporary file space, kB */
	int64		emit_copied;	/* rows the emit copy (batch_emit.c) copied,
								 * in the blocks the emit reached */
	Size		device_memory;	/* peak GPU memory, bytes */
	double		load_ms;
	double		encode_ms;
	double		sort_ms;
	double		transfer_ms;	/* GPU part of sort_ms: copies */
	double		device_sort_ms; /* GPU part of sort_ms: kernels */
	double		resolve_ms;
	double		key_build_ms;	/* pool threads' busy time, all together */
	double		refine_ms;
	double		check_ms;
	double		spill_ms;		/* writing runs */
	double		merge_ms;		/* merge passes before the first tuple */
	double		emit_ms;
} GpuSortStats;

/* the engine's name, as EXPLAIN and gpusort_stat show it */
static inline const char *
sort_engine_name(SortEngineKind engine)
{
	switch (engine)
	{
		case SORT_ENGINE_GPU:
			return "GPU";
		case SORT_ENGINE_CPU:
			return "CPU";
		case SORT_ENGINE_COMPARATORS:
			return "PostgreSQL comparators";
		case SORT_ENGINE_NONE:
		case NUM_SORT_ENGINES:
			break;
	}
	return "";
}

static inline double
gpusort_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

#endif							/* GPUSORT_SORT_STATS_H */

/*-------------------------------------------------------------------------
 *
 * engine.h
 *	  The sort engine interface: what sorts gpusort's key-index records.
 *
 * An engine receives n records, each a normalized key of key_words 64-bit
 * words (keys.h) and an implicit 32-bit index, its position in the input;
 * it returns the indexes sorted by (key, index).  Keys are written by the
 * caller straight into chunk buffers that the engine hands out (pinned host
 * memory for the GPU engine), and a full chunk is submitted at once, so an
 * engine may ship and sort it while the executor is still loading tuples.
 *
 * Two engines implement it: the CPU engine (engine_cpu.c, a radix sort) and
 * the GPU engine (engine_gpu.c, over cuda/).  An engine never throws an
 * error for its own failures (a device error, no memory on the device): it
 * returns false with a reason.  Every engine is driven through an engine
 * chain (engine_chain.c), which picks the engine and, when the GPU engine
 * fails, hands its keys to the CPU engine: a batch's, and the chains of
 * the refinement rounds within a batch's sort (refine.c).  Only when the
 * CPU engine fails does the batch give its keys up and order itself with
 * PostgreSQL's comparators.
 * Failures of PostgreSQL itself (out of memory in palloc, a cancel) are
 * ordinary ereports.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_ENGINE_H
#define GPUSORT_ENGINE_H

#include "postgres.h"

#include "keys/keys.h"
#include "lib/stringinfo.h"
#include "support/sort_stats.h"

typedef struct SortEngine SortEngine;

/* What an engine reports for EXPLAIN ANALYZE. */
typedef struct SortEngineStats
{
	SortEngineKind engine;		/* SORT_ENGINE_CPU or SORT_ENGINE_GPU */
	char		device[64];		/* the GPU's name; empty for the CPU */
	char		algorithm[32];	/* "radix sort", "bucket sort", ... */
	double		transfer_ms;	/* GPU: host<->device copies */
	double		device_sort_ms; /* GPU: kernels */
	Size		device_bytes;	/* GPU memory held at peak */
} SortEngineStats;

typedef struct SortEngineMethods
{
	/* a buffer for chunk chunkno's keys, or NULL with *why set */
	uint64	   *(*chunk) (SortEngine *engine, size_t chunkno, char **why);
	/* the chunk holds nrecords keys and will not change */
	bool		(*submit) (SortEngine *engine, size_t chunkno, size_t nrecords,
						   char **why);
	/* sort all n records; *perm lives until end */
	bool		(*sort) (SortEngine *engine, size_t n, uint32 **perm, char **why);
	/* release everything; the engine is unusable afterwards */
	void		(*end) (SortEngine *engine);
} SortEngineMethods;

struct SortEngine
{
	const SortEngineMethods *methods;
	MemoryContext mcxt;			/* where the engine pallocs */
	KeyStore	keys;			/* chunk pointers, filled by chunk() */
	size_t		nchunks_alloc;	/* length of keys.chunks */
	SortEngineStats stats;

	/*
	 * The sort's pool threads, set by the caller before sort() where it has
	 * them: the CPU engine's radix sort shares its work among them.
	 */
	struct ThreadPool *threads;

	/*
	 * Set by sort() when another engine than the one begun sorted the
	 * records (the GPU engine's keys sorted by the CPU engine): why.
	 */
	char	   *fallback;

	/* the chain that drives the engine (engine_chain.c) */
	struct EngineChain *chain;
};

/*
 * The engine chain (engine_chain.c): the engine a batch's keys go to, and
 * what the sort has learnt of the GPU.  Reasons for leaving the GPU go
 * into *fallback, a list in fallback_cxt (the sort's Fallback, EXPLAIN).
 * A chain within another (a refinement round's, within its batch's) shares
 * its parent's list, and a GPU failure in it is one of the parent's sort.
 */
typedef struct EngineChain
{
	SortEngine *engine;			/* the engine now; NULL once ended */
	bool		on_gpu;			/* engine is the GPU engine */
	bool		gpu_failed;		/* the GPU failed in this sort: later
								 * batches start on the CPU */
	char	  **fallback;
	MemoryContext fallback_cxt;
	struct EngineChain *parent; /* the chain this one's sorts serve, or
								 * NULL (a batch's) */
} EngineChain;

extern void engine_chain_begin(EngineChain *chain, MemoryContext mcxt,
							   int key_words, size_t expected);
extern void engine_chain_begin_within(EngineChain *chain,
									  const SortEngine *sorted, bool gpu,
									  MemoryContext mcxt, int key_words,
									  size_t expected,
									  size_t gpu_min_records);
extern uint64 *engine_chain_chunk(EngineChain *chain, size_t chunkno,
								  char **why);
extern bool engine_chain_submit(EngineChain *chain, size_t chunkno,
								size_t nrecords, char **why);
extern bool engine_chain_sort(EngineChain *chain, size_t n, uint32 **perm,
							  char **why);
extern void engine_chain_end(EngineChain *chain);
extern void engine_add_fallback_reason(char **list, MemoryContext cxt,
									   const char *why);

extern SortEngine *cpu_engine_begin(MemoryContext mcxt, int key_words);
extern SortEngine *gpu_engine_begin(MemoryContext mcxt, int key_words,
									size_t expected_records, char **why);
extern bool gpu_engine_available(char **why);
extern bool gpusort_gpu_maybe_present(void);
extern void gpu_engine_describe(StringInfo buf);

/* shared by the engines (engine_cpu.c) */
extern uint64 *engine_local_chunk(SortEngine *engine, size_t chunkno, char **why);
extern void engine_local_free(SortEngine *engine);
extern bool engine_cpu_sort_keys(SortEngine *engine, size_t n, uint32 **perm,
								 char **why);

#endif							/* GPUSORT_ENGINE_H */

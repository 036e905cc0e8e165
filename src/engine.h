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
 * returns false with a reason, and the caller (sort_batch.c) moves on to
 * the next engine, or to ordering the batch with PostgreSQL's comparators.
 * Failures of PostgreSQL itself (out of memory in palloc, a cancel) are
 * ordinary ereports.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_ENGINE_H
#define GPUSORT_ENGINE_H

#include "postgres.h"

#include "keys.h"
#include "lib/stringinfo.h"

/* records per key chunk: the unit of encoding, of transfer and of pipelining */
#define GPUSORT_CHUNK_RECORDS	((size_t) 1 << 17)

typedef struct SortEngine SortEngine;

/* What an engine reports for EXPLAIN ANALYZE. */
typedef struct SortEngineStats
{
	char		engine[16];		/* the engine's kind: "CPU" or "GPU" */
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
	 * The sort's key threads, set by the caller before sort() where it has
	 * them: the CPU engine's radix sort shares its work among them.
	 */
	struct KeyThreadPool *threads;

	/*
	 * Equal neighbours in the result, where the engine can tell them cheaply
	 * (the GPU engine, asked by want_ties before sort()): ties[i] says that
	 * sorted records i and i + 1 have equal keys (NULL when nties is 0).
	 * Without ties_known the caller compares keys itself.
	 */
	bool		want_ties;
	bool		ties_known;
	const uint8 *ties;
	size_t		nties;

	/*
	 * Set by sort() when another engine than the one begun sorted the
	 * records (the GPU engine's keys sorted by the CPU engine): why.
	 */
	char	   *fallback;
};

extern SortEngine *cpu_engine_begin(MemoryContext mcxt, int key_words);
extern SortEngine *gpu_engine_begin(MemoryContext mcxt, int key_words,
									size_t expected_records, char **why);
extern bool gpu_engine_available(char **why);
extern void gpu_engine_describe(StringInfo buf);

/* shared by the engines (engine_cpu.c) */
extern void engine_reserve_chunk_slot(SortEngine *engine, size_t chunkno);
extern uint64 *engine_local_chunk(SortEngine *engine, size_t chunkno, char **why);
extern bool engine_cpu_sort_keys(SortEngine *engine, size_t n, uint32 **perm,
								 char **why);

#endif							/* GPUSORT_ENGINE_H */

/*-------------------------------------------------------------------------
 *
 * gscuda_api.h
 *	  C interface of the CUDA side (the .cu files in cuda/), as seen from src/.
 *
 * Its only caller in the extension is the GPU service (src/service/);
 * the kernel tests (test/gpu/kernel_test.cu) and the benchmarks
 * (bench/kernel_bench.cu, bench/split_check.cu) call it too, and the few
 * functions that only they call (gscuda_test.cuh).  It is implemented by
 * cuda/gscuda_api.cu, whose head describes the engine's layers below it.
 * The types it uses are those of gscuda_types.h, and the
 * fault codes those of gscuda_faults.h, which the engine's lowest layer
 * (gscuda_common.cuh) includes without this interface.
 *
 * The CUDA side knows nothing of PostgreSQL: it never pallocs, never
 * ereports and never longjmps.  Every function reports failure by returning
 * a non-zero code and writing a message into the caller's errbuf; the caller
 * (the GPU service, src/service/) fails the request, and its backend sorts
 * on the CPU engine.
 *
 * Records.  A sort receives n key-index records.  The key of a record is
 * key_words 64-bit words, word 0 the most significant, compared as unsigned
 * integers; the index of a record is its position in the input stream
 * (0 .. n-1), implicit, never shipped.  The result is the permutation of
 * indexes sorted by (key, index): ties keep input order, so the output is
 * exactly that of the CPU engine (src/engine/cpu_radix.c).  A sort may also carry
 * a source index per record (gscuda_sort_carry_index), shipped beside its
 * keys: its result is then each sorted record's source index instead of its
 * position, mapped on the device.  The GPU service uses that for the parts
 * of a split sort, whose records are a subset of the request's.
 *
 * Keys arrive in chunks of chunk_records records (a power of two) written by
 * the caller into pinned host buffers that this side hands out; a chunk is
 * submitted as soon as it is full, so the transfer and the tile sorts
 * overlap with the production of the next chunk.  Chunk buffers stay valid,
 * holding what the caller wrote, until gscuda_sort_end().  A caller whose
 * keys already lie in host memory it registered (gscuda_register_host)
 * uploads them from there instead, piece by piece, with no chunk buffer and
 * no copy on the host.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_CUDA_H
#define GPUSORT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gscuda_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Open CUDA device `device` in this process (once per device; later calls
 * return the cached answer) and describe it.  Returns 0 if it is usable.
 * Only the GPU service calls this: never the postmaster, never a backend.
 */
extern int	gscuda_init(int device, char *name, size_t namelen,
						size_t *free_bytes, size_t *total_bytes,
						char *errbuf, size_t errlen);

/*
 * Make `device` (opened by gscuda_init) the one that the following calls
 * work on: gscuda_sort_begin() and every call on a sort begun on it.
 * Non-zero if the device is not open.
 */
extern int	gscuda_select_device(int device);

/* GPU memory a sort of nrecords records needs at most (an estimate). */
extern size_t gscuda_sort_bytes(int key_words, GsCudaAlgorithm algorithm,
								size_t nrecords);

/*
 * GPU memory that carrying source indexes (gscuda_sort_carry_index) adds to
 * gscuda_sort_bytes() for nrecords records.
 */
extern size_t gscuda_sort_index_bytes(size_t nrecords);

/* Number of CUDA devices, or -1 with errbuf filled (initializes CUDA). */
extern int	gscuda_device_count(char *errbuf, size_t errlen);

/*
 * Pinned host memory this process keeps between sorts, in bytes (0: free
 * everything at the end of each sort).
 */
extern void gscuda_set_pinned_cache(size_t bytes);

/*
 * The hook a wait for the GPU calls between polls (GsCudaWaitHook,
 * gscuda_types.h).  NULL (the default): waits block in CUDA.
 */
extern void gscuda_set_wait_hook(GsCudaWaitHook hook);

/*
 * Arm one fault (gscuda_faults.h) for the next sort (GSCUDA_FAULT_NONE
 * disarms).
 */
extern void gscuda_set_fault(GsCudaFault fault);

/*
 * Whether this process has lost its GPU (a sticky error: the CUDA context
 * is unusable until the process exits); 1 with the error in errbuf.  Every
 * later sort of the process fails at once.
 */
extern int	gscuda_lost(char *errbuf, size_t errlen);

/*
 * Start a sort of records of key_words words (1..4).  expected_records is a
 * hint for preallocation (0 if unknown).  mem_limit caps the GPU memory this
 * sort may take (0: no cap beyond what is free).
 */
extern GsCudaSort *gscuda_sort_begin(int key_words, size_t chunk_records,
									 size_t expected_records,
									 GsCudaAlgorithm algorithm,
									 size_t mem_limit,
									 char *errbuf, size_t errlen);

/* Change the cap on the GPU memory the sort may take (0: none). */
extern void gscuda_sort_set_mem_limit(GsCudaSort *sort, size_t mem_limit);

/* The most GPU memory the sort has held at once so far. */
extern size_t gscuda_sort_memory(GsCudaSort *sort);

/* Pinned host buffer for chunk chunkno (chunk_records * key_words words). */
extern uint64_t *gscuda_sort_chunk(GsCudaSort *sort, size_t chunkno,
								   char *errbuf, size_t errlen);

/*
 * Make the sort carry a source index per record; call it before the first
 * chunk.  Each chunk's source indexes are then written by the caller into
 * gscuda_sort_index_chunk(sort, chunkno) (chunk_records indexes, pinned,
 * valid until gscuda_sort_end()) before the chunk is submitted, and shipped
 * with it.  The permutation that gscuda_sort_finish_wait() and
 * gscuda_sort_download() give is then made of source indexes: entry k is
 * the source index of the k-th record in (key, position) order.  Takes
 * gscuda_sort_index_bytes() more GPU memory.
 */
extern int	gscuda_sort_carry_index(GsCudaSort *sort, char *errbuf, size_t errlen);
extern uint32_t *gscuda_sort_index_chunk(GsCudaSort *sort, size_t chunkno,
										 char *errbuf, size_t errlen);

/*
 * Copy nwords words of chunk chunkno's keys, from word word_offset on,
 * from src straight to the device (asynchronous).  src lies in host memory
 * registered with gscuda_register_host() and must stay unchanged until
 * gscuda_sort_wait_copies() returns.  The pieces of a chunk come in order,
 * the chunk being the next one to submit; gscuda_sort_submit() then says
 * how many records it holds.  A chunk comes either this way or through its
 * buffer (gscuda_sort_chunk), never both.
 */
extern int	gscuda_sort_upload(GsCudaSort *sort, size_t chunkno, size_t word_offset,
							   const uint64_t *src, size_t nwords,
							   char *errbuf, size_t errlen);

/*
 * Ask a sort, before gscuda_sort_finish_start(), to keep its permutation on
 * the device: gscuda_sort_finish_wait() then gives *perm = NULL, and the
 * caller copies the permutation out in pieces with gscuda_sort_download(),
 * straight into registered host memory (asynchronous; dst must not be read
 * before gscuda_sort_wait_copies() returns).  The permutation's copy to the
 * host is then not in the stats' d2h_ms.
 */
extern void gscuda_sort_keep_permutation(GsCudaSort *sort);
extern int	gscuda_sort_download(GsCudaSort *sort, size_t first, size_t n, uint32_t *dst,
								 char *errbuf, size_t errlen);

/* Wait until every upload and download of the sort is done. */
extern int	gscuda_sort_wait_copies(GsCudaSort *sort, char *errbuf, size_t errlen);

/*
 * Pin bytes of host memory at p (page-aligned) for every device of the
 * process, so that uploads read it by DMA.
 */
extern int	gscuda_register_host(void *p, size_t bytes, char *errbuf, size_t errlen);

/* Ship chunk chunkno holding nrecords records (asynchronous). */
extern int	gscuda_sort_submit(GsCudaSort *sort, size_t chunkno, size_t nrecords,
							   char *errbuf, size_t errlen);

/*
 * Sort all submitted records (nrecords in all, chunks 0..k-1 full but the
 * last) and return the permutation through *perm: nrecords indexes in a
 * buffer owned by the sort, valid until gscuda_sort_end() (NULL if the
 * sort keeps its permutation on the device).  In two steps, so that a
 * caller with several sorts (the parts of a split sort, on one GPU or
 * several) has them all work at once: gscuda_sort_finish_start() submits
 * what is left and launches the sort on the sort's stream, and
 * gscuda_sort_finish_wait() waits for it and gives the permutation and the
 * stats.  start returns once the work is queued; it waits only where the
 * algorithm must read something back to decide its next step (the
 * presorted check, for every sort; the bucket sort's bucket sizes).  After
 * a failed start, nothing of the sort runs.
 */
extern int	gscuda_sort_finish_start(GsCudaSort *sort, size_t nrecords,
									 char *errbuf, size_t errlen);
extern int	gscuda_sort_finish_wait(GsCudaSort *sort, const uint32_t **perm,
									GsCudaStats *stats, char *errbuf, size_t errlen);

/* Release everything the sort holds (GPU and pinned memory); NULL is fine. */
extern void gscuda_sort_end(GsCudaSort *sort);

#ifdef __cplusplus
}
#endif

#endif							/* GPUSORT_CUDA_H */

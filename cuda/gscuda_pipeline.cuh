/*-------------------------------------------------------------------------
 *
 * gscuda_pipeline.cuh
 *	  The sort pipeline of the CUDA side: one GsCudaSort from its first
 *	  chunk to its permutation, as the C interface (gscuda_api.cu) drives it.
 *
 * Each function here is the body of the gscuda_sort_* function of the same
 * meaning in gscuda_api.h, which documents the contract; the C interface
 * checks its arguments first (a null sort included) and turns what these
 * throw (GsError, gscuda_common.cuh; std::bad_alloc) into a return code and a
 * message.  The sort's struct is private to gscuda_pipeline.cu.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_PIPELINE_CUH
#define GSCUDA_PIPELINE_CUH

#include "gscuda_common.cuh"

namespace gs
{

/*
 * A sort on the current device, of valid arguments, with the fault taken
 * for it (take_armed_fault); frees what it took before it throws.
 */
GsCudaSort *begin_sort(int key_words, size_t chunk_records, size_t expected_records,
					   GsCudaAlgorithm algorithm, size_t mem_limit, int fault);

/* Release everything the sort holds, and the sort; never throws. */
void		end_sort(GsCudaSort *sort);

/* Device memory estimates (gscuda_sort_bytes, gscuda_sort_index_bytes). */
size_t		sort_bytes(int key_words, GsCudaAlgorithm algorithm, size_t nrecords);
size_t		sort_index_bytes(size_t nrecords);

void		set_mem_limit(GsCudaSort *sort, size_t mem_limit);
size_t		peak_memory(const GsCudaSort *sort);

/* Pinned chunk buffers: keys, and the source indexes of a sort carrying them. */
uint64_t   *key_chunk(GsCudaSort *sort, size_t chunkno);
uint32_t   *index_chunk(GsCudaSort *sort, size_t chunkno);
void		carry_index(GsCudaSort *sort);

/* Chunks to the device: a whole chunk from its buffer, or registered memory piece by piece. */
void		submit_chunk(GsCudaSort *sort, size_t chunkno, size_t nrecords);
void		upload_piece(GsCudaSort *sort, size_t chunkno, size_t word_offset,
						 const uint64_t *src, size_t nwords);

/* A permutation kept on the device, downloaded piece by piece. */
void		keep_permutation(GsCudaSort *sort);
void		download_piece(GsCudaSort *sort, size_t first, size_t n, uint32_t *dst);
void		wait_copies(GsCudaSort *sort);

/*
 * Finish in two steps (gscuda_sort_finish_start, gscuda_sort_finish_wait);
 * after either fails, stop_finish() leaves nothing of the sort running.
 */
void		finish_start(GsCudaSort *sort, size_t n);
void		finish_wait(GsCudaSort *sort, const uint32_t **perm_out, GsCudaStats *stats);
void		stop_finish(GsCudaSort *sort);

}								/* namespace gs */

#endif							/* GSCUDA_PIPELINE_CUH */

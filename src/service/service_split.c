/*-------------------------------------------------------------------------
 *
 * service_split.c
 *	  A split request's records dealt to its key ranges, one range a part,
 *	  each part sorted on its own GPU.
 *
 * Where there are several GPUs, a request that no one GPU's budget could
 * hold is admitted in parts (service_admission.c says when).  The
 * splitters come from a sample of its first chunk; each record goes to the
 * range its key falls in (equal keys to the same one, in arrival order)
 * with its number in the request, and each range is sorted on its own GPU,
 * all at once (service_sort.c).  A range's sort maps its result to the
 * request's record numbers on the GPU and keeps it there; the ranges'
 * results, one after another, are the request's, and go from the GPUs into
 * the result slots as an unsplit result does (service_transfer.c).
 *
 * The keys of a split request's slots are gathered into its pending chunk
 * (service_transfer.c), and split_chunk(), the one function that the other
 * files call, deals a whole chunk at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef GPUSORT_USE_CUDA

#include "utils/memutils.h"

#include "keys/key_order.h"
#include "keys/keys.h"
#include "service/service_internal.h"

/*
 * gs_compare_key_words in qsort's form, for the sample; the key's width is
 * set before
 */
static int	sample_key_words;

static int
compare_sample_keys(const void *a, const void *b)
{
	return gs_compare_key_words(a, b, sample_key_words);
}

/*
 * The splitters of a split request, from an even sample of its first chunk:
 * nparts - 1 keys that cut the sample into equal parts.  Any choice gives
 * the right order; a skewed one only balances the GPUs less well.
 */
static void
choose_splitters(ActiveSort *as, int key_words, Size nrecords)
{
	Size		nsample = Min(nrecords, (Size) 4096);
	uint64	   *sample = palloc(sizeof(uint64) * key_words * Max(nsample, 1));

	for (Size s = 0; s < nsample; s++)
		memcpy(sample + s * key_words, as->pending + (s * nrecords / nsample) * key_words,
			   sizeof(uint64) * key_words);
	sample_key_words = key_words;
	qsort(sample, nsample, sizeof(uint64) * key_words, compare_sample_keys);
	as->splitters = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(uint64) * key_words * as->nparts);
	for (int j = 0; j + 1 < as->nparts && nsample > 0; j++)
		memcpy(as->splitters + j * key_words,
			   sample + ((j + 1) * nsample / as->nparts) * key_words,
			   sizeof(uint64) * key_words);
	pfree(sample);
}

/*
 * The part of a key: the number of splitters at or below it.  Equal keys
 * always land in the same part, and each part receives its records in the
 * request's order, so that concatenating the parts' results gives exactly
 * the unsplit result, ties in input order.  A linear scan: there are at
 * most 15 splitters (gpusort.gpu_split_parts, or one part a GPU), and with
 * keys of one word, the common case, the comparison is a single one.
 */
static inline int
part_of(const ActiveSort *as, const uint64 *key, int key_words)
{
	int			p = 0;

	while (p < as->nparts - 1 &&
		   gs_compare_key_words(as->splitters + p * key_words, key, key_words) <= 0)
		p++;
	return p;
}

/*
 * Part p's next chunk starts: the pinned buffers for its keys and for their
 * record numbers.  False, with the request failed, if they cannot be had.
 */
static bool
start_part_chunk(int i, int p)
{
	SortPart   *part = &active[i].parts[p];
	Size		chunkno = part->n / GPUSORT_CHUNK_RECORDS;
	char		err[256];

	(void) gscuda_select_device(svc->devices[part->device].cuda_device);
	part->chunk = gscuda_sort_chunk(part->sort, chunkno, err, sizeof(err));
	part->chunk_index = part->chunk == NULL ? NULL :
		gscuda_sort_index_chunk(part->sort, chunkno, err, sizeof(err));
	if (part->chunk_index == NULL)
	{
		check_device_lost();
		fail_request(i, FALLBACK_GPU_ERROR, err);
		return false;
	}
	return true;
}

/*
 * Deal a received chunk's records to the parts, in the request's order.
 * Each record's key goes into its part's pinned chunk buffer and its number
 * in the request beside it; both travel to the part's device with the
 * chunk, so that the part's sort gives request record numbers.
 */
bool
split_chunk(int i, Size chunkno, Size nrecords)
{
	ServiceRequest *req = &svc->requests[i];
	ActiveSort *as = &active[i];
	int			kw = req->key_words;
	uint32		recno = (uint32) (chunkno * GPUSORT_CHUNK_RECORDS);
	instr_time	start,
				done;

	INSTR_TIME_SET_CURRENT(start);
	if (as->splitters == NULL)
		choose_splitters(as, kw, nrecords);
	for (Size r = 0; r < nrecords; r++)
	{
		const uint64 *key = as->pending + r * kw;
		int			p = part_of(as, key, kw);
		SortPart   *part = &as->parts[p];
		Size		at = part->n % GPUSORT_CHUNK_RECORDS;

		if (at == 0 && !start_part_chunk(i, p))
			return false;
		if (kw == 1)
			part->chunk[at] = key[0];
		else
			memcpy(part->chunk + at * kw, key, sizeof(uint64) * kw);
		part->chunk_index[at] = recno + (uint32) r;
		part->n++;
		if (at + 1 == GPUSORT_CHUNK_RECORDS &&
			!submit_part_chunk(i, p, part->n / GPUSORT_CHUNK_RECORDS - 1, GPUSORT_CHUNK_RECORDS))
			return false;
	}
	INSTR_TIME_SET_CURRENT(done);
	INSTR_TIME_ACCUM_DIFF(as->deal_time, done, start);
	return true;
}

#endif							/* GPUSORT_USE_CUDA */

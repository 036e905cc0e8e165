/*-------------------------------------------------------------------------
 *
 * cpu_radix.c
 *	  The CPU engine's record sort: stable radix sort of key-index records
 *	  over 8-bit digits, in one thread or in several.
 *
 * gpusort sorts fixed-width normalized keys, so the CPU engine needs no
 * comparator: one counting pass builds every digit histogram at once, digits
 * whose histogram has a single bucket (bytes equal in every key: the high
 * bytes of small integers, the pad of a short key) are skipped, and each
 * remaining digit costs one stable scatter.  Records start in index order
 * and every pass is stable, so ties come out in index order: exactly the
 * (key, index) order the GPU engine must also produce.
 *
 * Before anything else the input is checked for being already in order, or
 * exactly reversed (strictly descending), the early exit of Ha, Krüger and
 * Silva, "Fast 4-way parallel radix sorting on GPUs": both are answered
 * without sorting.
 *
 * With threads (GsRadixThreads) and enough records, the work is split:
 *
 *	- the records are gathered in slices, one task each, and each task counts
 *	  its slice's digits;
 *	- where the most significant digit that varies spreads the records over
 *	  many buckets (no bucket holds more than 1/MSD_MIN_BUCKETS of them), one
 *	  stable scatter on that digit, each slice writing its records at offsets
 *	  that its counts fix, puts every bucket in a range of its own; then each
 *	  bucket is one task that sorts its range on the less significant digits
 *	  (least significant first), small enough to stay in the core's caches;
 *	- otherwise (keys that crowd into a few buckets at the top, such as
 *	  floats of one exponent) every varying digit, least significant first,
 *	  is a pass of its own: the slices count that digit, and scatter it
 *	  stably at offsets their counts fix.
 *
 * Both orders are the one-thread order, record for record.
 *
 * The CPU engine (engine_cpu.c) calls gs_cpu_radix_sort, and
 * gs_cpu_radix_workspace for the memory it takes, which a batch counts
 * (batch.c).  This file calls nothing of PostgreSQL, so the GPU kernel
 * tests and the radix sort's own test (test/radix/) link it as their
 * reference implementation; the threads are the caller's (GsRadixThreads),
 * and tasks never call back into the caller.
 *
 *-------------------------------------------------------------------------
 */
#include "engine/cpu_radix.h"

#include <string.h>

#define RADIX_BITS		8
#define RADIX_BUCKETS	(1 << RADIX_BITS)
#define DIGITS_PER_WORD	(64 / RADIX_BITS)
#define MAX_KEY_WORDS	4
#define MAX_DIGITS		(MAX_KEY_WORDS * DIGITS_PER_WORD)

/* records between progress calls within one pass (a power of two) */
#define PROGRESS_RECORDS	((size_t) 1 << 22)

/* tasks a threaded sort splits its records into, at most */
#define MAX_SLICES		64

/* the most significant digit goes first when it fills at least this many buckets */
#define MSD_MIN_BUCKETS	16

void		(*gs_cpu_radix_progress) (void) = NULL;

/* counts of one digit: how many records have each value (n < 2^32) */
typedef uint32_t DigitCounts[RADIX_BUCKETS];

/*
 * A threaded sort in progress: what its tasks share.  Digits are named by
 * rank, 0 the most significant: word rank / 8, byte 7 - rank % 8.
 */
typedef struct RadixJob
{
	uint64_t   *const *chunks;
	size_t		chunk_records;
	size_t		n;
	int			key_words;
	int			stride;			/* words per record: the key, then the index */
	int			ndigits;
	uint64_t   *a;				/* the two record arrays */
	uint64_t   *b;
	uint32_t   *perm;
	int			nslices;
	DigitCounts *slice_counts;	/* [nslices][ndigits] */

	/* one pass */
	int			rank;			/* the digit scattered */
	const uint64_t *from;
	uint64_t   *to;

	/* the buckets of the first digit, sorted each on its own */
	size_t		bucket_start[RADIX_BUCKETS + 1];
	const int  *lower_ranks;	/* varying digits below it, least significant first */
	int			nlower;
} RadixJob;

static inline void
progress(size_t i)
{
	if ((i & (PROGRESS_RECORDS - 1)) == 0 && gs_cpu_radix_progress)
		gs_cpu_radix_progress();
}

static inline const uint64_t *
record_key(uint64_t *const *chunks, size_t chunk_records, int key_words, size_t i)
{
	return chunks[i / chunk_records] + (i % chunk_records) * key_words;
}

static inline unsigned
digit_of(const uint64_t *rec, int rank)
{
	return (rec[rank / DIGITS_PER_WORD] >> ((DIGITS_PER_WORD - 1 - rank % DIGITS_PER_WORD) * RADIX_BITS)) &
		(RADIX_BUCKETS - 1);
}

/*
 * 1 if the keys are in non-descending order, 2 if strictly descending,
 * 0 otherwise.
 */
static int
presorted_direction(uint64_t *const *chunks, size_t chunk_records,
					size_t n, int key_words)
{
	int			ascending = 1;
	int			descending = 1;
	const uint64_t *prev;

	if (n < 2)
		return 1;
	prev = record_key(chunks, chunk_records, key_words, 0);
	for (size_t i = 1; i < n && (ascending || descending); i++)
	{
		const uint64_t *cur = record_key(chunks, chunk_records, key_words, i);
		int			c = gs_compare_key_words(prev, cur, key_words);

		if (c > 0)
			ascending = 0;
		if (c <= 0)
			descending = 0;
		prev = cur;
	}
	return ascending ? 1 : (descending ? 2 : 0);
}

static size_t
slice_counts_bytes(size_t n, int key_words)
{
	if (n < GS_RADIX_PARALLEL_MIN_RECORDS)
		return 0;
	return (size_t) MAX_SLICES * key_words * DIGITS_PER_WORD * sizeof(DigitCounts);
}

size_t
gs_cpu_radix_workspace(size_t n, int key_words)
{
	/* two arrays of records, each key_words words plus its index */
	return 2 * n * (size_t) (key_words + 1) * sizeof(uint64_t) +
		slice_counts_bytes(n, key_words);
}

/* a digit on which every one of n records agrees needs no pass */
static int
digit_varies(const uint32_t *counts, size_t n)
{
	for (int v = 0; v < RADIX_BUCKETS; v++)
	{
		if (counts[v] == n)
			return 0;
	}
	return 1;
}

/*
 * Sort records [lo, hi) of *src stably on the digits ranks[0 .. nranks),
 * least significant first, with *dst as the other array over the same
 * range; counts[rank] are the range's counts of digit rank.  Digits on
 * which the whole range agrees are skipped.  On return *src is the array
 * holding the sorted range.  Returns the passes made.
 */
static int
sort_range_lsd(uint64_t **src, uint64_t **dst, size_t lo, size_t hi, int stride,
			   const int *ranks, int nranks, DigitCounts *counts, int report)
{
	int			passes = 0;

	for (int k = 0; k < nranks; k++)
	{
		size_t		offset[RADIX_BUCKETS];
		size_t		sum = lo;
		int			rank = ranks[k];

		if (!digit_varies(counts[rank], hi - lo))
			continue;
		for (int v = 0; v < RADIX_BUCKETS; v++)
		{
			offset[v] = sum;
			sum += counts[rank][v];
		}
		for (size_t i = lo; i < hi; i++)
		{
			const uint64_t *rec = *src + i * stride;
			size_t		pos = offset[digit_of(rec, rank)]++;

			if (report)
				progress(i);
			memcpy(*dst + pos * stride, rec, stride * sizeof(uint64_t));
		}
		{
			uint64_t   *tmp = *src;

			*src = *dst;
			*dst = tmp;
		}
		passes++;
	}
	return passes;
}

/*
 * Copy records [lo, hi) from the key chunks into a with their indexes, and
 * count every digit of them into counts[rank][value].
 */
static void
gather_records(const RadixJob *job, size_t lo, size_t hi, uint64_t *a,
			   DigitCounts *counts, int report)
{
	for (size_t i = lo; i < hi; i++)
	{
		const uint64_t *key = record_key(job->chunks, job->chunk_records,
										 job->key_words, i);
		uint64_t   *rec = a + i * job->stride;

		if (report)
			progress(i);
		for (int w = 0; w < job->key_words; w++)
		{
			uint64_t	word = key[w];

			rec[w] = word;
			for (int d = 0; d < DIGITS_PER_WORD; d++)
			{
				int			rank = w * DIGITS_PER_WORD + DIGITS_PER_WORD - 1 - d;
				unsigned	v = (word >> (d * RADIX_BITS)) & (RADIX_BUCKETS - 1);

				counts[rank][v]++;
			}
		}
		rec[job->key_words] = i;
	}
}

/* the sorted records' indexes, [lo, hi) of array a, into perm */
static void
write_perm(const RadixJob *job, const uint64_t *a, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		job->perm[i] = (uint32_t) a[i * job->stride + job->key_words];
}

/* ---- the threaded sort's tasks: task i of a pass is slice i ---- */

static void
slice_bounds(const RadixJob *job, size_t slice, size_t *lo, size_t *hi)
{
	*lo = job->n * slice / job->nslices;
	*hi = job->n * (slice + 1) / job->nslices;
}

static DigitCounts *
counts_of_slice(const RadixJob *job, size_t slice)
{
	return job->slice_counts + slice * job->ndigits;
}

static void
gather_task(void *arg, size_t from, size_t to)
{
	RadixJob   *job = arg;

	for (size_t s = from; s < to; s++)
	{
		DigitCounts *counts = counts_of_slice(job, s);
		size_t		lo,
					hi;

		slice_bounds(job, s, &lo, &hi);
		memset(counts, 0, sizeof(DigitCounts) * job->ndigits);
		gather_records(job, lo, hi, job->a, counts, 0);
	}
}

/* count digit job->rank of each slice of job->from */
static void
count_task(void *arg, size_t from, size_t to)
{
	RadixJob   *job = arg;

	for (size_t s = from; s < to; s++)
	{
		uint32_t   *counts = counts_of_slice(job, s)[job->rank];
		size_t		lo,
					hi;

		slice_bounds(job, s, &lo, &hi);
		memset(counts, 0, sizeof(DigitCounts));
		for (size_t i = lo; i < hi; i++)
			counts[digit_of(job->from + i * job->stride, job->rank)]++;
	}
}

/*
 * Scatter each slice of job->from on digit job->rank into job->to; the
 * slice's counts of that digit have been turned into its offsets.
 */
static void
scatter_task(void *arg, size_t from, size_t to)
{
	RadixJob   *job = arg;

	for (size_t s = from; s < to; s++)
	{
		const uint32_t *start = counts_of_slice(job, s)[job->rank];
		size_t		offset[RADIX_BUCKETS];
		size_t		lo,
					hi;

		for (int v = 0; v < RADIX_BUCKETS; v++)
			offset[v] = start[v];
		slice_bounds(job, s, &lo, &hi);
		for (size_t i = lo; i < hi; i++)
		{
			const uint64_t *rec = job->from + i * job->stride;

			memcpy(job->to + offset[digit_of(rec, job->rank)]++ * job->stride,
				   rec, job->stride * sizeof(uint64_t));
		}
	}
}

/* sort each bucket of the first digit (in job->b) on the lower digits */
static void
bucket_task(void *arg, size_t from, size_t to)
{
	RadixJob   *job = arg;

	for (size_t v = from; v < to; v++)
	{
		size_t		lo = job->bucket_start[v];
		size_t		hi = job->bucket_start[v + 1];
		DigitCounts counts[MAX_DIGITS];
		uint64_t   *src = job->b;
		uint64_t   *dst = job->a;

		if (hi - lo > 1)
		{
			for (int k = 0; k < job->nlower; k++)
				memset(counts[job->lower_ranks[k]], 0, sizeof(DigitCounts));
			for (size_t i = lo; i < hi; i++)
			{
				const uint64_t *rec = src + i * job->stride;

				for (int k = 0; k < job->nlower; k++)
				{
					int			rank = job->lower_ranks[k];

					counts[rank][digit_of(rec, rank)]++;
				}
			}
			sort_range_lsd(&src, &dst, lo, hi, job->stride,
						   job->lower_ranks, job->nlower, counts, 0);
		}
		write_perm(job, src, lo, hi);
	}
}

static void
perm_task(void *arg, size_t from, size_t to)
{
	RadixJob   *job = arg;

	for (size_t s = from; s < to; s++)
	{
		size_t		lo,
					hi;

		slice_bounds(job, s, &lo, &hi);
		write_perm(job, job->from, lo, hi);
	}
}

/*
 * Turn every slice's counts of digit rank into the offsets where the
 * slice's records of each value go: values in order, and within a value
 * the slices in order, which keeps the scatter stable.
 */
static void
slice_offsets(RadixJob *job, int rank)
{
	size_t		sum = 0;

	for (int v = 0; v < RADIX_BUCKETS; v++)
	{
		for (int s = 0; s < job->nslices; s++)
		{
			uint32_t   *c = &counts_of_slice(job, s)[rank][v];
			size_t		count = *c;

			*c = (uint32_t) sum;
			sum += count;
		}
	}
}

/* one stable pass on digit rank from job->from to job->to, in the threads */
static void
threaded_scatter(RadixJob *job, const GsRadixThreads *threads, int rank)
{
	job->rank = rank;
	slice_offsets(job, rank);
	threads->run(threads->arg, scatter_task, job, job->nslices, 1);
}

static int
sort_threaded(RadixJob *job, const GsRadixThreads *threads)
{
	DigitCounts total[MAX_DIGITS];
	int			varying[MAX_DIGITS];	/* least significant first */
	int			nvarying = 0;
	int			top;
	size_t		largest = 0;

	threads->run(threads->arg, gather_task, job, job->nslices, 1);
	memset(total, 0, sizeof(DigitCounts) * job->ndigits);
	for (int s = 0; s < job->nslices; s++)
	{
		DigitCounts *counts = counts_of_slice(job, s);

		for (int r = 0; r < job->ndigits; r++)
			for (int v = 0; v < RADIX_BUCKETS; v++)
				total[r][v] += counts[r][v];
	}
	for (int r = job->ndigits - 1; r >= 0; r--)
	{
		if (digit_varies(total[r], job->n))
			varying[nvarying++] = r;
	}
	/* the presorted check answered equal keys; keep the index order anyway */
	if (nvarying == 0)
	{
		job->from = job->a;
		threads->run(threads->arg, perm_task, job, job->nslices, 1);
		return 0;
	}

	top = varying[nvarying - 1];
	for (int v = 0; v < RADIX_BUCKETS; v++)
		largest = total[top][v] > largest ? total[top][v] : largest;

	if (largest <= job->n / MSD_MIN_BUCKETS)
	{
		/* the top digit first, then each of its buckets on its own */
		job->from = job->a;
		job->to = job->b;
		threaded_scatter(job, threads, top);
		job->bucket_start[0] = 0;
		for (int v = 0; v < RADIX_BUCKETS; v++)
			job->bucket_start[v + 1] = job->bucket_start[v] + total[top][v];
		job->lower_ranks = varying;
		job->nlower = nvarying - 1;
		threads->run(threads->arg, bucket_task, job, RADIX_BUCKETS, 1);
		return nvarying;
	}

	/* every varying digit a pass, least significant first */
	job->from = job->a;
	job->to = job->b;
	for (int k = 0; k < nvarying; k++)
	{
		uint64_t   *tmp;

		/* the gather counted the first pass's digit, in the same slices */
		if (k > 0)
		{
			job->rank = varying[k];
			threads->run(threads->arg, count_task, job, job->nslices, 1);
		}
		threaded_scatter(job, threads, varying[k]);
		tmp = (uint64_t *) job->from;
		job->from = job->to;
		job->to = tmp;
	}
	threads->run(threads->arg, perm_task, job, job->nslices, 1);
	return nvarying;
}

static int
sort_one_thread(RadixJob *job)
{
	DigitCounts counts[MAX_DIGITS];
	int			ranks[MAX_DIGITS];
	uint64_t   *src = job->a;
	uint64_t   *dst = job->b;
	int			passes;

	memset(counts, 0, sizeof(DigitCounts) * job->ndigits);
	gather_records(job, 0, job->n, job->a, counts, 1);
	for (int k = 0; k < job->ndigits; k++)
		ranks[k] = job->ndigits - 1 - k;
	passes = sort_range_lsd(&src, &dst, 0, job->n, job->stride,
							ranks, job->ndigits, counts, 1);
	write_perm(job, src, 0, job->n);
	return passes;
}

int
gs_cpu_radix_sort(uint64_t *const *chunks, size_t chunk_records,
				  size_t n, int key_words, uint32_t *perm, void *workspace,
				  const GsRadixThreads *threads)
{
	RadixJob	job;

	switch (presorted_direction(chunks, chunk_records, n, key_words))
	{
		case 1:
			for (size_t i = 0; i < n; i++)
				perm[i] = (uint32_t) i;
			return 0;
		case 2:
			for (size_t i = 0; i < n; i++)
				perm[i] = (uint32_t) (n - 1 - i);
			return 0;
	}

	memset(&job, 0, sizeof(job));
	job.chunks = chunks;
	job.chunk_records = chunk_records;
	job.n = n;
	job.key_words = key_words;
	job.stride = key_words + 1;
	job.ndigits = key_words * DIGITS_PER_WORD;
	job.a = (uint64_t *) workspace;
	job.b = job.a + n * job.stride;
	job.perm = perm;

	if (threads && threads->ntasks > 1 && n >= GS_RADIX_PARALLEL_MIN_RECORDS)
	{
		job.nslices = threads->ntasks < MAX_SLICES ? threads->ntasks : MAX_SLICES;
		job.slice_counts = (DigitCounts *) (job.b + n * job.stride);
		return sort_threaded(&job, threads);
	}
	return sort_one_thread(&job);
}

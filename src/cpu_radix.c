/*-------------------------------------------------------------------------
 *
 * cpu_radix.c
 *	  The CPU engine's record sort: stable least-significant-digit radix sort
 *	  of key-index records over 8-bit digits.
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
 * This file calls nothing of PostgreSQL, so the GPU kernel tests link it as
 * their reference implementation.
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_radix.h"

#include <string.h>

#define RADIX_BITS		8
#define RADIX_BUCKETS	(1 << RADIX_BITS)

/* records between progress calls within one pass (a power of two) */
#define PROGRESS_RECORDS	((size_t) 1 << 22)

void		(*gs_cpu_radix_progress) (void) = NULL;

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

/* -1, 0, +1 as memcmp would say of the two keys' big-endian bytes */
static inline int
compare_keys(const uint64_t *a, const uint64_t *b, int key_words)
{
	for (int w = 0; w < key_words; w++)
	{
		if (a[w] != b[w])
			return a[w] < b[w] ? -1 : 1;
	}
	return 0;
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
		int			c = compare_keys(prev, cur, key_words);

		if (c > 0)
			ascending = 0;
		if (c <= 0)
			descending = 0;
		prev = cur;
	}
	return ascending ? 1 : (descending ? 2 : 0);
}

size_t
gs_cpu_radix_workspace(size_t n, int key_words)
{
	/* two arrays of records, each record key_words words plus its index */
	return 2 * n * (size_t) (key_words + 1) * sizeof(uint64_t);
}

int
gs_cpu_radix_sort(uint64_t *const *chunks, size_t chunk_records,
				  size_t n, int key_words, uint32_t *perm, void *workspace)
{
	const int	stride = key_words + 1;
	const int	ndigits = key_words * (64 / RADIX_BITS);
	uint64_t   *src = (uint64_t *) workspace;
	uint64_t   *dst = src + n * stride;
	size_t		(*counts)[RADIX_BUCKETS];
	size_t		count_storage[4 * (64 / RADIX_BITS)][RADIX_BUCKETS];
	int			passes = 0;

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

	/* gather the records and every digit's histogram in one pass */
	counts = count_storage;
	memset(count_storage, 0, sizeof(size_t) * ndigits * RADIX_BUCKETS);
	for (size_t i = 0; i < n; i++)
	{
		const uint64_t *key = record_key(chunks, chunk_records, key_words, i);
		uint64_t   *rec = src + i * stride;

		progress(i);
		for (int w = 0; w < key_words; w++)
		{
			uint64_t	word = key[w];

			rec[w] = word;
			for (int d = 0; d < 8; d++)
				counts[w * 8 + d][(word >> (d * RADIX_BITS)) & (RADIX_BUCKETS - 1)]++;
		}
		rec[key_words] = i;
	}

	/* digit 0 of the last word is the least significant */
	for (int w = key_words - 1; w >= 0; w--)
	{
		for (int d = 0; d < 8; d++)
		{
			size_t	   *count = counts[w * 8 + d];
			size_t		offset[RADIX_BUCKETS];
			size_t		sum = 0;
			int			shift = d * RADIX_BITS;
			int			trivial = 0;

			for (int b = 0; b < RADIX_BUCKETS; b++)
			{
				if (count[b] == n)
					trivial = 1;
				offset[b] = sum;
				sum += count[b];
			}
			if (trivial)
				continue;		/* every key has the same digit here */

			for (size_t i = 0; i < n; i++)
			{
				const uint64_t *rec = src + i * stride;
				size_t		pos = offset[(rec[w] >> shift) & (RADIX_BUCKETS - 1)]++;

				progress(i);
				memcpy(dst + pos * stride, rec, stride * sizeof(uint64_t));
			}
			{
				uint64_t   *tmp = src;

				src = dst;
				dst = tmp;
			}
			passes++;
		}
	}

	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t) src[i * stride + key_words];
	return passes;
}

/*-------------------------------------------------------------------------
 *
 * radix_test.c
 *	  Checks the CPU engine's radix sort (src/engine/cpu_radix.c) in one thread and
 *	  in several, against a comparison sort of (key, index).
 *
 * The threaded sort takes a different route through the records (one
 * stable pass on the top digit and each bucket on its own, or every digit
 * a pass over slices), so each distribution here is chosen to take one of
 * them: keys spread over the whole range (the first route), with and
 * without ties in the buckets; keys crowded under one top byte
 * (as floats of one exponent are), few distinct keys, long keys sharing
 * their first words, and counts that do not divide into slices.  The
 * threads are plain POSIX threads, started per call as the backend's pool
 * threads would run the tasks.
 *
 * Usage: radix_test [THREADS]   (exit status 0 when every case matches)
 *        radix_test THREADS N   (times one thread against THREADS on N
 *                                records of two distributions, and checks
 *                                that they agree)
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/engine/cpu_radix.h"

#define CHUNK_RECORDS	((size_t) 1 << 17)

typedef struct Piece
{
	GsRadixTask task;
	void	   *task_arg;
	size_t		ntasks;
	size_t		grain;
	size_t		next;			/* under lock */
	pthread_mutex_t lock;
} Piece;

static int	nthreads = 4;

static void *
take_pieces(void *arg)
{
	Piece	   *p = arg;

	for (;;)
	{
		size_t		from;

		pthread_mutex_lock(&p->lock);
		from = p->next;
		p->next += p->grain;
		pthread_mutex_unlock(&p->lock);
		if (from >= p->ntasks)
			return NULL;
		p->task(p->task_arg, from, from + p->grain < p->ntasks ? from + p->grain : p->ntasks);
	}
}

static void
run_in_threads(void *arg, GsRadixTask task, void *task_arg, size_t ntasks, size_t grain)
{
	Piece		p = {task, task_arg, ntasks, grain ? grain : 1, 0};
	pthread_t	t[64];

	pthread_mutex_init(&p.lock, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, take_pieces, &p);
	take_pieces(&p);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&p.lock);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

enum Dist
{
	UNIFORM, SPREAD_TOP_TIES, CROWDED_TOP, FEW_VALUES, SHARED_PREFIX,
	TWO_TOP_VALUES, NDISTS
};
static const char *dist_names[] = {
	"uniform", "spread top, ties", "crowded top byte", "few values",
	"shared prefix words", "two top values"
};

static uint64_t
key_word(enum Dist dist, int w, int key_words)
{
	switch (dist)
	{
		case UNIFORM:
			return rng();
		case SPREAD_TOP_TIES:
			/* the top byte spread, then few values: buckets full of ties */
			return w == 0 ? (rng() & (0xffULL << 56)) | (rng() % 3) : rng() % 2;
		case CROWDED_TOP:
			/* one top byte, the rest random: an exponent and its mantissas */
			return w == 0 ? (0xbfULL << 56) | (rng() >> 8) : rng();
		case FEW_VALUES:
			return rng() % 5;
		case SHARED_PREFIX:
			return w < key_words - 1 ? 0x4142434445464748ULL : rng() >> (rng() % 64);
		case TWO_TOP_VALUES:
			return ((rng() & 1) << 63) | (rng() & 0xffff);
		default:
			return 0;
	}
}

/* records compared by (key, index): the order the sort must give */
static const uint64_t *cmp_keys;
static int	cmp_words;

static int
compare_index(const void *a, const void *b)
{
	uint32_t	i = *(const uint32_t *) a;
	uint32_t	j = *(const uint32_t *) b;

	for (int w = 0; w < cmp_words; w++)
	{
		uint64_t	x = cmp_keys[(size_t) i * cmp_words + w];
		uint64_t	y = cmp_keys[(size_t) j * cmp_words + w];

		if (x != y)
			return x < y ? -1 : 1;
	}
	return i < j ? -1 : (i > j);
}

static int
check(enum Dist dist, size_t n, int key_words)
{
	size_t		nchunks = (n + CHUNK_RECORDS - 1) / CHUNK_RECORDS;
	uint64_t   *keys = malloc(n * key_words * sizeof(uint64_t));
	uint64_t  **chunks = malloc(nchunks * sizeof(uint64_t *));
	uint32_t   *expected = malloc(n * sizeof(uint32_t));
	uint32_t   *one = malloc(n * sizeof(uint32_t));
	uint32_t   *many = malloc(n * sizeof(uint32_t));
	void	   *work = malloc(gs_cpu_radix_workspace(n, key_words));
	GsRadixThreads threads = {nthreads + 1, run_in_threads, NULL};
	size_t		bad_one = 0,
				bad_many = 0;
	int			passes_one,
				passes_many;

	for (size_t i = 0; i < n * key_words; i++)
		keys[i] = key_word(dist, (int) (i % key_words), key_words);
	for (size_t c = 0; c < nchunks; c++)
		chunks[c] = keys + c * CHUNK_RECORDS * key_words;
	for (size_t i = 0; i < n; i++)
		expected[i] = (uint32_t) i;
	cmp_keys = keys;
	cmp_words = key_words;
	qsort(expected, n, sizeof(uint32_t), compare_index);

	passes_one = gs_cpu_radix_sort(chunks, CHUNK_RECORDS, n, key_words, one, work, NULL);
	passes_many = gs_cpu_radix_sort(chunks, CHUNK_RECORDS, n, key_words, many, work, &threads);
	for (size_t i = 0; i < n; i++)
	{
		bad_one += (one[i] != expected[i]);
		bad_many += (many[i] != expected[i]);
	}
	printf("%s %-20s n=%-8zu words=%d passes %d / %d: %zu wrong in one thread, %zu with %d threads\n",
		   bad_one || bad_many ? "FAIL" : "ok  ", dist_names[dist], n, key_words,
		   passes_one, passes_many, bad_one, bad_many, nthreads);
	free(keys);
	free(chunks);
	free(expected);
	free(one);
	free(many);
	free(work);
	return bad_one || bad_many;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one thread against nthreads on n one-word records: times, and agreement */
static int
time_sort(enum Dist dist, size_t n)
{
	size_t		nchunks = (n + CHUNK_RECORDS - 1) / CHUNK_RECORDS;
	uint64_t   *keys = malloc(n * sizeof(uint64_t));
	uint64_t  **chunks = malloc(nchunks * sizeof(uint64_t *));
	uint32_t   *one = malloc(n * sizeof(uint32_t));
	uint32_t   *many = malloc(n * sizeof(uint32_t));
	void	   *work = malloc(gs_cpu_radix_workspace(n, 1));
	GsRadixThreads threads = {nthreads + 1, run_in_threads, NULL};
	double		t0,
				t1,
				t2;
	int			differ;

	for (size_t i = 0; i < n; i++)
		keys[i] = key_word(dist, 0, 1);
	for (size_t c = 0; c < nchunks; c++)
		chunks[c] = keys + c * CHUNK_RECORDS;
	t0 = now_s();
	gs_cpu_radix_sort(chunks, CHUNK_RECORDS, n, 1, one, work, NULL);
	t1 = now_s();
	gs_cpu_radix_sort(chunks, CHUNK_RECORDS, n, 1, many, work, &threads);
	t2 = now_s();
	differ = memcmp(one, many, n * sizeof(uint32_t)) != 0;
	printf("%s %-20s n=%zu: one thread %.3f s, %d threads and the caller %.3f s (%.2fx)\n",
		   differ ? "FAIL" : "ok  ", dist_names[dist], n, t1 - t0, nthreads,
		   t2 - t1, (t1 - t0) / (t2 - t1));
	free(keys);
	free(chunks);
	free(one);
	free(many);
	free(work);
	return differ;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = {1000, ((size_t) 1 << 18) + 7, 1000003};
	int			failed = 0;

	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (nthreads < 1 || nthreads > 63)
		nthreads = 4;
	if (argc > 2)
	{
		size_t		n = strtoull(argv[2], NULL, 10);

		return time_sort(UNIFORM, n) | time_sort(CROWDED_TOP, n);
	}
	for (int d = 0; d < NDISTS; d++)
		for (int s = 0; s < 3; s++)
			for (int w = 1; w <= 3; w += 2)
				failed |= check((enum Dist) d, sizes[s], w);
	return failed;
}

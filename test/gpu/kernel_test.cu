/*-------------------------------------------------------------------------
 *
 * kernel_test.cu
 *	  Tests of the CUDA side (cuda/gscuda_api.cu) through its C
 *	  interface against the CPU engine's sort (src/engine/cpu_radix.c), which is
 *	  the reference: the permutations must be identical.
 *
 *	  kernel_test [--quick]
 *
 * Covers key widths 1..4, both algorithms, several distributions, sizes
 * around every boundary (0, 1, 2, a tile, twice a tile, a chunk, 1M+7, and
 * in the full mode the sizes where the bucket sort's buckets outgrow a
 * tile and 100M one-word records), the bucket sort's second level and
 * radix fallback (forced on small inputs by a low bucket limit), chunk sizes that force many
 * chunks, device arrays that must grow, each fault injection point (the
 * call fails with a message; the next sort works), a memory limit too
 * small, and that the device's free memory returns to its baseline.
 * --quick runs a small subset, for compute-sanitizer.  Exits 1 on failure.
 *
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>
#include <math.h>

extern "C"
{
#include "gscuda_api.h"
#include "engine/cpu_radix.h"
}
#include "gscuda_test.cuh"

static int	npass = 0;
static int	nfail = 0;

enum Dist
{
	UNIFORM, ZIPF, SORTED, REVERSED, ALL_EQUAL, FEW_DISTINCT, SMALL_INTS, NEARLY_SORTED,
	FLOATS, GAPPED, DEEP,
	NDIST
};
static const char *dist_names[] = {
	"uniform", "zipf", "sorted", "reversed", "all-equal", "few-distinct", "small-ints",
	"nearly-sorted", "floats", "gapped", "deep"
};

static uint64_t rng_state;
static inline uint64_t
rng()
{
	/* splitmix64 */
	uint64_t	z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t
key_word(Dist d, size_t i, size_t n, int w)
{
	switch (d)
	{
		case UNIFORM:
			return rng();
		case ZIPF:
			{
				double		u = (rng() >> 11) * (1.0 / 9007199254740992.0) + 1e-12;

				return w == 0 ? (uint64_t) pow(u, -1.3) : rng() % 4;
			}
		case SORTED:
			return w == 0 ? i / 3 : 7;
		case REVERSED:
			return w == 0 ? n - i : (uint64_t) w;
		case ALL_EQUAL:
			return 0x4242424242424242ull;
		case FEW_DISTINCT:
			return rng() % 3;
		case SMALL_INTS:
			return w == 0 ? (rng() % 1000) << 32 : 0;
		case NEARLY_SORTED:
			return w == 0 ? (rng() % 100 == 0 ? rng() % (n + 1) : i) : 0;

			/*
			 * The block sort's later rounds (gscuda_block_key_sort.cuh): keys whose
			 * leading 32 varying bits often tie while the rest differ.
			 */
		case FLOATS:
			{
				/* a float8 key in [0, 1), as keys.c encodes it */
				double		f = (rng() >> 11) * (1.0 / 9007199254740992.0);
				uint64_t	bits;

				memcpy(&bits, &f, sizeof(bits));
				return w == 0 ? bits ^ ((uint64_t) 1 << 63) : rng() % 1000;
			}
		case GAPPED:
			/* a few leading values, a gap of equal bits, then random bits */
			return w == 0 ? ((rng() % 8) << 61) | (rng() >> 28) : rng() % 4;
		case DEEP:
			/* one far bit and, for half the keys, 16 low ones; words after it often equal */
			if (w == 0)
				return ((rng() % 2) << 40) | (rng() % 2 ? rng() & 0xFFFF : 0);
			return rng() % 2 ? rng() : 5;
		default:
			return 0;
	}
}

struct Case
{
	int			key_words;
	GsCudaAlgorithm algorithm;
	size_t		n;
	size_t		chunk_records;
	Dist		dist;
	size_t		expected;		/* hint */
	size_t		mem_limit;
	size_t		upload_words;	/* >0: keys uploaded in pieces of this many
								 * words from registered memory, as the GPU
								 * service sends them from its slots */
};

/*
 * Registered host memory the upload cases send their pieces from: two
 * halves used in turn, each waited for before it is written again, as the
 * service frees a slot only once its upload is done.
 */
#define STAGING_WORDS	((size_t) 1 << 18)
static uint64_t *staging = nullptr;

static bool
prepare_staging()
{
	char		errbuf[256];

	if (posix_memalign((void **) &staging, 4096, 2 * STAGING_WORDS * sizeof(uint64_t)) != 0)
		return false;
	if (gscuda_register_host(staging, 2 * STAGING_WORDS * sizeof(uint64_t), errbuf,
							 sizeof(errbuf)) != 0)
	{
		printf("FAIL gscuda_register_host: %s\n", errbuf);
		return false;
	}
	return true;
}

/* Send chunk ch's keys (words of them at buf) piece by piece. */
static int
upload_chunk(GsCudaSort *sort, const Case &c, size_t ch, const uint64_t *buf, size_t words,
			 char *errbuf, size_t errlen)
{
	static int	half = 0;

	for (size_t at = 0; at < words; at += c.upload_words)
	{
		size_t		n = words - at < c.upload_words ? words - at : c.upload_words;
		uint64_t   *piece = staging + half * STAGING_WORDS;

		if (gscuda_sort_wait_copies(sort, errbuf, errlen) != 0)
			return 1;
		memcpy(piece, buf + at, n * sizeof(uint64_t));
		if (gscuda_sort_upload(sort, ch, at, piece, n, errbuf, errlen) != 0)
			return 1;
		half = 1 - half;
	}
	return gscuda_sort_wait_copies(sort, errbuf, errlen);
}

/*
 * Copy a permutation kept on the device out through the staging memory, in
 * pieces of upload_words indexes, into perm.
 */
static int
download_permutation(GsCudaSort *sort, const Case &c, std::vector<uint32_t> &perm,
					 char *errbuf, size_t errlen)
{
	uint32_t   *piece = (uint32_t *) staging;

	perm.resize(c.n + 1);
	for (size_t at = 0; at < c.n; at += c.upload_words)
	{
		size_t		n = c.n - at < c.upload_words ? c.n - at : c.upload_words;

		memset(piece, 0xff, n * sizeof(uint32_t));
		if (gscuda_sort_download(sort, at, n, piece, errbuf, errlen) != 0 ||
			gscuda_sort_wait_copies(sort, errbuf, errlen) != 0)
			return 1;
		memcpy(perm.data() + at, piece, n * sizeof(uint32_t));
	}
	return 0;
}

static const char *
algo_name(GsCudaAlgorithm a)
{
	return a == GSCUDA_ALGO_BUCKET ? "bucket" : a == GSCUDA_ALGO_RADIX ? "radix" : "auto";
}

/*
 * Run one sort through the C interface.  Returns 0 if the GPU sort
 * succeeded (and compares it), 1 if it failed with a message in err.
 */
static int
run_sort(const Case &c, std::string &err, bool compare)
{
	char		errbuf[256] = "";
	GsCudaSort *sort;
	std::vector<uint64_t *> chunks;
	std::vector<std::vector<uint64_t>> own_chunks;	/* upload cases */
	std::vector<uint32_t> downloaded;
	size_t		nchunks = (c.n + c.chunk_records - 1) / c.chunk_records;
	const uint32_t *perm = nullptr;
	GsCudaStats stats;
	int			rc = 0;

	sort = gscuda_sort_begin(c.key_words, c.chunk_records, c.expected, c.algorithm,
							 c.mem_limit, errbuf, sizeof(errbuf));
	if (!sort)
	{
		err = errbuf;
		return 1;
	}
	for (size_t ch = 0; ch < nchunks && rc == 0; ch++)
	{
		uint64_t   *buf;
		size_t		first = ch * c.chunk_records;
		size_t		count = c.n - first < c.chunk_records ? c.n - first : c.chunk_records;

		if (c.upload_words > 0)
		{
			own_chunks.emplace_back(c.chunk_records * c.key_words);
			buf = own_chunks.back().data();
		}
		else
			buf = gscuda_sort_chunk(sort, ch, errbuf, sizeof(errbuf));
		if (!buf)
		{
			rc = 1;
			break;
		}
		chunks.push_back(buf);
		for (size_t r = 0; r < count; r++)
			for (int w = 0; w < c.key_words; w++)
				buf[r * c.key_words + w] = key_word(c.dist, first + r, c.n, w);
		if (c.upload_words > 0 &&
			upload_chunk(sort, c, ch, buf, count * c.key_words, errbuf, sizeof(errbuf)) != 0)
			rc = 1;
		else if (gscuda_sort_submit(sort, ch, count, errbuf, sizeof(errbuf)) != 0)
			rc = 1;
	}
	if (c.upload_words > 0)
		gscuda_sort_keep_permutation(sort);
	if (rc == 0 && gscuda_sort_finish(sort, c.n, &perm, &stats, errbuf, sizeof(errbuf)) != 0)
		rc = 1;
	if (rc == 0 && c.upload_words > 0)
	{
		if (perm != nullptr)
		{
			snprintf(errbuf, sizeof(errbuf), "a kept permutation came to the host");
			rc = 1;
		}
		else
			rc = download_permutation(sort, c, downloaded, errbuf, sizeof(errbuf));
		perm = downloaded.data();
	}
	if (rc != 0)
	{
		err = errbuf;
		gscuda_sort_end(sort);
		return 1;
	}

	if (compare)
	{
		std::vector<uint32_t> ref(c.n + 1);
		void	   *work = malloc(gs_cpu_radix_workspace(c.n, c.key_words) + 8);
		size_t		bad = 0,
					first_bad = 0;

		gs_cpu_radix_sort(chunks.data(), c.chunk_records, c.n, c.key_words, ref.data(), work, NULL);
		free(work);
		for (size_t i = 0; i < c.n; i++)
		{
			if (perm[i] != ref[i])
			{
				if (bad == 0)
					first_bad = i;
				bad++;
			}
		}
		if (bad)
		{
			printf("FAIL %s w=%d n=%zu chunk=%zu %s expected=%zu: %zu mismatches, first at %zu "
				   "(gpu %u, cpu %u), algorithm %s\n",
				   algo_name(c.algorithm), c.key_words, c.n, c.chunk_records,
				   dist_names[c.dist], c.expected, bad, first_bad, perm[first_bad],
				   ref[first_bad], stats.algorithm);
			nfail++;
		}
		else
			npass++;
		if (c.n >= 10000000)
			printf("  %s w=%d n=%zu %s: %s, h2d %.2f ms, sort %.2f ms, d2h %.2f ms, %zu MB\n",
				   algo_name(c.algorithm), c.key_words, c.n, dist_names[c.dist],
				   stats.algorithm, stats.h2d_ms, stats.sort_ms, stats.d2h_ms,
				   stats.device_bytes >> 20);
	}
	gscuda_sort_end(sort);
	return 0;
}

static void
check(const Case &c)
{
	std::string err;

	if (run_sort(c, err, true) != 0)
	{
		printf("FAIL %s w=%d n=%zu chunk=%zu %s: error: %s\n", algo_name(c.algorithm),
			   c.key_words, c.n, c.chunk_records, dist_names[c.dist], err.c_str());
		nfail++;
	}
}

static size_t
free_device_bytes()
{
	size_t		f = 0,
				t = 0;

	cudaMemGetInfo(&f, &t);
	return f;
}

static void
test_faults(bool quick)
{
	static const GsCudaFault faults[] = {
		GSCUDA_FAULT_INIT, GSCUDA_FAULT_ALLOC, GSCUDA_FAULT_H2D, GSCUDA_FAULT_LAUNCH,
		GSCUDA_FAULT_KERNEL, GSCUDA_FAULT_D2H
	};
	static const char *names[] = {"init", "alloc", "h2d", "launch", "kernel", "d2h"};

	for (int f = 0; f < 6; f++)
	{
		for (int algo = GSCUDA_ALGO_BUCKET; algo <= GSCUDA_ALGO_RADIX; algo++)
		{
			Case		c = {1 + f % 4, (GsCudaAlgorithm) algo, quick ? 20000u : 100000u, 4096, UNIFORM, 0, 0};
			std::string err;

			gscuda_set_fault(faults[f]);
			if (run_sort(c, err, false) == 0 || err.empty())
			{
				printf("FAIL fault %s (%s): the sort did not fail\n", names[f], algo_name(c.algorithm));
				nfail++;
			}
			else
			{
				printf("  fault %s (%s): %s\n", names[f], algo_name(c.algorithm), err.c_str());
				npass++;
			}
			/* and the next sort works */
			check(c);
		}
	}

	{
		Case		c = {2, GSCUDA_ALGO_BUCKET, quick ? 100000u : 1000000u, 1 << 17, UNIFORM, 0, 1 << 20};
		std::string err;

		if (run_sort(c, err, false) == 0)
		{
			printf("FAIL memory limit of 1 MB: the sort did not fail\n");
			nfail++;
		}
		else
		{
			printf("  memory limit: %s\n", err.c_str());
			npass++;
		}
		c.mem_limit = 0;
		check(c);
	}
}

/*
 * The bucket sort's second level and its radix fallback on small inputs:
 * with a bucket limit far below a tile, every bucket is split, and with a
 * tiny one the sub-buckets overflow too.
 */
static void
test_second_level(bool quick)
{
	for (size_t limit : {(size_t) 1024, (size_t) 8})
	{
		gscuda_set_bucket_limit(limit);
		for (int kw = 1; kw <= 4; kw++)
		{
			if (quick && kw % 2 == 0)
				continue;
			for (size_t n : {(size_t) 20000, (size_t) 300007})
			{
				if (quick && n > 20000)
					continue;
				for (int d = 0; d < NDIST; d++)
				{
					if (quick && d != UNIFORM && d != FEW_DISTINCT && d != GAPPED)
						continue;
					check({kw, GSCUDA_ALGO_BUCKET, n, 1 << 17, (Dist) d, n, 0});
				}
			}
		}
		printf("  second level, bucket limit %zu: %d passed, %d failed so far\n", limit,
			   npass, nfail);
	}
	gscuda_set_bucket_limit(0);
}

int
main(int argc, char **argv)
{
	bool		quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	char		name[128],
				errbuf[256];
	size_t		free_bytes,
				total_bytes,
				baseline;
	const GsCudaAlgorithm algos[] = {GSCUDA_ALGO_BUCKET, GSCUDA_ALGO_RADIX};

	rng_state = 12345;
	if (gscuda_init(0, name, sizeof(name), &free_bytes, &total_bytes, errbuf, sizeof(errbuf)) != 0)
	{
		printf("FAIL gscuda_init: %s\n", errbuf);
		return 1;
	}
	printf("device: %s, %zu MB free of %zu MB, %d device(s)\n", name, free_bytes >> 20,
		   total_bytes >> 20, gscuda_device_count(errbuf, sizeof(errbuf)));

	/* warm up every kernel (lazy module loading takes device memory) */
	for (int kw = 1; kw <= 4; kw++)
		for (GsCudaAlgorithm a : algos)
			check({kw, a, quick ? 20000u : 50000u, 1024, UNIFORM, 0, 0});
	baseline = free_device_bytes();

	for (int kw = 1; kw <= 4; kw++)
	{
		size_t		tile = 8192;

		for (GsCudaAlgorithm a : algos)
		{
			std::vector<size_t> sizes = {0, 1, 2, tile + 1, 2 * tile + 1};

			if (!quick)
			{
				for (size_t extra : {(size_t) 3, tile - 1, tile, 2 * tile - 1, (size_t) 1023,
						(size_t) 1024, (size_t) 1025})
					sizes.push_back(extra);
				sizes.push_back(3 * tile + 17);
				sizes.push_back(100000);
				sizes.push_back((1 << 17) - 1);
				sizes.push_back(1 << 17);
				sizes.push_back((1 << 17) + 1);
			}
			for (size_t n : sizes)
			{
				for (int d = 0; d < NDIST; d++)
				{
					if (quick && d != UNIFORM && d != FEW_DISTINCT && d != REVERSED &&
						d != FLOATS && d != DEEP)
						continue;
					/* small chunks: tiles span chunks; large: one chunk */
					check({kw, a, n, 1024, (Dist) d, 0, 0});
					if (!quick)
						check({kw, a, n, 1 << 17, (Dist) d, n, 0});
				}
			}
			if (!quick)
			{
				for (int d = 0; d < NDIST; d++)
				{
					check({kw, a, 1000007, 1 << 17, (Dist) d, 0, 0});
					/* the device arrays must grow from a too small hint */
					if (d == UNIFORM || d == ALL_EQUAL)
						check({kw, a, 1000007, 1 << 14, (Dist) d, 1000, 0});
				}
				/* buckets larger than a tile: the second level */
				size_t		big = kw == 1 ? 40000000 : 20000000;

				check({kw, a, big, 1 << 17, UNIFORM, 0, 0});
				check({kw, a, big, 1 << 17, ZIPF, 0, 0});
				check({kw, a, big, 1 << 17, FEW_DISTINCT, 0, 0});
			}
			printf("  width %d, %s: %d passed, %d failed so far\n", kw, algo_name(a), npass, nfail);
			fflush(stdout);
		}
	}
	test_second_level(quick);
	check({1, GSCUDA_ALGO_AUTO, 50000, 1024, ZIPF, 0, 0});
	check({3, GSCUDA_ALGO_AUTO, 50000, 1024, ZIPF, 0, 0});

	if (!quick)
	{
		for (GsCudaAlgorithm a : algos)
			check({1, a, 100000000, 1 << 17, UNIFORM, 100000000, 0});
		check({1, GSCUDA_ALGO_BUCKET, 100000000, 1 << 17, ALL_EQUAL, 0, 0});
	}

	/* keys uploaded from registered memory, as the GPU service sends them */
	if (!prepare_staging())
		nfail++;
	else
	{
		for (int kw = 1; kw <= 4; kw++)
			for (GsCudaAlgorithm a : algos)
			{
				/* slot-sized pieces; pieces that cut records, chunks that cut tiles */
				check({kw, a, 300007, 1 << 17, UNIFORM, 0, 0, STAGING_WORDS / 2});
				check({kw, a, 20000, 1024, FEW_DISTINCT, 0, 0, 1000});
				check({kw, a, 1, 1 << 17, UNIFORM, 0, 0, 1000});
				if (!quick)
					check({kw, a, 3000017, 1 << 17, ZIPF, 1000, 0, STAGING_WORDS});
			}
		for (GsCudaAlgorithm a : algos)
		{
			Case		c = {2, a, 50000, 4096, UNIFORM, 0, 0, 1000};
			std::string err;

			for (GsCudaFault f : {GSCUDA_FAULT_H2D, GSCUDA_FAULT_D2H})
			{
				const char *what = f == GSCUDA_FAULT_H2D ? "h2d on upload" : "d2h on download";

				err.clear();
				gscuda_set_fault(f);
				if (run_sort(c, err, false) == 0 || err.empty())
				{
					printf("FAIL fault %s (%s): the sort did not fail\n", what, algo_name(a));
					nfail++;
				}
				else
				{
					printf("  fault %s (%s): %s\n", what, algo_name(a), err.c_str());
					npass++;
				}
				check(c);
			}
		}
		printf("  uploads from registered memory: %d passed, %d failed so far\n", npass, nfail);
	}

	test_faults(quick);

	{
		size_t		now = free_device_bytes();
		long long	lost = (long long) baseline - (long long) now;

		if (lost > (8 << 20))
		{
			printf("FAIL device memory: %lld MB less free than at the start\n", lost >> 20);
			nfail++;
		}
		else
		{
			printf("  device memory back to baseline (%lld KB difference)\n", lost >> 10);
			npass++;
		}
	}

	printf("kernel tests: %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}

/*-------------------------------------------------------------------------
 *
 * split_check.cu
 *	  Check and time a sort split by key range the way the GPU service
 *	  (src/service/service_split.c) does it, through the C interface alone: each
 *	  part's sort carries its records' numbers (gscuda_sort_carry_index),
 *	  every part is started before any is waited for, and the result goes
 *	  from each part's device into one registered host buffer piece by
 *	  piece, as into the service's result slots.  The concatenation must be
 *	  exactly the unsplit sort's result (ties in input order); for small n
 *	  it is also compared with std::stable_sort.
 *
 *	  split_check [n] [parts] [key_words] [distinct]
 *
 * Parts go round-robin over the visible GPUs (all on one when there is
 * one).  distinct: how many distinct keys (0: random 64-bit words), so
 * that ties are many.  Prints the times of the unsplit and split runs.
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <vector>

#include <cuda_runtime.h>

#include "gscuda_api.h"

#define CHUNK ((size_t) 1 << 17)
#define SLOT_RECORDS ((size_t) 1 << 18)	/* a result slot's indexes */

static char err[256];

#define CHECK(cond, what) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "FAILED: %s: %s\n", what, err); \
			exit(1); \
		} \
	} while (0)

static double
now_ms(void)
{
	return std::chrono::duration<double, std::milli>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

static int
cmp_key(const uint64_t *a, const uint64_t *b, int kw)
{
	for (int w = 0; w < kw; w++)
		if (a[w] != b[w])
			return a[w] < b[w] ? -1 : 1;
	return 0;
}

struct Part
{
	int			device;
	GsCudaSort *sort;
	size_t		n = 0;
	size_t		first = 0;
	uint64_t   *chunk = nullptr;
	uint32_t   *index = nullptr;
};

/* Download [0, n) of the parts' concatenated results into out, slot by slot. */
static void
download(std::vector<Part> &parts, size_t n, uint32_t *out)
{
	for (size_t at = 0; at < n;)
	{
		size_t		end = std::min(n, at + SLOT_RECORDS);
		size_t		p = 0;

		while (at < end)
		{
			while (at >= parts[p].first + parts[p].n)
				p++;
			size_t		take = std::min(end - at, parts[p].first + parts[p].n - at);

			gscuda_select_device(parts[p].device);
			CHECK(gscuda_sort_download(parts[p].sort, at - parts[p].first, take, out + at,
									   err, sizeof(err)) == 0, "download");
			at += take;
		}
	}
	for (Part &part : parts)
	{
		gscuda_select_device(part.device);
		CHECK(gscuda_sort_wait_copies(part.sort, err, sizeof(err)) == 0, "wait copies");
	}
}

/* Sort keys (n records of kw words) in nparts parts; the result into out. */
static void
run(const uint64_t *keys, size_t n, int kw, int nparts, int ndev, uint32_t *out)
{
	std::vector<Part> parts(nparts);
	std::vector<uint64_t> splitters;
	double		t0 = now_ms(),
				t_dealt,
				t_started,
				t_waited,
				t_done;

	for (int p = 0; p < nparts; p++)
	{
		parts[p].device = p % ndev;
		CHECK(gscuda_select_device(parts[p].device) == 0, "select");
		parts[p].sort = gscuda_sort_begin(kw, CHUNK,
										  nparts == 1 ? n : n / nparts + n / (4 * nparts),
										  GSCUDA_ALGO_AUTO, 0, err, sizeof(err));
		CHECK(parts[p].sort, "begin");
		if (nparts > 1)
			CHECK(gscuda_sort_carry_index(parts[p].sort, err, sizeof(err)) == 0, "carry");
	}
	/* splitters from an even sample of the first chunk, as the service does */
	{
		size_t		m = std::min(n, CHUNK);
		size_t		ns = std::min(m, (size_t) 4096);
		std::vector<std::vector<uint64_t>> sample(ns);

		for (size_t s = 0; s < ns; s++)
			sample[s].assign(keys + (s * m / ns) * kw, keys + (s * m / ns) * kw + kw);
		std::sort(sample.begin(), sample.end());
		for (int j = 0; j + 1 < nparts; j++)
			splitters.insert(splitters.end(), sample[(j + 1) * ns / nparts].begin(),
							 sample[(j + 1) * ns / nparts].end());
	}
	for (size_t r = 0; r < n; r++)
	{
		const uint64_t *key = keys + r * kw;
		int			p = 0;

		while (p < nparts - 1 && cmp_key(&splitters[p * kw], key, kw) <= 0)
			p++;
		Part	   &part = parts[p];
		size_t		at = part.n % CHUNK;

		if (at == 0)
		{
			gscuda_select_device(part.device);
			part.chunk = gscuda_sort_chunk(part.sort, part.n / CHUNK, err, sizeof(err));
			CHECK(part.chunk, "chunk");
			if (nparts > 1)
			{
				part.index = gscuda_sort_index_chunk(part.sort, part.n / CHUNK, err, sizeof(err));
				CHECK(part.index, "index chunk");
			}
		}
		memcpy(part.chunk + at * kw, key, kw * sizeof(uint64_t));
		if (nparts > 1)
			part.index[at] = (uint32_t) r;
		part.n++;
		if (at + 1 == CHUNK)
		{
			gscuda_select_device(part.device);
			CHECK(gscuda_sort_submit(part.sort, part.n / CHUNK - 1, CHUNK, err, sizeof(err)) == 0,
				  "submit");
		}
	}
	t_dealt = now_ms();
	{
		size_t		first = 0;

		for (Part &part : parts)
		{
			part.first = first;
			first += part.n;
		}
	}
	for (Part &part : parts)
	{
		gscuda_select_device(part.device);
		gscuda_sort_keep_permutation(part.sort);
		if (part.n % CHUNK)
			CHECK(gscuda_sort_submit(part.sort, part.n / CHUNK, part.n % CHUNK, err,
									 sizeof(err)) == 0, "submit last");
		if (part.n > 0)
			CHECK(gscuda_sort_finish_start(part.sort, part.n, err, sizeof(err)) == 0, "start");
	}
	t_started = now_ms();
	for (Part &part : parts)
	{
		const uint32_t *perm;
		GsCudaStats st;

		if (part.n == 0)
			continue;
		gscuda_select_device(part.device);
		CHECK(gscuda_sort_finish_wait(part.sort, &perm, &st, err, sizeof(err)) == 0, "wait");
		CHECK(perm == nullptr, "kept permutation");
		printf("    part on GPU %d: %zu records, %s, h2d %.1f ms, kernels %.1f ms, %zu MB\n",
			   part.device, part.n, st.algorithm, st.h2d_ms, st.sort_ms, st.device_bytes >> 20);
	}
	t_waited = now_ms();
	download(parts, n, out);
	t_done = now_ms();
	printf("  %d part(s) on %d GPU(s): deal+submit %.1f ms, finish start %.1f ms, wait %.1f ms, "
		   "download %.1f ms; finish to result %.1f ms\n",
		   nparts, std::min(nparts, ndev), t_dealt - t0, t_started - t_dealt,
		   t_waited - t_started, t_done - t_waited, t_done - t_dealt);
	for (Part &part : parts)
	{
		gscuda_select_device(part.device);
		gscuda_sort_end(part.sort);
	}
}

int
main(int argc, char **argv)
{
	size_t		n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	int			nparts = argc > 2 ? atoi(argv[2]) : 2;
	int			kw = argc > 3 ? atoi(argv[3]) : 1;
	uint64_t	distinct = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
	int			ndev = gscuda_device_count(err, sizeof(err));
	std::vector<uint64_t> keys(n * kw);
	size_t		bytes = ((n * sizeof(uint32_t)) + 4095) & ~(size_t) 4095;
	uint32_t   *a = (uint32_t *) mmap(NULL, bytes, PROT_READ | PROT_WRITE,
									  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t   *b = (uint32_t *) mmap(NULL, bytes, PROT_READ | PROT_WRITE,
									  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t	x = 88172645463325252ull;

	CHECK(ndev > 0, "no GPU");
	for (int d = 0; d < ndev; d++)
		CHECK(gscuda_init(d, NULL, 0, NULL, NULL, err, sizeof(err)) == 0, "init");
	gscuda_select_device(0);
	CHECK(gscuda_register_host(a, bytes, err, sizeof(err)) == 0, "register");
	CHECK(gscuda_register_host(b, bytes, err, sizeof(err)) == 0, "register");
	for (size_t i = 0; i < n * kw; i++)
	{
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		keys[i] = distinct ? x % distinct : x;
	}
	printf("n=%zu parts=%d key_words=%d distinct=%llu GPUs=%d\n", n, nparts, kw,
		   (unsigned long long) distinct, ndev);
	run(keys.data(), n, kw, 1, ndev, a);
	run(keys.data(), n, kw, nparts, ndev, b);
	CHECK(memcmp(a, b, n * sizeof(uint32_t)) == 0, "split result differs from unsplit");
	if (n <= 20000000)
	{
		std::vector<uint32_t> ref(n);

		std::iota(ref.begin(), ref.end(), 0);
		std::stable_sort(ref.begin(), ref.end(), [&](uint32_t l, uint32_t r) {
			return cmp_key(&keys[(size_t) l * kw], &keys[(size_t) r * kw], kw) < 0;
		});
		CHECK(memcmp(ref.data(), b, n * sizeof(uint32_t)) == 0, "differs from stable_sort");
	}
	printf("OK\n");
	return 0;
}

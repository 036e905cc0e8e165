/*-------------------------------------------------------------------------
 *
 * kernel_bench.cu
 *	  Benchmark of the CUDA engine's two algorithms, GPU BUCKET SORT and the
 *	  CUB radix sort, on the same records; prints a markdown table.
 *
 *	  kernel_bench [runs] [max_n] [widths]
 *
 * widths: the key widths in words to run, as digits ("12": 8- and 16-byte
 * keys; default all).  KERNEL_BENCH_QUICK=1 runs only uniform and float
 * keys and skips the end-to-end runs (for comparing builds).
 *
 * For each key width 1..4 and 10M / 100M records (uniform keys), and for
 * one-word keys over several distributions, it reports the median over
 * `runs` of:
 *	- device sort time: keys already on the device, permutation left there
 *	  (gs::sort_on_device, presorted check included), for each algorithm;
 *	- for one-word keys, plain cub::DeviceRadixSort::SortPairs (uint64 key,
 *	  uint32 index) as the reference;
 *	- end-to-end time through the C interface: submit every chunk (copies
 *	  and, for the bucket sort, tile sorts), finish (sort, permutation back
 *	  into pinned memory), wall clock; chunks are filled beforehand.
 * Records are generated on the device, so the run stays short.
 *
 *-------------------------------------------------------------------------
 */
#include <algorithm>
#include <chrono>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "gscuda_api.h"
#include "gscuda_radix_sort.cuh"
#include "gscuda_test.cuh"

#define CK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) { \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
			exit(1); \
		} \
	} while (0)

enum Dist
{
	UNIFORM, GAUSSIAN, ZIPF, SORTED, REVERSED, FEW_DISTINCT, ALL_EQUAL, FLOATS, NDIST
};
static const char *dist_names[] = {
	"uniform", "gaussian", "zipf", "sorted", "reversed", "few distinct", "all equal",
	"floats"
};

__device__ __forceinline__ uint64_t
hash64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

__global__ void
generate_kernel(uint64_t *keys, size_t n, int key_words, int dist, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		for (int w = 0; w < key_words; w++)
		{
			uint64_t	h = hash64(seed ^ (i * 4 + w));
			uint64_t	k = h;

			if (w == 0)
			{
				switch (dist)
				{
					case GAUSSIAN:
						k = (((h & 0xFFFF) + ((h >> 16) & 0xFFFF) + ((h >> 32) & 0xFFFF) +
							  (h >> 48)) << 40) | (hash64(h) & ((1ull << 40) - 1));
						break;
					case ZIPF:
						{
							double		u = (h >> 11) * (1.0 / 9007199254740992.0) + 1e-15;

							k = (uint64_t) pow(u, -1.3);
						}
						break;
					case SORTED:
						k = i;
						break;
					case REVERSED:
						k = n - i;
						break;
					case FEW_DISTINCT:
						k = h % 8;
						break;
					case ALL_EQUAL:
						k = 42;
						break;
					case FLOATS:
						{
							/* float8 in [0, 1) as keys.c encodes it (ORDER BY f, k) */
							double		f = (h >> 11) * (1.0 / 9007199254740992.0);

							k = (uint64_t) __double_as_longlong(f) ^ (1ull << 63);
						}
						break;
				}
			}
			else if (dist == SORTED || dist == REVERSED || dist == ALL_EQUAL)
				k = 0;
			keys[i * key_words + w] = k;
		}
	}
}

static double
median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

struct Bench
{
	int			runs;
	cudaStream_t stream;
	cudaEvent_t e0, e1;
	gs::GsMemory mem;
	gs::GsContext ctx;
};

/*
 * Median device time of one algorithm (ms).  If phases is given, one more
 * run with a phase timer attached describes where the time goes.
 */
static double
time_device(Bench &b, int kw, GsCudaAlgorithm algo, const uint64_t *src, uint64_t *keys,
			uint32_t *perm, size_t n, int *presorted, std::string *phases = nullptr)
{
	std::vector<double> t;
	gs::GsPhaseTimer timer;

	for (int r = 0; r < b.runs + 1 + (phases ? 1 : 0); r++)
	{
		float		ms;
		bool		timed = phases && r == b.runs + 1;

		b.ctx.timer = timed ? &timer : nullptr;
		CK(cudaMemcpyAsync(keys, src, n * kw * sizeof(uint64_t), cudaMemcpyDeviceToDevice, b.stream));
		CK(cudaEventRecord(b.e0, b.stream));
		try
		{
			*presorted = gs::sort_on_device(b.ctx, kw, algo, keys, n, perm);
		}
		catch (const gs::GsError &e)
		{
			fprintf(stderr, "sort failed: %s\n", e.message.c_str());
			exit(1);
		}
		CK(cudaEventRecord(b.e1, b.stream));
		CK(cudaEventSynchronize(b.e1));
		CK(cudaEventElapsedTime(&ms, b.e0, b.e1));
		b.ctx.timer = nullptr;
		if (timed)
		{
			char		buf[96];

			for (size_t i = 0; i < timer.events.size(); i++)
			{
				float		phase_ms;

				CK(cudaEventElapsedTime(&phase_ms, timer.events[i],
										i + 1 < timer.events.size() ? timer.events[i + 1] : b.e1));
				snprintf(buf, sizeof(buf), "%s%s %.2f", i ? ", " : "", timer.names[i], phase_ms);
				*phases += buf;
				CK(cudaEventDestroy(timer.events[i]));
			}
		}
		else if (r > 0)			/* the first run warms up */
			t.push_back(ms);
	}
	return median(t);
}

/* plain CUB SortPairs of uint64 keys and uint32 indexes (ms) */
static double
time_cub(Bench &b, const uint64_t *src, uint64_t *keys, size_t n)
{
	std::vector<double> t;
	uint64_t   *keys_alt;
	uint32_t   *vals,
			   *vals_alt;
	void	   *temp = nullptr;
	size_t		temp_bytes = 0;

	CK(cudaMalloc(&keys_alt, n * sizeof(uint64_t)));
	CK(cudaMalloc(&vals, n * sizeof(uint32_t)));
	CK(cudaMalloc(&vals_alt, n * sizeof(uint32_t)));
	gs::iota_kernel<<<gs::stream_blocks(n), 256, 0, b.stream>>>(vals, n);
	CK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys_alt, vals, vals_alt,
									   (uint32_t) n, 0, 64, b.stream));
	CK(cudaMalloc(&temp, temp_bytes));
	for (int r = 0; r < b.runs + 1; r++)
	{
		float		ms;

		CK(cudaMemcpyAsync(keys, src, n * sizeof(uint64_t), cudaMemcpyDeviceToDevice, b.stream));
		CK(cudaEventRecord(b.e0, b.stream));
		CK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_alt, vals, vals_alt,
										   (uint32_t) n, 0, 64, b.stream));
		CK(cudaEventRecord(b.e1, b.stream));
		CK(cudaEventSynchronize(b.e1));
		CK(cudaEventElapsedTime(&ms, b.e0, b.e1));
		if (r > 0)
			t.push_back(ms);
	}
	CK(cudaFree(keys_alt));
	CK(cudaFree(vals));
	CK(cudaFree(vals_alt));
	CK(cudaFree(temp));
	return median(t);
}

/* median wall time through the C interface (ms), chunks filled beforehand */
static double
time_api(Bench &b, int kw, GsCudaAlgorithm algo, const uint64_t *host, size_t n,
		 GsCudaStats *stats_out)
{
	const size_t chunk = 1 << 17;
	size_t		nchunks = (n + chunk - 1) / chunk;
	std::vector<double> t;
	char		err[256];

	for (int r = 0; r < std::max(2, b.runs / 2) + 1; r++)
	{
		GsCudaSort *sort = gscuda_sort_begin(kw, chunk, n, algo, 0, err, sizeof(err));
		const uint32_t *perm;
		GsCudaStats stats;

		if (!sort)
		{
			fprintf(stderr, "begin: %s\n", err);
			exit(1);
		}
		for (size_t c = 0; c < nchunks; c++)
		{
			uint64_t   *buf = gscuda_sort_chunk(sort, c, err, sizeof(err));
			size_t		cnt = std::min(chunk, n - c * chunk);

			if (!buf)
			{
				fprintf(stderr, "chunk: %s\n", err);
				exit(1);
			}
			memcpy(buf, host + c * chunk * kw, cnt * kw * sizeof(uint64_t));
		}
		auto		start = std::chrono::steady_clock::now();

		for (size_t c = 0; c < nchunks; c++)
		{
			size_t		cnt = std::min(chunk, n - c * chunk);

			if (gscuda_sort_submit(sort, c, cnt, err, sizeof(err)) != 0)
			{
				fprintf(stderr, "submit: %s\n", err);
				exit(1);
			}
		}
		if (gscuda_sort_finish(sort, n, &perm, &stats, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "finish: %s\n", err);
			exit(1);
		}
		auto		end = std::chrono::steady_clock::now();

		if (r > 0)
			t.push_back(std::chrono::duration<double, std::milli>(end - start).count());
		*stats_out = stats;
		gscuda_sort_end(sort);
	}
	return median(t);
}

int
main(int argc, char **argv)
{
	Bench		b;
	size_t		max_n = argc > 2 ? strtoull(argv[2], nullptr, 10) : 100000000;
	char		name[128],
				err[256];
	size_t		free_bytes,
				total_bytes;
	cudaMemPool_t pool;
	uint64_t	threshold = UINT64_MAX;

	const char *widths = argc > 3 ? argv[3] : "1234";
	const char *quick_env = getenv("KERNEL_BENCH_QUICK");
	bool		quick = quick_env && strcmp(quick_env, "1") == 0;

	b.runs = argc > 1 ? atoi(argv[1]) : 5;
	if (gscuda_init(0, name, sizeof(name), &free_bytes, &total_bytes, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "gscuda_init: %s\n", err);
		return 1;
	}
	/* keep freed device memory in the pool between runs (device timings) */
	CK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
	CK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
	CK(cudaEventCreate(&b.e0));
	CK(cudaEventCreate(&b.e1));
	b.mem.stream = b.stream;
	b.ctx.stream = b.stream;
	b.ctx.mem = &b.mem;

	printf("GPU: %s, %zu MB; median of %d runs; times in ms\n\n", name, total_bytes >> 20, b.runs);
	printf("| key bytes | records | distribution | bucket sort | radix sort (CUB) | CUB SortPairs alone | "
		   "bucket e2e | radix e2e | presorted |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	fflush(stdout);
	std::vector<std::string> phase_rows;

	for (size_t n : {(size_t) 10000000, (size_t) 100000000})
	{
		if (n > max_n)
			continue;
		for (int kw = 1; kw <= 4; kw++)
		{
			for (int d = 0; d < NDIST; d++)
			{
				uint64_t   *src,
						   *keys;
				uint32_t   *perm;
				std::vector<uint64_t> host;
				int			pre = 0;
				double		tb,
							tr,
							tc = 0,
							eb = 0,
							er = 0;
				GsCudaStats sb,
							sr;

				if (!strchr(widths, '0' + kw))
					continue;
				if ((kw > 1 || quick) && d != UNIFORM && d != FLOATS)
					continue;
				CK(cudaMalloc(&src, n * kw * sizeof(uint64_t)));
				CK(cudaMalloc(&keys, n * kw * sizeof(uint64_t)));
				CK(cudaMalloc(&perm, n * sizeof(uint32_t)));
				generate_kernel<<<4096, 256>>>(src, n, kw, d, 0x5EED + d * 17 + kw);
				CK(cudaDeviceSynchronize());

				std::string phases;

				tb = time_device(b, kw, GSCUDA_ALGO_BUCKET, src, keys, perm, n, &pre, &phases);
				phase_rows.push_back("| " + std::to_string(kw * 8) + " | " +
									 std::to_string(n / 1000000) + "M | " + dist_names[d] +
									 " | " + phases + " |");
				tr = time_device(b, kw, GSCUDA_ALGO_RADIX, src, keys, perm, n, &pre);
				if (kw == 1)
					tc = time_cub(b, src, keys, n);
				/* end to end only where it says something new */
				if ((d == UNIFORM || d == SORTED) && !quick)
				{
					host.resize(n * kw);
					CK(cudaMemcpy(host.data(), src, n * kw * sizeof(uint64_t), cudaMemcpyDeviceToHost));
				}
				CK(cudaFree(src));
				CK(cudaFree(keys));
				CK(cudaFree(perm));
				CK(cudaMemPoolTrimTo(pool, 0));
				if (!host.empty())
				{
					eb = time_api(b, kw, GSCUDA_ALGO_BUCKET, host.data(), n, &sb);
					er = time_api(b, kw, GSCUDA_ALGO_RADIX, host.data(), n, &sr);
				}
				printf("| %d | %zuM | %s | %.2f | %.2f | ", kw * 8, n / 1000000, dist_names[d], tb, tr);
				if (kw == 1)
					printf("%.2f | ", tc);
				else
					printf("- | ");
				if (eb > 0)
					printf("%.1f (h2d %.1f, sort %.2f, d2h %.1f) | %.1f (h2d %.1f, sort %.2f, d2h %.1f) | ",
						   eb, sb.h2d_ms, sb.sort_ms, sb.d2h_ms, er, sr.h2d_ms, sr.sort_ms, sr.d2h_ms);
				else
					printf("- | - | ");
				printf("%s |\n", pre == 1 ? "ascending" : pre == 2 ? "descending" : "no");
				fflush(stdout);
			}
		}
	}
	printf("\nBucket sort phases (one run, ms, from events between the phases):\n\n");
	printf("| key bytes | records | distribution | phases |\n|---|---|---|---|\n");
	for (const std::string &row : phase_rows)
		printf("%s\n", row.c_str());
	return 0;
}

/*-------------------------------------------------------------------------
 *
 * gscuda_common.cuh
 *	  What every part of the CUDA side shares: the record key type, the
 *	  composite (key, index) order, error reporting, waiting for the GPU,
 *	  launch helpers, and the device memory account that enforces a sort's
 *	  memory limit and injects faults.
 *
 * Errors inside the engine are C++ exceptions (GsError) that never leave
 * it: each extern "C" function of gscuda_api.cu catches everything and
 * turns it into a return code and a message.  Device memory is taken with
 * cudaMallocAsync on the sort's stream through GsMemory, which counts the
 * bytes held (for the limit and the peak reported in the stats); DevBuf
 * frees on scope exit, so an error anywhere releases what it took.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GS_COMMON_CUH
#define GS_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gscuda_types.h"

namespace gs
{

/* An error inside the engine; carries the message for the caller's errbuf. */
struct GsError
{
	std::string message;
	explicit GsError(std::string m) : message(std::move(m)) {}
};

[[noreturn]] inline void
fail(const char *what, cudaError_t err)
{
	char		buf[256];

	/* clear a non-sticky error so that the process stays usable */
	(void) cudaGetLastError();
	snprintf(buf, sizeof(buf), "%s: %s", what, cudaGetErrorString(err));
	throw GsError(buf);
}

[[noreturn]] inline void
fail(const char *what)
{
	throw GsError(what);
}

#define GS_CHECK(call) \
	do { \
		cudaError_t gs_err_ = (call); \
		if (gs_err_ != cudaSuccess) \
			::gs::fail(#call, gs_err_); \
	} while (0)

/*
 * Waiting for the GPU.  Without a hook a wait blocks inside CUDA.  The GPU
 * service sets one (gscuda_set_wait_hook): a wait then polls, and calls the
 * hook between polls with waiting = 1, so that the service keeps answering
 * what PostgreSQL asks of every process (ProcSignal barriers, which DROP
 * DATABASE and its replay on a standby wait for) during a long sort, and
 * once with waiting = 0 when the wait is over.  The hook sleeps a little
 * itself.  A hook that returns 0 (the service is stopping) ends the wait
 * with an error: the sort fails, and its backend sorts on the CPU.
 */
inline GsCudaWaitHook wait_hook = nullptr;

template <typename Query, typename Block>
inline cudaError_t
wait_for_gpu(Query query, Block block)
{
	cudaError_t err;
	bool		given_up = false;

	if (wait_hook == nullptr)
		return block();
	while ((err = query()) == cudaErrorNotReady)
		if (!wait_hook(1))
		{
			given_up = true;
			break;
		}
	(void) wait_hook(0);
	if (given_up)
		fail("waiting for the GPU: the GPU service is stopping");
	return err;
}

/* All work queued on the stream is done. */
inline cudaError_t
wait_stream(cudaStream_t stream)
{
	return wait_for_gpu([&] { return cudaStreamQuery(stream); },
						[&] { return cudaStreamSynchronize(stream); });
}

/*
 * Copy from the device into pageable host memory once the stream's work is
 * done.  CUDA returns from such a copy only when it is complete, and so
 * waits inside, with no hook, for all the work queued before it: wait for
 * that first.
 */
inline void
copy_to_pageable(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
	GS_CHECK(wait_stream(stream));
	GS_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
	GS_CHECK(wait_stream(stream));
}

/* The work before the event's record is done. */
inline cudaError_t
wait_event(cudaEvent_t event)
{
	return wait_for_gpu([&] { return cudaEventQuery(event); },
						[&] { return cudaEventSynchronize(event); });
}

/*
 * Per-sort context: the stream everything runs on, the memory account, and
 * the fault armed for this sort (tests only).
 */
struct GsMemory;
struct GsPhaseTimer;
struct GsContext
{
	cudaStream_t stream = nullptr;
	GsMemory   *mem = nullptr;
	int			fault = GSCUDA_FAULT_NONE;
	GsPhaseTimer *timer = nullptr;	/* phase times (kernel benchmark only) */
};

/*
 * Events recorded between the phases of a sort, so that the kernel
 * benchmark can say where the time goes; the owner destroys the events.
 */
struct GsPhaseTimer
{
	std::vector<const char *> names;
	std::vector<cudaEvent_t> events;
};

/* The phase `name` starts here (no-op unless a timer is attached). */
inline void
phase_mark(const GsContext &ctx, const char *name)
{
	cudaEvent_t ev;

	if (ctx.timer == nullptr || cudaEventCreate(&ev) != cudaSuccess)
		return;
	if (cudaEventRecord(ev, ctx.stream) != cudaSuccess)
	{
		cudaEventDestroy(ev);
		return;
	}
	ctx.timer->names.push_back(name);
	ctx.timer->events.push_back(ev);
}

/* Check a kernel launch (and the LAUNCH fault point). */
inline void
check_launch(const GsContext &ctx, const char *kernel)
{
	cudaError_t err = cudaGetLastError();
	bool		injected = (ctx.fault == GSCUDA_FAULT_LAUNCH);

	if (injected)
		err = cudaErrorLaunchFailure;
	if (err != cudaSuccess)
	{
		char		what[128];

		snprintf(what, sizeof(what), "launch of %s%s", kernel,
				 injected ? " (injected fault)" : "");
		fail(what, err);
	}
}

/* Device memory taken by one sort: limit, fault injection, peak. */
struct GsMemory
{
	size_t		limit = 0;		/* 0: none beyond what the device has */
	size_t		used = 0;
	size_t		peak = 0;
	int			fault = GSCUDA_FAULT_NONE;
	cudaStream_t stream = nullptr;

	void	   *alloc(size_t bytes)
	{
		void	   *p = nullptr;

		if (bytes == 0)
			bytes = 16;
		bytes = (bytes + 255) & ~(size_t) 255;
		if (fault == GSCUDA_FAULT_ALLOC)
			fail("cudaMallocAsync (injected fault)", cudaErrorMemoryAllocation);
		if (limit != 0 && used + bytes > limit)
		{
			char		buf[160];

			snprintf(buf, sizeof(buf),
					 "sort needs more than its GPU memory limit of %zu MB",
					 limit >> 20);
			fail(buf);
		}
		GS_CHECK(cudaMallocAsync(&p, bytes, stream));
		used += bytes;
		if (used > peak)
			peak = used;
		return p;
	}

	void		release(void *p, size_t bytes)
	{
		if (p == nullptr)
			return;
		if (bytes == 0)
			bytes = 16;
		bytes = (bytes + 255) & ~(size_t) 255;
		/* never throws: called from destructors */
		if (cudaFreeAsync(p, stream) != cudaSuccess)
			(void) cudaGetLastError();
		used -= bytes;
	}
};

/* A device array owned by a scope (or a sort); freed when it goes away. */
template <typename T>
struct DevBuf
{
	GsMemory   *mem = nullptr;
	T		   *ptr = nullptr;
	size_t		count = 0;

	DevBuf() = default;
	DevBuf(GsMemory *m, size_t n) { allocate(m, n); }
	DevBuf(const DevBuf &) = delete;
	DevBuf &operator=(const DevBuf &) = delete;
	~DevBuf() { reset(); }

	void		allocate(GsMemory *m, size_t n)
	{
		reset();
		mem = m;
		ptr = static_cast<T *>(m->alloc(n * sizeof(T)));
		count = n;
	}
	void		reset()
	{
		if (ptr)
			mem->release(ptr, count * sizeof(T));
		ptr = nullptr;
		count = 0;
	}
	void		swap(DevBuf &o)
	{
		std::swap(mem, o.mem);
		std::swap(ptr, o.ptr);
		std::swap(count, o.count);
	}
	T		   *get() const { return ptr; }
};

/* A key of N 64-bit words, word 0 most significant. */
template <int N>
struct alignas(8) Key
{
	uint64_t	w[N];
};

/*
 * Call f with std::integral_constant<int, N> for the key width N =
 * key_words (1..4): the one place where a run-time key width becomes the
 * template argument of the kernels.
 */
template <typename F>
inline void
with_key_words(int key_words, F &&f)
{
	switch (key_words)
	{
		case 1:
			f(std::integral_constant<int, 1>());
			break;
		case 2:
			f(std::integral_constant<int, 2>());
			break;
		case 3:
			f(std::integral_constant<int, 3>());
			break;
		default:
			f(std::integral_constant<int, 4>());
			break;
	}
}

template <int N>
__host__ __device__ __forceinline__ bool
key_less(const Key<N> &a, const Key<N> &b)
{
#pragma unroll
	for (int i = 0; i < N; i++)
	{
		if (a.w[i] != b.w[i])
			return a.w[i] < b.w[i];
	}
	return false;
}

template <int N>
__host__ __device__ __forceinline__ bool
key_equal(const Key<N> &a, const Key<N> &b)
{
#pragma unroll
	for (int i = 0; i < N; i++)
	{
		if (a.w[i] != b.w[i])
			return false;
	}
	return true;
}

/* The composite order that makes every record unique: (key, index). */
template <int N>
__host__ __device__ __forceinline__ bool
record_less(const Key<N> &a, uint32_t ai, const Key<N> &b, uint32_t bi)
{
#pragma unroll
	for (int i = 0; i < N; i++)
	{
		if (a.w[i] != b.w[i])
			return a.w[i] < b.w[i];
	}
	return ai < bi;
}

/* The key that pads a partial tile: sorts after (or with) every real key. */
template <int N>
__host__ __device__ __forceinline__ Key<N>
key_max()
{
	Key<N>		k;

#pragma unroll
	for (int i = 0; i < N; i++)
		k.w[i] = ~(uint64_t) 0;
	return k;
}

/* Index of a padding record: above every real index (n < 2^32 - 1). */
#define GS_PAD_INDEX 0xFFFFFFFFu

/* Bit range [begin, end) in which keys whose XOR-difference is diff differ. */
__host__ __device__ __forceinline__ void
diff_bit_range(uint64_t diff, int *begin, int *end)
{
	if (diff == 0)
	{
		*begin = 0;
		*end = 0;
		return;
	}
#ifdef __CUDA_ARCH__
	*begin = __ffsll((long long) diff) - 1;
	*end = 64 - __clzll((long long) diff);
#else
	*begin = __builtin_ctzll(diff);
	*end = 64 - __builtin_clzll(diff);
#endif
}

inline unsigned
div_up(size_t a, size_t b)
{
	return (unsigned) ((a + b - 1) / b);
}

/* Blocks of 256 threads for a grid-stride loop over count items. */
inline unsigned
stream_blocks(size_t count)
{
	unsigned	blocks = div_up(count, 256 * 4);

	return blocks == 0 ? 1 : (blocks > 65535 ? 65535 : blocks);
}

}								/* namespace gs */

#endif							/* GS_COMMON_CUH */

/*-------------------------------------------------------------------------
 *
 * gscuda_device.cu
 *	  Per-process state of the CUDA side (declared in gscuda_device.cuh):
 *	  device start-up and selection, the lost-context state, fault arming,
 *	  and the pinned host memory cache.
 *
 * Nothing here sorts: the C interface (gscuda_api.cu) and the pipeline
 * (gscuda_pipeline.cu) call it.
 *	- devices: open_device, any_device_open, describe_device, use_device,
 *	  check_current_device, select_current_device, count_devices, and
 *	  trim_device_pool, which the pipeline calls as a sort ends;
 *	- a lost GPU: device_lost, lost_error, probe_lost, and lose_device,
 *	  which the pipeline calls;
 *	- faults: arm_fault, take_armed_fault;
 *	- pinned host memory: pinned_alloc and pinned_release (the pipeline's
 *	  buffers), set_pinned_cache, register_host_memory.
 * No static constructor touches CUDA, so that the library loads in
 * processes that never use a GPU.
 *
 *-------------------------------------------------------------------------
 */
#include <atomic>
#include <map>
#include <string.h>
#include <unordered_map>

#include "gscuda_device.cuh"

namespace gs
{

#define GSCUDA_MAX_DEVICES 16
static int	cuda_init_state = 0;	/* 1: some device is ready */
static int	device_state[GSCUDA_MAX_DEVICES];	/* 0 untried, 1 ready, -1 failed */
static char device_error[GSCUDA_MAX_DEVICES][256];
static char device_name[GSCUDA_MAX_DEVICES][256];
static int	cuda_device = 0;
static int	cuda_device_count_cached = -2;	/* -2: not asked yet */
static char cuda_count_error[256];

/* the fault armed for the next sort */
static std::atomic<int> armed_fault(GSCUDA_FAULT_NONE);

/* a sticky error (or GSCUDA_FAULT_LOST): no sort of this process uses CUDA */
static bool cuda_lost = false;
static char cuda_lost_error[256];

/* ---------- devices ---------- */

/*
 * An empty kernel, never launched: whether the build has code for a device
 * is whether the runtime can load it there.  The Makefile's CUDA_ARCH
 * gives machine code for sm_80 and sm_90 and PTX for sm_90, so Ampere
 * (8.x) runs sm_80's code, Hopper sm_90's, and later GPUs the PTX compiled
 * by the driver; a device older than 8.0, or a build for other
 * architectures, fails here rather than at the first sort.
 */
static __global__ void
probe_kernel(void)
{
}

/* Create device's context and check that the build can run on it. */
static void
init_cuda(int device)
{
	int			count = 0;
	cudaDeviceProp prop;
	cudaFuncAttributes attr;
	cudaError_t err;

	GS_CHECK(cudaGetDeviceCount(&count));
	if (device < 0 || device >= count)
	{
		char		buf[128];

		snprintf(buf, sizeof(buf), "no CUDA device %d (%d found)", device, count);
		fail(buf);
	}
	GS_CHECK(cudaSetDevice(device));
	GS_CHECK(cudaFree(0));		/* create the context now */
	GS_CHECK(cudaGetDeviceProperties(&prop, device));
	err = cudaFuncGetAttributes(&attr, probe_kernel);
	if (err != cudaSuccess)
	{
		char		buf[400];

		(void) cudaGetLastError();
		snprintf(buf, sizeof(buf),
				 "%s has compute capability %d.%d, for which this build of gpusort has no code (%s)",
				 prop.name, prop.major, prop.minor, cudaGetErrorString(err));
		fail(buf);
	}
	snprintf(device_name[device], sizeof(device_name[device]), "%s", prop.name);
	cuda_device = device;
}

void
open_device(int device)
{
	if (device < 0 || device >= GSCUDA_MAX_DEVICES)
		fail("device number out of range");
	if (device_state[device] == 0)
	{
		try
		{
			init_cuda(device);
			device_state[device] = 1;
			cuda_init_state = 1;
		}
		catch (const GsError &e)
		{
			snprintf(device_error[device], sizeof(device_error[device]), "%s",
					 e.message.c_str());
			device_state[device] = -1;
		}
	}
	if (device_state[device] < 0)
		fail(device_error[device]);
}

bool
any_device_open(void)
{
	return cuda_init_state != 0;
}

void
describe_device(int device, char *name, size_t namelen, size_t *free_bytes,
				size_t *total_bytes)
{
	if (name && namelen > 0)
		snprintf(name, namelen, "%s", device_name[device]);
	if (free_bytes || total_bytes)
	{
		size_t		f = 0,
					t = 0;

		GS_CHECK(cudaSetDevice(device));
		GS_CHECK(cudaMemGetInfo(&f, &t));
		GS_CHECK(cudaSetDevice(cuda_device));
		if (free_bytes)
			*free_bytes = f;
		if (total_bytes)
			*total_bytes = t;
	}
}

bool
use_device(int device)
{
	if (device < 0 || device >= GSCUDA_MAX_DEVICES || device_state[device] != 1)
		return false;
	if (device != cuda_device && cudaSetDevice(device) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	cuda_device = device;
	return true;
}

void
check_current_device(void)
{
	if (device_state[cuda_device] != 1)
		fail(device_error[cuda_device]);
}

void
select_current_device(void)
{
	GS_CHECK(cudaSetDevice(cuda_device));
}

int
count_devices(const char **error)
{
	if (cuda_device_count_cached == -2)
	{
		int			count = 0;
		cudaError_t err = cudaGetDeviceCount(&count);

		if (err != cudaSuccess)
		{
			(void) cudaGetLastError();
			snprintf(cuda_count_error, sizeof(cuda_count_error), "cudaGetDeviceCount: %s",
					 cudaGetErrorString(err));
			cuda_device_count_cached = -1;
		}
		else
			cuda_device_count_cached = count;
	}
	if (cuda_device_count_cached < 0)
		*error = cuda_count_error;
	return cuda_device_count_cached;
}

void
trim_device_pool(void)
{
	cudaMemPool_t pool;

	if (cudaDeviceGetDefaultMemPool(&pool, cuda_device) == cudaSuccess)
		(void) cudaMemPoolTrimTo(pool, 0);
}

/* ---------- pinned host memory ---------- */

/*
 * Pinned host memory kept for the next sort of this process.  Pinning is
 * slow (the pages are faulted in and locked: tens of milliseconds for the
 * keys of 10M records), and a backend that sorts once tends to sort again,
 * so buffers go back to this cache at the end of a sort, up to
 * pinned_cache_limit bytes (gpusort.pinned_cache); the rest is freed.
 */
static std::multimap<size_t, void *> pinned_free_list;
static std::unordered_map<void *, size_t> pinned_sizes;
static size_t pinned_cached = 0;
static size_t pinned_cache_limit = (size_t) 512 << 20;

static void
pinned_trim(size_t limit)
{
	while (pinned_cached > limit && !pinned_free_list.empty())
	{
		auto		largest = std::prev(pinned_free_list.end());

		pinned_cached -= largest->first;
		pinned_sizes.erase(largest->second);
		(void) cudaFreeHost(largest->second);
		pinned_free_list.erase(largest);
	}
}

/* A pinned buffer of at least `bytes`: a cached one if it is not too big. */
void *
pinned_alloc(size_t bytes)
{
	auto		it = pinned_free_list.lower_bound(bytes);
	void	   *p = nullptr;

	if (it != pinned_free_list.end() && it->first <= 2 * bytes)
	{
		p = it->second;
		pinned_cached -= it->first;
		pinned_free_list.erase(it);
		return p;
	}
	if (cudaMallocHost(&p, bytes) != cudaSuccess)
	{
		/* maybe the cache holds what the system is missing */
		(void) cudaGetLastError();
		pinned_trim(0);
		GS_CHECK(cudaMallocHost(&p, bytes));
	}
	pinned_sizes[p] = bytes;
	return p;
}

void
pinned_release(void *p)
{
	auto		it = pinned_sizes.find(p);

	if (it == pinned_sizes.end())
		return;
	if (!cuda_lost && pinned_cached + it->second <= pinned_cache_limit)
	{
		pinned_free_list.insert({it->second, p});
		pinned_cached += it->second;
	}
	else
	{
		pinned_sizes.erase(it);
		(void) cudaFreeHost(p);
	}
}

void
set_pinned_cache(size_t bytes)
{
	pinned_cache_limit = bytes;
	pinned_trim(bytes);
}

cudaError_t
register_host_memory(void *p, size_t bytes)
{
	cudaError_t err = cudaHostRegister(p, bytes, cudaHostRegisterPortable);

	if (err != cudaSuccess)
		(void) cudaGetLastError();
	return err;
}

/* ---------- a lost GPU, faults ---------- */

bool
device_lost(void)
{
	return cuda_lost;
}

const char *
lost_error(void)
{
	return cuda_lost_error;
}

/* The GPU is gone for this process: remember why, keep no pinned cache. */
static void
mark_lost(const char *what, cudaError_t err)
{
	if (!cuda_lost)
		snprintf(cuda_lost_error, sizeof(cuda_lost_error), "GPU lost: %s: %s",
				 what, cudaGetErrorString(err));
	cuda_lost = true;
	pinned_trim(0);
}

void
lose_device(const char *what, cudaError_t err)
{
	mark_lost(what, err);
	fail(cuda_lost_error);
}

/*
 * After a failed call: is the context still usable?  A sticky error (an
 * illegal address, a device fallen off the bus) comes back from every later
 * call; an ordinary one is returned once.
 */
void
probe_lost(void)
{
	cudaError_t err;

	if (cuda_lost || cuda_init_state != 1)
		return;
	(void) cudaGetLastError();
	if (cudaDeviceSynchronize() == cudaSuccess)
		return;
	(void) cudaGetLastError();
	err = cudaDeviceSynchronize();
	if (err != cudaSuccess)
		mark_lost("sticky error", err);
}

void
arm_fault(int fault)
{
	armed_fault.store(fault);
}

int
take_armed_fault(void)
{
	return armed_fault.exchange(GSCUDA_FAULT_NONE);
}

}								/* namespace gs */

/*-------------------------------------------------------------------------
 *
 * gscuda_device.cuh
 *	  Per-process state of the CUDA side: the devices opened, the current
 *	  one, a lost context, the fault armed for the next sort, and the cache
 *	  of pinned host memory.
 *
 * The GPU service opens each device it is allowed (open_device) and points
 * each sort's calls at its device (use_device); the process is
 * single-threaded, so "the current device" is one variable and nothing
 * here locks.  The pipeline (gscuda_pipeline.cu) takes its pinned buffers
 * from pinned_alloc() and gives them back with pinned_release(); the C
 * interface (gscuda_api.cu) reads and sets the rest.  Functions that can
 * fail throw GsError (gscuda_common.cuh).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_DEVICE_CUH
#define GSCUDA_DEVICE_CUH

#include "gscuda_common.cuh"

namespace gs
{

/*
 * Open device `device`: the first call creates its context and makes it
 * current; every call throws why it is not usable, if it is not.
 */
void		open_device(int device);

/* Whether some device has been opened. */
bool		any_device_open(void);

/* The name and memory of an open device (name, free_bytes, total_bytes may be NULL). */
void		describe_device(int device, char *name, size_t namelen,
							size_t *free_bytes, size_t *total_bytes);

/* Make open device `device` current; false if it is not open or unusable. */
bool		use_device(int device);

/* Throw unless the current device is open and usable. */
void		check_current_device(void);

/* Make the current device CUDA's current device for this thread. */
void		select_current_device(void);

/* Number of CUDA devices (asked once), or -1 with *error set. */
int			count_devices(const char **error);

/* Give the current device's freed pool memory back, so that others see it free. */
void		trim_device_pool(void);

/*
 * A lost GPU: a sticky error (or GSCUDA_FAULT_LOST) leaves the process's
 * CUDA context unusable until it exits, and every later sort fails at once.
 * lost_error() says why; lose_device() records it and throws; probe_lost(),
 * after a failed call, finds out whether the error was sticky.
 */
bool		device_lost(void);
const char *lost_error(void);
[[noreturn]] void lose_device(const char *what, cudaError_t err);
void		probe_lost(void);

/* Fault injection: arm one for the next sort; the sort takes it (and disarms). */
void		arm_fault(int fault);
int			take_armed_fault(void);

/*
 * Pinned host memory: a buffer of at least `bytes` (from the cache where
 * one fits), its release (into the cache, up to its limit), and the limit.
 */
void	   *pinned_alloc(size_t bytes);
void		pinned_release(void *p);
void		set_pinned_cache(size_t bytes);

/* Pin host memory for every device, so that uploads read it by DMA. */
cudaError_t register_host_memory(void *p, size_t bytes);

}								/* namespace gs */

#endif							/* GSCUDA_DEVICE_CUH */

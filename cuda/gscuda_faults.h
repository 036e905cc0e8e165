/*-------------------------------------------------------------------------
 *
 * gscuda_faults.h
 *	  The CUDA side's fault injection points, for the reliability tests
 *	  (test/RELIABILITY.md): the one list of them.
 *
 * Both sides of the extension name a GPU fault by these codes: src/support/faults.c
 * parses gpusort.inject_fault's gpu_* values into them, the GPU engine
 * (src/engine/engine_gpu.c) posts the one armed in its request to the GPU service,
 * and the service (src/service/service_sort.c) arms it in the CUDA side with
 * gscuda_set_fault() (gscuda_api.h), whose layers check it where each
 * step can fail.  Plain C with no includes, so that src/ includes it in a
 * build without CUDA too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GSCUDA_FAULTS_H
#define GSCUDA_FAULTS_H

typedef enum GsCudaFault
{
	GSCUDA_FAULT_NONE = 0,
	GSCUDA_FAULT_INIT,			/* context creation */
	GSCUDA_FAULT_ALLOC,			/* device allocation */
	GSCUDA_FAULT_H2D,			/* host-to-device copy */
	GSCUDA_FAULT_LAUNCH,		/* kernel launch */
	GSCUDA_FAULT_KERNEL,		/* kernel execution */
	GSCUDA_FAULT_D2H,			/* device-to-host copy */
	GSCUDA_FAULT_LOST,			/* the GPU is lost after the first chunk */
	GSCUDA_FAULT_BUSY			/* no failure: a kernel keeps the sort's stream
								 * busy for GSCUDA_BUSY_MS before the sort */
} GsCudaFault;

#define GSCUDA_BUSY_MS 5000

#endif							/* GSCUDA_FAULTS_H */

/*-------------------------------------------------------------------------
 *
 * faults.c
 *	  Fault and delay injection points, for the reliability tests.
 *
 * gpusort.inject_fault (superuser only) names one fault; faults.h lists
 * the syntax.  The check hook parses the value once, into a GpuSortFault
 * that the assign hook makes current (gpusort_inject_fault_check,
 * gpusort_inject_fault_assign: settings.c defines the setting with them),
 * so the injection points themselves cost one comparison when nothing is
 * armed.  The points: gpusort_fault_point, where each phase's error or
 * delay strikes; gpusort_fault_arena_oom (batch_load.c) and
 * gpusort_fault_cpu_alloc (engine_cpu.c), which fail an allocation; and
 * gpusort_fault_gpu, the GPU fault that the GPU engine posts with its
 * request.
 *
 * A delay sleeps in slices of at most 10 ms on the process latch and checks
 * for interrupts after each, so that pg_cancel_backend, statement_timeout
 * and pg_terminate_backend end it at once; it happens once per statement
 * (the executor passes the load and emit points many times per sort), and
 * says so in the server log, so that a test can see which phase it caught.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "support/compat.h"
#include "support/faults.h"
#include "support/wait_events.h"

typedef enum GpuSortFaultKind
{
	FAULT_NONE,
	FAULT_ERROR,
	FAULT_DELAY,
	FAULT_ARENA_OOM,
	FAULT_CPU_ALLOC,
	FAULT_GPU
} GpuSortFaultKind;

typedef struct GpuSortFault
{
	GpuSortFaultKind kind;
	GpuSortPhase phase;			/* error, delay */
	int			delay_ms;		/* delay */
	GsCudaFault gpu;			/* gpu */
} GpuSortFault;

static const char *const phase_names[] = {
	[GPUSORT_PHASE_LOAD] = "load",
	[GPUSORT_PHASE_ENCODE] = "encode",
	[GPUSORT_PHASE_THREADS] = "threads",
	[GPUSORT_PHASE_SORT] = "sort",
	[GPUSORT_PHASE_RESOLVE] = "resolve",
	[GPUSORT_PHASE_SPILL] = "spill",
	[GPUSORT_PHASE_MERGE] = "merge",
	[GPUSORT_PHASE_EMIT] = "emit",
	[GPUSORT_PHASE_REPLAY] = "replay",
};

static const struct
{
	const char *name;
	GsCudaFault fault;
}			gpu_faults[] = {
	{"gpu_init", GSCUDA_FAULT_INIT},
	{"gpu_alloc", GSCUDA_FAULT_ALLOC},
	{"gpu_h2d", GSCUDA_FAULT_H2D},
	{"gpu_launch", GSCUDA_FAULT_LAUNCH},
	{"gpu_kernel", GSCUDA_FAULT_KERNEL},
	{"gpu_d2h", GSCUDA_FAULT_D2H},
	{"gpu_lost", GSCUDA_FAULT_LOST},
	{"gpu_busy", GSCUDA_FAULT_BUSY},
};

/* the fault armed now */
static GpuSortFault fault = {FAULT_NONE};

/* the statement whose delay has been served */
static TimestampTz delayed_statement = 0;

#define MAX_DELAY_MS	(3600 * 1000)
#define DELAY_SLICE_MS	10

static bool
parse_phase(const char *s, size_t len, GpuSortPhase *phase)
{
	for (int i = 0; i < lengthof(phase_names); i++)
	{
		if (strlen(phase_names[i]) == len && strncmp(s, phase_names[i], len) == 0)
		{
			*phase = (GpuSortPhase) i;
			return true;
		}
	}
	return false;
}

static bool
parse_fault(const char *value, GpuSortFault *f)
{
	memset(f, 0, sizeof(*f));
	f->kind = FAULT_NONE;

	if (value == NULL || value[0] == '\0' || strcmp(value, "none") == 0)
		return true;
	if (strcmp(value, "arena_oom") == 0)
	{
		f->kind = FAULT_ARENA_OOM;
		return true;
	}
	if (strcmp(value, "cpu_alloc") == 0)
	{
		f->kind = FAULT_CPU_ALLOC;
		return true;
	}
	for (int i = 0; i < lengthof(gpu_faults); i++)
	{
		if (strcmp(value, gpu_faults[i].name) == 0)
		{
			f->kind = FAULT_GPU;
			f->gpu = gpu_faults[i].fault;
			return true;
		}
	}
	if (strncmp(value, "error:", 6) == 0)
	{
		f->kind = FAULT_ERROR;
		return parse_phase(value + 6, strlen(value + 6), &f->phase);
	}
	if (strncmp(value, "delay:", 6) == 0)
	{
		const char *p = value + 6;
		const char *colon = strchr(p, ':');
		char	   *end;
		long		ms;

		f->kind = FAULT_DELAY;
		if (colon == NULL || !parse_phase(p, colon - p, &f->phase))
			return false;
		errno = 0;
		ms = strtol(colon + 1, &end, 10);
		if (errno != 0 || end == colon + 1 || *end != '\0' || ms < 0 || ms > MAX_DELAY_MS)
			return false;
		f->delay_ms = (int) ms;
		return true;
	}
	return false;
}

bool
gpusort_inject_fault_check(char **newval, void **extra, GucSource source)
{
	GpuSortFault f;
	GpuSortFault *copy;

	if (!parse_fault(*newval, &f))
	{
		GUC_check_errdetail("gpusort.inject_fault is '' (none), 'error:PHASE', 'delay:PHASE:MS' "
							"(MS up to %d), 'arena_oom', 'cpu_alloc', 'gpu_init', 'gpu_alloc', 'gpu_h2d', "
							"'gpu_launch', 'gpu_kernel', 'gpu_d2h', 'gpu_lost' or 'gpu_busy'; PHASE is "
							"load, encode, threads, sort, resolve, spill, merge, emit or replay.", MAX_DELAY_MS);
		return false;
	}
	copy = guc_malloc(LOG, sizeof(GpuSortFault));
	if (copy == NULL)
		return false;
	*copy = f;
	*extra = copy;
	return true;
}

void
gpusort_inject_fault_assign(const char *newval, void *extra)
{
	if (extra)
		fault = *(GpuSortFault *) extra;
	else
		fault.kind = FAULT_NONE;
	delayed_statement = 0;
}

/* Sleep ms milliseconds; a cancel or termination ends it at once. */
static void
injected_sleep(int ms)
{
	TimestampTz end = GetCurrentTimestamp() + (TimestampTz) ms * 1000;

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		long		left_ms;

		CHECK_FOR_INTERRUPTS();
		if (now >= end)
			break;
		left_ms = (long) ((end - now + 999) / 1000);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left_ms, DELAY_SLICE_MS),
						 gpusort_wait_event(GPUSORT_WAIT_INJECTED_DELAY));
		ResetLatch(MyLatch);
	}
}

void
gpusort_fault_point(GpuSortPhase phase)
{
	if (likely(fault.kind != FAULT_ERROR && fault.kind != FAULT_DELAY) ||
		fault.phase != phase)
		return;

	if (fault.kind == FAULT_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_OPERATOR_INTERVENTION),
				 errmsg("gpusort: injected error in the %s phase", phase_names[phase]),
				 errdetail("gpusort.inject_fault is set.")));

	/* a delay, once per statement */
	if (delayed_statement == GetCurrentStatementStartTimestamp())
		return;
	delayed_statement = GetCurrentStatementStartTimestamp();
	ereport(LOG,
			(errmsg("gpusort: injected delay of %d ms in the %s phase",
					fault.delay_ms, phase_names[phase]),
			 errhidestmt(true)));
	injected_sleep(fault.delay_ms);
}

GsCudaFault
gpusort_fault_gpu(void)
{
	return fault.kind == FAULT_GPU ? fault.gpu : GSCUDA_FAULT_NONE;
}

bool
gpusort_fault_arena_oom(Size arena_bytes)
{
	return fault.kind == FAULT_ARENA_OOM && arena_bytes > 0;
}

bool
gpusort_fault_cpu_alloc(size_t chunkno)
{
	return fault.kind == FAULT_CPU_ALLOC && chunkno >= 2;
}

/*-------------------------------------------------------------------------
 *
 * sort_budget.c
 *	  The memory budgets of GpuSort: gpusort.max_memory for every GpuSort
 *	  of a backend together, and gpusort.server_memory for every GpuSort
 *	  of the server together.
 *
 * PostgreSQL's Sort takes work_mem for each sort node, so a plan with five
 * sorts may hold five times work_mem.  GpuSort instead keeps one budget per
 * backend: each sort registers what it holds (its batch of tuples, keys and
 * workspace, as it grows; its merge buffers), and a sort's batch may grow to
 * what the others leave of the budget at that moment.
 *
 * The default, gpusort.max_memory = -1, gives a sort never less than
 * PostgreSQL's Sort would have for the same plan: work_mem for each process
 * that sorts.  The backend's budget is the larger of a share of the
 * machine (an eighth of gpusort.server_memory, or a sixteenth of the
 * machine's memory where there is no server budget; budget_total) and
 * work_mem for each process that sorts with the backend: itself, and the
 * workers of each parallel GpuSort of its query (nodeGpuSortLoad.c counts
 * them, as planned, from the query's start to its end), since a parallel
 * Sort has work_mem in each of them, and a parallel GpuSort puts all their
 * rows into the one sort of the leader.  And each sort may hold work_mem,
 * whatever the backend's other sorts hold, as each Sort node may.  Both
 * yield to the server's budget, which still bounds every sort of the
 * server together.  A gpusort.max_memory set to a size is the backend's
 * budget, and nothing more.
 *
 * A backend's budget alone would let a server with hundreds of connections
 * hold hundreds of times gpusort.max_memory.  So, where gpusort is preloaded,
 * what each backend's sorts hold is also added up in shared memory, and a
 * sort may hold no more than the server's budget less what every other
 * sort of the server holds: the smaller of the two answers wins.  The
 * server's total is kept in one atomic counter, moved by each change a sort
 * makes to what it holds; a backend that exits takes out what it still
 * counts (on_shmem_exit), and a crash restart initializes the counter
 * again.  Loaded without shared_preload_libraries there is no shared
 * memory, and only the backend's budget applies.
 *
 * When the others hold it all, a sort still gets BUDGET_SORT_MINIMUM (or
 * the backend's budget, if smaller) and spills in runs of that size, so
 * that it finishes rather than fail; so either budget can be passed by at
 * most that much per sort that runs at the same time.
 *
 * Both default to shares of the machine's memory: its physical memory or,
 * where the server runs in a cgroup with a lower memory limit (a container,
 * a systemd unit's MemoryMax=), that limit (cgroup_memory.c), since the
 * kernel ends a process that passes it whatever the machine has left;
 * gpusort_info()'s column memory says which it is, and why.
 *
 * A sort's share lives in its memory context and is given back by that
 * context's reset callback, so an ERROR, a cancel or the end of a portal
 * give it back with the memory, and the count never leaks.  Parallel
 * workers are backends of their own: each has its own backend budget, and
 * counts in the server's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "cgroup_memory.h"
#include "shmem.h"
#include "settings.h"
#include "sort_budget.h"

#define MEGABYTE	((Size) 1024 * 1024)

/* what the backend's sorts hold together */
static Size backend_in_use = 0;

/* parallel workers that sort with the backend now (budget_count_workers) */
static int	backend_workers = 0;

/*
 * Whether backend_in_use is in the server's total: not yet (nothing held
 * since the backend started, or no shared memory), yes (and an exit hook
 * will take it out), or no more (the hook has run).
 */
typedef enum ServerCount
{
	SERVER_UNCOUNTED,
	SERVER_COUNTED,
	SERVER_LEFT
} ServerCount;

static ServerCount server_count = SERVER_UNCOUNTED;

/* The backend exits: what its sorts still hold leaves the server's total. */
static void
uncount_backend_at_exit(int code, Datum arg)
{
	pg_atomic_fetch_sub_u64(&gpusort_shared->sort_memory_held, (int64) backend_in_use);
	server_count = SERVER_LEFT;
}

/* Move what the backend holds, here and in the server's total. */
static void
move_held(Size old_bytes, Size new_bytes)
{
	int64		change = (int64) new_bytes - (int64) old_bytes;

	Assert(backend_in_use >= old_bytes);
	backend_in_use = backend_in_use - old_bytes + new_bytes;
	if (gpusort_shared == NULL || change == 0 || server_count == SERVER_LEFT)
		return;
	if (server_count == SERVER_UNCOUNTED)
	{
		if (proc_exit_inprogress)
			return;
		on_shmem_exit(uncount_backend_at_exit, 0);
		server_count = SERVER_COUNTED;
		/* the first count: all the backend holds */
		change = (int64) backend_in_use;
	}
	pg_atomic_fetch_add_u64(&gpusort_shared->sort_memory_held, change);
}

static void
budget_release(void *arg)
{
	BudgetShare *share = (BudgetShare *) arg;

	move_held(share->held, 0);
	share->held = 0;
	backend_workers -= share->workers;
	share->workers = 0;
}

/* A new sort, whose share lives as long as owner's memory. */
void
budget_join(BudgetShare *share, MemoryContext owner)
{
	share->held = 0;
	share->workers = 0;
	share->server_bound = false;
	share->release.func = budget_release;
	share->release.arg = share;
	MemoryContextRegisterResetCallback(owner, &share->release);
}

/*
 * The share's sort has parallel workers that sort for it (a parallel
 * GpuSort's load), as many as planned: while the share lives, the
 * backend's default budget counts work_mem for each of them too.
 */
void
budget_count_workers(BudgetShare *share, int workers)
{
	workers = Max(workers, 0);
	backend_workers += workers - share->workers;
	share->workers = workers;
}

/* work_mem for each process that sorts with the backend, in bytes */
static Size
work_mem_of_processes(void)
{
	return (Size) work_mem * 1024 * (Size) (1 + backend_workers);
}

/* The sort holds bytes now. */
void
budget_hold(BudgetShare *share, Size bytes)
{
	move_held(share->held, bytes);
	share->held = bytes;
}

/* the machine's physical memory in bytes; 0 if the system does not say */
static Size
physical_memory(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || page_size <= 0)
		return 0;
	return (Size) pages * (Size) page_size;
}

static double
gigabytes(Size bytes)
{
	return (double) bytes / (1024.0 * MEGABYTE);
}

/*
 * The memory the default budgets are taken from, in bytes (0: unknown): the
 * machine's physical memory or, where it is lower, the limit of the
 * process's cgroup (cgroup_memory.c); and, in *why (when not NULL), which it
 * is and why, for gpusort_info().  Found once per process: neither changes
 * while the server runs, short of moving it to another cgroup.
 */
static Size
machine_memory(const char **why)
{
	static bool known = false;
	static Size bytes = 0;
	static char description[2 * CGROUP_PATH_LEN];

	if (!known)
	{
		Size		ram = physical_memory();
		CgroupMemory cg;

		(void) cgroup_memory_limit("/proc/self/cgroup", "/proc/self/mountinfo", &cg);
		if (cg.limit > 0 && (ram == 0 || cg.limit < ram))
		{
			bytes = (Size) cg.limit;
			if (ram > 0)
				snprintf(description, sizeof(description),
						 "cgroup v%d limit %.1f GB (%s), below physical memory %.1f GB",
						 cg.version, gigabytes(bytes), cg.file, gigabytes(ram));
			else
				snprintf(description, sizeof(description),
						 "cgroup v%d limit %.1f GB (%s); physical memory unknown",
						 cg.version, gigabytes(bytes), cg.file);
		}
		else if (ram > 0)
		{
			bytes = ram;
			if (cg.limit > 0)
				snprintf(description, sizeof(description),
						 "physical memory %.1f GB, below the cgroup v%d limit %.1f GB (%s)",
						 gigabytes(ram), cg.version, gigabytes((Size) cg.limit), cg.file);
			else if (cg.version > 0 && cg.file[0] != '\0')
				snprintf(description, sizeof(description),
						 "physical memory %.1f GB; no cgroup v%d limit (%s)",
						 gigabytes(ram), cg.version, cg.file);
			else if (cg.version > 0)
				snprintf(description, sizeof(description),
						 "physical memory %.1f GB; no cgroup v%d memory limit",
						 gigabytes(ram), cg.version);
			else
				snprintf(description, sizeof(description),
						 "physical memory %.1f GB; no cgroup memory controller found",
						 gigabytes(ram));
		}
		else
			snprintf(description, sizeof(description),
					 "unknown: the system gives neither its physical memory nor a cgroup limit");
		known = true;
	}
	if (why)
		*why = description;
	return bytes;
}

/* gpusort_info()'s memory: what the default budgets are taken from */
void
budget_describe_memory(StringInfo buf)
{
	const char *why;

	(void) machine_memory(&why);
	appendStringInfoString(buf, why);
}

/*
 * The machine's share of gpusort.max_memory = -1: an eighth of the
 * server's budget (so a sixteenth of the machine's memory when that is -1
 * too), or a sixteenth of the machine's memory where there is no server
 * budget, in whole megabytes and never under BUDGET_DERIVED_MINIMUM.  A
 * fixed default is wrong at one end or the other: 2 GB, the default
 * before, is an eighth of a 16 GB machine for one backend, and makes a
 * 50M-row sort on a 128 GB machine write runs that it has the memory to
 * avoid.  The server's budget is what keeps hundreds of connections safe;
 * this one keeps a few large sorts from taking all of it.
 */
static Size
machine_share(void)
{
	static Size derived = 0;
	Size		server = budget_server_limit();

	if (server > 0)
		return Max(TYPEALIGN_DOWN(MEGABYTE, server / 8), BUDGET_DERIVED_MINIMUM);
	if (derived == 0)
	{
		Size		ram = machine_memory(NULL);

		derived = ram > 0 ? Max(TYPEALIGN_DOWN(MEGABYTE, ram / 16), BUDGET_DERIVED_MINIMUM)
			: BUDGET_DERIVED_UNKNOWN;
	}
	return derived;
}

/*
 * gpusort.max_memory, in bytes.  -1, the default, is the larger of the
 * machine's share and work_mem for each process that sorts with the
 * backend (the file's head says why).
 */
Size
budget_total(void)
{
	if (gpusort_max_memory_kb >= 0)
		return (Size) gpusort_max_memory_kb * 1024;
	return Max(machine_share(), work_mem_of_processes());
}

/*
 * gpusort.server_memory, in bytes, -1 resolved to half the machine's
 * memory (machine_memory); 0 where there is no server budget (not
 * preloaded, or set to 0).
 */
Size
budget_server_limit(void)
{
	static Size half_of_ram = 0;

	if (gpusort_shared == NULL || gpusort_server_memory_kb == 0)
		return 0;
	if (gpusort_server_memory_kb > 0)
		return (Size) gpusort_server_memory_kb * 1024;
	if (half_of_ram == 0)
	{
		Size		ram = machine_memory(NULL);

		/* unknown: eight times the unknown machine's derived backend budget */
		half_of_ram = ram > 0 ? ram / 2 : 8 * BUDGET_DERIVED_UNKNOWN;
	}
	return half_of_ram;
}

/*
 * What the sort may hold in all: what the backend's other sorts leave of
 * its budget (by default never less than work_mem, a Sort node's), or what
 * the server's other sorts leave of the server's, if that is less
 * (share->server_bound says which).
 */
Size
budget_available(BudgetShare *share)
{
	Size		total = budget_total();
	Size		others = backend_in_use - share->held;
	Size		left = (others < total) ? total - others : 0;
	Size		server = budget_server_limit();

	if (gpusort_max_memory_kb < 0)
		left = Max(left, (Size) work_mem * 1024);

	share->server_bound = false;
	if (server > 0)
	{
		Size		held_all = (Size) pg_atomic_read_u64(&gpusort_shared->sort_memory_held);
		Size		server_others = (held_all > share->held) ? held_all - share->held : 0;
		Size		server_left = (server_others < server) ? server - server_others : 0;

		if (server_left < left)
		{
			left = server_left;
			share->server_bound = true;
		}
	}
	return Max(left, Min(total, BUDGET_SORT_MINIMUM));
}

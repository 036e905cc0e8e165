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
 * what each backend's sorts hold is also added up in shared memory, in one
 * atomic counter, and gpusort.server_memory bounds it.  A sort does not ask
 * what is free and then take it, which lets sorts that ask at the same
 * moment take the same room twice; it reserves before it grows
 * (budget_reserve): one compare-and-swap on the counter moves what it
 * holds only if the server's total stays within the limit, and a sort
 * that gets less than it asked for grows no further, or writes a run.  A
 * batch grows its reservation in steps as it fills (sort.c), and the
 * blocks of a parallel load reserve before the workers may fill them
 * (nodeGpuSortLoad.c), so the counter never holds less than the memory,
 * and what a sort reserved and did not use goes back when it writes its
 * run or ends.  A backend that exits takes out what it still counts
 * (on_shmem_exit), and a crash restart initializes the counter again.
 * Loaded without shared_preload_libraries there is no shared memory, and
 * only the backend's budget applies.
 *
 * When the others hold it all, a sort still gets BUDGET_SORT_MINIMUM (or
 * the backend's budget, if smaller) and spills in runs of that size, so
 * that it finishes rather than fail or wait on memory that a cursor may
 * hold for hours.  For that minimum the server keeps a reserve: sorts grow
 * only to the limit less a sixteenth of it (BUDGET_SERVER_RESERVE_FRACTION),
 * and only a sort below its minimum may take the reserve.  So the
 * server's budget holds as long as no more sorts than the reserve has
 * minimums for (16 on a 256 MB budget, 4,096 on the default of a 128 GB
 * machine) start while every other byte is held; past that, each further
 * one passes it by its minimum.  The counter's peak since the server
 * started is in gpusort_stat.
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

#include "sort/sort_budget.h"
#include "support/cgroup_memory.h"
#include "support/settings.h"
#include "support/shmem.h"

#define MEGABYTE	((Size) 1024 * 1024)

/*
 * The part of gpusort.server_memory (one in this many bytes) that only a
 * sort below its minimum may take, so that a sort that starts while every
 * other byte is held still finds its minimum within the limit.
 */
#define BUDGET_SERVER_RESERVE_FRACTION	16

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

/* The server's total is now total: keep its peak. */
static void
note_peak(uint64 total)
{
	uint64		peak = pg_atomic_read_u64(&gpusort_shared->sort_memory_peak);

	while (total > peak &&
		   !pg_atomic_compare_exchange_u64(&gpusort_shared->sort_memory_peak,
										   &peak, total))
		;
}

/*
 * Whether the backend's holdings are in the server's total, counting them
 * there first if they are not yet: false where there is no server total,
 * or the backend is leaving it.
 */
static bool
server_counts_backend(void)
{
	if (gpusort_shared == NULL || server_count == SERVER_LEFT)
		return false;
	if (server_count == SERVER_UNCOUNTED)
	{
		if (proc_exit_inprogress)
			return false;
		on_shmem_exit(uncount_backend_at_exit, 0);
		server_count = SERVER_COUNTED;
		note_peak(pg_atomic_add_fetch_u64(&gpusort_shared->sort_memory_held,
										  (int64) backend_in_use));
	}
	return true;
}

/* Move what the backend holds, here and in the server's total. */
static void
move_held(Size old_bytes, Size new_bytes)
{
	int64		change = (int64) new_bytes - (int64) old_bytes;

	bool		counted;

	Assert(backend_in_use >= old_bytes);
	if (change == 0)
		return;
	/* a first count adds what the backend held before this change */
	counted = server_counts_backend();
	backend_in_use = backend_in_use - old_bytes + new_bytes;
	if (counted)
		note_peak(pg_atomic_add_fetch_u64(&gpusort_shared->sort_memory_held,
										  change));
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
 * What the backend's budget leaves the share: what the backend's other
 * sorts leave of its total, by default never less than work_mem, a Sort
 * node's.
 */
static Size
backend_room(BudgetShare *share)
{
	Size		total = budget_total();
	Size		others = backend_in_use - share->held;
	Size		left = (others < total) ? total - others : 0;

	if (gpusort_max_memory_kb < 0)
		left = Max(left, (Size) work_mem * 1024);
	return left;
}

/* what a sort may always hold, whatever the others hold */
static Size
sort_minimum(void)
{
	return Min(budget_total(), BUDGET_SORT_MINIMUM);
}

/*
 * What the server's budget leaves the share to grow to, beside what every
 * other sort holds, where the total is held_all: the limit less its
 * reserve, and the reserve too up to the sort's minimum (the file's head
 * says why).
 */
static Size
server_room(BudgetShare *share, Size server, uint64 held_all)
{
	Size		others = (held_all > share->held) ? (Size) held_all - share->held : 0;
	Size		growth_limit = server - server / BUDGET_SERVER_RESERVE_FRACTION;
	Size		room = (others < growth_limit) ? growth_limit - others : 0;

	return Max(room, sort_minimum());
}

/*
 * What the sort may hold in all, as things are now: what the backend's
 * other sorts leave of its budget, or what the server's other sorts leave
 * of the server's, if that is less (share->server_bound says which).  An
 * answer, not a promise: the sort takes it with budget_reserve, which may
 * grant less if others took it meanwhile.
 */
Size
budget_available(BudgetShare *share)
{
	Size		left = backend_room(share);
	Size		server = budget_server_limit();

	share->server_bound = false;
	if (server > 0)
	{
		Size		server_left = server_room(share, server,
											  pg_atomic_read_u64(&gpusort_shared->sort_memory_held));

		if (server_left < left)
		{
			left = server_left;
			share->server_bound = true;
		}
	}
	return Max(left, sort_minimum());
}

/*
 * Make what the sort holds want bytes, or as near as the budgets allow,
 * and return what it holds then.  Holding less always succeeds.  Holding
 * more is granted up to what the backend's budget leaves and, in one
 * compare-and-swap on the server's total, what the server's leaves, so
 * that sorts that grow at the same moment cannot take the same room; a
 * grant the server cut short sets share->server_bound.
 */
Size
budget_reserve(BudgetShare *share, Size want)
{
	Size		target = Min(want, Max(backend_room(share), sort_minimum()));
	Size		server = budget_server_limit();
	uint64		held_all;

	if (want <= share->held)
	{
		budget_hold(share, want);
		return want;
	}
	if (target <= share->held)
		return share->held;
	if (server == 0 || !server_counts_backend())
	{
		budget_hold(share, target);
		return target;
	}

	held_all = pg_atomic_read_u64(&gpusort_shared->sort_memory_held);
	for (;;)
	{
		Size		grant = Min(target, server_room(share, server, held_all));
		uint64		new_all;

		if (grant <= share->held)
		{
			share->server_bound = true;
			return share->held;
		}
		new_all = held_all - share->held + grant;
		if (pg_atomic_compare_exchange_u64(&gpusort_shared->sort_memory_held,
										   &held_all, new_all))
		{
			backend_in_use = backend_in_use - share->held + grant;
			share->held = grant;
			note_peak(new_all);
			if (grant < target)
				share->server_bound = true;
			return grant;
		}
	}
}

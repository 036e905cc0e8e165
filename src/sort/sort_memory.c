/*-------------------------------------------------------------------------
 *
 * sort_memory.c
 *	  The sort module's memory: the budgets of GpuSort, gpusort.max_memory
 *	  for every GpuSort of a backend together and gpusort.server_memory for
 *	  every GpuSort of the server together, and the policy by which a
 *	  sort's batches, its merge and its emit copy take of them.
 *
 * The sort (sort.c) asks this file what a batch may hold and when it is
 * to spill; the batch measures what it holds (batch_memory, batch.c), and
 * the parallel load holds its blocks in a share of the budget of its own
 * (through sort.h).
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
 * whatever the backend's other sorts hold, as each Sort node may (an index
 * build's sort maintenance_work_mem, as PostgreSQL's build may).  Both
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
 * batch grows its reservation in steps as it fills (sort_memory_grow_batch),
 * and the blocks of a parallel load reserve before the workers may fill them
 * (load_blocks.c), so the counter never holds less than the memory, and
 * what a sort reserved and did not use goes back when it writes its run or
 * ends.  A backend that exits takes out what it still counts (on_shmem_exit),
 * and a crash restart initializes the counter again.  Loaded without
 * shared_preload_libraries there is no shared memory, and only the backend's
 * budget applies.
 *
 * The server's budget alone would let one role take it all: a client that
 * opens cursors over large sorts and leaves them idle in their
 * transactions holds their memory for as long as it likes.  So what the
 * sessions of each role hold is added up too, in a slot of the server's
 * table (GpuSortRoleMemory, shmem.h) for each role with a counted session,
 * and gpusort.role_memory (a quarter of the server's budget by default)
 * bounds it, reserved in the same way and before the server's total: a
 * sort that would pass it spills instead.  The role is the session user,
 * which SET ROLE does not change; superusers' sessions are not bound.
 *
 * When the others hold it all, a sort still gets BUDGET_SORT_MINIMUM (or
 * the backend's budget, if smaller; with its parallel load's blocks in
 * flight, whose rows come through the Gather's queue where they find no
 * room, the two together: budget_pair_load) and spills in runs of that size, so
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
 * A sort's batch may hold what the backend's budget leaves to the sort, or
 * less where the server's budget has less left (its ceiling), and grows its
 * reservation in steps as it fills.  When it is full, sort.c sorts it and
 * writes it as a run, and loading goes on into an empty batch; once the
 * sort has spilled, each later batch leaves an eighth of what it may take
 * to the merge's read buffers.  With gpusort.write_behind, a run is written
 * by its batch's pool threads while the backend loads the next batch, and
 * until it is written the next batch may hold only what the budget leaves
 * beside it.  So that it has room to load meanwhile, a batch that will not
 * take the rest of the input is spilled at seven eighths of what a batch
 * may hold once runs exist (sort_memory_spill_early), about 77% of the
 * budget, so that the next batch has about a ninth of the budget to load
 * into while the run is written; it waits for the writer only when it has
 * filled that.  A first batch that its keys alone would make spill gives
 * them up instead, where the rows fit as PostgreSQL's Sort holds them
 * (sort_memory_without_keys).
 *
 * What the others call: sort.c, the only caller, takes a share for a sort
 * and for a parallel load's blocks (budget_join; the load's workers counted
 * with budget_count_workers), asks what is left (budget_available),
 * reserves (budget_reserve) and says what it holds (budget_hold), reads the
 * backend's budget for EXPLAIN (budget_total), and asks the policy what a
 * batch may hold: sort_memory_take_ceiling, sort_memory_start_batch,
 * sort_memory_reserve_batch, sort_memory_grow_batch,
 * sort_memory_spill_early, sort_memory_without_keys,
 * sort_memory_reserve_emit_copy, sort_memory_merge_fits and
 * sort_memory_for_merge, whether its batches keep their keys
 * (sort_memory_keys_fit) and how large its arena's blocks may be
 * (sort_memory_cap_arena_block).  The SQL
 * functions (views.c) report the server's limit (budget_server_limit) and
 * where the defaults come from (budget_describe_memory).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "storage/spin.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "runs/run.h"
#include "runs/run_merge.h"
#include "sort/sort_memory.h"
#include "support/cgroup_memory.h"
#include "support/settings.h"
#include "support/shmem.h"

#define MEGABYTE	((Size) 1024 * 1024)

/*
 * Keys take at most 1/KEYS_FIXED_SHARE of a batch's memory
 * (sort_memory_keys_fit); an arena block at most 1/ARENA_BLOCK_SHARE, and
 * ARENA_LEAST_BLOCK at the least (sort_memory_cap_arena_block).
 */
#define KEYS_FIXED_SHARE	2
#define ARENA_BLOCK_SHARE	16
#define ARENA_LEAST_BLOCK	((Size) 16 * 1024)

/*
 * The part of gpusort.server_memory (one in this many bytes) that only a
 * sort below its minimum may take, so that a sort that starts while every
 * other byte is held still finds its minimum within the limit.
 */
#define BUDGET_SERVER_RESERVE_FRACTION	16

/* the least a batch reserves of the budgets at a time */
#define BATCH_RESERVE_STEP	((Size) 8 * 1024 * 1024)

/* a batch to be written behind leaves 1/WRITE_BEHIND_ROOM for the next */
#define WRITE_BEHIND_ROOM	8

/*
 * What PostgreSQL's Sort holds for a row in memory beside the tuple: its
 * SortTuple (24 bytes), and the header of the tuple's allocation, in a
 * generation context before 17 (24 bytes in 15, a MemoryChunk's 8 in 16)
 * and a bump context, which has none, from 17 on.
 */
#if PG_VERSION_NUM >= 170000
#define NATIVE_ROW_OVERHEAD	24
#elif PG_VERSION_NUM >= 160000
#define NATIVE_ROW_OVERHEAD	(24 + 8)
#else
#define NATIVE_ROW_OVERHEAD	(24 + 24)
#endif

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

/*
 * The backend's role, the session user (SET ROLE does not change it), and
 * whether gpusort.role_memory bounds it (not a superuser's session): known
 * from the backend's first sort (budget_join), where the catalog may be
 * read.  role_slot: its slot in the server's table once the backend is
 * counted there, NULL where it is not (a superuser, a table full).
 */
static Oid	backend_role = InvalidOid;
static bool role_bounded = false;
static GpuSortRoleMemory *role_slot = NULL;

/* Count the backend in its role's slot, taking a free one for a new role. */
static void
role_attach(void)
{
	GpuSortRoleMemory *found = NULL;
	GpuSortRoleMemory *free_slot = NULL;

	if (!role_bounded)
		return;
	SpinLockAcquire(&gpusort_shared->roles_lock);
	for (int i = 0; i < GPUSORT_ROLE_SLOTS && found == NULL; i++)
	{
		GpuSortRoleMemory *slot = &gpusort_shared->roles[i];

		if (slot->role == backend_role)
			found = slot;
		else if (slot->role == InvalidOid && free_slot == NULL)
			free_slot = slot;
	}
	if (found == NULL && free_slot != NULL)
	{
		found = free_slot;
		found->role = backend_role;
		found->backends = 0;
		pg_atomic_write_u64(&found->held, 0);
	}
	if (found != NULL)
		found->backends++;
	SpinLockRelease(&gpusort_shared->roles_lock);
	role_slot = found;
}

/* The backend leaves its role's slot, which its role's last session frees. */
static void
role_detach(void)
{
	if (role_slot == NULL)
		return;
	pg_atomic_fetch_sub_u64(&role_slot->held, (int64) backend_in_use);
	SpinLockAcquire(&gpusort_shared->roles_lock);
	if (--role_slot->backends == 0)
		role_slot->role = InvalidOid;
	SpinLockRelease(&gpusort_shared->roles_lock);
	role_slot = NULL;
}

/* The backend exits: what its sorts still hold leaves the server's total. */
static void
uncount_backend_at_exit(int code, Datum arg)
{
	pg_atomic_fetch_sub_u64(&gpusort_shared->sort_memory_held, (int64) backend_in_use);
	role_detach();
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
		role_attach();
		if (role_slot)
			pg_atomic_fetch_add_u64(&role_slot->held, (int64) backend_in_use);
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
	{
		note_peak(pg_atomic_add_fetch_u64(&gpusort_shared->sort_memory_held,
										  change));
		if (role_slot)
			pg_atomic_fetch_add_u64(&role_slot->held, change);
	}
}

static void
budget_release(void *arg)
{
	BudgetShare *share = (BudgetShare *) arg;

	move_held(share->held, 0);
	share->held = 0;
	backend_workers -= share->workers;
	share->workers = 0;
	if (share->partner)
		share->partner->partner = NULL;
	share->partner = NULL;
}

/* A new sort, whose share lives as long as owner's memory. */
void
budget_join(BudgetShare *share, MemoryContext owner)
{
	share->held = 0;
	share->workers = 0;
	share->server_bound = false;
	share->maintenance = false;
	share->no_minimum = false;
	share->partner = NULL;
	if (!OidIsValid(backend_role))
	{
		backend_role = GetSessionUserId();
		role_bounded = !superuser_arg(backend_role);
	}
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

/*
 * blocks, a parallel load's share, holds the blocks in flight to sort's
 * share: the two have one minimum between them, and the blocks none of
 * their own, so that a sort and its load together stay within the budget
 * wherever it allows a sort its minimum.  The link goes with either share.
 */
void
budget_pair_load(BudgetShare *sort, BudgetShare *blocks)
{
	if (blocks->partner)
		blocks->partner->partner = NULL;
	blocks->no_minimum = true;
	blocks->partner = sort;
	sort->partner = blocks;
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
 * node's, or, for an index build's sort, maintenance_work_mem, what
 * PostgreSQL's own build may hold.
 */
static Size
backend_room(BudgetShare *share)
{
	Size		total = budget_total();
	Size		others = backend_in_use - share->held;
	Size		left = (others < total) ? total - others : 0;

	if (gpusort_max_memory_kb < 0)
		left = Max(left, (Size) (share->maintenance ? maintenance_work_mem :
								 work_mem) * 1024);
	return left;
}

/* what a sort may always hold, whatever the others hold */
static Size
sort_minimum(void)
{
	return Min(budget_total(), BUDGET_SORT_MINIMUM);
}

/*
 * What the share may always hold: the sort's minimum, less what its
 * load's blocks hold (the two are one sort's), or nothing for the blocks,
 * whose rows come through the Gather's queue where they find no room.
 */
static Size
share_minimum(BudgetShare *share)
{
	Size		minimum;

	if (share->no_minimum)
		return 0;
	minimum = sort_minimum();
	if (share->partner)
		minimum -= Min(minimum, share->partner->held);
	return minimum;
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

	return Max(room, share_minimum(share));
}

/*
 * gpusort.role_memory in bytes, of a server budget of server bytes: -1
 * resolved to a quarter of it; 0 where the backend's role is not bound (a
 * superuser's session, no slot, or no server budget).
 */
static Size
role_limit(Size server)
{
	if (role_slot == NULL || server == 0 || gpusort_role_memory_kb == 0)
		return 0;
	if (gpusort_role_memory_kb > 0)
		return Min((Size) gpusort_role_memory_kb * 1024, server);
	return server / 4;
}

/*
 * What the role's budget leaves the share to grow to, beside what the
 * role's other sorts hold, where they and the share hold role_held: never
 * less than the sort's minimum, which every sort may hold.
 */
static Size
role_room(BudgetShare *share, Size limit, uint64 role_held)
{
	Size		others = (role_held > share->held) ? (Size) role_held - share->held : 0;
	Size		room = (others < limit) ? limit - others : 0;

	return Max(room, share_minimum(share));
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

		Size		role = role_limit(server);

		if (role > 0)
			server_left = Min(server_left,
							  role_room(share, role, pg_atomic_read_u64(&role_slot->held)));
		if (server_left < left)
		{
			left = server_left;
			share->server_bound = true;
		}
	}
	return Max(left, share_minimum(share));
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
	Size		target = Min(want, Max(backend_room(share), share_minimum(share)));
	Size		server = budget_server_limit();
	Size		role;
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

	/*
	 * The role's budget first, in a compare-and-swap on its total: what it
	 * grants is then reserved there, and what the server's grants not goes
	 * back, so that the role's total never holds less than its sorts do.
	 */
	role = role_limit(server);
	if (role > 0)
	{
		uint64		role_held = pg_atomic_read_u64(&role_slot->held);

		for (;;)
		{
			Size		grant = Min(target, role_room(share, role, role_held));

			if (grant <= share->held)
			{
				share->server_bound = true;
				return share->held;
			}
			if (pg_atomic_compare_exchange_u64(&role_slot->held, &role_held,
											   role_held - share->held + grant))
			{
				if (grant < target)
					share->server_bound = true;
				target = grant;
				break;
			}
		}
	}

	held_all = pg_atomic_read_u64(&gpusort_shared->sort_memory_held);
	for (;;)
	{
		Size		grant = Min(target, server_room(share, server, held_all));
		uint64		new_all;

		if (grant <= share->held)
		{
			if (role > 0)
				pg_atomic_fetch_sub_u64(&role_slot->held, (int64) (target - share->held));
			share->server_bound = true;
			return share->held;
		}
		new_all = held_all - share->held + grant;
		if (pg_atomic_compare_exchange_u64(&gpusort_shared->sort_memory_held,
										   &held_all, new_all))
		{
			if (role > 0 && grant < target)
				pg_atomic_fetch_sub_u64(&role_slot->held, (int64) (target - grant));
			backend_in_use = backend_in_use - share->held + grant;
			share->held = grant;
			note_peak(new_all);
			if (grant < target)
				share->server_bound = true;
			return grant;
		}
	}
}

/*
 * What the batch may grow to now (mem->ceiling): what the other sorts leave
 * of the budgets, less the merge's share once runs exist (spilled), less
 * what the batch whose run is written behind holds until then (writing).
 * It is taken again as the batch grows, so that a sort that starts while
 * another still loads (a sort in a subplan of the other's input) finds the
 * other's memory as it is, not as it may become.
 *
 * The batch's limit, which its loads never pass, is what it has reserved
 * of the budgets (budget_reserve), not this: a batch reserves as it grows,
 * twice what it holds while the budgets allow, so that sorts that grow at
 * once cannot take the same memory, and gpusort.server_memory holds.
 */
void
sort_memory_take_ceiling(SortMemory *mem, bool spilled, bool writing)
{
	Size		limit = budget_available(&mem->budget);

	if (spilled)
		limit -= limit / 8;
	/* the batch whose run is written behind holds its memory until then */
	if (writing)
		limit -= Min(limit, mem->writing_held);
	mem->ceiling = limit;
}

/*
 * Reserve for the batch, beside what a run written behind holds, want
 * bytes within its ceiling, or what the budgets grant of them, and make
 * that its limit.  Less than it holds gives the rest back.  True if the
 * limit grew.
 */
bool
sort_memory_reserve_batch(SortMemory *mem, SortBatch *batch, Size want)
{
	Size		before = batch->limit;
	Size		granted;

	want = Min(want, Max(mem->ceiling, before));
	granted = budget_reserve(&mem->budget, want + mem->writing_held);
	batch->limit = (granted > mem->writing_held) ?
		granted - mem->writing_held : 0;
	return batch->limit > before;
}

/* A new batch: its ceiling, and a first step of it reserved as its limit. */
void
sort_memory_start_batch(SortMemory *mem, SortBatch *batch, bool spilled,
						bool writing)
{
	sort_memory_take_ceiling(mem, spilled, writing);
	batch->limit = 0;
	(void) sort_memory_reserve_batch(mem, batch, BATCH_RESERVE_STEP);
}

/*
 * Let the batch grow: reserve twice its limit, at least a step more and
 * room for its next arena block, within its ceiling.  True if its limit
 * grew; false if the ceiling or the budgets left it where it was.
 */
bool
sort_memory_grow_batch(SortMemory *mem, SortBatch *batch)
{
	Size		need = batch_memory(batch, batch->ntuples + MEMORY_CHECK_TUPLES,
									batch->next_block_size);

	if (batch->limit >= mem->ceiling)
		return false;
	return sort_memory_reserve_batch(mem, batch,
									 Max(Max(2 * batch->limit, batch->limit + BATCH_RESERVE_STEP),
										 2 * need));
}

/*
 * What the batch would hold with more tuples: each takes its records, as
 * batch_memory counts them, and its arena bytes, as those so far took
 * theirs; the arena's free room, a block taken ahead too, takes the first
 * of them.  Not what the batch holds now over its tuples, which counts
 * arrays grown ahead and the arena's free room as if every tuple took its
 * share of them: that overestimate wrote a run where the rows fitted.
 */
static double
batch_memory_with(SortBatch *batch, double more)
{
	Size		room = batch->block_left + batch->ahead_size;
	double		per_tuple = batch_tuple_bytes(batch);
	double		arena_more = Max(more * per_tuple - (double) room, 0.0);

	return (double) batch_memory(batch, batch->ntuples + (size_t) more, 0) +
		arena_more;
}

/*
 * Whether to spill the batch, which holds held bytes after tuples_put
 * tuples of the sort's input, before it is full, so that the next batch
 * has room to load while this one's run is written behind the backend: a
 * batch that holds all but WRITE_BEHIND_ROOM of what it may hold (once a
 * run being written is done) is spilled there if the rest of the input
 * will not fit beside it.  The rest is the planner's estimate less what
 * was put; past the estimate, the input is taken to go on if runs were
 * written already (spilled), and to end soon if none was.  A run is written
 * several times faster than the backend loads one (on the GPU host, 50M
 * rows of (int8, text): runs of 1.9 GB written in 0.6 s, the load 6.7 s),
 * so little room keeps the load going; more would mean more runs, and a
 * merge of more inputs.
 */
bool
sort_memory_spill_early(SortMemory *mem, SortBatch *batch, Size held,
						int64 tuples_put, bool spilled)
{
	Size		full = Max(mem->ceiling, batch->limit) + mem->writing_held;
	Size		room = full;
	double		remaining = batch->sh->expected_rows - (double) tuples_put;

	/*
	 * The first batch is measured against what batches may hold once runs
	 * exist (less the merge's eighth), or the next one would have no room;
	 * but it is kept whole if the rest fits into all it may hold.
	 */
	if (!spilled)
		room -= room / 8;
	if (!gpusort_write_behind || batch->ntuples < RUN_WRITE_BEHIND_MIN_RECORDS ||
		held < room - room / WRITE_BEHIND_ROOM || held >= full ||
		batch_threads(batch) == 0)
		return false;
	if (remaining <= 0)
		return spilled;
	return batch_memory_with(batch, remaining) > (double) full;
}

/*
 * Whether the first batch, which its keys would make spill, is to give them
 * up instead and be sorted in memory by the comparators; it gives them up
 * if so.  PostgreSQL's Sort holds a row in its tuple and
 * NATIVE_ROW_OVERHEAD; a batch holds the tuple and a record (the tuple's
 * pointer, its key, its place in the order, its sorted pointer and, on the
 * CPU, the radix sort's workspace), which can take more.  Just above what
 * Sort needs to sort in memory, a batch with keys would then write a run
 * where Sort writes nothing.  Without keys a batch holds the tuple and 16
 * bytes (the comparator sort's item: the pointer and the first column's
 * datum, resolve.c), less than Sort: so where the planner's estimate of
 * the input, not yet passed, at the arena's bytes per tuple so far and
 * Sort's overhead, fits the memory the batch may have, the batch sorts as
 * Sort does, in memory by the comparators, and needs no temporary space
 * where Sort needs none.  Below that, Sort writes runs too, and the keys
 * sort faster.  Where gpusort.server_memory, which Sort does not know, is
 * what stops the batch, it spills as it would: other sorts hold the
 * server's memory only for a while, and the keys sort the runs faster.
 *
 * tuples_put: the sort's input so far; spilled: runs were written;
 * writing: one is written behind now; record_cap: 0, or the most records
 * the batch takes (sort.c's balance_runs).
 */
bool
sort_memory_without_keys(SortMemory *mem, SortBatch *batch, int64 tuples_put,
						 bool spilled, bool writing, size_t record_cap)
{
	double		rows = batch->sh->expected_rows;

	/*
	 * An input past the planner's estimate may go on for long: the batch
	 * keeps its keys, which sort its runs faster.
	 */
	if ((double) tuples_put > rows ||
		batch->comparator_sort || spilled ||
		writing || batch->ntuples == 0 ||
		mem->budget.server_bound ||
		(record_cap != 0 && batch->ntuples >= record_cap))
		return false;
	if (rows * (batch_tuple_bytes(batch) + NATIVE_ROW_OVERHEAD) >
		(double) Max(mem->ceiling, batch->limit))
		return false;
	batch_give_up_keys(batch, "the keys do not fit in the sort's memory beside the rows: PostgreSQL's comparators sort the rows in memory, as Sort would");
	return true;
}

/*
 * Whether the budgets grant want bytes for the emit copy (batch_emit.c)
 * beside the held bytes of the batch; if not, the sort holds the batch's
 * alone.
 */
bool
sort_memory_reserve_emit_copy(SortMemory *mem, Size held, Size want)
{
	if (budget_reserve(&mem->budget, held + want) >= held + want)
		return true;
	budget_hold(&mem->budget, held);
	return false;
}

/*
 * Whether the last batch, holding held bytes, can stay in memory for the
 * final merge beside a merge's least (RUN_MERGE_MIN_MEMORY).  Where it
 * cannot (a budget of a few hundred kilobytes), the sort writes it as a
 * run too, as tuplesort dumps its last tuples to tape before it merges, so
 * that the merge's read buffers stay within the budget.  Reserves nothing:
 * what the sort holds is held again as it was.
 */
bool
sort_memory_merge_fits(SortMemory *mem, Size held)
{
	Size		want = held + RUN_MERGE_MIN_MEMORY;
	bool		fits = budget_reserve(&mem->budget, want) >= want;

	budget_hold(&mem->budget, held);
	return fits;
}

/*
 * The merge's memory, once the input has ended with runs written, held
 * with the held bytes of the last batch: the eighth of the budget that the
 * batches left to it, at least a merge's least, which the server may no
 * longer grant.
 */
Size
sort_memory_for_merge(SortMemory *mem, Size held)
{
	Size		available = budget_available(&mem->budget);
	Size		merge_memory = Max(available / 8, RUN_MERGE_MIN_MEMORY);
	Size		granted = budget_reserve(&mem->budget, held + merge_memory);

	if (granted < held + merge_memory)
	{
		merge_memory = Max(granted > held ? granted - held : 0,
						   RUN_MERGE_MIN_MEMORY);
		budget_hold(&mem->budget, held + merge_memory);
	}
	return merge_memory;
}

/*
 * Whether the sort's batches have keys.  Keys take memory whatever the
 * records (batch_keys_fixed_bytes: the engine's chunk of keys, which it
 * takes whole, and a generic layout's chunk of inputs and its arrays),
 * which a small budget cannot hold beside the rows: at 1 MB a text key's
 * would take all of it and more, and the batches would spill at 64 rows,
 * far over the budget.  Where that memory is more than a
 * KEYS_FIXED_SHARE-th of what the first batch may hold (mem->ceiling),
 * every batch of the sort goes without keys and is sorted by the
 * comparators, as Sort sorts (a tuple and 16 bytes a row, where Sort holds
 * a tuple and NATIVE_ROW_OVERHEAD), so that a run holds more rows than
 * Sort's in the same memory; its runs carry no keys, and the merges
 * compare by the comparators, as Sort's do.  Decided once for the sort, by
 * its first batch, so that its runs are all of one kind.
 */
bool
sort_memory_keys_fit(SortMemory *mem, SortBatchShared *sh)
{
	if (!mem->keys_decided)
	{
		mem->keys_fit = batch_keys_fixed_bytes(sh) <= mem->ceiling / KEYS_FIXED_SHARE;
		mem->keys_decided = true;
	}
	return mem->keys_fit;
}

/*
 * Keep the arena's blocks within a ARENA_BLOCK_SHARE-th of what the batch
 * may hold: blocks double from ARENA_MIN_BLOCK (batch_load.c), so that at a
 * small budget the first would take more than the budget (256 kB of 64 kB),
 * and the block a batch cannot take any more would leave up to half its
 * memory unused.  Taken again as the batch loads, since each block doubles
 * the next.
 */
void
sort_memory_cap_arena_block(SortMemory *mem, SortBatch *batch)
{
	Size		cap = MAXALIGN(Max(mem->ceiling / ARENA_BLOCK_SHARE, ARENA_LEAST_BLOCK));

	batch->next_block_size = Min(batch->next_block_size, cap);
}

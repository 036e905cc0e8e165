/*-------------------------------------------------------------------------
 *
 * nodeGpuSortLoad.c
 *	  Executor of Custom Scan (GpuSortLoad): the parallel load of a GpuSort.
 *
 * A parallel GpuSort (planner.c) is planned as
 *
 *		Custom Scan (GpuSort)			the leader: one sort of all the rows
 *		  ->  Gather					workers, and the leader if it takes part
 *				->  Custom Scan (GpuSortLoad)
 *					  ->  Parallel Seq Scan (or any partial plan)
 *
 * Each worker's GpuSortLoad reads its share of the partial plan and copies
 * every tuple, as a MinimalTuple, into blocks of the query's shared memory
 * area (the DSA of the Gather's parallel context), and returns nothing: the
 * scan and the forming of the tuples, the serial part of a GpuSort's load,
 * run in every worker at once, and no row goes through the Gather's tuple
 * queues.  A worker fills a block of its own and links it into a shared
 * list when it is full, or its input ends, so workers touch shared state
 * once a block, not once a row.
 *
 * The leader's GpuSortLoad (the one the Gather runs in the leader) moves
 * the linked blocks into the GpuSort's sort while the workers scan: the
 * sort's pool threads copy their tuples into its arena, the leader helping
 * (each block keeps its tuples' offsets, so that the copy splits), a few
 * blocks a participant at a time, and hands each block back to the worker
 * that filled it, to fill again (release_block); between blocks the leader
 * scans rows of its own and puts them straight into the sort.  One backend
 * moves every row of the load, so it moves them with threads, or the load
 * would run at its pace rather than the workers'.  When its share of the
 * scan ends it returns nothing to the Gather, which waits for the workers;
 * the GpuSort then has it move the blocks that are left
 * (gpusort_load_finish).
 * The copy is the price of two things measured on the GPU host: the
 * arena's memory has huge pages (hostmem.c), and emitting 10M rows in
 * sorted order, one random access a row, took twice as long from shared
 * memory, whose pages are small; and blocks that are recycled keep the
 * shared memory small, where a load that grew it to the size of the input
 * spent as much time having /dev/shm zero it, behind the area's lock, as
 * scanning.
 *
 * The blocks in flight, and those handed back, count in the backend's
 * budget, and so in the server's (sort_memory.c), in a share of the load's
 * own (SortLoadShare, sort.h), joined when the GpuSort finds the load
 * (gpusort_load_below), and
 * counted before the workers use them: the workers reserve each new block
 * against a limit in shared memory, and the leader holds the limit in the
 * share before it publishes it (update_limit).  Each time the leader has
 * moved blocks, it sets the limit to what the blocks take and one more
 * move's worth, within what the budgets leave beside the sort's batch and
 * within a quarter of what they left at the start (a move's worth where
 * that is more); a block comes back to its worker only while they are
 * within it.  Without the quarter, workers that ran ahead of the leader
 * took, block by block, what the batch had yet to reserve, and the batch,
 * left a sliver each time, wrote five times the runs of a serial sort.
 * Counted only once taken, the blocks of every parallel load of the server
 * took memory that no other sort could see was gone, and many such loads
 * passed gpusort.server_memory by far.  The rows of a load the budget holds
 * are, at any time, partly in the batch and partly in flight, so a sort
 * that fits the budget serially fits it in parallel, but for the one
 * move's worth held ahead.
 * They take no more than half of what /dev/shm had free at the start
 * either, when dynamic shared memory lives there, so that a load cannot
 * fail the query on a full /dev/shm where native PostgreSQL would have run
 * it.  A worker that finds no room (the leader is behind, or the input
 * outgrows the budget), or that has no shared memory at all, returns its
 * row instead: it travels through the Gather to the GpuSort, which puts it
 * into the sort as a serial GpuSort would; the worker tries for a block
 * again some rows later.  The leader, once it sees that a worker did so,
 * returns its own next row too (workers_passing): the Gather reads the
 * workers' queues only between the leader's rows, and a worker whose
 * queue is full waits, so a leader that kept scanning would hold the
 * workers up, and scan what they would have, until its own share ended.
 *
 * EXPLAIN ANALYZE shows the rows loaded and passed up, and with VERBOSE
 * (as PostgreSQL shows its nodes' per-worker figures), per participant the
 * rows it loaded (a worker: into blocks; the leader: of its own scan, and
 * moved from blocks), the rows it passed up and its load time; the figures
 * are copied out of
 * shared memory when the node is shut down, before the Gather destroys it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "access/parallel.h"
#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"	/* ExplainProperty*, moved in 18 */
#endif
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/spin.h"
#include "utils/dsa.h"

#include "exec/nodeGpuSortLoad.h"

/* a participant's block of shared memory: at most this, at least this */
#define LOAD_BLOCK_MAX		((Size) 4 * 1024 * 1024)
#define LOAD_BLOCK_MIN		((Size) 64 * 1024)

/* blocks the leader moves at once, for each participant (drain_blocks) */
#define LOAD_DRAIN_BLOCKS_PER_WORKER	2

/* rows a worker passes up before it tries for a block again */
#define LOAD_RETRY_ROWS		256

/*
 * A block, laid out like a heap page: this header and each tuple's offset
 * grow from its start, MAXALIGNed MinimalTuples from its end down.  The
 * offsets let the leader split a block's copy among its pool threads.
 */
typedef struct LoadBlock
{
	dsa_pointer next;			/* the next block of the shared list */
	uint32		size;			/* bytes of the block, header included */
	uint32		low;			/* offset of the lowest tuple */
	uint32		ntuples;
	int32		owner;			/* the participant that fills it */
	uint32		offsets[FLEXIBLE_ARRAY_MEMBER]; /* tuple i's, from the start */
} LoadBlock;

/* bytes between the block's offsets and its tuples */
#define BLOCK_FREE(block) \
	((Size) (block)->low - offsetof(LoadBlock, offsets) - \
	 sizeof(uint32) * (block)->ntuples)

/*
 * A participant's slot in shared memory: what it did, for EXPLAIN ANALYZE,
 * and the blocks the leader has moved and handed back to it to fill again.
 */
typedef struct LoadParticipant
{
	int64		loaded;			/* a worker: rows copied into blocks; the
								 * leader: rows of its own scan */
	int64		moved;			/* the leader: rows moved from blocks */
	int64		passed;			/* rows returned through the Gather */
	uint64		bytes;			/* shared memory its blocks took */
	int64		reused;			/* blocks it filled again */
	double		load_ms;		/* from its first row asked to its last */
	bool		done;
	dsa_pointer spare;			/* blocks handed back, linked by next
								 * (LoadShared.mutex) */
} LoadParticipant;

/* The load's shared state, in the parallel context's DSM segment. */
typedef struct LoadShared
{
	slock_t		mutex;			/* protects blocks */
	dsa_pointer linked;			/* the linked blocks, not moved yet */
	pg_atomic_uint64 reserved;	/* bytes of blocks in flight */
	pg_atomic_uint64 workers_passed;	/* rows workers returned to the
										 * Gather */
	pg_atomic_uint64 limit;		/* bytes they may take; the leader moves it */
	Size		block_size;
	int			nparticipants;	/* workers planned, then the leader */
	LoadParticipant participants[FLEXIBLE_ARRAY_MEMBER];
} LoadShared;

struct GpuSortLoadState
{
	CustomScanState css;

	/* set by the GpuSort above, in the leader, before the Gather starts */
	Sorter	   *sort;			/* where the leader puts rows */
	SortLoadShare *budget;		/* where it holds the blocks in flight ... */
	SortLoadShare *budget_share;	/* ... which is this, in the query's
									 * memory */
	instr_time	sort_start;		/* when the GpuSort began reading */
	uint64		shm_cap;		/* half of /dev/shm's free space at the start */
	uint64		blocks_cap;		/* the most the blocks may take (reset_shared) */

	/* shared state; NULL without parallel mode or shared memory */
	LoadShared *shared;
	dsa_area   *area;
	int			participant;	/* index in shared->participants */

	/* this participant's load */
	bool		started;
	bool		finished;
	int64		retry_at;		/* passed: try for a block again */
	uint64		workers_passed_seen;	/* the leader: workers_passed when it
										 * last returned to the Gather */
	instr_time	start;
	dsa_pointer block_ptr;
	LoadBlock  *block;
	int64		loaded;
	int64		moved;
	int64		passed;
	uint64		bytes;
	int64		reused;
	uint64		peak_reserved;	/* the leader: the most in flight it saw */
	uint64		peak_uncounted; /* the leader: the most of it that its
								 * budget share did not hold */

	/* the leader: what every participant did, kept for EXPLAIN */
	LoadParticipant *final;
	int			nfinal;
	uint64		final_limit;

	/* the leader: the linked blocks it moves at once */
	TupleBlock *blocks;
	dsa_pointer *block_ptrs;
	int			maxblocks;
};

static Node *load_create_state(CustomScan *cscan);
static void load_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *load_exec(CustomScanState *node);
static void load_end(CustomScanState *node);
static void load_rescan(CustomScanState *node);
static Size load_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void load_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
static void load_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								  void *coordinate);
static void load_initialize_worker(CustomScanState *node, shm_toc *toc,
								   void *coordinate);
static void load_shutdown(CustomScanState *node);
static void update_limit(GpuSortLoadState *ls);
static void load_explain(CustomScanState *node, List *ancestors, ExplainState *es);

CustomScanMethods gpusort_load_scan_methods = {
	.CustomName = GPUSORT_LOAD_NODE_NAME,
	.CreateCustomScanState = load_create_state,
};

static const CustomExecMethods load_exec_methods = {
	.CustomName = GPUSORT_LOAD_NODE_NAME,
	.BeginCustomScan = load_begin,
	.ExecCustomScan = load_exec,
	.EndCustomScan = load_end,
	.ReScanCustomScan = load_rescan,
	.EstimateDSMCustomScan = load_estimate_dsm,
	.InitializeDSMCustomScan = load_initialize_dsm,
	.ReInitializeDSMCustomScan = load_reinitialize_dsm,
	.InitializeWorkerCustomScan = load_initialize_worker,
	.ShutdownCustomScan = load_shutdown,
	.ExplainCustomScan = load_explain,
};

void
gpusort_load_executor_init(void)
{
	RegisterCustomScanMethods(&gpusort_load_scan_methods);
}

static Node *
load_create_state(CustomScan *cscan)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) newNode(sizeof(GpuSortLoadState),
														T_CustomScanState);

	ls->css.methods = &load_exec_methods;
	ls->css.flags = cscan->flags;
	return (Node *) ls;
}

static void
load_begin(CustomScanState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
}

/* Link this participant's current block, if any, into the shared list. */
static void
link_block(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;

	if (ls->block == NULL)
		return;
	SpinLockAcquire(&sh->mutex);
	ls->block->next = sh->linked;
	sh->linked = ls->block_ptr;
	SpinLockRelease(&sh->mutex);
	ls->block = NULL;
}

/*
 * A block the leader handed back to this participant, if it has one with
 * room for size bytes; such a block is still counted in the load's
 * reserved bytes.
 */
static dsa_pointer
take_spare_block(GpuSortLoadState *ls, Size size)
{
	LoadShared *sh = ls->shared;
	LoadParticipant *me = &sh->participants[ls->participant];
	dsa_pointer ptr = InvalidDsaPointer;

	if (size > sh->block_size)
		return InvalidDsaPointer;	/* spares are all of block_size */
	SpinLockAcquire(&sh->mutex);
	if (DsaPointerIsValid(me->spare))
	{
		ptr = me->spare;
		me->spare = ((LoadBlock *) dsa_get_address(ls->area, ptr))->next;
	}
	SpinLockRelease(&sh->mutex);
	return ptr;
}

/*
 * A new block with room for need bytes: a spare, or one allocated within
 * the load's limit; false if the limit or the shared memory area refuses
 * it.
 */
static bool
new_block(GpuSortLoadState *ls, Size need)
{
	LoadShared *sh = ls->shared;
	Size		size = MAXALIGN(Max(sh->block_size,
								offsetof(LoadBlock, offsets) + sizeof(uint32) + need));
	uint64		before;
	dsa_pointer ptr;

	if (size > PG_UINT32_MAX)
		return false;			/* a tuple of gigabytes: passed up */
	ptr = take_spare_block(ls, size);
	if (DsaPointerIsValid(ptr))
		ls->reused++;
	else
	{
		/*
		 * Reserved before the limit is checked, so that the leader, which
		 * publishes a lower limit before it reads what is reserved, sees
		 * the reservation or this sees the limit (update_limit); a block
		 * plainly over the limit is refused before it is reserved at all.
		 */
		if (pg_atomic_read_u64(&sh->reserved) + size > pg_atomic_read_u64(&sh->limit))
			return false;
		before = pg_atomic_fetch_add_u64(&sh->reserved, size);
		if (before + size > pg_atomic_read_u64(&sh->limit))
		{
			pg_atomic_fetch_sub_u64(&sh->reserved, size);
			return false;
		}
		ptr = dsa_allocate_extended(ls->area, size, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
		if (!DsaPointerIsValid(ptr))
		{
			pg_atomic_fetch_sub_u64(&sh->reserved, size);
			return false;
		}
		ls->bytes += size;
	}
	ls->block_ptr = ptr;
	ls->block = dsa_get_address(ls->area, ptr);
	ls->block->next = InvalidDsaPointer;
	ls->block->size = (uint32) size;
	ls->block->low = (uint32) size;
	ls->block->ntuples = 0;
	ls->block->owner = ls->participant;
	return true;
}

/*
 * A block the leader has moved: handed back to the worker that filled it,
 * unless that worker is done, or the blocks take more than the load's
 * limit (a sort whose batch has grown takes the memory back); else freed.
 *
 * Memory new to the query's area costs twice: /dev/shm zeroes it, behind
 * the area's lock, when its segment is made, and each of its pages costs a
 * fault in every process that touches it first.  A block freed to the
 * area goes to whichever worker asks next, so over a long load every
 * worker would fault on most of the area; a worker that fills its own
 * blocks again pays neither after its first few.
 */
static void
release_block(GpuSortLoadState *ls, dsa_pointer ptr)
{
	LoadShared *sh = ls->shared;
	LoadBlock  *block = dsa_get_address(ls->area, ptr);
	uint32		size = block->size;
	bool		kept = false;

	if (size == sh->block_size && block->owner >= 0 &&
		block->owner < sh->nparticipants &&
		pg_atomic_read_u64(&sh->reserved) <= pg_atomic_read_u64(&sh->limit))
	{
		LoadParticipant *owner = &sh->participants[block->owner];

		SpinLockAcquire(&sh->mutex);
		if (!owner->done)
		{
			block->next = owner->spare;
			owner->spare = ptr;
			kept = true;
		}
		SpinLockRelease(&sh->mutex);
	}
	if (!kept)
	{
		dsa_free(ls->area, ptr);
		pg_atomic_fetch_sub_u64(&sh->reserved, size);
	}
}

/* Free the blocks handed back that no participant will fill any more. */
static void
free_spare_blocks(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;

	for (int i = 0; i < sh->nparticipants; i++)
	{
		LoadParticipant *p = &sh->participants[i];

		while (DsaPointerIsValid(p->spare))
		{
			dsa_pointer ptr = p->spare;
			LoadBlock  *block = dsa_get_address(ls->area, ptr);

			p->spare = block->next;
			pg_atomic_fetch_sub_u64(&sh->reserved, block->size);
			dsa_free(ls->area, ptr);
		}
	}
}

/*
 * gpusort_copy_slot_tuple's space: len bytes of the current block, or of a new
 * one, taken as the block's next tuple.
 */
static void *
block_space(void *arg, Size len)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) arg;
	Size		need = MAXALIGN(len);
	LoadBlock  *block = ls->block;

	if (block == NULL || BLOCK_FREE(block) < need + sizeof(uint32))
	{
		link_block(ls);
		if (!new_block(ls, need))
			return NULL;
		block = ls->block;
	}
	block->low -= need;
	block->offsets[block->ntuples++] = block->low;
	return (char *) block + block->low;
}

/* The participant's input has ended: link its last block, publish figures. */
static void
finish_load(GpuSortLoadState *ls)
{
	LoadParticipant *me;

	if (ls->finished || ls->shared == NULL)
		return;
	ls->finished = true;
	link_block(ls);
	me = &ls->shared->participants[ls->participant];
	me->loaded = ls->loaded;
	me->moved = ls->moved;
	me->passed = ls->passed;
	me->bytes = ls->bytes;
	me->reused = ls->reused;
	me->load_ms = gpusort_elapsed_ms(ls->start);
	me->done = true;
}

/* Link the list of blocks that begins at ptr into the shared list again. */
static void
relink_blocks(GpuSortLoadState *ls, dsa_pointer ptr)
{
	LoadShared *sh = ls->shared;
	LoadBlock  *tail = dsa_get_address(ls->area, ptr);

	while (DsaPointerIsValid(tail->next))
		tail = dsa_get_address(ls->area, tail->next);
	SpinLockAcquire(&sh->mutex);
	tail->next = sh->linked;
	sh->linked = ptr;
	SpinLockRelease(&sh->mutex);
}

/*
 * The leader: what the blocks take now, for the DEBUG1 line of
 * gpusort_load_finish, and how much of it the budget did not count (none,
 * if the limit is held before it is published: update_limit).
 */
static void
note_reserved(GpuSortLoadState *ls)
{
	uint64		reserved = pg_atomic_read_u64(&ls->shared->reserved);

	ls->peak_reserved = Max(ls->peak_reserved, reserved);
	if (ls->budget && reserved > gpusort_sort_load_held(ls->budget))
		ls->peak_uncounted = Max(ls->peak_uncounted,
								 reserved - gpusort_sort_load_held(ls->budget));
}

/*
 * Move linked blocks into the sort, at most LOAD_DRAIN_BLOCKS_PER_WORKER
 * for each participant, and hand them back to the workers to fill again
 * (release_block).  They go in as TupleBlocks, copied by the sort's pool
 * threads; a block the sort cannot take whole goes in a tuple at a time.
 * The blocks of a move come back only when all of them are copied, so a
 * move of everything that piled up while the last one was copied would
 * keep as much again out of the workers' hands: they would take new
 * memory for it.  The rest stays linked for the next call.
 */
static void
drain_blocks(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;
	dsa_pointer ptr;
	int			nblocks = 0;
	int			nput;

	if (sh == NULL || !DsaPointerIsValid(sh->linked))
		return;
	SpinLockAcquire(&sh->mutex);
	ptr = sh->linked;
	sh->linked = InvalidDsaPointer;
	SpinLockRelease(&sh->mutex);
	note_reserved(ls);

	for (; DsaPointerIsValid(ptr); nblocks++)
	{
		LoadBlock  *filled;
		TupleBlock *block;

		if (nblocks == LOAD_DRAIN_BLOCKS_PER_WORKER * sh->nparticipants)
		{
			relink_blocks(ls, ptr);
			break;
		}
		filled = dsa_get_address(ls->area, ptr);

		if (nblocks == ls->maxblocks)
		{
			MemoryContext cxt = ls->css.ss.ps.state->es_query_cxt;

			ls->maxblocks = Max(2 * ls->maxblocks, 16);
			ls->blocks = ls->blocks ?
				repalloc(ls->blocks, sizeof(TupleBlock) * ls->maxblocks) :
				MemoryContextAlloc(cxt, sizeof(TupleBlock) * ls->maxblocks);
			ls->block_ptrs = ls->block_ptrs ?
				repalloc(ls->block_ptrs, sizeof(dsa_pointer) * ls->maxblocks) :
				MemoryContextAlloc(cxt, sizeof(dsa_pointer) * ls->maxblocks);
		}
		block = &ls->blocks[nblocks];
		block->base = (const char *) filled;
		block->offsets = filled->offsets;
		block->ntuples = filled->ntuples;
		block->low = filled->low;
		block->high = filled->size;
		ls->block_ptrs[nblocks] = ptr;
		ptr = filled->next;
	}

	nput = gpusort_sort_putblocks(ls->sort, ls->blocks, nblocks);
	for (int b = 0; b < nblocks; b++)
	{
		const TupleBlock *block = &ls->blocks[b];

		/* a block the sort did not take whole goes in a tuple at a time */
		if (b >= nput)
			for (uint32 i = 0; i < block->ntuples; i++)
				gpusort_sort_puttuple(ls->sort,
									  (MinimalTuple) (block->base + block->offsets[i]));
		ls->moved += block->ntuples;
		release_block(ls, ls->block_ptrs[b]);
	}
	update_limit(ls);
}

/*
 * Whether workers have returned rows to the Gather since the leader last
 * did: then they found no room for a block (the batch is full, or being
 * sorted and written as a run), and their rows wait in the Gather's
 * queues, which the Gather reads only between rows of the leader's own.
 * A worker whose queue is full waits for it, so a leader that went on
 * scanning would leave it waiting, and take over its share of the scan,
 * until the leader's share ended.
 */
static bool
workers_passing(GpuSortLoadState *ls)
{
	uint64		passed;

	if (ls->shared == NULL)
		return false;
	passed = pg_atomic_read_u64(&ls->shared->workers_passed);
	if (passed == ls->workers_passed_seen)
		return false;
	ls->workers_passed_seen = passed;
	return true;
}

/*
 * The leader: move the workers' blocks as they come, and between them put
 * rows of its own scan straight into the sort.  Returns no row, but where
 * workers have returned rows to the Gather (workers_passing), its current
 * one: the Gather then takes the workers' rows from its queues before it
 * asks for another.
 */
static TupleTableSlot *
leader_load(GpuSortLoadState *ls)
{
	PlanState  *child = outerPlanState(ls);

	for (;;)
	{
		TupleTableSlot *slot;

		drain_blocks(ls);
		slot = ExecProcNode(child);
		if (TupIsNull(slot))
		{
			finish_load(ls);
			return NULL;
		}
		if (workers_passing(ls))
		{
			ls->passed++;
			return slot;
		}
		gpusort_sort_puttupleslot(ls->sort, slot);
		ls->loaded++;
	}
}

static TupleTableSlot *
load_exec(CustomScanState *node)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	PlanState  *child = outerPlanState(node);

	if (!ls->started)
	{
		INSTR_TIME_SET_CURRENT(ls->start);
		ls->started = true;
	}
	if (ls->sort)
		return leader_load(ls);

	/* a worker */
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(child);

		if (TupIsNull(slot))
		{
			finish_load(ls);
			return NULL;
		}
		if (ls->shared && ls->passed >= ls->retry_at)
		{
			if (gpusort_copy_slot_tuple(slot, block_space, ls) != NULL)
			{
				ls->loaded++;
				continue;
			}
			ls->retry_at = ls->passed + LOAD_RETRY_ROWS;
		}
		ls->passed++;
		if (ls->shared)
			pg_atomic_fetch_add_u64(&ls->shared->workers_passed, 1);
		return slot;
	}
}

static void
load_end(CustomScanState *node)
{
	ExecEndNode(outerPlanState(node));
}

/* This participant's load starts again (the shared state is reset apart). */
static void
reset_participant(GpuSortLoadState *ls)
{
	ls->started = false;
	ls->finished = false;
	ls->retry_at = 0;
	ls->workers_passed_seen = 0;
	ls->block = NULL;
	ls->loaded = 0;
	ls->moved = 0;
	ls->passed = 0;
	ls->bytes = 0;
	ls->reused = 0;
	ls->peak_reserved = 0;
	ls->peak_uncounted = 0;
}

static void
load_rescan(CustomScanState *node)
{
	PlanState  *child = outerPlanState(node);

	reset_participant((GpuSortLoadState *) node);
	if (child->chgParam == NULL)
		ExecReScan(child);
}

static Size
load_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return add_size(offsetof(LoadShared, participants),
					mul_size(pcxt->nworkers + 1, sizeof(LoadParticipant)));
}

/*
 * What the blocks may take in all: what the budget leaves them beside the
 * sort's batch, within half of what /dev/shm had free at the start.
 */
static uint64
block_room(GpuSortLoadState *ls)
{
	if (ls->budget == NULL || ls->area == NULL)
		return 0;
	return Min((uint64) gpusort_sort_load_room(ls->budget), ls->shm_cap);
}

/*
 * The leader: let the workers take, for blocks, what they take now and one
 * more move's worth (LOAD_DRAIN_BLOCKS_PER_WORKER blocks each), within
 * block_room and blocks_cap; and reserve it in the backend's budget, and
 * so in the server's, before they may take it (as much as the budgets
 * grant).  The workers reserve each block against the limit before they
 * allocate it (new_block), so the budgets count what the blocks can take,
 * never less: a limit that grows is held first and then published, one
 * that shrinks published first, and then what the blocks reserved by then,
 * if more, is held.  Held no further ahead than a move, and within blocks_cap, the
 * blocks leave the sort's batch the rest of the budget, as when the rows
 * come serially.
 */
static void
update_limit(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;
	uint64		reserved;
	uint64		ahead;
	uint64		limit;

	if (sh == NULL)
		return;
	reserved = pg_atomic_read_u64(&sh->reserved);
	ahead = (uint64) LOAD_DRAIN_BLOCKS_PER_WORKER * sh->nparticipants * sh->block_size;
	limit = Min(Min(block_room(ls), reserved + ahead), ls->blocks_cap);
	if (ls->budget == NULL)
		limit = 0;
	if (limit > pg_atomic_read_u64(&sh->limit))
	{
		/* what the budgets grant of it, which is never less than held */
		limit = Min(limit, (uint64) gpusort_sort_load_reserve(ls->budget, (Size) limit));
		if (limit > pg_atomic_read_u64(&sh->limit))
			pg_atomic_write_u64(&sh->limit, limit);
	}
	else
	{
		/* a full barrier: reserved is read after the limit is published */
		(void) pg_atomic_exchange_u64(&sh->limit, limit);
		if (ls->budget)
			gpusort_sort_load_hold(ls->budget,
								   (Size) Max(limit, pg_atomic_read_u64(&sh->reserved)));
	}
}

/* Set up the shared state for a load: no blocks, nothing in flight. */
static void
reset_shared(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;
	uint64		room;

	ls->shm_cap = PG_UINT64_MAX;
	if (dynamic_shared_memory_type == DSM_IMPL_POSIX)
	{
		struct statvfs fs;

		if (statvfs("/dev/shm", &fs) == 0)
			ls->shm_cap = (uint64) fs.f_bavail * fs.f_frsize / 2;
	}
	sh->linked = InvalidDsaPointer;
	pg_atomic_write_u64(&sh->reserved, 0);
	pg_atomic_write_u64(&sh->workers_passed, 0);
	pg_atomic_write_u64(&sh->limit, 0);
	if (ls->budget)
		gpusort_sort_load_hold(ls->budget, 0);

	/*
	 * Blocks small enough that a small room still fills a few per
	 * participant, large enough that linking them costs nothing.  Together
	 * they take at most a quarter of the room, or a move's worth where
	 * that is more: while the leader lags, blocks the workers fill would
	 * otherwise take what the sort's batch has yet to reserve, and the
	 * batch, left a sliver, would write a run of every sliver.
	 */
	room = block_room(ls);
	sh->block_size = MAXALIGN(Max(Min(room / (8 * sh->nparticipants), LOAD_BLOCK_MAX),
								  LOAD_BLOCK_MIN));
	ls->blocks_cap = Max(room / 4, (uint64) LOAD_DRAIN_BLOCKS_PER_WORKER *
						 sh->nparticipants * sh->block_size);
	memset(sh->participants, 0, sizeof(LoadParticipant) * sh->nparticipants);
	update_limit(ls);
}

static void
load_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	LoadShared *sh = (LoadShared *) coordinate;

	SpinLockInit(&sh->mutex);
	pg_atomic_init_u64(&sh->reserved, 0);
	pg_atomic_init_u64(&sh->workers_passed, 0);
	pg_atomic_init_u64(&sh->limit, 0);
	sh->nparticipants = pcxt->nworkers + 1;
	ls->shared = sh;
	ls->area = node->ss.ps.state->es_query_dsa;
	ls->participant = pcxt->nworkers;	/* the leader comes last */
	reset_shared(ls);
}

static void
load_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	LoadShared *sh = ls->shared;
	dsa_pointer ptr = sh->linked;

	/* blocks an error left behind; a finished load moved them all */
	while (DsaPointerIsValid(ptr))
	{
		dsa_pointer next = ((LoadBlock *) dsa_get_address(ls->area, ptr))->next;

		dsa_free(ls->area, ptr);
		ptr = next;
	}
	free_spare_blocks(ls);
	reset_shared(ls);
	reset_participant(ls);
}

static void
load_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;

	ls->shared = (LoadShared *) coordinate;
	ls->area = node->ss.ps.state->es_query_dsa;
	ls->participant = ParallelWorkerNumber;
	if (ls->area == NULL)
		ls->shared = NULL;
}

/* Keep what the participants did before the Gather destroys shared memory. */
static void
load_shutdown(CustomScanState *node)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	LoadShared *sh = ls->shared;

	if (sh == NULL || IsParallelWorker())
		return;
	ls->nfinal = sh->nparticipants;
	ls->final = MemoryContextAlloc(node->ss.ps.state->es_query_cxt,
								   sizeof(LoadParticipant) * sh->nparticipants);
	memcpy(ls->final, sh->participants, sizeof(LoadParticipant) * sh->nparticipants);
	ls->final_limit = pg_atomic_read_u64(&sh->limit);
	ls->shared = NULL;
}

static void
load_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	LoadParticipant *parts = ls->final;
	int			nparts = ls->nfinal;
	int64		loaded = 0;
	int64		passed = 0;

	if (!es->analyze)
		return;
	if (parts == NULL && ls->shared != NULL)
	{
		parts = ls->shared->participants;
		nparts = ls->shared->nparticipants;
	}
	if (parts == NULL)
	{
		ExplainPropertyText("Shared Load", "none: not run in parallel", es);
		return;
	}
	for (int i = 0; i < nparts; i++)
	{
		loaded += parts[i].loaded;
		passed += parts[i].passed;
	}
	ExplainPropertyInteger("Rows Loaded", NULL, loaded, es);
	ExplainPropertyInteger("Rows Passed Up", NULL, passed, es);
	if (es->costs)
		ExplainPropertyInteger("Load Limit", "kB", (int64) (ls->final_limit / 1024), es);
	if (!es->timing || !es->verbose)
		return;
	for (int i = 0; i < nparts; i++)
	{
		char		label[32];
		char		line[160];

		if (!parts[i].done)
			continue;
		if (i == nparts - 1)
		{
			snprintf(label, sizeof(label), "Leader Load");
			snprintf(line, sizeof(line),
					 INT64_FORMAT " rows scanned, " INT64_FORMAT " moved from workers, %.3f ms",
					 parts[i].loaded, parts[i].moved, parts[i].load_ms);
		}
		else
		{
			snprintf(label, sizeof(label), "Worker %d Load", i);
			snprintf(line, sizeof(line),
					 INT64_FORMAT " rows into " UINT64_FORMAT " kB of blocks, " INT64_FORMAT " passed up, %.3f ms",
					 parts[i].loaded, parts[i].bytes / 1024, parts[i].passed,
					 parts[i].load_ms);
		}
		ExplainPropertyText(label, line, es);
	}
}

/*
 * From the GpuSort's begin: the load node directly below the Gather that
 * is child, in the leader, now with a share of the backend's budget (in
 * the query's memory, CurrentMemoryContext) for the blocks in flight, which
 * counts the Gather's workers, as planned, for the backend's default budget
 * (work_mem each, as a parallel Sort has: gpusort_sort_load_share); NULL if
 * child is not such a Gather.
 */
GpuSortLoadState *
gpusort_load_below(PlanState *child)
{
	PlanState  *below;
	GpuSortLoadState *load;

	if (child == NULL || !IsA(child, GatherState))
		return NULL;
	below = outerPlanState(child);
	if (below == NULL || !IsA(below, CustomScanState) ||
		((CustomScanState *) below)->methods != &load_exec_methods)
		return NULL;
	load = (GpuSortLoadState *) below;
	load->budget_share = gpusort_sort_load_share(((Gather *) child->plan)->num_workers);
	return load;
}

/*
 * Before the Gather starts: the sort the leader puts rows into; the blocks
 * in flight are held in the load's budget share from now on.
 */
void
gpusort_load_start(GpuSortLoadState *load, Sorter *sort)
{
	load->sort = sort;
	load->budget = load->budget_share;
	INSTR_TIME_SET_CURRENT(load->sort_start);
}

/*
 * After the Gather has ended (every worker has linked its last block):
 * move the blocks that are left into the sort.  Returns the rows moved by
 * the whole load, during the Gather and now.
 */
static int64
drain_rest(GpuSortLoadState *load)
{
	while (load->shared && DsaPointerIsValid(load->shared->linked))
		drain_blocks(load);
	if (load->shared)
	{
		free_spare_blocks(load);
		update_limit(load);
		load->shared->participants[load->participant].moved = load->moved;
		load->shared->participants[load->participant].done = true;
	}
	return load->moved;
}

/*
 * For the DEBUG1 line of gpusort_load_finish, after drain_rest: how long
 * the workers' loads took, the most shared memory the blocks held when the
 * leader looked, and how many blocks workers filled again.
 */
static void
describe_workers(GpuSortLoadState *load, StringInfo buf)
{
	LoadShared *sh = load->shared;
	double		min_ms = 0;
	double		max_ms = 0;
	int64		reused = 0;
	int			nworkers = 0;

	if (sh == NULL)
		return;
	for (int i = 0; i < sh->nparticipants - 1; i++)
	{
		LoadParticipant *p = &sh->participants[i];

		if (!p->done)
			continue;
		min_ms = nworkers == 0 ? p->load_ms : Min(min_ms, p->load_ms);
		max_ms = Max(max_ms, p->load_ms);
		reused += p->reused;
		nworkers++;
	}
	appendStringInfo(buf, "; %d workers loaded in %.0f to %.0f ms, blocks held at most " UINT64_FORMAT " kB (" UINT64_FORMAT " kB of it not yet counted in the budget), " INT64_FORMAT " filled again",
					 nworkers, min_ms, max_ms, load->peak_reserved / 1024,
					 load->peak_uncounted / 1024, reused);
}

/*
 * After the Gather has returned its last row to the GpuSort: move the
 * blocks that are left into the sort, and give back the budget they held.
 */
void
gpusort_load_finish(GpuSortLoadState *load)
{
	double		gather_ms = gpusort_elapsed_ms(load->sort_start);
	instr_time	drain_start;
	int64		moved;
	StringInfoData workers;

	INSTR_TIME_SET_CURRENT(drain_start);
	moved = drain_rest(load);
	gpusort_sort_load_hold(load->budget, 0);
	initStringInfo(&workers);
	describe_workers(load, &workers);
	elog(DEBUG1, "gpusort: parallel load: " INT64_FORMAT " rows moved from the workers' blocks, Gather %.0f ms, then %.0f ms moving the rest%s",
		 moved, gather_ms, gpusort_elapsed_ms(drain_start), workers.data);
	pfree(workers.data);
}

/*-------------------------------------------------------------------------
 *
 * load_blocks.c
 *	  The block pool of a parallel GpuSort's load (nodeGpuSortLoad.c):
 *	  blocks of the query's shared memory that the workers fill with their
 *	  rows and the leader moves into its sort, and the flow control that
 *	  keeps them within the budget.
 *
 * A worker fills a block of its own (load_blocks_copy_slot) and links it
 * into a shared list when it is full, or its input ends, so workers touch
 * shared state once a block, not once a row.  The leader moves the linked
 * blocks into the sort (load_blocks_drain): the sort's pool threads copy
 * their tuples into its arena, the leader helping (each block keeps its
 * tuples' offsets, so that the copy splits), a few blocks a participant at a
 * time, and hands each block back to the worker that filled it, to fill
 * again (release_block).  The copy buys two things: the arena's memory has
 * huge pages (hostmem.c), where the emit's one random access a row is
 * cheaper than in shared memory, whose pages are small; and blocks that
 * are recycled keep the shared memory small, where one grown to the size of
 * the input would be zeroed by /dev/shm, behind the area's lock, as the
 * load went on.
 *
 * The blocks in flight, and those handed back, count in the backend's
 * budget, and so in the server's (sort_memory.c), in a share of the load's
 * own (SortLoadShare, sort.h), and counted before the workers use them:
 * the workers reserve each new block against a limit in shared memory,
 * and the leader holds the limit in the share before it publishes it
 * (update_limit).  Each time the leader has moved blocks, it sets the
 * limit to what the blocks take and one more move's worth, within what
 * the budgets leave beside the sort's batch and within a quarter of what
 * they left at the start (a move's worth where that is more); a block
 * comes back to its worker only while they are within it.  Without the
 * quarter, workers that ran ahead of the leader would take, block by block,
 * what the batch had yet to reserve, and the batch, left a sliver each
 * time, would write a run of each sliver.  Counted only once taken, the
 * blocks of every parallel load of the server would take memory that no
 * other sort could see was gone, and many such loads would pass
 * gpusort.server_memory.  The rows of a load the budget holds are,
 * at any time, partly in the batch and partly in flight, so a sort that
 * fits the budget serially fits it in parallel, but for the one move's
 * worth held ahead.
 * They take no more than half of what /dev/shm had free at the start either,
 * when dynamic shared memory lives there, so that a load cannot fail the
 * query on a full /dev/shm where native PostgreSQL would have run it.  A
 * worker that finds no room is told so (load_blocks_copy_slot returns
 * false), and its node passes the row up instead; the leader's node learns
 * that workers did so from load_blocks_workers_passing.
 *
 * What each participant did (LoadFigures) is published in shared memory
 * when its input ends, and copied out for EXPLAIN ANALYZE before the
 * Gather destroys it (load_blocks_keep_figures).
 *
 * What the load node calls: the shared memory's size and set-up
 * (load_blocks_shared_size, load_blocks_init_leader,
 * load_blocks_init_worker, load_blocks_reinit), a worker's rows
 * (load_blocks_copy_slot, load_blocks_passed_up), the leader's moves
 * (load_blocks_drain, load_blocks_drain_rest, load_blocks_finish,
 * load_blocks_workers_passing), and the figures (load_blocks_figures,
 * load_blocks_keep_figures, load_blocks_reset_participant,
 * load_blocks_describe).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/spin.h"

#include "exec/load_blocks.h"

/* a participant's block of shared memory: at most this, at least this */
#define LOAD_BLOCK_MAX		((Size) 4 * 1024 * 1024)
#define LOAD_BLOCK_MIN		((Size) 64 * 1024)

/* blocks the leader moves at once, for each participant (load_blocks_drain) */
#define LOAD_DRAIN_BLOCKS_PER_WORKER	2

/*
 * A block, laid out like a heap page: this header and each tuple's offset
 * grow from its start, MAXALIGNed MinimalTuples from its end down.  The
 * offsets let the leader split a block's copy among its pool threads.
 */
struct LoadBlock
{
	dsa_pointer next;			/* the next block of the shared list */
	uint32		size;			/* bytes of the block, header included */
	uint32		low;			/* offset of the lowest tuple */
	uint32		ntuples;
	int32		owner;			/* the participant that fills it */
	uint32		offsets[FLEXIBLE_ARRAY_MEMBER]; /* tuple i's, from the start */
};

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
	LoadFigures figures;
	dsa_pointer spare;			/* blocks handed back, linked by next
								 * (LoadShared.mutex) */
} LoadParticipant;

/* The load's shared state, in the parallel context's DSM segment. */
struct LoadShared
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
};

static void update_limit(LoadBlocks *lb);

/* Link this participant's current block, if any, into the shared list. */
static void
link_block(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;

	if (lb->block == NULL)
		return;
	SpinLockAcquire(&sh->mutex);
	lb->block->next = sh->linked;
	sh->linked = lb->block_ptr;
	SpinLockRelease(&sh->mutex);
	lb->block = NULL;
}

/*
 * A block the leader handed back to this participant, if it has one with
 * room for size bytes; such a block is still counted in the load's
 * reserved bytes.
 */
static dsa_pointer
take_spare_block(LoadBlocks *lb, Size size)
{
	LoadShared *sh = lb->shared;
	LoadParticipant *me = &sh->participants[lb->participant];
	dsa_pointer ptr = InvalidDsaPointer;

	if (size > sh->block_size)
		return InvalidDsaPointer;	/* spares are all of block_size */
	SpinLockAcquire(&sh->mutex);
	if (DsaPointerIsValid(me->spare))
	{
		ptr = me->spare;
		me->spare = ((LoadBlock *) dsa_get_address(lb->area, ptr))->next;
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
new_block(LoadBlocks *lb, Size need)
{
	LoadShared *sh = lb->shared;
	Size		size = MAXALIGN(Max(sh->block_size,
								offsetof(LoadBlock, offsets) + sizeof(uint32) + need));
	uint64		before;
	dsa_pointer ptr;

	if (size > PG_UINT32_MAX)
		return false;			/* a tuple of gigabytes: passed up */
	ptr = take_spare_block(lb, size);
	if (DsaPointerIsValid(ptr))
		lb->figures.reused++;
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
		ptr = dsa_allocate_extended(lb->area, size, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
		if (!DsaPointerIsValid(ptr))
		{
			pg_atomic_fetch_sub_u64(&sh->reserved, size);
			return false;
		}
		lb->figures.bytes += size;
	}
	lb->block_ptr = ptr;
	lb->block = dsa_get_address(lb->area, ptr);
	lb->block->next = InvalidDsaPointer;
	lb->block->size = (uint32) size;
	lb->block->low = (uint32) size;
	lb->block->ntuples = 0;
	lb->block->owner = lb->participant;
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
release_block(LoadBlocks *lb, dsa_pointer ptr)
{
	LoadShared *sh = lb->shared;
	LoadBlock  *block = dsa_get_address(lb->area, ptr);
	uint32		size = block->size;
	bool		kept = false;

	if (size == sh->block_size && block->owner >= 0 &&
		block->owner < sh->nparticipants &&
		pg_atomic_read_u64(&sh->reserved) <= pg_atomic_read_u64(&sh->limit))
	{
		LoadParticipant *owner = &sh->participants[block->owner];

		SpinLockAcquire(&sh->mutex);
		if (!owner->figures.done)
		{
			block->next = owner->spare;
			owner->spare = ptr;
			kept = true;
		}
		SpinLockRelease(&sh->mutex);
	}
	if (!kept)
	{
		dsa_free(lb->area, ptr);
		pg_atomic_fetch_sub_u64(&sh->reserved, size);
	}
}

/* Free the blocks handed back that no participant will fill any more. */
static void
free_spare_blocks(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;

	for (int i = 0; i < sh->nparticipants; i++)
	{
		LoadParticipant *p = &sh->participants[i];

		while (DsaPointerIsValid(p->spare))
		{
			dsa_pointer ptr = p->spare;
			LoadBlock  *block = dsa_get_address(lb->area, ptr);

			p->spare = block->next;
			pg_atomic_fetch_sub_u64(&sh->reserved, block->size);
			dsa_free(lb->area, ptr);
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
	LoadBlocks *lb = (LoadBlocks *) arg;
	Size		need = MAXALIGN(len);
	LoadBlock  *block = lb->block;

	if (block == NULL || BLOCK_FREE(block) < need + sizeof(uint32))
	{
		link_block(lb);
		if (!new_block(lb, need))
			return NULL;
		block = lb->block;
	}
	block->low -= need;
	block->offsets[block->ntuples++] = block->low;
	return (char *) block + block->low;
}

/*
 * A worker: copy the slot's tuple into its block, or a new one; false where
 * the load's limit or the shared memory area refuses a new block.
 */
bool
load_blocks_copy_slot(LoadBlocks *lb, TupleTableSlot *slot)
{
	return gpusort_copy_slot_tuple(slot, block_space, lb) != NULL;
}

/* Link the list of blocks that begins at ptr into the shared list again. */
static void
relink_blocks(LoadBlocks *lb, dsa_pointer ptr)
{
	LoadShared *sh = lb->shared;
	LoadBlock  *tail = dsa_get_address(lb->area, ptr);

	while (DsaPointerIsValid(tail->next))
		tail = dsa_get_address(lb->area, tail->next);
	SpinLockAcquire(&sh->mutex);
	tail->next = sh->linked;
	sh->linked = ptr;
	SpinLockRelease(&sh->mutex);
}

/*
 * The leader: what the blocks take now, for the DEBUG1 line of
 * gpusort_load_finish.  The budget holds the limit before it is published
 * (update_limit), and a worker that passes it gives its block back: only
 * the blocks that workers are reserving at this moment, before they see
 * that, may lie beyond what the share holds.
 */
static void
note_reserved(LoadBlocks *lb)
{
	uint64		reserved = pg_atomic_read_u64(&lb->shared->reserved);

	lb->peak_reserved = Max(lb->peak_reserved, reserved);
	Assert(lb->budget == NULL ||
		   reserved <= gpusort_sort_load_held(lb->budget) +
		   (uint64) lb->shared->nparticipants * lb->shared->block_size);
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
void
load_blocks_drain(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;
	dsa_pointer ptr;
	int			nblocks = 0;
	int			nput;

	if (sh == NULL || !DsaPointerIsValid(sh->linked))
		return;
	SpinLockAcquire(&sh->mutex);
	ptr = sh->linked;
	sh->linked = InvalidDsaPointer;
	SpinLockRelease(&sh->mutex);
	note_reserved(lb);

	for (; DsaPointerIsValid(ptr); nblocks++)
	{
		LoadBlock  *filled;
		TupleBlock *block;

		if (nblocks == LOAD_DRAIN_BLOCKS_PER_WORKER * sh->nparticipants)
		{
			relink_blocks(lb, ptr);
			break;
		}
		filled = dsa_get_address(lb->area, ptr);

		if (nblocks == lb->maxmoving)
		{
			MemoryContext cxt = lb->cxt;

			lb->maxmoving = Max(2 * lb->maxmoving, 16);
			lb->moving = lb->moving ?
				repalloc(lb->moving, sizeof(TupleBlock) * lb->maxmoving) :
				MemoryContextAlloc(cxt, sizeof(TupleBlock) * lb->maxmoving);
			lb->moving_ptrs = lb->moving_ptrs ?
				repalloc(lb->moving_ptrs, sizeof(dsa_pointer) * lb->maxmoving) :
				MemoryContextAlloc(cxt, sizeof(dsa_pointer) * lb->maxmoving);
		}
		block = &lb->moving[nblocks];
		block->base = (const char *) filled;
		block->offsets = filled->offsets;
		block->ntuples = filled->ntuples;
		block->low = filled->low;
		block->high = filled->size;
		lb->moving_ptrs[nblocks] = ptr;
		ptr = filled->next;
	}

	nput = gpusort_sort_putblocks(lb->sort, lb->moving, nblocks);
	for (int b = 0; b < nblocks; b++)
	{
		const TupleBlock *block = &lb->moving[b];

		/* a block the sort did not take whole goes in a tuple at a time */
		if (b >= nput)
			for (uint32 i = 0; i < block->ntuples; i++)
				gpusort_sort_puttuple(lb->sort,
									  (MinimalTuple) (block->base + block->offsets[i]));
		lb->figures.moved += block->ntuples;
		release_block(lb, lb->moving_ptrs[b]);
	}
	update_limit(lb);
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
bool
load_blocks_workers_passing(LoadBlocks *lb)
{
	uint64		passed;

	if (lb->shared == NULL)
		return false;
	passed = pg_atomic_read_u64(&lb->shared->workers_passed);
	if (passed == lb->workers_passed_seen)
		return false;
	lb->workers_passed_seen = passed;
	return true;
}

/*
 * What the blocks may take in all: what the budget leaves them beside the
 * sort's batch, within half of what /dev/shm had free at the start.
 */
static uint64
block_room(LoadBlocks *lb)
{
	if (lb->budget == NULL || lb->area == NULL)
		return 0;
	return Min((uint64) gpusort_sort_load_room(lb->budget), lb->shm_cap);
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
 * if more, is held.  Held no further ahead than a move, and within
 * blocks_cap, the blocks leave the sort's batch the rest of the budget, as
 * when the rows come serially.
 */
static void
update_limit(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;
	uint64		reserved;
	uint64		ahead;
	uint64		limit;

	if (sh == NULL)
		return;
	reserved = pg_atomic_read_u64(&sh->reserved);
	ahead = (uint64) LOAD_DRAIN_BLOCKS_PER_WORKER * sh->nparticipants * sh->block_size;
	limit = Min(Min(block_room(lb), reserved + ahead), lb->blocks_cap);
	if (lb->budget == NULL)
		limit = 0;
	if (limit > pg_atomic_read_u64(&sh->limit))
	{
		/* what the budgets grant of it, which is never less than held */
		limit = Min(limit, (uint64) gpusort_sort_load_reserve(lb->budget, (Size) limit));
		if (limit > pg_atomic_read_u64(&sh->limit))
			pg_atomic_write_u64(&sh->limit, limit);
	}
	else
	{
		/* a full barrier: reserved is read after the limit is published */
		(void) pg_atomic_exchange_u64(&sh->limit, limit);
		if (lb->budget)
			gpusort_sort_load_hold(lb->budget,
								   (Size) Max(limit, pg_atomic_read_u64(&sh->reserved)));
	}
}

/* Set up the shared state for a load: no blocks, nothing in flight. */
static void
reset_shared(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;
	uint64		room;
	uint64		move;

	lb->shm_cap = PG_UINT64_MAX;
	if (dynamic_shared_memory_type == DSM_IMPL_POSIX)
	{
		struct statvfs fs;

		if (statvfs("/dev/shm", &fs) == 0)
			lb->shm_cap = (uint64) fs.f_bavail * fs.f_frsize / 2;
	}
	sh->linked = InvalidDsaPointer;
	pg_atomic_write_u64(&sh->reserved, 0);
	pg_atomic_write_u64(&sh->workers_passed, 0);
	pg_atomic_write_u64(&sh->limit, 0);
	if (lb->budget)
		gpusort_sort_load_hold(lb->budget, 0);

	/*
	 * Blocks small enough that a small room still fills a few per
	 * participant, large enough that linking them costs nothing.  Together
	 * they take at most a quarter of the room, or a move's worth where
	 * that is more and within half of it: while the leader lags, blocks the
	 * workers fill would otherwise take what the sort's batch has yet to
	 * reserve, and the batch, left a sliver, would write a run of every
	 * sliver.  Where not even one block fits that, none is taken, and the
	 * rows come through the Gather's queue, as a serial load's come.
	 */
	room = block_room(lb);
	sh->block_size = MAXALIGN(Max(Min(room / (8 * sh->nparticipants), LOAD_BLOCK_MAX),
								  LOAD_BLOCK_MIN));
	move = (uint64) LOAD_DRAIN_BLOCKS_PER_WORKER * sh->nparticipants * sh->block_size;
	lb->blocks_cap = (move <= room / 2) ? Max(room / 4, move) : room / 4;
	if (lb->blocks_cap < sh->block_size)
		lb->blocks_cap = 0;
	memset(sh->participants, 0, sizeof(LoadParticipant) * sh->nparticipants);
	update_limit(lb);
}

/* The shared state's size, for a load of nworkers workers and the leader. */
Size
load_blocks_shared_size(int nworkers)
{
	return add_size(offsetof(LoadShared, participants),
					mul_size(nworkers + 1, sizeof(LoadParticipant)));
}

/*
 * The leader: set up the shared state at coordinate, in the parallel
 * context's DSM segment, for nworkers workers and itself; the blocks are
 * allocated in area, and what the leader keeps of them in cxt, the query's
 * memory.
 */
void
load_blocks_init_leader(LoadBlocks *lb, void *coordinate, int nworkers,
						dsa_area *area, MemoryContext cxt)
{
	LoadShared *sh = (LoadShared *) coordinate;

	SpinLockInit(&sh->mutex);
	pg_atomic_init_u64(&sh->reserved, 0);
	pg_atomic_init_u64(&sh->workers_passed, 0);
	pg_atomic_init_u64(&sh->limit, 0);
	sh->nparticipants = nworkers + 1;
	lb->shared = sh;
	lb->area = area;
	lb->cxt = cxt;
	lb->participant = nworkers; /* the leader comes last */
	reset_shared(lb);
}

/* A worker: attach to the shared state, unless there is no area. */
void
load_blocks_init_worker(LoadBlocks *lb, void *coordinate, dsa_area *area,
						int participant)
{
	lb->shared = (LoadShared *) coordinate;
	lb->area = area;
	lb->participant = participant;
	if (lb->area == NULL)
		lb->shared = NULL;
}

/*
 * The leader, before the Gather runs again: free the blocks that are left,
 * and set up the shared state for a new load.
 */
void
load_blocks_reinit(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;
	dsa_pointer ptr = sh->linked;

	/* blocks an error left behind; a finished load moved them all */
	while (DsaPointerIsValid(ptr))
	{
		dsa_pointer next = ((LoadBlock *) dsa_get_address(lb->area, ptr))->next;

		dsa_free(lb->area, ptr);
		ptr = next;
	}
	free_spare_blocks(lb);
	reset_shared(lb);
}

/* This participant's side starts again (the shared state is reset apart). */
void
load_blocks_reset_participant(LoadBlocks *lb)
{
	lb->workers_passed_seen = 0;
	lb->block = NULL;
	memset(&lb->figures, 0, sizeof(LoadFigures));
	lb->peak_reserved = 0;
}

/*
 * A worker returned a row through the Gather: the leader sees it
 * (load_blocks_workers_passing).
 */
void
load_blocks_passed_up(LoadBlocks *lb)
{
	if (lb->shared)
		pg_atomic_fetch_add_u64(&lb->shared->workers_passed, 1);
}

/*
 * The participant's input has ended: link its last block, and publish its
 * figures, its load timed from start.
 */
void
load_blocks_finish(LoadBlocks *lb, instr_time start)
{
	link_block(lb);
	lb->figures.load_ms = gpusort_elapsed_ms(start);
	lb->figures.done = true;
	lb->shared->participants[lb->participant].figures = lb->figures;
}

/*
 * The leader, after the Gather has ended (every worker has linked its last
 * block): move the blocks that are left into the sort, and give back the
 * budget the blocks held.  Returns the rows moved by the whole load,
 * during the Gather and now.
 */
int64
load_blocks_drain_rest(LoadBlocks *lb)
{
	while (lb->shared && DsaPointerIsValid(lb->shared->linked))
		load_blocks_drain(lb);
	if (lb->shared)
	{
		LoadFigures *me = &lb->shared->participants[lb->participant].figures;

		free_spare_blocks(lb);
		update_limit(lb);
		me->moved = lb->figures.moved;
		me->done = true;
	}
	gpusort_sort_load_hold(lb->budget, 0);
	return lb->figures.moved;
}

/*
 * For the DEBUG1 line of gpusort_load_finish, after load_blocks_drain_rest:
 * how long the workers' loads took, the most shared memory the blocks held
 * when the leader looked, and how many blocks workers filled again.
 */
void
load_blocks_describe(LoadBlocks *lb, StringInfo buf)
{
	LoadShared *sh = lb->shared;
	double		min_ms = 0;
	double		max_ms = 0;
	int64		reused = 0;
	int			nworkers = 0;

	if (sh == NULL)
		return;
	for (int i = 0; i < sh->nparticipants - 1; i++)
	{
		LoadFigures *p = &sh->participants[i].figures;

		if (!p->done)
			continue;
		min_ms = nworkers == 0 ? p->load_ms : Min(min_ms, p->load_ms);
		max_ms = Max(max_ms, p->load_ms);
		reused += p->reused;
		nworkers++;
	}
	appendStringInfo(buf, "; %d workers loaded in %.0f to %.0f ms, blocks held at most " UINT64_FORMAT " kB, " INT64_FORMAT " filled again",
					 nworkers, min_ms, max_ms, lb->peak_reserved / 1024, reused);
}

/*
 * The leader: keep what the participants did, in the query's memory,
 * before the Gather destroys the shared memory; the shared state is gone
 * from then on.
 */
void
load_blocks_keep_figures(LoadBlocks *lb)
{
	LoadShared *sh = lb->shared;

	if (sh == NULL)
		return;
	lb->nfinal = sh->nparticipants;
	lb->final = MemoryContextAlloc(lb->cxt, sizeof(LoadFigures) * sh->nparticipants);
	for (int i = 0; i < sh->nparticipants; i++)
		lb->final[i] = sh->participants[i].figures;
	lb->shared = NULL;
}

/*
 * The leader: what every participant did, for EXPLAIN ANALYZE, kept or
 * still in shared memory (copied); NULL if the load did not run in
 * parallel.
 */
const LoadFigures *
load_blocks_figures(LoadBlocks *lb, int *nparts)
{
	LoadShared *sh = lb->shared;
	LoadFigures *parts;

	*nparts = 0;
	if (lb->final)
	{
		*nparts = lb->nfinal;
		return lb->final;
	}
	if (sh == NULL)
		return NULL;
	parts = palloc(sizeof(LoadFigures) * sh->nparticipants);
	for (int i = 0; i < sh->nparticipants; i++)
		parts[i] = sh->participants[i].figures;
	*nparts = sh->nparticipants;
	return parts;
}

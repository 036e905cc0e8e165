/*-------------------------------------------------------------------------
 *
 * load_blocks.h
 *	  The block pool of a parallel GpuSort's load (load_blocks.c): blocks of
 *	  the query's shared memory that the workers fill with their rows and
 *	  the leader moves into its sort, within a limit that the leader holds
 *	  in the budget.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_LOAD_BLOCKS_H
#define GPUSORT_LOAD_BLOCKS_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "portability/instr_time.h"
#include "utils/dsa.h"

#include "sort/sort.h"

/* What one participant of the load did, for EXPLAIN ANALYZE. */
typedef struct LoadFigures
{
	int64		loaded;			/* a worker: rows copied into blocks; the
								 * leader: rows of its own scan */
	int64		moved;			/* the leader: rows moved from blocks */
	int64		passed;			/* rows returned through the Gather */
	uint64		bytes;			/* shared memory its blocks took */
	int64		reused;			/* blocks it filled again */
	double		load_ms;		/* from its first row asked to its last */
	bool		done;
} LoadFigures;

typedef struct LoadShared LoadShared;
typedef struct LoadBlock LoadBlock;

/* A participant's side of the pool; lives in its load node's state. */
typedef struct LoadBlocks
{
	/* the shared state; NULL without parallel mode or shared memory */
	LoadShared *shared;
	dsa_area   *area;
	int			participant;	/* index in the shared participants */
	LoadFigures figures;		/* this participant's, published when its
								 * input ends (load_blocks_finish) */

	/* the block it fills */
	dsa_pointer block_ptr;
	LoadBlock  *block;

	/* the leader: set before the Gather starts */
	Sorter	   *sort;			/* where it moves the blocks */
	SortLoadShare *budget;		/* where it holds the blocks in flight */

	/* the leader: set as the Gather starts (load_blocks_init_leader) */
	MemoryContext cxt;			/* the query's memory */
	uint64		shm_cap;		/* half of /dev/shm's free space at the start */
	uint64		blocks_cap;		/* the most the blocks may take */

	/* the leader: its view of the workers */
	uint64		workers_passed_seen;	/* workers_passed when it last
										 * returned to the Gather */
	uint64		peak_reserved;	/* the most in flight it saw */

	/* the leader: the linked blocks it moves at once */
	TupleBlock *moving;
	dsa_pointer *moving_ptrs;
	int			maxmoving;

	/* the leader: what every participant did, kept for EXPLAIN */
	LoadFigures *final;
	int			nfinal;
} LoadBlocks;

extern Size load_blocks_shared_size(int nworkers);
extern void load_blocks_init_leader(LoadBlocks *lb, void *coordinate,
									int nworkers, dsa_area *area,
									MemoryContext cxt);
extern void load_blocks_init_worker(LoadBlocks *lb, void *coordinate,
									dsa_area *area, int participant);
extern void load_blocks_reinit(LoadBlocks *lb);
extern void load_blocks_reset_participant(LoadBlocks *lb);
extern bool load_blocks_copy_slot(LoadBlocks *lb, TupleTableSlot *slot);
extern void load_blocks_passed_up(LoadBlocks *lb);
extern void load_blocks_finish(LoadBlocks *lb, instr_time start);
extern void load_blocks_drain(LoadBlocks *lb);
extern bool load_blocks_workers_passing(LoadBlocks *lb);
extern int64 load_blocks_drain_rest(LoadBlocks *lb);
extern void load_blocks_describe(LoadBlocks *lb, StringInfo buf);
extern void load_blocks_keep_figures(LoadBlocks *lb);
extern const LoadFigures *load_blocks_figures(LoadBlocks *lb, int *nparts);

#endif							/* GPUSORT_LOAD_BLOCKS_H */

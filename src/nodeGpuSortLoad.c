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
 * Each participant's GpuSortLoad reads its share of the partial plan and
 * copies every tuple, as a MinimalTuple, into chunks of the query's shared
 * memory area (the DSA of the Gather's parallel context), and returns
 * nothing: the scan and the copy, the serial part of a GpuSort's load, run
 * in every participant at once, and no tuple goes through the Gather's
 * tuple queues.  A participant fills a chunk of its own and links it into
 * a shared list when it is full or the input ends, so participants touch
 * shared state once a chunk, not once a row.
 *
 * The chunks together may take what the leader's GpuSort allows
 * (gpusort_load_set_limit: a share of the backend's budget, sort_budget.c),
 * and no more than half of what /dev/shm has free when dynamic shared
 * memory lives there, so that a large load cannot fail the query on a full
 * /dev/shm where native PostgreSQL would have run it.  When the load has
 * taken its limit, or there is no shared memory at all (no parallel mode,
 * no DSM segment), participants return their tuples instead: they travel
 * through the Gather to the GpuSort, which sorts them as a serial GpuSort
 * does (copied into its arena, spilled in runs).
 *
 * When the Gather has returned its last tuple, every participant has ended
 * its load and linked its chunks.  The GpuSort then puts each loaded tuple
 * into its sort in place (gpusort_load_put_all): it is sorted and emitted
 * where it lies, without a copy.  The chunks live as long as the Gather's
 * parallel context: until the query's end, or until a rescan of the
 * Gather (ReInitializeDSM frees them; GpuSort has ended its sort first).
 *
 * EXPLAIN ANALYZE shows, per participant, the rows and bytes it loaded,
 * the rows it passed up, and its load time; the figures are copied out of
 * shared memory when the node is shut down, before the Gather destroys it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "access/parallel.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "port/atomics.h"
#include "storage/dsm_impl.h"
#include "storage/spin.h"
#include "utils/dsa.h"

#include "gpusort.h"
#include "nodeGpuSortLoad.h"
#include "sort_batch.h"

/* a participant's chunk of shared memory: at most this, at least this */
#define LOAD_CHUNK_MAX		((Size) 4 * 1024 * 1024)
#define LOAD_CHUNK_MIN		((Size) 64 * 1024)

/* A chunk: this header, then MAXALIGNed MinimalTuples one after another. */
typedef struct LoadChunk
{
	dsa_pointer next;			/* the next chunk of the shared list */
	uint32		ntuples;
} LoadChunk;

#define CHUNK_HEADER_SIZE	MAXALIGN(sizeof(LoadChunk))

/* What one participant did, for EXPLAIN ANALYZE. */
typedef struct LoadParticipant
{
	int64		loaded;			/* rows copied into shared memory */
	int64		passed;			/* rows returned through the Gather */
	uint64		bytes;			/* shared memory its chunks took */
	double		load_ms;		/* from its first row asked to its last */
	bool		done;
} LoadParticipant;

/* The load's shared state, in the parallel context's DSM segment. */
typedef struct LoadShared
{
	slock_t		mutex;			/* protects chunks */
	dsa_pointer chunks;			/* every finished chunk */
	pg_atomic_uint64 reserved;	/* bytes of chunks taken, all together */
	uint64		limit;			/* bytes they may take */
	Size		chunk_size;
	int			nparticipants;	/* workers planned, then the leader */
	LoadParticipant participants[FLEXIBLE_ARRAY_MEMBER];
} LoadShared;

struct GpuSortLoadState
{
	CustomScanState css;

	/* set by the GpuSort above, in the leader, before the Gather starts */
	Size		requested_limit;

	/* shared state; NULL without parallel mode or shared memory */
	LoadShared *shared;
	dsa_area   *area;
	int			participant;	/* index in shared->participants */

	/* this participant's load */
	bool		started;
	bool		finished;
	bool		full;			/* the limit is reached: pass rows up */
	instr_time	start;
	dsa_pointer chunk_ptr;
	LoadChunk  *chunk;
	char	   *chunk_free;
	Size		chunk_left;
	int64		loaded;
	int64		passed;
	uint64		bytes;

	/* the leader: what every participant did, kept for EXPLAIN */
	LoadParticipant *final;
	int			nfinal;
	uint64		final_limit;
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

/* Link this participant's current chunk, if any, into the shared list. */
static void
link_chunk(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;

	if (ls->chunk == NULL)
		return;
	SpinLockAcquire(&sh->mutex);
	ls->chunk->next = sh->chunks;
	sh->chunks = ls->chunk_ptr;
	SpinLockRelease(&sh->mutex);
	ls->chunk = NULL;
	ls->chunk_left = 0;
}

/*
 * A new chunk with room for need bytes, within the load's limit; false if
 * the limit or the shared memory area refuses it.
 */
static bool
new_chunk(GpuSortLoadState *ls, Size need)
{
	LoadShared *sh = ls->shared;
	Size		size = Max(sh->chunk_size, CHUNK_HEADER_SIZE + need);
	uint64		before = pg_atomic_fetch_add_u64(&sh->reserved, size);
	dsa_pointer ptr;

	if (before + size > sh->limit)
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
	ls->chunk_ptr = ptr;
	ls->chunk = dsa_get_address(ls->area, ptr);
	ls->chunk->next = InvalidDsaPointer;
	ls->chunk->ntuples = 0;
	ls->chunk_free = (char *) ls->chunk + CHUNK_HEADER_SIZE;
	ls->chunk_left = size - CHUNK_HEADER_SIZE;
	ls->bytes += size;
	return true;
}

/* copy_slot_tuple's space: len bytes of the current chunk, or of a new one */
static void *
chunk_space(void *arg, Size len)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) arg;
	Size		need = MAXALIGN(len);
	void	   *p;

	if (ls->chunk == NULL || ls->chunk_left < need)
	{
		link_chunk(ls);
		if (!new_chunk(ls, need))
			return NULL;
	}
	p = ls->chunk_free;
	ls->chunk_free += need;
	ls->chunk_left -= need;
	return p;
}

/* The participant's input has ended: link its last chunk, publish figures. */
static void
finish_load(GpuSortLoadState *ls)
{
	LoadParticipant *me;

	if (ls->finished || ls->shared == NULL)
		return;
	ls->finished = true;
	link_chunk(ls);
	me = &ls->shared->participants[ls->participant];
	me->loaded = ls->loaded;
	me->passed = ls->passed;
	me->bytes = ls->bytes;
	me->load_ms = gpusort_elapsed_ms(ls->start);
	me->done = true;
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
		ls->full = (ls->shared == NULL);
	}
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(child);

		if (TupIsNull(slot))
		{
			finish_load(ls);
			return NULL;
		}
		if (!ls->full)
		{
			if (copy_slot_tuple(slot, chunk_space, ls) != NULL)
			{
				ls->chunk->ntuples++;
				ls->loaded++;
				continue;
			}
			ls->full = true;
		}
		ls->passed++;
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
	ls->full = false;
	ls->chunk = NULL;
	ls->chunk_left = 0;
	ls->loaded = 0;
	ls->passed = 0;
	ls->bytes = 0;
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
 * What the load may take: what the GpuSort allowed, and at most half of
 * what /dev/shm has free if dynamic shared memory lives there.
 */
static uint64
load_limit(GpuSortLoadState *ls)
{
	uint64		limit = ls->requested_limit;

	if (ls->area == NULL)
		return 0;
	if (dynamic_shared_memory_type == DSM_IMPL_POSIX)
	{
		struct statvfs fs;

		if (statvfs("/dev/shm", &fs) == 0)
			limit = Min(limit, (uint64) fs.f_bavail * fs.f_frsize / 2);
	}
	return limit;
}

/* Set up the shared state for a load: no chunks, nothing reserved. */
static void
reset_shared(GpuSortLoadState *ls)
{
	LoadShared *sh = ls->shared;

	sh->chunks = InvalidDsaPointer;
	pg_atomic_write_u64(&sh->reserved, 0);
	sh->limit = load_limit(ls);

	/*
	 * Chunks small enough that a small limit still fills a few per
	 * participant, large enough that linking them costs nothing.
	 */
	sh->chunk_size = Max(Min(sh->limit / (4 * sh->nparticipants), LOAD_CHUNK_MAX),
						 LOAD_CHUNK_MIN);
	memset(sh->participants, 0, sizeof(LoadParticipant) * sh->nparticipants);
}

static void
load_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortLoadState *ls = (GpuSortLoadState *) node;
	LoadShared *sh = (LoadShared *) coordinate;

	SpinLockInit(&sh->mutex);
	pg_atomic_init_u64(&sh->reserved, 0);
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
	dsa_pointer ptr = sh->chunks;

	/* the GpuSort above ended its sort before the Gather was rescanned */
	while (DsaPointerIsValid(ptr))
	{
		dsa_pointer next = ((LoadChunk *) dsa_get_address(ls->area, ptr))->next;

		dsa_free(ls->area, ptr);
		ptr = next;
	}
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
	ls->final_limit = sh->limit;
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
	uint64		bytes = 0;

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
		bytes += parts[i].bytes;
	}
	ExplainPropertyInteger("Rows Loaded", NULL, loaded, es);
	ExplainPropertyInteger("Shared Memory", "kB", (int64) (bytes / 1024), es);
	ExplainPropertyInteger("Rows Passed Up", NULL, passed, es);
	if (es->costs)
		ExplainPropertyInteger("Load Limit", "kB", (int64) (ls->final_limit / 1024), es);
	if (!es->timing)
		return;
	for (int i = 0; i < nparts; i++)
	{
		char		label[32];
		char		line[160];

		if (!parts[i].done)
			continue;
		if (i == nparts - 1)
			snprintf(label, sizeof(label), "Leader Load");
		else
			snprintf(label, sizeof(label), "Worker %d Load", i);
		snprintf(line, sizeof(line),
				 INT64_FORMAT " rows, " UINT64_FORMAT " kB, " INT64_FORMAT " passed up, %.3f ms",
				 parts[i].loaded, parts[i].bytes / 1024, parts[i].passed,
				 parts[i].load_ms);
		ExplainPropertyText(label, line, es);
	}
}

/*
 * The load node directly below the Gather that is child, in the leader;
 * NULL if child is not such a Gather.
 */
GpuSortLoadState *
gpusort_load_below(PlanState *child)
{
	PlanState  *below;

	if (child == NULL || !IsA(child, GatherState))
		return NULL;
	below = outerPlanState(child);
	if (below == NULL || !IsA(below, CustomScanState) ||
		((CustomScanState *) below)->methods != &load_exec_methods)
		return NULL;
	return (GpuSortLoadState *) below;
}

/* Before the Gather starts: the bytes the load may take. */
void
gpusort_load_set_limit(GpuSortLoadState *load, Size limit)
{
	load->requested_limit = limit;
}

/* After the Gather has ended: the bytes the load took. */
Size
gpusort_load_bytes(GpuSortLoadState *load)
{
	if (load->shared == NULL)
		return 0;
	return (Size) pg_atomic_read_u64(&load->shared->reserved);
}

/*
 * After the Gather has ended: put every loaded tuple into sort, in place.
 * Returns how many.
 */
int64
gpusort_load_put_all(GpuSortLoadState *load, Gpusortstate *sort)
{
	dsa_pointer ptr;
	int64		n = 0;

	if (load->shared == NULL)
		return 0;
	for (ptr = load->shared->chunks; DsaPointerIsValid(ptr);)
	{
		LoadChunk  *chunk = dsa_get_address(load->area, ptr);
		char	   *p = (char *) chunk + CHUNK_HEADER_SIZE;

		for (uint32 i = 0; i < chunk->ntuples; i++)
		{
			MinimalTuple tuple = (MinimalTuple) p;

			p += MAXALIGN(tuple->t_len);
			gpusort_sort_puttuple_in_place(sort, tuple);
		}
		n += chunk->ntuples;
		ptr = chunk->next;
	}
	return n;
}

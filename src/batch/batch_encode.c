/*-------------------------------------------------------------------------
 *
 * batch_encode.c
 *	  The encode stage of a batch (batch.h): each record's normalized
 *	  key (keys.h), written into the chunk buffers of the batch's engine.
 *
 * sort.c calls it: batch_start_keys readies a new batch (a generic
 * layout's room for the inputs, the pool threads), batch_start_engine
 * starts the engine chain from the first record, and batch_encode encodes
 * what has been loaded since (every ENCODE_BATCH tuples, and all that is
 * left at the input's end).
 *
 * Two paths, as keys.h describes:
 *	- fixed layouts: the backend encodes each ENCODE_BATCH tuples as they
 *	  are loaded, while they are in the CPU's cache, and submits each chunk
 *	  of GPUSORT_CHUNK_RECORDS keys as it fills, so that the GPU engine
 *	  transfers and sorts while the child is still producing; in large
 *	  batches the keys past the first chunks are encoded at the end, by the
 *	  pool threads and the backend together, or, in a batch that a parallel
 *	  load fills with blocks, by the pool threads as each whole chunk of
 *	  records arrives;
 *	- generic layouts: each record's key column datums are kept
 *	  (KeyInputs) and the pool threads build the keys from them, collation
 *	  keys while the input is still read, cheaper keys at the end.
 *
 * A first NULL in a column whose key had no NULL byte changes the layout:
 * the engine starts over and every record of the batch is encoded again
 * (the layout's version tells sort.c that runs before it have other keys).
 * A GPU engine that fails hands its keys to the CPU engine inside the
 * engine chain (engine_chain.c), so nothing is encoded again; keys that
 * cannot be built, or a CPU engine that fails, end the encoding, and the
 * batch is then ordered by comparators alone (the comparator sort).
 *
 * Every task of the pool threads refers only to the batch's memory, never
 * to the backend's stack, which an ERROR may unwind while tasks run
 * (threadpool.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "batch/batch.h"
#include "support/faults.h"

/*
 * Where a record's key column datums (KeyInputs, generic layouts) stand,
 * one byte per record.  Where the backend reads on while keys are built
 * (collation keys), it stores each record's datums as it loads; otherwise
 * the pool threads take them from the tuples themselves once the input has
 * ended, and the backend does only what they cannot (detoasting).
 */
#define INPUTS_TO_DEFORM	0	/* a pool thread reads them from the tuple */
#define INPUTS_FOR_BACKEND	1	/* it could not: the backend will */
#define INPUTS_STORED		2	/* in place */

/* a key-building task's view of one engine chunk (generic layouts) */
typedef struct ChunkBuild
{
	KeyInputs  *inputs;
	uint8	   *input_state;	/* the chunk's INPUTS_* bytes */
	MinimalTuple *tuples;		/* the arena's tuples, once the input has
								 * ended (no longer moved); else NULL */
	const KeyLayout *layout;
	uint64	   *keys;			/* the engine's buffer for the chunk */
	size_t		first;			/* record index of the chunk's first key */
	int			key_bytes;
	int			key_words;
} ChunkBuild;

/*
 * A buffer for chunk chunkno's keys from the engine chain, or NULL if the
 * CPU engine failed too: the keys are then given up.
 */
static uint64 *
engine_chunk(SortBatch *batch, size_t chunkno)
{
	char	   *why = NULL;
	uint64	   *keys = engine_chain_chunk(&batch->chain, chunkno, &why);

	if (keys == NULL)
		batch_give_up_keys(batch, why);
	return keys;
}

/*
 * Hand chunk chunkno, records up to chunk_end, to the engine chain.  False
 * if the CPU engine failed too: the keys are then given up.
 */
static bool
submit_chunk(SortBatch *batch, size_t chunkno, size_t chunk_end)
{
	char	   *why = NULL;

	if (!engine_chain_submit(&batch->chain, chunkno,
							 chunk_end - chunkno * GPUSORT_CHUNK_RECORDS, &why))
	{
		batch_give_up_keys(batch, why);
		return false;
	}
	batch->nsubmitted = chunk_end;
	return true;
}

/* Take the KeyInputs chunks that records below upto need (generic layouts). */
static void
alloc_inputs(SortBatch *batch, size_t upto)
{
	KeyInputs  *in = &batch->inputs;
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;

	while (in->nchunks * chunk_records < upto)
	{
		size_t		chunkno = in->nchunks;

		in->values[chunkno] = batch_alloc(batch, sizeof(Datum) * chunk_records * in->ncols);
		in->isnull[chunkno] = batch_alloc(batch, sizeof(bool) * chunk_records * in->ncols);
		batch->input_states[chunkno] = batch_alloc(batch, chunk_records);
		memset(batch->input_states[chunkno], INPUTS_TO_DEFORM, chunk_records);
		in->nchunks++;
		batch->inputs_bytes += batch_inputs_chunk_bytes(batch);
	}
}

/* The backend keeps record i's key column datums, detoasted. */
static void
store_record_inputs(SortBatch *batch, size_t i)
{
	KeyInputs  *in = &batch->inputs;

	ExecStoreMinimalTuple(batch->tuples[i], batch->sh->work_slot, false);
	key_store_inputs(&batch->sh->layout, batch->sh->work_slot,
					 key_inputs_values(in, i), key_inputs_isnull(in, i),
					 batch->cxt, &batch->inputs_bytes);
	batch->input_states[i / in->chunk_records][i % in->chunk_records] = INPUTS_STORED;
}

/* Keep the key column datums of records ninputs .. upto-1 (generic layouts). */
static void
store_inputs(SortBatch *batch, size_t upto)
{
	alloc_inputs(batch, upto);
	for (; batch->ninputs < upto; batch->ninputs++)
		store_record_inputs(batch, batch->ninputs);
	ExecClearTuple(batch->sh->work_slot);
}

/*
 * Build record i's prefix into the chunk's key buffer, taking its datums
 * from the tuple first if no one has.  False if the key could not be built
 * (the context says why), or, with *for_backend set, if the datums need
 * the backend.
 */
static bool
build_record_key(KeyBuildContext *ctx, ChunkBuild *cb, size_t i, bool *for_backend)
{
	uint8	   *state = &cb->input_state[i - cb->first];
	Datum	   *values = key_inputs_values(cb->inputs, i);
	bool	   *isnull = key_inputs_isnull(cb->inputs, i);
	uint8		bytes[GPUSORT_MAX_KEY_BYTES];
	bool		ended;

	*for_backend = false;
	if (*state != INPUTS_STORED)
	{
		if (cb->tuples == NULL ||
			!key_deform_inputs(cb->layout, cb->tuples[i], values, isnull))
		{
			*state = INPUTS_FOR_BACKEND;
			*for_backend = true;
			return false;
		}
		*state = INPUTS_STORED;
	}
	if (cb->layout->lead_cols > 0 ?
		!key_build_lead(ctx, values, isnull, cb->key_bytes, bytes) :
		!key_build_span(ctx, values, isnull, 0, cb->key_bytes, bytes, &ended))
		return false;
	key_bytes_to_words(bytes, cb->key_words,
					   cb->keys + (i - cb->first) * cb->key_words);
	return true;
}

/* a key-building task: the prefixes of records [from, to) of one chunk */
static bool
build_chunk_keys(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	ChunkBuild *cb = (ChunkBuild *) arg;

	for (size_t i = from; i < to; i++)
	{
		bool		for_backend;

		if ((i & 63) == 0 && key_build_stopped(ctx))
			return false;
		if (!build_record_key(ctx, cb, i, &for_backend) && !for_backend)
			return false;
	}
	return true;
}

/*
 * After the pool threads are done with a chunk: the records whose datums
 * only the backend can take (detoasting, added columns), and their keys.
 */
static bool
finish_chunk_inputs(SortBatch *batch, ChunkBuild *cb, size_t end)
{
	uint8	   *states = cb->input_state;
	KeyBuildContext *ctx = threadpool_backend_state(batch->pool);
	bool		ok = true;

	for (size_t i = cb->first; i < end && ok; i++)
	{
		uint8	   *next = memchr(states + (i - cb->first), INPUTS_FOR_BACKEND, end - i);
		bool		for_backend;

		if (next == NULL)
			break;
		i = cb->first + (next - states);
		store_record_inputs(batch, i);
		ok = build_record_key(ctx, cb, i, &for_backend);
	}
	ExecClearTuple(batch->sh->work_slot);
	if (!ok)
		batch_give_up_keys(batch, psprintf("key building failed: %s",
										 key_build_error(ctx)));
	return ok;
}

/*
 * encode_records() for generic layouts: the building of each record's key
 * is queued to the pool threads.  With collation keys, the backend keeps
 * each record's datums and the threads build while it reads on; other keys
 * are queued at the end, when the threads take the datums from the tuples
 * too.  A chunk is submitted once full and built; at the end, the backend
 * waits for (and helps with) what is left.
 */
static void
encode_generic(SortBatch *batch, bool final)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;

	/*
	 * Keys that cost little (C text, numeric, bytea, ...) wait for the end
	 * of the input, when every thread and the backend build them at once:
	 * threads busy beside the backend slow its reading down by more than
	 * such keys cost.  Collation keys are built while the input is read,
	 * unless gpusort.key_overlap is off.
	 */
	if (!final && !batch->sh->layout.costly_keys)
		return;

	/* queue the building of every new record's key */
	while (!batch->comparator_sort && batch->nencoded < batch->ntuples)
	{
		size_t		chunkno = batch->nencoded / chunk_records;
		size_t		chunk_end = Min(batch->ntuples, (chunkno + 1) * chunk_records);
		ChunkBuild *cb = batch->chunk_builds[chunkno];

		if (cb == NULL)
		{
			uint64	   *keys = engine_chunk(batch, chunkno);

			if (keys == NULL)
				return;
			alloc_inputs(batch, chunk_end);
			cb = MemoryContextAlloc(batch->cxt, sizeof(ChunkBuild));
			cb->inputs = &batch->inputs;
			cb->input_state = batch->input_states[chunkno];
			/* the tuple array moves while it grows: only once it ended */
			cb->tuples = final ? batch->tuples : NULL;
			cb->layout = &batch->sh->layout;
			cb->keys = keys;
			cb->first = chunkno * chunk_records;
			cb->key_bytes = batch->sh->layout.key_bytes;
			cb->key_words = batch->sh->layout.key_words;
			batch->chunk_builds[chunkno] = cb;
		}
		if (batch->sh->layout.costly_keys)
			store_inputs(batch, chunk_end);
		threadpool_submit(batch->pool, &batch->chunk_tasks[chunkno], build_chunk_keys, cb,
						  batch->nencoded, chunk_end);
		batch->nencoded = chunk_end;
	}

	/* submit the chunks that are complete and built, in order */
	while (!batch->comparator_sort && batch->nsubmitted < batch->nencoded)
	{
		size_t		chunkno = batch->nsubmitted / chunk_records;
		size_t		chunk_end = Min(batch->nencoded, (chunkno + 1) * chunk_records);

		if (!final && (chunk_end % chunk_records != 0 ||
					   !threadpool_group_done(batch->pool, &batch->chunk_tasks[chunkno])))
			break;
		gpusort_fault_point(GPUSORT_PHASE_THREADS);
		threadpool_wait(batch->pool, &batch->chunk_tasks[chunkno]);
		if (threadpool_failure(batch->pool))
		{
			batch_give_up_keys(batch, psprintf("key building failed: %s",
											   threadpool_failure(batch->pool)));
			break;
		}
		if (!finish_chunk_inputs(batch, batch->chunk_builds[chunkno], chunk_end))
			break;
		if (!submit_chunk(batch, chunkno, chunk_end))
			break;
	}
}

/*
 * Start the engine chain for the current layout, from the first record:
 * at the start of a batch, and when a new layout makes every key be
 * encoded again.
 */
void
batch_start_engine(SortBatch *batch)
{
	SortBatchShared *sh = batch->sh;
	size_t		expected = Max(batch->expected_records, batch->ntuples);

	/* pool threads may be writing into the old engine's chunks */
	if (batch->pool)
		threadpool_wait_all(batch->pool);
	if (batch->chunk_tasks)
	{
		memset(batch->chunk_tasks, 0, sizeof(TaskGroup) * MAX_CHUNKS);
		memset(batch->chunk_builds, 0, sizeof(ChunkBuild *) * MAX_CHUNKS);
	}
	engine_chain_end(&batch->chain);
	batch->nencoded = 0;
	batch->nsubmitted = 0;
	if (batch->comparator_sort)
		return;
	engine_chain_begin(&batch->chain, batch->cxt, sh->layout.key_words,
					   expected);
}

/*
 * Fixed layouts of large inputs: the keys past the first
 * PARALLEL_ENCODE_FROM records are encoded once the input has ended, by
 * the pool threads and the backend together, rather than by the backend
 * between reading rows (reading is the backend's own work, which threads
 * cannot share).  Smaller inputs are encoded as they are read.  A batch
 * loaded by blocks (a parallel load's blocks, which the workers read) is
 * encoded by the threads as each whole chunk of records arrives: the
 * leader waits for the copies anyway, and the keys are then ready when
 * the workers' input ends.
 */
#define PARALLEL_ENCODE_FROM	(2 * GPUSORT_CHUNK_RECORDS)

/* a key-encoding task's view of one engine chunk (fixed layouts) */
typedef struct ChunkEncode
{
	KeyLayout  *layout;
	MinimalTuple *tuples;		/* the arena's tuples (not moved while the
								 * tasks run) */
	uint64	   *keys;			/* the engine's buffer for the chunk */
	size_t		first;			/* record index of the chunk's first key */
	size_t		from;			/* records from .. to-1 are this task's */
	size_t		to;
	Datum	   *values;			/* room for one record's column datums */
	bool	   *isnull;
	bool	   *null_seen;		/* per column: NULL where the key has no
								 * NULL byte */
	bool		needs_backend;	/* a tuple lacks key columns */
} ChunkEncode;

static bool
encode_chunk_keys(void *state, void *arg, size_t from, size_t to)
{
	KeyBuildContext *ctx = (KeyBuildContext *) state;
	ChunkEncode *ce = (ChunkEncode *) arg;
	int			words = ce->layout->key_words;

	for (size_t i = from; i < to; i++)
	{
		KeyEncodeResult result;

		/* the sort is ending (an error, a cancel): leave the rest */
		if ((i & 63) == 0 && key_build_stopped(ctx))
			return false;
		result = key_encode_record(ce->layout, ce->tuples[i],
												   ce->values, ce->isnull,
												   ce->null_seen,
												   ce->keys + (i - ce->first) * words);

		/* a new layout means encoding every key again: stop here */
		if (result == KEY_NEEDS_NULL_BYTE)
			break;
		if (result == KEY_NEEDS_BACKEND)
		{
			ce->needs_backend = true;
			break;
		}
	}
	return true;
}

/*
 * Encode records nencoded .. ntuples-1 of a fixed layout in the pool
 * threads and submit every chunk, if the input has ended (final); else
 * only the whole chunks of records, for a batch loaded by blocks.  Tuples
 * the threads cannot read are encoded by the backend, and a NULL where
 * the layout has no NULL byte places the layout again and starts over.
 */
static void
encode_fixed_in_threads(SortBatch *batch, bool final)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;
	KeyLayout  *layout = &batch->sh->layout;
	size_t		end = final ? batch->ntuples :
		batch->ntuples / chunk_records * chunk_records;
	MemoryContext oldcxt;

	if (batch->nencoded >= end && batch->nsubmitted >= end)
		return;
	oldcxt = MemoryContextSwitchTo(batch->cxt);
	batch_start_threads(batch);
	while (!batch->comparator_sort)
	{
		size_t		left = end > batch->nencoded ? end - batch->nencoded : 0;
		size_t		nchunks = (left + chunk_records - 1) / chunk_records + 1;
		ChunkEncode *tasks = palloc0(sizeof(ChunkEncode) * nchunks);
		int			ntasks = 0;
		TaskGroup  *group = threadpool_group_create(batch->pool);
		bool		gave_up = false;
		bool		relayout = false;

		/* 1: a buffer for every chunk, and a task encoding into it */
		for (size_t from = batch->nencoded; from < end;)
		{
			size_t		chunkno = from / chunk_records;
			size_t		to = Min(end, (chunkno + 1) * chunk_records);
			ChunkEncode *ce = &tasks[ntasks++];

			ce->keys = engine_chunk(batch, chunkno);
			if (ce->keys == NULL)
			{
				threadpool_wait(batch->pool, group);
				gave_up = true;
				break;
			}
			ce->layout = layout;
			ce->tuples = batch->tuples;
			ce->first = chunkno * chunk_records;
			ce->from = from;
			ce->to = to;
			ce->values = palloc(sizeof(Datum) * layout->ncols);
			ce->isnull = palloc(sizeof(bool) * layout->ncols);
			ce->null_seen = palloc0(sizeof(bool) * layout->ncols);
			threadpool_submit(batch->pool, group, encode_chunk_keys, ce, from, to);
			from = to;
		}
		if (gave_up)
			break;
		gpusort_fault_point(GPUSORT_PHASE_THREADS);
		threadpool_wait(batch->pool, group);
		if (threadpool_failure(batch->pool))
		{
			batch_give_up_keys(batch, psprintf("key encoding stopped: %s",
											   threadpool_failure(batch->pool)));
			break;
		}

		/* 2: what the threads left to the backend or to a new layout */
		for (int t = 0; t < ntasks && !relayout; t++)
		{
			ChunkEncode *ce = &tasks[t];

			for (int c = 0; c < layout->ncols; c++)
			{
				if (ce->null_seen[c])
				{
					layout->cols[c].null_byte = true;
					relayout = true;
				}
			}
			for (size_t i = ce->from; i < ce->to && ce->needs_backend && !relayout; i++)
				relayout = !key_encode_tuple(layout, batch->tuples[i], batch->sh->work_slot,
											 ce->keys + (i - ce->first) * layout->key_words);
		}
		ExecClearTuple(batch->sh->work_slot);
		if (relayout)
		{
			key_layout_place(layout);
			batch->sh->layout_version++;
			batch_start_engine(batch);	/* from the first record */
			continue;
		}
		batch->nencoded = Max(batch->nencoded, end);

		/* 3: submit the chunks in order */
		while (batch->nsubmitted < end)
		{
			size_t		chunkno = batch->nsubmitted / chunk_records;

			if (!submit_chunk(batch, chunkno,
							  Min(end, (chunkno + 1) * chunk_records)))
				break;
		}
		break;
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Encode the keys of records nencoded .. ntuples-1 into the engine and
 * submit the chunks that fill up (all of them if final).  A first NULL in a
 * column whose key had no NULL byte changes the layout: the engine starts
 * over and every record is encoded again.
 */
void
batch_encode(SortBatch *batch, bool final)
{
	const size_t chunk_records = GPUSORT_CHUNK_RECORDS;
	instr_time	start;

	gpusort_fault_point(GPUSORT_PHASE_ENCODE);
	INSTR_TIME_SET_CURRENT(start);
	if (batch->sh->layout.generic)
	{
		encode_generic(batch, final);
		batch->sh->stats->encode_ms += gpusort_elapsed_ms(start);
		return;
	}
	if ((batch->nencoded >= PARALLEL_ENCODE_FROM || batch->loaded_by_blocks) &&
		batch_threads(batch) > 0)
	{
		if (final || batch->loaded_by_blocks)
			encode_fixed_in_threads(batch, final);
		batch->sh->stats->encode_ms += gpusort_elapsed_ms(start);
		return;
	}
	while (!batch->comparator_sort &&
		   (batch->nencoded < batch->ntuples || (final && batch->nsubmitted < batch->ntuples)))
	{
		size_t		chunkno = batch->nencoded / chunk_records;
		size_t		chunk_end = Min(batch->ntuples, (chunkno + 1) * chunk_records);
		uint64	   *keys;
		bool		relayout = false;

		if (batch->nencoded < chunk_end)
		{
			keys = engine_chunk(batch, chunkno);
			if (keys == NULL)
				break;
			for (size_t i = batch->nencoded; i < chunk_end; i++)
			{
				if (!key_encode_tuple(&batch->sh->layout, batch->tuples[i], batch->sh->work_slot,
									  keys + (i % chunk_records) * batch->sh->layout.key_words))
				{
					relayout = true;
					break;
				}
			}
			ExecClearTuple(batch->sh->work_slot);
			if (relayout)
			{
				key_layout_place(&batch->sh->layout);
				batch->sh->layout_version++;
				batch_start_engine(batch);
				continue;
			}
			batch->nencoded = chunk_end;
		}

		/* submit a full chunk, or the last one when the input has ended */
		if (chunk_end % chunk_records != 0 && !final)
			break;
		(void) submit_chunk(batch, chunkno, chunk_end);
	}
	batch->sh->stats->encode_ms += gpusort_elapsed_ms(start);
}

/*
 * Ready a new batch for keys: for a generic layout, room for the inputs,
 * and the pool threads.
 */
void
batch_start_keys(SortBatch *batch)
{
	KeyInputs  *in = &batch->inputs;

	if (!batch->sh->layout.generic)
		return;

	in->chunk_records = GPUSORT_CHUNK_RECORDS;
	in->ncols = batch->sh->layout.full_cols;
	in->nchunks = 0;
	in->values = MemoryContextAllocZero(batch->cxt, sizeof(Datum *) * MAX_CHUNKS);
	in->isnull = MemoryContextAllocZero(batch->cxt, sizeof(bool *) * MAX_CHUNKS);
	batch->input_states = MemoryContextAllocZero(batch->cxt, sizeof(uint8 *) * MAX_CHUNKS);
	batch->chunk_tasks = MemoryContextAllocZero(batch->cxt, sizeof(TaskGroup) * MAX_CHUNKS);
	batch->chunk_builds = MemoryContextAllocZero(batch->cxt, sizeof(ChunkBuild *) * MAX_CHUNKS);
	batch_start_threads(batch);
}

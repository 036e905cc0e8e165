/*-------------------------------------------------------------------------
 *
 * run_format.h
 *	  The record format of a sorted run: its one encoder and its one
 *	  decoder, shared by the run writer (run_write.c), the run reader
 *	  (run_read.c) and the final merge in the pool threads
 *	  (run_merge_window.c), which parses the records in its read buffers
 *	  itself.
 *
 * Each record of a run is
 *
 *		uint32 length | normalized key (key_words words) | MinimalTuple
 *
 * where, as tuplesort.c writes them, the tuple goes without its length and
 * padding (the first MINIMAL_TUPLE_DATA_OFFSET bytes), which the reader
 * puts back; the length counts the key and the rest of the tuple.  A run
 * without keys (key_words 0) holds the length and the tuple only.
 *
 * The key is the one the engine sorted (batch_sort.c keeps it beside each
 * sorted tuple), or in a merge pass's run the one its merge read, so that
 * the merge compares keys first and calls PostgreSQL's comparators only
 * where two inexact keys are equal.  Only generic keys are written
 * (runs_rebuild_keys, in run.c): a fixed key is built again from the tuple
 * as the run is read, and a key that cannot decide a merge (a libc
 * collation's) is left out.
 *
 * The functions are inline: the writer's pool threads encode records here,
 * calling nothing of PostgreSQL, at every record of a run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_RUN_FORMAT_H
#define GPUSORT_RUN_FORMAT_H

#include "postgres.h"

#include "access/htup_details.h"

/* bytes of the length that opens each record */
#define RUN_RECORD_LENGTH_BYTES		sizeof(uint32)

/* bytes of a tuple in a run: without its length and padding */
#define RUN_TUPLE_BYTES(tuple)	((tuple)->t_len - MINIMAL_TUPLE_DATA_OFFSET)
#define RUN_TUPLE_DATA(tuple)	((char *) (tuple) + MINIMAL_TUPLE_DATA_OFFSET)

/* bytes of a record in a run: its length, its key (key_bytes), its tuple */
static inline Size
run_record_bytes(MinimalTuple tuple, Size key_bytes)
{
	return RUN_RECORD_LENGTH_BYTES + key_bytes + RUN_TUPLE_BYTES(tuple);
}

/*
 * Encode a record's length and key at p; returns the bytes written.  The
 * tuple's bytes, RUN_TUPLE_BYTES() from RUN_TUPLE_DATA(), follow them: a
 * writer may put them elsewhere, as when a record is larger than its
 * buffer.
 */
static inline Size
run_record_put_head(char *p, const uint64 *key, Size key_bytes, MinimalTuple tuple)
{
	uint32		len = key_bytes + RUN_TUPLE_BYTES(tuple);

	memcpy(p, &len, sizeof(len));
	if (key_bytes > 0)
		memcpy(p + sizeof(len), key, key_bytes);
	return sizeof(len) + key_bytes;
}

/* Encode one whole record at p, in run_record_bytes() bytes. */
static inline void
run_record_put(char *p, const uint64 *key, Size key_bytes, MinimalTuple tuple)
{
	Size		head = run_record_put_head(p, key, key_bytes, tuple);

	memcpy(p + head, RUN_TUPLE_DATA(tuple), RUN_TUPLE_BYTES(tuple));
}

/*
 * The length a record at p opens with: the bytes of its key and tuple that
 * follow the RUN_RECORD_LENGTH_BYTES at p.
 */
static inline uint32
run_record_length(const char *p)
{
	uint32		len;

	memcpy(&len, p, sizeof(len));
	return len;
}

/* bytes that run_record_get() needs in buf for a record of length len */
static inline Size
run_record_unpacked_bytes(uint32 len)
{
	return len + MINIMAL_TUPLE_DATA_OFFSET;
}

/*
 * Decode the record of length len whose key and tuple start at body into
 * buf, where its key is aligned and its tuple gets back its length: *key
 * is set to the key, and the tuple is returned.
 */
static inline MinimalTuple
run_record_get(const char *body, uint32 len, Size key_bytes, char *buf,
			   const uint64 **key)
{
	MinimalTuple tuple = (MinimalTuple) (buf + key_bytes);

	memcpy(buf, body, key_bytes);
	*key = (const uint64 *) buf;
	memcpy(RUN_TUPLE_DATA(tuple), body + key_bytes, len - key_bytes);
	tuple->t_len = len - key_bytes + MINIMAL_TUPLE_DATA_OFFSET;
	return tuple;
}

#endif							/* GPUSORT_RUN_FORMAT_H */

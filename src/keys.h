/*-------------------------------------------------------------------------
 *
 * keys.h
 *	  Normalized sort keys: the fixed-width, order-preserving byte strings
 *	  that gpusort's engines sort instead of calling comparators.
 *
 * A key is a sequence of 64-bit words, word 0 most significant, compared as
 * unsigned integers; equivalently, the big-endian bytes of the words compare
 * with memcmp in ORDER BY order.  A KeyLayout says where each ORDER BY
 * column's bytes go (a NULL byte, then the value, DESC folded in by
 * inverting bits).  A layout is exact when every column is fully encoded;
 * otherwise records whose keys are equal must still be ordered by
 * PostgreSQL's comparators (tiebreak.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_KEYS_H
#define GPUSORT_KEYS_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "executor/tuptable.h"

#define GPUSORT_MAX_KEY_BYTES	32
#define GPUSORT_MAX_KEY_WORDS	(GPUSORT_MAX_KEY_BYTES / 8)

/* How a column's values become key bytes. */
typedef enum KeyKind
{
	KEY_NONE,					/* no exact encoding: comparators decide */
	KEY_BOOL,
	KEY_INT2,
	KEY_INT4,					/* also date */
	KEY_INT8,					/* also time, timestamp, timestamptz */
	KEY_OID,
	KEY_FLOAT4,
	KEY_FLOAT8,
	KEY_UUID
} KeyKind;

typedef struct KeyColumn
{
	AttrNumber	attno;			/* scan tuple column, 1-based */
	KeyKind		kind;
	int			value_bytes;	/* bytes of the full value encoding */
	bool		descending;
	bool		nulls_first;

	/* placement in the current layout (key_layout_place) */
	bool		null_byte;		/* a NULL has been seen: key has a NULL byte */
	bool		in_key;			/* some of the column is in the key */
	int			offset;			/* first byte (the NULL byte, if any) */
	int			bytes;			/* value bytes stored: a prefix if < value_bytes */
} KeyColumn;

typedef struct KeyLayout
{
	int			ncols;
	KeyColumn  *cols;
	int			max_bytes;		/* gpusort.key_width when the sort started */
	int			key_bytes;		/* bytes used */
	int			key_words;		/* words per key (0: nothing encodable) */
	int			exact_cols;		/* leading columns that the key decides */
	bool		exact;			/* exact_cols == ncols */
	AttrNumber	max_attno;		/* deform the scan tuple up to here */
} KeyLayout;

/*
 * Where the keys of a sort live: chunks of chunk_records keys each, record
 * i in chunk i / chunk_records.  The engines own the memory.
 */
typedef struct KeyStore
{
	uint64	  **chunks;
	size_t		chunk_records;
	int			key_words;
} KeyStore;

static inline const uint64 *
keystore_key(const KeyStore *store, size_t i)
{
	return store->chunks[i / store->chunk_records] +
		(i % store->chunk_records) * store->key_words;
}

static inline bool
keystore_keys_equal(const KeyStore *store, size_t a, size_t b)
{
	const uint64 *ka = keystore_key(store, a);
	const uint64 *kb = keystore_key(store, b);

	for (int w = 0; w < store->key_words; w++)
		if (ka[w] != kb[w])
			return false;
	return true;
}

extern void key_layout_init(KeyLayout *layout, TupleDesc tupdesc, int ncols,
							const AttrNumber *attnos, const Oid *sortops,
							const bool *nulls_first, int max_bytes);
extern void key_layout_place(KeyLayout *layout);
extern bool key_encode_slot(KeyLayout *layout, TupleTableSlot *slot, uint64 *key);

#endif							/* GPUSORT_KEYS_H */

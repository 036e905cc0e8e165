/*-------------------------------------------------------------------------
 *
 * keys.h
 *	  Normalized sort keys: the order-preserving byte strings that gpusort's
 *	  engines sort instead of calling comparators.
 *
 * Every record has a *full key*: the concatenation, in ORDER BY order, of
 * each column's encoding (a NULL byte where needed, then the value, DESC
 * folded in by inverting the bytes), such that comparing two full keys
 * with memcmp compares the records as PostgreSQL would.  Fixed-width types
 * encode to a fixed number of bytes; text, numeric and bytea encode to
 * self-delimiting byte strings (a shorter string never compares as a
 * prefix of a longer one), so the columns after them stay in order too.
 *
 * The engines sort a fixed-width *prefix* of the full key: key_words 64-bit
 * words, word 0 most significant, compared as unsigned integers (so the
 * big-endian bytes of the words compare with memcmp).  Where the full key
 * is longer than the prefix, records whose prefixes are equal are refined
 * on the following bytes (refine.c).  A column with no encoding (an
 * unsupported type or operator class) ends the full key: records equal up
 * to it are ordered by PostgreSQL's comparators (resolve.c).  So does a
 * long string under a libc collation, whose key is strxfrm's output for its
 * beginning only (keys_build.c): libc keys are checked against strcoll
 * after the sort anyway (refine.c), so a key that orders only by the
 * beginning costs nothing in correctness.
 *
 * Two ways to build keys:
 *	- the *fixed* path (keys.c): every encoded column has a fixed width and
 *	  the whole key fits the prefix; keys are built straight from the slot
 *	  with shifts, the fastest path, for integer, float, date, uuid ... keys;
 *	- the *generic* path (keys_build.c): any other layout; the sort
 *	  (batch_encode.c) keeps each record's key column datums (KeyInputs) and a
 *	  builder that never calls into PostgreSQL turns them into any span of
 *	  the full key, in the backend or in key-building threads (threadpool.c).
 *	  Where fixed-width columns lead and a collation's text follows them
 *	  (ORDER BY k, t in a libc or ICU collation), the prefix is a *leading
 *	  key*: those leading columns' bytes alone, exact, so that the text's
 *	  collation keys, most of such a sort's cost, are built only for the
 *	  records of tie ranges large enough to pay for them (refine.c); the
 *	  comparators order the smaller ones, as Sort does its ties.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_KEYS_H
#define GPUSORT_KEYS_H

#include "postgres.h"

#include <locale.h>
#include <math.h>

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "executor/tuptable.h"

#include "support/settings.h"

/* How a column's values become key bytes. */
typedef enum KeyKind
{
	KEY_NONE,					/* no encoding: comparators decide */
	/* fixed width */
	KEY_BOOL,
	KEY_CHAR,					/* "char": one unsigned byte */
	KEY_INT2,
	KEY_INT4,					/* also date */
	KEY_INT8,					/* also time, timestamp, timestamptz, money */
	KEY_OID,
	KEY_FLOAT4,
	KEY_FLOAT8,
	KEY_UUID,
	KEY_INTERVAL,				/* 16 bytes: PostgreSQL's comparison value */
	/* variable width, self-delimiting */
	KEY_TEXT,					/* text, varchar, bpchar, name: see KeyCollate */
	KEY_BYTEA,
	KEY_NUMERIC,
	KEY_INET					/* inet and cidr */
} KeyKind;

#define KEY_KIND_IS_VARWIDTH(kind)	((kind) >= KEY_TEXT)

/* Where a KEY_TEXT column's string comes from. */
typedef enum KeyTextSource
{
	TEXT_VARLENA,				/* text, varchar */
	TEXT_BPCHAR,				/* compared without trailing blanks */
	TEXT_NAME					/* NameData, NUL-terminated */
} KeyTextSource;

/* How a KEY_TEXT column's strings order. */
typedef enum KeyCollate
{
	COLLATE_BYTES,				/* C / POSIX: the bytes themselves */
	COLLATE_LIBC,				/* strxfrm_l, then checked with strcoll_l */
	COLLATE_ICU					/* ICU sort keys */
} KeyCollate;

/*
 * A string under a libc collation is transformed (strxfrm_l) no further
 * than this many bytes; its key then ends there (keys_build.c says why).
 */
#define KEY_LIBC_XFRM_MAX_BYTES	256

typedef struct KeyColumn
{
	AttrNumber	attno;			/* scan tuple column, 1-based */
	KeyKind		kind;
	int			value_bytes;	/* fixed kinds: bytes of the value */
	bool		descending;
	bool		nulls_first;

	/* KEY_TEXT */
	KeyTextSource text_source;
	KeyCollate	collate;
	bool		deterministic;	/* equal under the collation only if equal
								 * bytes: the raw bytes follow the collation
								 * key, as PostgreSQL breaks ties */
	locale_t	libc_locale;	/* COLLATE_LIBC (thread-safe to share) */
	const struct LibcPrimaryWeights *libc_primary;	/* COLLATE_LIBC: its
													 * ASCII characters'
													 * primary weights, or
													 * NULL */
	int			encoding;		/* COLLATE_LIBC: the database's, to cut a
								 * long string at a character boundary */
	void	   *icu_collator;	/* COLLATE_ICU: a UCollator (cloned per
								 * thread, see keys_build.c) */

	/* where the value lies in a tuple without NULLs (KeyLayout.direct) */
	int			data_offset;
	int16		attlen;
	bool		attbyval;

	/* placement in the current fixed layout (key_layout_place) */
	bool		null_byte;		/* a NULL has been seen: key has a NULL byte */
	bool		in_key;			/* some of the column is in the key */
	int			offset;			/* first byte (the NULL byte, if any) */
	int			bytes;			/* value bytes stored: a prefix if < value_bytes */
} KeyColumn;

/*
 * What a pool thread needs to know of an attribute to walk a tuple to its
 * key columns without PostgreSQL (key_deform_inputs).
 */
typedef struct KeyAttr
{
	int16		attlen;
	char		attalign;
	bool		attbyval;
	bool		is_key;			/* a key column reads it */
} KeyAttr;

/* what key_encode_record() did */
typedef enum KeyEncodeResult
{
	KEY_ENCODED,
	KEY_NEEDS_NULL_BYTE,		/* a NULL where the key has no NULL byte */
	KEY_NEEDS_BACKEND			/* the tuple lacks some key columns */
} KeyEncodeResult;

typedef struct KeyLayout
{
	int			ncols;
	KeyColumn  *cols;
	int			max_bytes;		/* gpusort.key_width when the sort started */
	int			key_bytes;		/* prefix bytes used */
	int			key_words;		/* words per prefix (0: nothing encodable) */
	bool		generic;		/* keys built by keys_build.c from KeyInputs */
	int			full_cols;		/* leading columns the full key encodes */
	int			exact_cols;		/* leading columns the prefix alone decides */
	bool		exact;			/* the prefix decides the order alone */
	bool		libc_checked;	/* a libc collation: the collation check
								 * follows the sort (Key Kind) */
	bool		costly_keys;	/* libc or ICU collation keys in the prefix:
								 * build them while loading
								 * (gpusort.key_overlap) */
	int			lead_cols;		/* > 0: a leading key (key_layout_place):
								 * the prefix holds these leading columns
								 * alone, and the later columns' keys are
								 * built in large tie ranges only (refine.c) */
	int			lead_bytes;		/* their bytes of the full key */
	AttrNumber	max_attno;		/* deform the scan tuple up to here */
	bool		direct;			/* fixed layout whose columns up to max_attno
								 * all have fixed lengths: keys can be read
								 * in place (key_encode_tuple) */
	bool		word_columns;	/* direct, and each column one word of the
								 * key: an int8 or float8 without a NULL
								 * byte (key_encode_words) */
	KeyAttr    *attrs;			/* attributes 1 .. max_attno, for
								 * key_deform_inputs() */
} KeyLayout;

/*
 * Records per key chunk: the unit of encoding, of transfer to the GPU
 * service and of pipelining, which the engines and the service share.
 */
#define GPUSORT_CHUNK_RECORDS	((size_t) 1 << 17)

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

/*
 * Records in sorted order lie at random places in the key chunks: a scan
 * over them that does not fetch ahead waits for memory at every record.
 */
#define KEYSTORE_PREFETCH_DISTANCE	16

static inline void
keystore_prefetch(const KeyStore *store, size_t i)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(keystore_key(store, i));
#endif
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

/*
 * The datums of the full key's columns for each record of a generic
 * layout, in chunks of chunk_records records: record i's column c is
 * values[i % chunk_records * full_cols + c] of chunk i / chunk_records.
 * Pass-by-reference datums point into the sort's arena (or at detoasted
 * copies in the sort's memory), which outlive the sort.
 */
typedef struct KeyInputs
{
	Datum	  **values;
	bool	  **isnull;
	size_t		nchunks;
	size_t		chunk_records;
	int			ncols;			/* = layout->full_cols */
} KeyInputs;

static inline Datum *
key_inputs_values(const KeyInputs *in, size_t i)
{
	return in->values[i / in->chunk_records] + (i % in->chunk_records) * in->ncols;
}

static inline bool *
key_inputs_isnull(const KeyInputs *in, size_t i)
{
	return in->isnull[i / in->chunk_records] + (i % in->chunk_records) * in->ncols;
}

/*
 * The order-preserving mappings shared by both paths (the sign-bit and
 * float mappings of Ha, Krüger and Silva, "Fast 4-way parallel radix
 * sorting on GPUs"): the value as an unsigned integer whose order is the
 * type's btree order.
 */
static inline uint32
float4_order_bits(float4 value)
{
	union
	{
		float4		f;
		uint32		u;
	}			bits;

	if (isnan(value))
		return PG_UINT32_MAX;	/* above +Infinity; every NaN the same */
	bits.f = (value == 0.0f) ? 0.0f : value;	/* -0 is +0 */
	return (bits.u & 0x80000000) ? ~bits.u : (bits.u | 0x80000000);
}

static inline uint64
float8_order_bits(float8 value)
{
	union
	{
		float8		f;
		uint64		u;
	}			bits;

	if (isnan(value))
		return PG_UINT64_MAX;
	bits.f = (value == 0.0) ? 0.0 : value;
	return (bits.u & UINT64CONST(0x8000000000000000)) ?
		~bits.u : (bits.u | UINT64CONST(0x8000000000000000));
}

/*
 * An interval as PostgreSQL compares it (interval_cmp_value: a month is 30
 * days, a day 24 hours, all as one 128-bit count of microseconds), as two
 * big-endian words with the sign bit flipped.
 */
#ifdef HAVE_INT128
static inline void
key_interval_words(const Interval *interval, uint64 *hi, uint64 *lo)
{
	int64		dayfraction = interval->time % USECS_PER_DAY;
	int64		days = interval->time / USECS_PER_DAY +
		interval->month * INT64CONST(30) + interval->day;
	int128		span = (int128) days * USECS_PER_DAY + dayfraction;
	uint128		bits = (uint128) span;

	*hi = (uint64) (bits >> 64) ^ UINT64CONST(0x8000000000000000);
	*lo = (uint64) bits;
}
#endif

/* keys.c */
extern bool key_column_has_key(Oid typid, Oid sortop, Oid collation);
extern void key_layout_init(KeyLayout *layout, TupleDesc tupdesc, int ncols,
							const AttrNumber *attnos, const Oid *sortops,
							const Oid *collations, const bool *nulls_first,
							int max_bytes);
extern void key_layout_place(KeyLayout *layout);
extern bool key_encode_tuple(KeyLayout *layout, MinimalTuple tuple,
							 TupleTableSlot *slot, uint64 *key);
extern void key_store_inputs(const KeyLayout *layout, TupleTableSlot *slot,
							 Datum *values, bool *isnull, MemoryContext detoast_cxt,
							 Size *detoasted_bytes);
extern bool key_encode_words(const KeyLayout *layout, MinimalTuple tuple,
							 uint64 *key);
extern KeyEncodeResult key_encode_record(KeyLayout *layout, MinimalTuple tuple,
										 Datum *values, bool *isnull,
										 bool *null_seen, uint64 *key);
extern bool key_deform_inputs(const KeyLayout *layout, MinimalTuple tuple,
							  Datum *values, bool *isnull);
extern const char *key_layout_describe(const KeyLayout *layout);

/* keys_build.c: the generic builder; everything here is thread-safe */
typedef struct KeyBuildContext KeyBuildContext;

extern KeyBuildContext *key_build_context_create(const KeyLayout *layout,
												 char *errbuf, size_t errlen);
extern void key_build_context_free(KeyBuildContext *ctx);
extern const char *key_build_error(KeyBuildContext *ctx);
extern void key_build_set_stop_flag(KeyBuildContext *ctx, volatile bool *stop);
extern bool key_build_stopped(KeyBuildContext *ctx);
extern bool key_build_span(KeyBuildContext *ctx, const Datum *values,
							 const bool *isnull, size_t skip, size_t len,
							 uint8 *out, bool *ended);
extern bool key_build_lead(KeyBuildContext *ctx, const Datum *values,
						   const bool *isnull, size_t len, uint8 *out);
extern bool key_compare_column(KeyBuildContext *ctx, int c, Datum a,
							   bool a_isnull, Datum b, bool b_isnull,
							   int *result);
extern bool key_compare_inputs(KeyBuildContext *ctx, int first_col,
							   const Datum *a_values, const bool *a_isnull,
							   const Datum *b_values, const bool *b_isnull,
							   int *result);
extern size_t key_inputs_bytes(const KeyLayout *layout, const Datum *values,
							   const bool *isnull);
extern bool key_inputs_identical(const KeyLayout *layout,
								 const Datum *a_values, const bool *a_isnull,
								 const Datum *b_values, const bool *b_isnull);

/* big-endian key bytes -> key words */
static inline void
key_bytes_to_words(const uint8 *bytes, int nwords, uint64 *words)
{
	for (int w = 0; w < nwords; w++)
	{
		uint64		v = 0;

		for (int b = 0; b < 8; b++)
			v = (v << 8) | bytes[w * 8 + b];
		words[w] = v;
	}
}

#endif							/* GPUSORT_KEYS_H */

/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  Building normalized keys from tuples: the order-preserving mappings of
 *	  seed 003 (signed integers and floats mapped to unsigned order), NULL
 *	  placement and DESC folded in, several columns concatenated.
 *
 * The encodings are exact for the types whose btree order is a total order
 * on fixed-width values: bool, int2, int4, int8, oid, float4, float8 (NaN
 * above every number and all NaNs equal, -0 equal to +0, as float8_cmp
 * has it), date, time, timestamp, timestamptz and uuid.  They apply only
 * when the ORDER BY uses the type's default btree operator family; any
 * other type or operator class contributes nothing to the key, and the
 * columns after it cannot contribute either (their bytes would only be
 * meaningful among records equal on that column).
 *
 * NULLs cost a byte per column, so a column gets its NULL byte only once a
 * NULL has been seen in it: key_encode_slot() reports the first NULL of a
 * column whose layout has no NULL byte, and the caller places the layout
 * again and re-encodes (nodeGpuSort.c).  A table without NULLs in an int8
 * column thus sorts 8-byte keys, not 16-byte ones.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/nbtree.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "port/pg_bswap.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "keys.h"

/*
 * The encoding for a column of type typid sorted by sortop, or KEY_NONE.
 * Sets *descending from the operator's btree strategy.
 */
static KeyKind
key_kind_for(Oid typid, Oid sortop, bool *descending, int *value_bytes)
{
	Oid			opfamily;
	Oid			opcintype;
	Oid			opclass;
	Oid			basetype = getBaseType(typid);
	int16		strategy;
	KeyKind		kind;

	*descending = false;
	*value_bytes = 0;
	if (!get_ordering_op_properties(sortop, &opfamily, &opcintype, &strategy))
		return KEY_NONE;
	*descending = (strategy == BTGreaterStrategyNumber);

	/* only the type's own default order is known to match the encoding */
	if (opcintype != basetype)
		return KEY_NONE;
	opclass = GetDefaultOpClass(basetype, BTREE_AM_OID);
	if (!OidIsValid(opclass) || get_opclass_family(opclass) != opfamily)
		return KEY_NONE;

	switch (basetype)
	{
		case BOOLOID:
			kind = KEY_BOOL;
			*value_bytes = 1;
			break;
		case INT2OID:
			kind = KEY_INT2;
			*value_bytes = 2;
			break;
		case INT4OID:
		case DATEOID:
			kind = KEY_INT4;
			*value_bytes = 4;
			break;
		case INT8OID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			kind = KEY_INT8;
			*value_bytes = 8;
			break;
		case OIDOID:
			kind = KEY_OID;
			*value_bytes = 4;
			break;
		case FLOAT4OID:
			kind = KEY_FLOAT4;
			*value_bytes = 4;
			break;
		case FLOAT8OID:
			kind = KEY_FLOAT8;
			*value_bytes = 8;
			break;
		case UUIDOID:
			kind = KEY_UUID;
			*value_bytes = UUID_LEN;
			break;
		default:
			kind = KEY_NONE;
			break;
	}
	return kind;
}

/*
 * Describe the ORDER BY columns; the layout starts without NULL bytes (see
 * the file header) and is placed at once.
 */
void
key_layout_init(KeyLayout *layout, TupleDesc tupdesc, int ncols,
				const AttrNumber *attnos, const Oid *sortops,
				const bool *nulls_first, int max_bytes)
{
	layout->ncols = ncols;
	layout->cols = palloc0(sizeof(KeyColumn) * ncols);
	layout->max_bytes = Min(max_bytes, GPUSORT_MAX_KEY_BYTES);
	layout->max_attno = 0;

	for (int c = 0; c < ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		Oid			typid = TupleDescAttr(tupdesc, attnos[c] - 1)->atttypid;

		col->attno = attnos[c];
		col->kind = key_kind_for(typid, sortops[c], &col->descending,
								 &col->value_bytes);
		col->nulls_first = nulls_first[c];
		col->null_byte = false;
		layout->max_attno = Max(layout->max_attno, col->attno);
	}
	key_layout_place(layout);
}

/* Assign byte ranges to the columns, in ORDER BY order, within max_bytes. */
void
key_layout_place(KeyLayout *layout)
{
	int			offset = 0;
	bool		stopped = false;

	layout->exact_cols = 0;
	for (int c = 0; c < layout->ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		int			null_bytes = col->null_byte ? 1 : 0;
		int			room = layout->max_bytes - offset;

		col->in_key = false;
		col->offset = offset;
		col->bytes = 0;
		if (stopped || room <= 0)
		{
			stopped = true;
			continue;
		}

		/*
		 * A column without an encoding still gets its NULL byte, which puts
		 * NULLs in place; its values are left to the comparators.
		 */
		col->in_key = true;
		col->bytes = Min(col->value_bytes, room - null_bytes);
		offset += null_bytes + col->bytes;
		if (col->kind != KEY_NONE && col->bytes == col->value_bytes)
			layout->exact_cols++;
		else
			stopped = true;
	}
	layout->key_bytes = offset;
	layout->key_words = (offset + 7) / 8;
	layout->exact = (layout->exact_cols == layout->ncols);
}

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
 * OR the `width` low bytes of v into the key at byte offset `offset` of its
 * big-endian byte stream: word offset / 8 holds bytes offset & ~7 ... as its
 * most significant bytes first.  A value may straddle two words.
 */
static inline void
put_bytes(uint64 *key, int offset, uint64 v, int width)
{
	int			w = offset / 8;
	int			used = offset % 8;	/* bytes of word w before the value */
	int			spill = used + width - 8;	/* bytes that go into word w + 1 */

	if (width < 8)
		v &= (UINT64CONST(1) << (8 * width)) - 1;
	if (spill <= 0)
		key[w] |= v << (8 * -spill);
	else
	{
		key[w] |= v >> (8 * spill);
		key[w + 1] |= v << (8 * (8 - spill));
	}
}

/*
 * Store the `keep` most significant of the `width` low bytes of v at byte
 * offset `offset`.
 */
static inline void
put_value(uint64 *key, int offset, uint64 v, int width, int keep)
{
	if (keep < width)
		v >>= 8 * (width - keep);
	put_bytes(key, offset, v, keep);
}

/* A uuid's 16 bytes as two big-endian words, DESC inverted. */
static inline void
put_uuid(uint64 *key, int offset, const pg_uuid_t *uuid, bool descending, int keep)
{
	uint64		hi;
	uint64		lo;

	memcpy(&hi, uuid->data, 8);
	memcpy(&lo, uuid->data + 8, 8);
	hi = pg_ntoh64(hi);
	lo = pg_ntoh64(lo);
	if (descending)
	{
		hi = ~hi;
		lo = ~lo;
	}
	put_value(key, offset, hi, 8, Min(keep, 8));
	if (keep > 8)
		put_value(key, offset + 8, lo, 8, keep - 8);
}

/*
 * Encode the key of the tuple in slot into key (layout->key_words words).
 * Returns false, without a key, when a column whose layout has no NULL byte
 * is NULL: that column is then marked as needing one, and the caller must
 * place the layout again and encode every tuple anew.
 *
 * This runs once per input row, so it builds the words with shifts rather
 * than going through a byte buffer.
 */
bool
key_encode_slot(KeyLayout *layout, TupleTableSlot *slot, uint64 *key)
{
	bool		ok = true;

	for (int w = 0; w < layout->key_words; w++)
		key[w] = 0;
	slot_getsomeattrs(slot, layout->max_attno);

	for (int c = 0; c < layout->ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		Datum		value = slot->tts_values[col->attno - 1];
		bool		isnull = slot->tts_isnull[col->attno - 1];
		int			offset = col->offset;
		uint64		v;

		if (!col->in_key)
			break;
		if (col->null_byte)
		{
			put_bytes(key, offset, (isnull == col->nulls_first) ? 0 : 1, 1);
			if (isnull)
				continue;		/* value bytes stay zero */
			offset++;
		}
		else if (isnull)
		{
			col->null_byte = true;
			ok = false;
			continue;			/* find the other columns' NULLs too */
		}
		if (col->bytes == 0)
			continue;

		switch (col->kind)
		{
			case KEY_BOOL:
				v = DatumGetBool(value) ? 1 : 0;
				break;
			case KEY_INT2:
				v = (uint16) DatumGetInt16(value) ^ 0x8000;
				break;
			case KEY_INT4:
				v = (uint32) DatumGetInt32(value) ^ 0x80000000;
				break;
			case KEY_INT8:
				v = (uint64) DatumGetInt64(value) ^ UINT64CONST(0x8000000000000000);
				break;
			case KEY_OID:
				v = DatumGetObjectId(value);
				break;
			case KEY_FLOAT4:
				v = float4_order_bits(DatumGetFloat4(value));
				break;
			case KEY_FLOAT8:
				v = float8_order_bits(DatumGetFloat8(value));
				break;
			case KEY_UUID:
				put_uuid(key, offset, DatumGetUUIDP(value), col->descending, col->bytes);
				continue;
			case KEY_NONE:
			default:
				continue;
		}
		if (col->descending)
			v = ~v;
		put_value(key, offset, v, col->value_bytes, col->bytes);
	}
	return ok;
}

/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  Building normalized keys from tuples: order-preserving mappings of
 *	  signed integers and floats to unsigned order (as in Ha, Krüger and
 *	  Silva, "Fast 4-way parallel radix sorting on GPUs"), NULL placement
 *	  and DESC folded in, several columns concatenated.
 *
 * This file decides each ORDER BY column's encoding (key_kind_for) and
 * places the layout; it also holds the fixed path, which builds keys of
 * fixed-width columns straight from the slot.  Exact fixed encodings exist
 * for bool, "char", int2, int4, int8, oid, money, float4, float8 (NaN above
 * every number and all NaNs equal, -0 equal to +0, as float8_cmp has it),
 * date, time, timestamp, timestamptz, uuid and interval; text, varchar,
 * bpchar, name, bytea, numeric, inet and cidr have variable-width encodings,
 * built by keys_build.c.  Encodings apply only when the ORDER BY uses the
 * type's default btree operator family; any other type or operator class
 * contributes nothing to the key, and the columns after it cannot contribute
 * either (their bytes would only be meaningful among records equal on that
 * column).
 *
 * NULLs cost a byte per column, so on the fixed path a column gets its NULL
 * byte only once a NULL has been seen in it: key_encode_tuple() reports the
 * first NULL of a column whose layout has no NULL byte, and the caller
 * places the layout again and re-encodes the batch (batch_encode.c).  A
 * table without NULLs in an int8 column thus sorts 8-byte keys, not
 * 16-byte ones.
 *
 * What the others call:
 *	- key_column_has_key, for the planner, which leaves a Sort whose first
 *	  column has no encoding to PostgreSQL;
 *	- the layout: key_layout_init and key_layout_describe (sort.c, the
 *	  latter for EXPLAIN), key_layout_place (batch_encode.c);
 *	- the fixed path's keys: key_encode_tuple (the backend: the load, the
 *	  run reader, the window merge), key_encode_record (its form for the
 *	  pool threads), key_encode_words (the run reader's shortest way, for
 *	  keys of whole 8-byte columns);
 *	- the generic path's inputs: key_store_inputs (the backend) and
 *	  key_deform_inputs (a pool thread), the datums keys_build.c reads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "mb/pg_wchar.h"
#include "port/pg_bswap.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "keys/keys.h"
#include "keys/libc_primary.h"
#include "support/compat.h"
#include "support/settings.h"

/*
 * The locale_t of the database's default collation when it is a libc one:
 * PostgreSQL compares with strcoll() under setlocale(LC_COLLATE), and
 * strcoll_l/strxfrm_l with this locale_t do the same in any thread.
 */
static locale_t
default_libc_locale(void)
{
	static locale_t cached = (locale_t) 0;

	if (cached == (locale_t) 0)
	{
		const char *name = setlocale(LC_COLLATE, NULL);

		if (name != NULL)
			cached = newlocale(LC_COLLATE_MASK, name, (locale_t) 0);
	}
	return cached;
}

/*
 * How a text column of collation `collation` orders; false if gpusort has
 * no encoding for it (no collation, or ICU in a database that is not UTF-8).
 */
static bool
text_collate_for(KeyColumn *col, Oid collation)
{
	pg_locale_t locale;
	char		provider;

	col->deterministic = true;
	col->encoding = GetDatabaseEncoding();	/* read under COLLATE_LIBC */
	if (!OidIsValid(collation))
		return false;			/* PostgreSQL will complain, in its comparator */
	if (gpusort_collate_is_c(collation))
	{
		col->collate = COLLATE_BYTES;
		return true;
	}
	locale = pg_newlocale_from_collation(collation);
	if (locale == NULL)
	{
		/* before 18: the database's default collation, a libc one */
		col->collate = COLLATE_LIBC;
		col->libc_locale = default_libc_locale();
		if (col->libc_locale == (locale_t) 0)
			return false;
		col->libc_primary = libc_primary_weights(col->libc_locale);
		return true;
	}
	col->deterministic = locale->deterministic;
	provider = gpusort_locale_provider(locale, collation);
	if (provider == COLLPROVIDER_LIBC)
	{
		col->collate = COLLATE_LIBC;
		col->libc_locale = gpusort_locale_libc(locale);
		col->libc_primary = libc_primary_weights(col->libc_locale);
		return true;
	}
#ifdef USE_ICU
	if (provider == COLLPROVIDER_ICU && GetDatabaseEncoding() == PG_UTF8)
	{
		col->collate = COLLATE_ICU;
		col->icu_collator = gpusort_locale_icu_collator(locale);
		return true;
	}
#endif
	return false;
}

/*
 * The encoding for column col, of type typid sorted by sortop under
 * collation, or KEY_NONE.  Sets col->descending from the operator's btree
 * strategy, and the kind's details.
 */
static KeyKind
key_kind_for(KeyColumn *col, Oid typid, Oid sortop, Oid collation)
{
	Oid			opfamily;
	Oid			opcintype;
	Oid			opclass;
	Oid			basetype = getBaseType(typid);
	Oid			opctype;

	col->descending = false;
	col->value_bytes = 0;
	if (!gpusort_ordering_op_properties(sortop, &opfamily, &opcintype,
										&col->descending))
		return KEY_NONE;

	/* only the type's own default order is known to match the encoding */
	/* varchar sorts with text's operator class, cidr with inet's */
	opctype = (basetype == VARCHAROID) ? TEXTOID :
		(basetype == CIDROID) ? INETOID : basetype;
	if (opcintype != opctype)
		return KEY_NONE;
	opclass = GetDefaultOpClass(basetype, BTREE_AM_OID);
	if (!OidIsValid(opclass) || get_opclass_family(opclass) != opfamily)
		return KEY_NONE;

	switch (basetype)
	{
		case BOOLOID:
			col->value_bytes = 1;
			return KEY_BOOL;
		case CHAROID:
			col->value_bytes = 1;
			return KEY_CHAR;
		case INT2OID:
			col->value_bytes = 2;
			return KEY_INT2;
		case INT4OID:
		case DATEOID:
			col->value_bytes = 4;
			return KEY_INT4;
		case INT8OID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case CASHOID:
			col->value_bytes = 8;
			return KEY_INT8;
		case OIDOID:
			col->value_bytes = 4;
			return KEY_OID;
		case FLOAT4OID:
			col->value_bytes = 4;
			return KEY_FLOAT4;
		case FLOAT8OID:
			col->value_bytes = 8;
			return KEY_FLOAT8;
		case UUIDOID:
			col->value_bytes = UUID_LEN;
			return KEY_UUID;
#ifdef HAVE_INT128
		case INTERVALOID:
			col->value_bytes = 16;
			return KEY_INTERVAL;
#endif
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
			col->text_source = (basetype == BPCHAROID) ? TEXT_BPCHAR :
				(basetype == NAMEOID) ? TEXT_NAME : TEXT_VARLENA;
			return text_collate_for(col, collation) ? KEY_TEXT : KEY_NONE;
		case BYTEAOID:
			return KEY_BYTEA;
		case NUMERICOID:
			return KEY_NUMERIC;
		case INETOID:
		case CIDROID:
			return KEY_INET;
		default:
			return KEY_NONE;
	}
}

/*
 * Whether a sort column of type typid, ordered by sortop under collation,
 * has a normalized key.  The planner leaves a Sort whose first column has
 * none to PostgreSQL (planner.c): every record would tie on its key, and
 * the comparators would order them all.
 */
bool
key_column_has_key(Oid typid, Oid sortop, Oid collation)
{
	KeyColumn	col;

	memset(&col, 0, sizeof(col));
	return key_kind_for(&col, typid, sortop, collation) != KEY_NONE;
}

/*
 * Describe the ORDER BY columns and place the layout.  A layout whose
 * encoded columns are all fixed-width and fit in max_bytes takes the fixed
 * path, and starts without NULL bytes (see key_layout_place); any other is
 * generic: every column has its NULL byte from the start, as re-encoding
 * on a first NULL would mean building costly collation keys twice.
 */
/*
 * Where each key column starts in the data of a tuple without NULLs, if the
 * columns before it all have a fixed length (heap_deform_tuple's
 * attcacheoff): then key_encode_tuple() can read the keys in place.
 */
static void
set_direct_offsets(KeyLayout *layout, TupleDesc tupdesc)
{
	int			offsets[MaxTupleAttributeNumber];
	int			off = 0;

	layout->direct = !layout->generic && layout->max_attno > 0;
	for (int a = 0; layout->direct && a < layout->max_attno; a++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, a);

		if (att->attlen <= 0)
			layout->direct = false;
		else
		{
			off = att_align_nominal(off, att->attalign);
			offsets[a] = off;
			off += att->attlen;
		}
	}
	for (int c = 0; layout->direct && c < layout->ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		Form_pg_attribute att = TupleDescAttr(tupdesc, col->attno - 1);

		col->data_offset = offsets[col->attno - 1];
		col->attlen = att->attlen;
		col->attbyval = att->attbyval;
	}
}

/* The attributes up to max_attno, as key_deform_inputs() walks them. */
static void
set_deform_attrs(KeyLayout *layout, TupleDesc tupdesc)
{
	layout->attrs = palloc0(sizeof(KeyAttr) * Max(layout->max_attno, 1));
	for (int a = 0; a < layout->max_attno; a++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, a);

		layout->attrs[a].attlen = att->attlen;
		layout->attrs[a].attalign = att->attalign;
		layout->attrs[a].attbyval = att->attbyval;
	}
	for (int c = 0; c < layout->ncols; c++)
		layout->attrs[layout->cols[c].attno - 1].is_key = true;
}

void
key_layout_init(KeyLayout *layout, TupleDesc tupdesc, int ncols,
				const AttrNumber *attnos, const Oid *sortops,
				const Oid *collations, const bool *nulls_first, int max_bytes)
{
	int			fixed_bytes = 0;
	bool		varwidth = false;

	layout->ncols = ncols;
	layout->cols = palloc0(sizeof(KeyColumn) * ncols);
	layout->max_bytes = Min(max_bytes, GPUSORT_MAX_KEY_BYTES);
	layout->max_attno = 0;
	layout->full_cols = 0;
	layout->libc_checked = false;
	layout->costly_keys = false;

	for (int c = 0; c < ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		Oid			typid = TupleDescAttr(tupdesc, attnos[c] - 1)->atttypid;

		col->attno = attnos[c];
		col->kind = key_kind_for(col, typid, sortops[c], collations[c]);
		col->nulls_first = nulls_first[c];
		col->null_byte = false;
		layout->max_attno = Max(layout->max_attno, col->attno);
		if (layout->full_cols == c && col->kind != KEY_NONE)
		{
			layout->full_cols++;
			if (KEY_KIND_IS_VARWIDTH(col->kind))
				varwidth = true;
			fixed_bytes += col->value_bytes;
			if (col->kind == KEY_TEXT && col->collate == COLLATE_LIBC)
				layout->libc_checked = true;
			if (col->kind == KEY_TEXT && col->collate != COLLATE_BYTES)
				layout->costly_keys = gpusort_key_overlap;
		}
	}
	layout->generic = varwidth || fixed_bytes > layout->max_bytes;
	set_direct_offsets(layout, tupdesc);
	set_deform_attrs(layout, tupdesc);
	if (layout->generic)
		for (int c = 0; c < ncols; c++)
			layout->cols[c].null_byte = true;
	key_layout_place(layout);
}

/*
 * A generic layout whose leading columns have fixed widths, followed by a
 * text column under a libc or ICU collation, gets a leading key: its
 * prefix holds those leading columns alone (each a NULL byte and its
 * value, zeros to the end of the last word), which decide the order
 * exactly where they differ.  A collation's key costs a strxfrm_l or
 * ucol_nextSortKeyPart per record, where those leading columns decide
 * nearly every pair when they have many distinct values (ORDER BY
 * customer, name): refinement (refine.c) then builds the text's keys only
 * for the records of large tie ranges, and the comparator pass orders the
 * small ones, as Sort orders them.  Where the leading columns have few
 * values (a boolean before a text) every tie range is large, and every
 * record gets its collation key as it would in a full prefix.  The
 * collation keys are then built after the input, not while it loads.
 */
static void
place_leading_key(KeyLayout *layout)
{
	int			bytes = 0;
	int			c;

	layout->lead_cols = 0;
	layout->lead_bytes = 0;
	for (c = 0; c < layout->full_cols; c++)
	{
		const KeyColumn *col = &layout->cols[c];

		if (KEY_KIND_IS_VARWIDTH(col->kind))
			break;
		bytes += 1 + col->value_bytes;	/* a generic column's NULL byte */
	}
	if (c == 0 || c == layout->full_cols || bytes > layout->max_bytes ||
		layout->cols[c].kind != KEY_TEXT ||
		layout->cols[c].collate == COLLATE_BYTES)
		return;
	layout->lead_cols = c;
	layout->lead_bytes = bytes;
	layout->key_bytes = (bytes + 7) / 8 * 8;
	layout->key_words = layout->key_bytes / 8;
	layout->costly_keys = false;
}

/*
 * Assign byte ranges to the columns, in ORDER BY order, within max_bytes.
 * A generic layout's prefix is max_bytes wide, the builder filling it with
 * as much of the full key as fits, or, a leading key, as wide as its
 * leading columns (place_leading_key).
 */
void
key_layout_place(KeyLayout *layout)
{
	int			offset = 0;
	bool		stopped = false;

	if (layout->generic)
	{
		layout->key_bytes = layout->max_bytes;

		/*
		 * ICU builds its sort keys incrementally, at a cost that grows with
		 * the bytes asked for (a 32-byte prefix costs about twice a 16-byte
		 * one), so a sort led by an ICU column takes a 16-byte prefix and
		 * leaves the rare equal prefixes to refinement.
		 */
		for (int c = 0; c < layout->full_cols; c++)
		{
			const KeyColumn *col = &layout->cols[c];

			if (col->kind == KEY_TEXT && col->collate == COLLATE_ICU)
				layout->key_bytes = Min(layout->key_bytes, 16);
			if (KEY_KIND_IS_VARWIDTH(col->kind))
				break;
		}
		layout->key_words = layout->key_bytes / 8;
		layout->exact_cols = 0;
		layout->exact = false;
		place_leading_key(layout);
		return;
	}

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

	layout->word_columns = layout->direct && layout->exact;
	for (int c = 0; c < layout->ncols && layout->word_columns; c++)
	{
		const KeyColumn *col = &layout->cols[c];

		layout->word_columns = (col->kind == KEY_INT8 || col->kind == KEY_FLOAT8) &&
			!col->null_byte && col->bytes == 8 && col->offset == 8 * c;
	}
}

/* What EXPLAIN ANALYZE calls the layout. */
const char *
key_layout_describe(const KeyLayout *layout)
{
	if (!layout->generic)
		return layout->exact ? "exact" : "prefix";
	if (layout->lead_cols > 0)
	{
		if (layout->full_cols < layout->ncols)
			return layout->libc_checked ?
				"leading, refined, libc-checked, comparator" :
				"leading, refined, comparator";
		return layout->libc_checked ?
			"leading, refined, libc-checked" : "leading, refined";
	}
	if (layout->full_cols < layout->ncols)
		return layout->libc_checked ?
			"prefix, refined, libc-checked, comparator" :
			"prefix, refined, comparator";
	return layout->libc_checked ?
		"prefix, refined, libc-checked" : "prefix, refined";
}

/* where a MinimalTuple's attribute data begins */
static inline const char *
tuple_data(MinimalTuple tuple)
{
	return (const char *) tuple + tuple->t_hoff - MINIMAL_TUPLE_OFFSET;
}

/*
 * The tuple's data if its key columns can be read in place, at the
 * layout's fixed offsets (layout->direct): the tuple has no NULLs and all
 * of those columns.  Else NULL.
 */
static inline const char *
direct_key_data(const KeyLayout *layout, MinimalTuple tuple)
{
	if (layout->direct && !(tuple->t_infomask & HEAP_HASNULL) &&
		HeapTupleHeaderGetNatts(tuple) >= layout->max_attno)
		return tuple_data(tuple);
	return NULL;
}

/* a datum key_store_inputs() would detoast: the builders cannot */
static inline bool
key_input_needs_detoast(const KeyColumn *col, Datum value)
{
	return KEY_KIND_IS_VARWIDTH(col->kind) &&
		!(col->kind == KEY_TEXT && col->text_source == TEXT_NAME) &&
		(VARATT_IS_EXTERNAL(DatumGetPointer(value)) ||
		 VARATT_IS_COMPRESSED(DatumGetPointer(value)));
}

/*
 * Keep the datums of the full key's columns of the tuple in slot, for the
 * generic builder.  Values stored out of line or compressed are detoasted
 * into detoast_cxt once here, as the builder threads cannot do it.
 */
void
key_store_inputs(const KeyLayout *layout, TupleTableSlot *slot,
				 Datum *values, bool *isnull, MemoryContext detoast_cxt,
				 Size *detoasted_bytes)
{
	slot_getsomeattrs(slot, layout->max_attno);
	for (int c = 0; c < layout->full_cols; c++)
	{
		const KeyColumn *col = &layout->cols[c];
		Datum		value = slot->tts_values[col->attno - 1];

		isnull[c] = slot->tts_isnull[col->attno - 1];
		if (!isnull[c] && key_input_needs_detoast(col, value))
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(detoast_cxt);
			struct varlena *plain = detoast_attr((struct varlena *) DatumGetPointer(value));

			MemoryContextSwitchTo(oldcxt);
			*detoasted_bytes += VARSIZE(plain);
			value = PointerGetDatum(plain);
		}
		values[c] = value;
	}
}

/*
 * The datums of key columns 0 .. ncols-1 of tuple, without a slot or any
 * call into PostgreSQL, for the pool threads: the same walk over the
 * tuple's attributes as heap_deform_tuple, stopping at max_attno.  The
 * datums point into the tuple.  False, with values unfinished, where the
 * backend must do it: the tuple was stored before some of those columns
 * were added (their value is the catalog's default), or, with
 * check_detoast, a value to build a key from is stored out of line or
 * compressed.
 */
static bool
deform_key_columns(const KeyLayout *layout, MinimalTuple tuple, int ncols,
				   Datum *values, bool *isnull, bool check_detoast)
{
	const char *data = tuple_data(tuple);
	const uint8 *nullbits = tuple->t_bits;
	bool		hasnulls = (tuple->t_infomask & HEAP_HASNULL) != 0;
	uint32		off = 0;

	if (HeapTupleHeaderGetNatts(tuple) < layout->max_attno)
		return false;

	for (int a = 0; a < layout->max_attno; a++)
	{
		const KeyAttr *att = &layout->attrs[a];
		Datum		value;
		bool		null = hasnulls && att_isnull(a, nullbits);

		if (!null)
		{
			if (att->attlen == -1)
				off = att_align_pointer(off, att->attalign, -1, data + off);
			else
				off = att_align_nominal(off, att->attalign);
			value = fetch_att(data + off, att->attbyval, att->attlen);
			off = att_addlength_pointer(off, att->attlen, data + off);
		}
		else
			value = (Datum) 0;
		if (!att->is_key)
			continue;

		for (int c = 0; c < ncols; c++)
		{
			const KeyColumn *col = &layout->cols[c];

			if (col->attno != a + 1)
				continue;
			if (check_detoast && !null && key_input_needs_detoast(col, value))
				return false;
			values[c] = value;
			isnull[c] = null;
		}
	}
	return true;
}

/*
 * key_store_inputs() for a pool thread, from the tuple itself; false where
 * only the backend can (see deform_key_columns).
 */
bool
key_deform_inputs(const KeyLayout *layout, MinimalTuple tuple,
				  Datum *values, bool *isnull)
{
	return deform_key_columns(layout, tuple, layout->full_cols, values, isnull, true);
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

/* A 16-byte value given as two words, most significant first, DESC inverted. */
static inline void
put_two_words(uint64 *key, int offset, uint64 hi, uint64 lo, bool descending, int keep)
{
	if (descending)
	{
		hi = ~hi;
		lo = ~lo;
	}
	put_value(key, offset, hi, 8, Min(keep, 8));
	if (keep > 8)
		put_value(key, offset + 8, lo, 8, keep - 8);
}

/* A uuid's 16 bytes as two big-endian words. */
static inline void
put_uuid(uint64 *key, int offset, const pg_uuid_t *uuid, bool descending, int keep)
{
	uint64		hi;
	uint64		lo;

	memcpy(&hi, uuid->data, 8);
	memcpy(&lo, uuid->data + 8, 8);
	put_two_words(key, offset, pg_ntoh64(hi), pg_ntoh64(lo), descending, keep);
}

#ifdef HAVE_INT128
/* An interval as PostgreSQL compares it (key_interval_words). */
static inline void
put_interval(uint64 *key, int offset, const Interval *interval, bool descending, int keep)
{
	uint64		hi;
	uint64		lo;

	key_interval_words(interval, &hi, &lo);
	put_two_words(key, offset, hi, lo, descending, keep);
}
#endif

/*
 * Encode the key of the tuple in slot into key (layout->key_words words).
 * Returns false, without a key, when a column whose layout has no NULL byte
 * is NULL: that column is then marked as needing one, and the caller must
 * place the layout again and encode every tuple anew.
 *
 * This runs once per input row, so it builds the words with shifts rather
 * than going through a byte buffer.
 */
static pg_attribute_always_inline bool
encode_key(KeyLayout *layout, TupleTableSlot *slot, const char *data,
		   const Datum *colvalues, const bool *colnulls, uint64 *key)
{
	bool		ok = true;

	for (int w = 0; w < layout->key_words; w++)
		key[w] = 0;

	for (int c = 0; c < layout->ncols; c++)
	{
		KeyColumn  *col = &layout->cols[c];
		Datum		value;
		bool		isnull;
		int			offset = col->offset;
		uint64		v;

		if (data)
		{
			value = fetch_att(data + col->data_offset, col->attbyval, col->attlen);
			isnull = false;
		}
		else if (colvalues)
		{
			value = colvalues[c];
			isnull = colnulls[c];
		}
		else
		{
			value = slot->tts_values[col->attno - 1];
			isnull = slot->tts_isnull[col->attno - 1];
		}
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
			case KEY_CHAR:
				v = (uint8) DatumGetChar(value);
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
#ifdef HAVE_INT128
			case KEY_INTERVAL:
				put_interval(key, offset, DatumGetIntervalP(value), col->descending, col->bytes);
				continue;
#endif
			default:
				continue;		/* KEY_NONE; variable widths are never here */
		}
		if (col->descending)
			v = ~v;
		put_value(key, offset, v, col->value_bytes, col->bytes);
	}
	return ok;
}

static bool
key_encode_slot(KeyLayout *layout, TupleTableSlot *slot, uint64 *key)
{
	slot_getsomeattrs(slot, layout->max_attno);
	return encode_key(layout, slot, NULL, NULL, NULL, key);
}

/*
 * key_encode_slot() for a MinimalTuple, read in place when it can be: when
 * the layout's key columns lie at fixed offsets (layout->direct) and the
 * tuple has no NULLs and all of those columns, each is fetched where
 * heap_deform_tuple would find it, without a slot.  Otherwise, through
 * slot.  The load encodes every tuple this way, so this saves a slot store
 * and a deform per row.
 */
bool
key_encode_tuple(KeyLayout *layout, MinimalTuple tuple, TupleTableSlot *slot,
				 uint64 *key)
{
	const char *data = direct_key_data(layout, tuple);

	if (data)
		return encode_key(layout, NULL, data, NULL, NULL, key);
	ExecStoreMinimalTuple(tuple, slot, false);
	return key_encode_slot(layout, slot, key);
}

/*
 * key_encode_tuple() where each column of the layout is one word of the
 * key (word_columns: ORDER BY k, or f, k, of int8, float8, timestamps),
 * without the loop over kinds and byte offsets: the run reader builds
 * the key of each record it reads back (run_read.c), in the backend
 * alone.  False where the layout or the tuple is not of that form; the
 * caller then calls key_encode_tuple().
 */
bool
key_encode_words(const KeyLayout *layout, MinimalTuple tuple, uint64 *key)
{
	const char *data;

	if (!layout->word_columns || (data = direct_key_data(layout, tuple)) == NULL)
		return false;
	for (int c = 0; c < layout->ncols; c++)
	{
		const KeyColumn *col = &layout->cols[c];
		uint64		v;

		memcpy(&v, data + col->data_offset, sizeof(v));
		if (col->kind == KEY_INT8)
			v ^= UINT64CONST(0x8000000000000000);
		else
		{
			float8		f;

			memcpy(&f, &v, sizeof(f));
			v = float8_order_bits(f);
		}
		key[c] = col->descending ? ~v : v;
	}
	return true;
}

/*
 * key_encode_tuple() for a pool thread: no slot, no call into PostgreSQL,
 * and the layout left as it is.  values and isnull are the caller's room
 * for layout->ncols datums.  KEY_NEEDS_NULL_BYTE where a column whose key
 * has no NULL byte is NULL (null_seen[c] set for each: the backend places
 * the layout again), KEY_NEEDS_BACKEND where the tuple lacks some of the
 * key's columns (the backend encodes it with key_encode_tuple).
 */
KeyEncodeResult
key_encode_record(KeyLayout *layout, MinimalTuple tuple, Datum *values,
				  bool *isnull, bool *null_seen, uint64 *key)
{
	KeyEncodeResult result = KEY_ENCODED;
	const char *data = direct_key_data(layout, tuple);

	if (data)
	{
		(void) encode_key(layout, NULL, data, NULL, NULL, key);
		return KEY_ENCODED;
	}
	if (!deform_key_columns(layout, tuple, layout->ncols, values, isnull, false))
		return KEY_NEEDS_BACKEND;
	for (int c = 0; c < layout->ncols && layout->cols[c].in_key; c++)
	{
		if (isnull[c] && !layout->cols[c].null_byte)
		{
			null_seen[c] = true;
			result = KEY_NEEDS_NULL_BYTE;
		}
	}
	if (result == KEY_ENCODED)
		(void) encode_key(layout, NULL, NULL, values, isnull, key);
	return result;
}

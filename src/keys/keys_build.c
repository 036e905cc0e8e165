/*-------------------------------------------------------------------------
 *
 * keys_build.c
 *	  The generic key builder: any span of a record's full normalized key,
 *	  built from the datums of its key columns, in any thread.
 *
 * Column encodings (each followed by the next column's; see keys.h):
 *	- a NULL byte, 0 or 1 as NULLS FIRST/LAST puts the column, then for a
 *	  non-NULL value its bytes, all inverted for DESC;
 *	- fixed-width kinds: the same order-preserving bytes as the fixed path;
 *	- text under C / POSIX: the string's bytes, then 0x00 (text holds no
 *	  NUL bytes, so a string sorts before any longer string it begins);
 *	- text under a libc collation: strxfrm_l's output, 0x00, the string's
 *	  bytes, 0x00 (a span within the first level of an ASCII string's
 *	  output is assembled from its characters' primary weights instead of
 *	  transformed: libc_primary.c).  strxfrm output holds no NUL bytes; the
 *	  bytes after it break ties of strings equal under the collation with
 *	  strcmp, as PostgreSQL's varstr_cmp does.  Whether glibc's strxfrm agrees
 *	  with strcoll is checked after the sort (refine.c), as PostgreSQL itself
 *	  does not trust it.  A string longer than KEY_LIBC_XFRM_MAX_BYTES encodes
 *	  as strxfrm_l's output for its first KEY_LIBC_XFRM_MAX_BYTES bytes (cut at
 *	  a character boundary) and 0xFF, and the full key ends there unfinished
 *	  (never tied by keys): records equal that far go to the comparators;
 *	- text under ICU: the ICU sort key (ucol_nextSortKeyPart, which has no
 *	  0x00 bytes), 0x00, and for a deterministic collation the bytes and
 *	  0x00 again; a nondeterministic collation's equal strings stay equal;
 *	- bpchar without its trailing blanks, name up to its NUL;
 *	- bytea: each 0x00 byte escaped as 0x00 0xFF, then 0x00 0x00;
 *	- numeric: a class byte (-Infinity, negative, zero, positive,
 *	  +Infinity, NaN, in PostgreSQL's order), then for finite non-zero
 *	  values the base-10000 weight and the digits (each digit + 1, so the
 *	  0x0000 terminator sorts below any digit), inverted for negatives.
 *	  Trailing zero digits are dropped, so 1.1 and 1.10 encode the same, as
 *	  they compare equal;
 *	- inet and cidr: the family, the address masked to the netmask, the
 *	  netmask length, then the whole address (network_cmp's order: common
 *	  network bits, then the shorter netmask first, then the address).
 *
 * Nothing here calls into PostgreSQL: no palloc, no ereport, no catalog
 * (only pg_encoding_mblen, a lookup in src/common's encoding tables).
 * Buffers come from malloc and belong to a KeyBuildContext, one per
 * thread; ICU collators are cloned per context, as a UCollator is not to
 * be shared between threads.  Errors (out of memory, an ICU failure) are
 * returned, with a message in the context.
 *
 * What the others call:
 *	- a thread's context: key_build_context_create, key_build_context_free,
 *	  key_build_set_stop_flag and key_build_stopped (its work dropped),
 *	  key_build_error (the message of a failure);
 *	- keys: key_build_span (batch_encode.c, and refine.c for the spans
 *	  after the prefix), key_build_lead (batch_encode.c: a leading key);
 *	- the records themselves, for refine.c: key_compare_inputs (the
 *	  collation check), key_compare_column (the collation sort),
 *	  key_inputs_identical, key_inputs_bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <string.h>
#include <sys/socket.h>

#include "mb/pg_wchar.h"
#include "utils/inet.h"
#include "utils/pg_locale.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "keys/keys.h"
#include "keys/libc_primary.h"
#include "support/compat.h"

#ifdef USE_ICU
#include <unicode/ucol.h>
#include <unicode/uiter.h>
#endif

struct KeyBuildContext
{
	const KeyLayout *layout;
	void	  **collators;		/* per column: this context's UCollator */
	char	   *cstr[2];		/* NUL-terminated copies of strings */
	size_t		cstr_cap[2];
	char	   *xfrm;			/* strxfrm output */
	size_t		xfrm_cap;
	uint8	   *col_bytes[2];	/* one column's encoding, for comparisons */
	size_t		col_cap[2];
	volatile bool *stop;		/* set when the work is to be dropped */
	char		error[256];
};

/* Where built bytes go: the part of the full key in [skip, end). */
typedef struct KeySink
{
	uint8	   *out;
	size_t		skip;
	size_t		end;
	size_t		pos;			/* full-key offset of the next byte */
	/* when collecting a whole column (comparisons), out grows */
	KeyBuildContext *grow_ctx;
	int			grow_slot;
	bool		failed;
	bool		cut;			/* an encoder stopped at the span's end */
	bool		unfinished;		/* the full key ends here, not wholly
								 * encoded (a long libc string) */
} KeySink;

static bool key_inputs_identical_column(const KeyColumn *col, Datum a,
										Datum b);

static bool
ensure_capacity(void **buf, size_t *cap, size_t need)
{
	void	   *p;
	size_t		newcap;

	if (need <= *cap)
		return true;
	newcap = Max(need, Max(*cap * 2, 256));
	p = realloc(*buf, newcap);
	if (p == NULL)
		return false;
	*buf = p;
	*cap = newcap;
	return true;
}

static inline bool
sink_full(const KeySink *s)
{
	return s->pos >= s->end;
}

/*
 * An encoder may stop producing a value's bytes once the span is full
 * (not when collecting whole columns); it then marks the key as cut.
 */
static inline bool
sink_can_stop(KeySink *s)
{
	if (s->grow_ctx == NULL && sink_full(s))
	{
		s->cut = true;
		return true;
	}
	return false;
}

static void
sink_put(KeySink *s, const uint8 *bytes, size_t n, bool invert)
{
	size_t		from;
	size_t		to;

	if (s->grow_ctx != NULL)
	{
		KeyBuildContext *ctx = s->grow_ctx;

		if (!ensure_capacity((void **) &ctx->col_bytes[s->grow_slot],
							 &ctx->col_cap[s->grow_slot], s->pos + n))
		{
			s->failed = true;
			return;
		}
		s->out = ctx->col_bytes[s->grow_slot];
		s->end = s->pos + n;
	}
	from = Max(s->pos, s->skip);
	to = Min(s->pos + n, s->end);
	for (size_t i = from; i < to; i++)
	{
		uint8		b = bytes[i - s->pos];

		s->out[i - s->skip] = invert ? (uint8) ~b : b;
	}
	s->pos += n;
}

static inline void
sink_byte(KeySink *s, uint8 b, bool invert)
{
	sink_put(s, &b, 1, invert);
}

/* v's `width` low bytes, big-endian */
static void
sink_uint(KeySink *s, uint64 v, int width, bool invert)
{
	uint8		buf[8];

	for (int i = width - 1; i >= 0; i--)
	{
		buf[i] = (uint8) v;
		v >>= 8;
	}
	sink_put(s, buf, width, invert);
}

static const char *
text_bytes(const KeyColumn *col, Datum value, size_t *len)
{
	const char *p;

	if (col->text_source == TEXT_NAME)
	{
		p = NameStr(*DatumGetName(value));
		*len = strnlen(p, NAMEDATALEN);
		return p;
	}
	p = VARDATA_ANY(DatumGetPointer(value));
	*len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	if (col->text_source == TEXT_BPCHAR)
	{
		/* bpchar compares without its pad blanks (bcTruelen) */
		while (*len > 0 && p[*len - 1] == ' ')
			(*len)--;
	}
	return p;
}

/* a NUL-terminated copy of (p, len) in ctx->cstr[slot] */
static const char *
terminated(KeyBuildContext *ctx, int slot, const char *p, size_t len)
{
	if (!ensure_capacity((void **) &ctx->cstr[slot], &ctx->cstr_cap[slot], len + 1))
		return NULL;
	memcpy(ctx->cstr[slot], p, len);
	ctx->cstr[slot][len] = '\0';
	return ctx->cstr[slot];
}

/*
 * The span's bytes of an ASCII string's strxfrm_l output where they lie
 * in its first level, the primary weights of its characters, assembled
 * from the locale's table (libc_primary.c) as far as the span needs,
 * rather than the whole string transformed: the key is then cut.  False,
 * with nothing produced, where the table cannot give them: no table, a
 * character it lacks, a string longer than strxfrm_l would transform, or
 * a span that reaches past the first level (the later levels, and ties
 * of strings equal there, need strxfrm_l).
 */
static bool
put_libc_primary(KeyBuildContext *ctx, KeySink *s, const KeyColumn *col,
				 const char *p, size_t len)
{
	const LibcPrimaryWeights *w = col->libc_primary;
	size_t		want;
	size_t		got = 0;
	size_t		i;

	if (w == NULL || s->grow_ctx != NULL || len > KEY_LIBC_XFRM_MAX_BYTES ||
		s->end <= s->pos)
		return false;
	want = s->end - s->pos;
	if (!ensure_capacity((void **) &ctx->xfrm, &ctx->xfrm_cap,
						 want + LIBC_PRIMARY_MAX_BYTES))
		return false;
	for (i = 0; i < len && got < want; i++)
	{
		unsigned char c = (unsigned char) p[i];

		if (c >= 128 || w->len[c] == LIBC_PRIMARY_NONE)
			return false;
		memcpy(ctx->xfrm + got, w->bytes[c], LIBC_PRIMARY_MAX_BYTES);
		got += w->len[c];
	}
	if (got < want)
		return false;
	/* the rest must be ASCII too: a later character may join an earlier */
	for (; i < len; i++)
		if ((unsigned char) p[i] >= 128)
			return false;
	sink_put(s, (const uint8 *) ctx->xfrm, got, col->descending);
	s->cut = true;
	return true;
}

/*
 * strxfrm_l's output for the string, or for its first
 * KEY_LIBC_XFRM_MAX_BYTES bytes, cut at a character boundary: then the key
 * is unfinished.
 *
 * strxfrm transforms the whole string, whatever part of its output the
 * span needs (it has no incremental form like ICU's
 * ucol_nextSortKeyPart), at some tens of MB/s, slower still past 16 kB.
 * Sorts of long strings would pay a transform of every byte of every
 * value, where PostgreSQL's strcoll comparisons (it uses no strxfrm under
 * libc) stop at the first difference and skip identical strings: a
 * thousand values of kilobytes each, sorted again for each row of a
 * correlated subquery, took a quarter of a second per sort against a few
 * milliseconds.  A string's beginning orders it wherever the beginnings
 * differ, which is nearly always and is all that a prefix and the few
 * refinement rounds of a libc sort use (refine.c); the strcoll check after
 * the sort checks, and repairs, the order where it does not.
 */
static bool
put_libc_text(KeyBuildContext *ctx, KeySink *s, const KeyColumn *col,
			  const char *p, size_t len)
{
	const char *str;
	size_t		n;

	if (put_libc_primary(ctx, s, col, p, len))
		return true;
	if (len > KEY_LIBC_XFRM_MAX_BYTES)
	{
		size_t		clip = 0;

		/* pg_encoding_mblen reads a lead byte: no PostgreSQL state */
		for (;;)
		{
			size_t		l = pg_encoding_mblen(col->encoding, p + clip);

			if (clip + l > KEY_LIBC_XFRM_MAX_BYTES)
				break;
			clip += l;
		}
		len = clip;
		s->unfinished = true;
	}
	str = terminated(ctx, 0, p, len);
	if (str == NULL)
		return false;
	for (;;)
	{
		n = strxfrm_l(ctx->xfrm, str, ctx->xfrm_cap, col->libc_locale);
		if (n < ctx->xfrm_cap)
			break;
		if (!ensure_capacity((void **) &ctx->xfrm, &ctx->xfrm_cap, n + 1))
			return false;
	}
	sink_put(s, (const uint8 *) ctx->xfrm, n, col->descending);

	/*
	 * A cut string goes on, so it sorts after a string that its beginning
	 * equals under the collation, as it would whole: 0xFF, above the 0x00
	 * that follows a whole string's output.
	 */
	if (s->unfinished)
		sink_byte(s, 0xFF, col->descending);
	return true;
}

#ifdef USE_ICU
static UCollator *
clone_collator(const UCollator *coll, UErrorCode *status)
{
#if U_ICU_VERSION_MAJOR_NUM >= 71
	return ucol_clone(coll, status);
#else
	return ucol_safeClone(coll, NULL, NULL, status);
#endif
}

/*
 * The ICU sort key, only as far as the span needs: the key is produced
 * incrementally, so a first-pass prefix costs a fraction of a full key.
 */
static bool
put_icu_text(KeyBuildContext *ctx, KeySink *s, int c, const char *p, size_t len)
{
	const KeyColumn *col = &ctx->layout->cols[c];
	UCollator  *coll = (UCollator *) ctx->collators[c];
	UCharIterator iter;
	uint32_t	state[2] = {0, 0};
	uint8		part[64];

	uiter_setUTF8(&iter, p, (int32_t) len);
	for (;;)
	{
		UErrorCode status = U_ZERO_ERROR;
		int32_t		want = sizeof(part);
		int32_t		got;

		/* ask only for what the span still needs: later levels cost */
		if (s->grow_ctx == NULL && s->end > s->pos)
			want = (int32_t) Min(s->end - s->pos, sizeof(part));
		got = ucol_nextSortKeyPart(coll, &iter, state, part, want, &status);
		if (U_FAILURE(status))
		{
			snprintf(ctx->error, sizeof(ctx->error),
					 "ICU sort key failed: %s", u_errorName(status));
			return false;
		}
		sink_put(s, part, got, col->descending);
		if (got < want || sink_can_stop(s))
			break;
	}
	return true;
}
#endif

static void
put_bytea(KeySink *s, const KeyColumn *col, Datum value)
{
	const uint8 *p = (const uint8 *) VARDATA_ANY(DatumGetPointer(value));
	size_t		len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	size_t		start = 0;
	static const uint8 escaped_nul[2] = {0x00, 0xFF};
	static const uint8 terminator[2] = {0x00, 0x00};

	for (size_t i = 0; i < len && !sink_can_stop(s); i++)
	{
		if (p[i] != 0)
			continue;
		sink_put(s, p + start, i - start, col->descending);
		sink_put(s, escaped_nul, 2, col->descending);
		start = i + 1;
	}
	if (start < len)
		sink_put(s, p + start, len - start, col->descending);
	sink_put(s, terminator, 2, col->descending);
}

/*
 * numeric's on-disk header (numeric.c, stable as it is stored in tables):
 * a uint16 whose top bits say short (0x8000), special (0xC000: NaN 0xC000,
 * +Infinity 0xD000, -Infinity 0xF000), negative (0x4000) or positive; a
 * short header holds sign (0x2000), display scale and a 7-bit weight
 * (0x0040 sign, 0x003F magnitude); a long one is followed by an int16
 * weight.  Then base-10000 digits, most significant first.
 */
#define NUM_SIGN_MASK			0xC000
#define NUM_NEG					0x4000
#define NUM_SHORT				0x8000
#define NUM_SPECIAL				0xC000
#define NUM_EXT_MASK			0xF000
#define NUM_NAN					0xC000
#define NUM_PINF				0xD000
#define NUM_SHORT_SIGN			0x2000
#define NUM_SHORT_WEIGHT_SIGN	0x0040
#define NUM_SHORT_WEIGHT_MASK	0x003F

enum
{
	NUMCLASS_NINF = 1,
	NUMCLASS_NEG,
	NUMCLASS_ZERO,
	NUMCLASS_POS,
	NUMCLASS_PINF,
	NUMCLASS_NAN
};

static void
put_numeric(KeySink *s, const KeyColumn *col, Datum value)
{
	const char *p = VARDATA_ANY(DatumGetPointer(value));
	size_t		len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	uint16		header;
	int			weight;
	bool		negative;
	const char *digits;
	int			ndigits;
	int			first;
	int			last;
	bool		inv = col->descending;

	memcpy(&header, p, sizeof(uint16));
	if ((header & NUM_SIGN_MASK) == NUM_SPECIAL)
	{
		int			cls = ((header & NUM_EXT_MASK) == NUM_NAN) ? NUMCLASS_NAN :
			((header & NUM_EXT_MASK) == NUM_PINF) ? NUMCLASS_PINF : NUMCLASS_NINF;

		sink_byte(s, cls, inv);
		return;
	}
	if ((header & NUM_SIGN_MASK) == NUM_SHORT)
	{
		negative = (header & NUM_SHORT_SIGN) != 0;
		weight = (header & NUM_SHORT_WEIGHT_MASK);
		if (header & NUM_SHORT_WEIGHT_SIGN)
			weight |= ~NUM_SHORT_WEIGHT_MASK;
		digits = p + sizeof(uint16);
	}
	else
	{
		int16		w;

		negative = (header & NUM_SIGN_MASK) == NUM_NEG;
		memcpy(&w, p + sizeof(uint16), sizeof(int16));
		weight = w;
		digits = p + sizeof(uint16) + sizeof(int16);
	}
	ndigits = (int) ((len - (digits - p)) / sizeof(int16));

	/* PostgreSQL strips zero digits at both ends; be sure of it */
	first = 0;
	last = ndigits;
	while (first < last)
	{
		int16		d;

		memcpy(&d, digits + first * sizeof(int16), sizeof(int16));
		if (d != 0)
			break;
		first++;
		weight--;
	}
	while (last > first)
	{
		int16		d;

		memcpy(&d, digits + (last - 1) * sizeof(int16), sizeof(int16));
		if (d != 0)
			break;
		last--;
	}
	if (first == last)
	{
		sink_byte(s, NUMCLASS_ZERO, inv);
		return;
	}

	/* a negative value orders by the inverse of its magnitude */
	sink_byte(s, negative ? NUMCLASS_NEG : NUMCLASS_POS, inv);
	if (negative)
		inv = !inv;
	sink_uint(s, (uint16) (weight + 0x8000), 2, inv);
	for (int i = first; i < last && !sink_can_stop(s); i++)
	{
		int16		d;

		memcpy(&d, digits + i * sizeof(int16), sizeof(int16));
		sink_uint(s, (uint16) (d + 1), 2, inv);
	}
	sink_uint(s, 0, 2, inv);
}

static void
put_inet(KeySink *s, const KeyColumn *col, Datum value)
{
	inet	   *ip = (inet *) DatumGetPointer(value);	/* detoasted by the backend */
	int			size = ip_addrsize(ip);
	int			bits = ip_bits(ip);
	const unsigned char *addr = ip_addr(ip);
	uint8		masked[16];

	for (int i = 0; i < size; i++)
	{
		int			keep = Min(Max(bits - i * 8, 0), 8);

		masked[i] = addr[i] & (uint8) (0xFF00 >> keep);
	}
	sink_byte(s, ip_family(ip), col->descending);
	sink_put(s, masked, size, col->descending);
	sink_byte(s, (uint8) bits, col->descending);
	sink_put(s, addr, size, col->descending);
}

/* the value bytes of a fixed-width kind, as on the fixed path */
static void
put_fixed(KeySink *s, const KeyColumn *col, Datum value)
{
	bool		inv = col->descending;

	switch (col->kind)
	{
		case KEY_BOOL:
			sink_uint(s, DatumGetBool(value) ? 1 : 0, 1, inv);
			break;
		case KEY_CHAR:
			sink_uint(s, (uint8) DatumGetChar(value), 1, inv);
			break;
		case KEY_INT2:
			sink_uint(s, (uint16) DatumGetInt16(value) ^ 0x8000, 2, inv);
			break;
		case KEY_INT4:
			sink_uint(s, (uint32) DatumGetInt32(value) ^ 0x80000000, 4, inv);
			break;
		case KEY_INT8:
			sink_uint(s, (uint64) DatumGetInt64(value) ^ UINT64CONST(0x8000000000000000), 8, inv);
			break;
		case KEY_OID:
			sink_uint(s, DatumGetObjectId(value), 4, inv);
			break;
		case KEY_FLOAT4:
			sink_uint(s, float4_order_bits(DatumGetFloat4(value)), 4, inv);
			break;
		case KEY_FLOAT8:
			sink_uint(s, float8_order_bits(DatumGetFloat8(value)), 8, inv);
			break;
		case KEY_UUID:
			sink_put(s, DatumGetUUIDP(value)->data, UUID_LEN, inv);
			break;
#ifdef HAVE_INT128
		case KEY_INTERVAL:
			{
				uint64		hi;
				uint64		lo;

				key_interval_words(DatumGetIntervalP(value), &hi, &lo);
				sink_uint(s, hi, 8, inv);
				sink_uint(s, lo, 8, inv);
				break;
			}
#endif
		default:
			break;
	}
}

/* One column's bytes (its NULL byte, then its value) into the sink. */
static bool
put_column(KeyBuildContext *ctx, KeySink *s, int c, Datum value, bool isnull)
{
	const KeyColumn *col = &ctx->layout->cols[c];
	static const uint8 nul = 0;

	sink_byte(s, (isnull == col->nulls_first) ? 0 : 1, false);
	if (isnull)
		return true;

	switch (col->kind)
	{
		case KEY_TEXT:
			{
				size_t		len;
				const char *p = text_bytes(col, value, &len);

				if (col->collate == COLLATE_LIBC)
				{
					if (!put_libc_text(ctx, s, col, p, len))
						return false;
					if (s->unfinished)
						break;	/* nothing after a cut string orders */
				}
#ifdef USE_ICU
				else if (col->collate == COLLATE_ICU)
				{
					if (!put_icu_text(ctx, s, c, p, len))
						return false;
				}
#endif
				else
				{
					sink_put(s, (const uint8 *) p, len, col->descending);
					sink_put(s, &nul, 1, col->descending);
					break;
				}
				sink_put(s, &nul, 1, col->descending);
				if (col->deterministic && !sink_can_stop(s))
				{
					sink_put(s, (const uint8 *) p, len, col->descending);
					sink_put(s, &nul, 1, col->descending);
				}
				break;
			}
		case KEY_BYTEA:
			put_bytea(s, col, value);
			break;
		case KEY_NUMERIC:
			put_numeric(s, col, value);
			break;
		case KEY_INET:
			put_inet(s, col, value);
			break;
		default:
			put_fixed(s, col, value);
			break;
	}
	return !s->failed;
}

/*
 * The first ncols columns' bytes [skip, skip + len) into out (zero beyond
 * what they fill), until the span is full or a column is cut; returns the
 * columns put whole, or -1 on an error, described by key_build_error().
 */
static int
build_columns(KeyBuildContext *ctx, const Datum *values, const bool *isnull,
			  int ncols, size_t skip, size_t len, uint8 *out, KeySink *s)
{
	int			c;

	*s = (KeySink) {out, skip, skip + len, 0, NULL, 0, false, false, false};
	memset(out, 0, len);
	for (c = 0; c < ncols && !sink_full(s) && !s->unfinished; c++)
	{
		if (!put_column(ctx, s, c, values[c], isnull[c]))
		{
			if (ctx->error[0] == '\0')
				strlcpy(ctx->error, "out of memory building keys", sizeof(ctx->error));
			return -1;
		}
	}
	return c;
}

/*
 * Bytes [skip, skip + len) of the record's full key into out (zero beyond
 * the key's end).  *ended says whether the full key ends within the span,
 * so that records with equal spans and ended keys are equal.  False on
 * an error, described by key_build_error().
 */
bool
key_build_span(KeyBuildContext *ctx, const Datum *values, const bool *isnull,
			   size_t skip, size_t len, uint8 *out, bool *ended)
{
	KeySink		s;
	int			c = build_columns(ctx, values, isnull, ctx->layout->full_cols,
								  skip, len, out, &s);

	if (c < 0)
		return false;
	/* every byte produced, and none past the span */
	*ended = (c == ctx->layout->full_cols && !s.cut && !s.unfinished && s.pos <= s.end);
	return true;
}

/*
 * A leading key (keys.h): the bytes of the layout's lead_cols leading
 * columns into out, zero to its len bytes, which hold them all (fixed
 * widths: none is cut).  False on an error, described by key_build_error().
 */
bool
key_build_lead(KeyBuildContext *ctx, const Datum *values, const bool *isnull,
			   size_t len, uint8 *out)
{
	KeySink		s;

	Assert(ctx->layout->lead_cols > 0 && ctx->layout->lead_bytes <= len);
	return build_columns(ctx, values, isnull, ctx->layout->lead_cols, 0, len,
						 out, &s) >= 0;
}

/*
 * Compare two values of column c as PostgreSQL would: collated text with
 * strcoll_l or ucol_strcollUTF8 and, for a deterministic collation, the
 * bytes to break ties (what varstr_cmp does), every other column by its
 * encoding.  *result is below, at or above zero.
 */
bool
key_compare_column(KeyBuildContext *ctx, int c, Datum a, bool a_isnull,
				   Datum b, bool b_isnull, int *result)
{
	const KeyColumn *col = &ctx->layout->cols[c];
	int			r;

	*result = 0;
	if (a_isnull || b_isnull)
	{
		if (!(a_isnull && b_isnull))
			*result = (a_isnull == col->nulls_first) ? -1 : 1;
		return true;
	}
	if (KEY_KIND_IS_VARWIDTH(col->kind) &&
		key_inputs_identical_column(col, a, b))
		return true;			/* the same bytes: equal, however long */
	if (col->kind == KEY_TEXT && col->collate != COLLATE_BYTES)
	{
		size_t		alen;
		size_t		blen;
		const char *ap = text_bytes(col, a, &alen);
		const char *bp = text_bytes(col, b, &blen);

		if (col->collate == COLLATE_LIBC)
		{
			const char *as = terminated(ctx, 0, ap, alen);
			const char *bs = terminated(ctx, 1, bp, blen);

			if (as == NULL || bs == NULL)
				return false;
			r = strcoll_l(as, bs, col->libc_locale);
		}
#ifdef USE_ICU
		else
		{
			/* what PostgreSQL calls: no sort keys of long strings */
			UErrorCode	status = U_ZERO_ERROR;

			r = ucol_strcollUTF8((UCollator *) ctx->collators[c], ap, (int32_t) alen,
								 bp, (int32_t) blen, &status);
			if (U_FAILURE(status))
			{
				snprintf(ctx->error, sizeof(ctx->error),
						 "ICU comparison failed: %s", u_errorName(status));
				return false;
			}
		}
#endif
		/* PostgreSQL breaks ties of deterministic collations bytewise */
		if (r == 0 && col->deterministic)
		{
			r = memcmp(ap, bp, Min(alen, blen));
			if (r == 0)
				r = (alen > blen) - (alen < blen);
		}
		if (col->descending)
			r = -r;
	}
	else
	{
		KeySink		sa = {NULL, 0, 0, 0, ctx, 0, false, false, false};
		KeySink		sb = {NULL, 0, 0, 0, ctx, 1, false, false, false};
		size_t		n;

		if (!put_column(ctx, &sa, c, a, false) ||
			!put_column(ctx, &sb, c, b, false))
			return false;
		n = Min(sa.pos, sb.pos);
		r = memcmp(ctx->col_bytes[0], ctx->col_bytes[1], n);
		if (r == 0)
			r = (sa.pos > sb.pos) - (sa.pos < sb.pos);
	}
	*result = (r > 0) - (r < 0);
	return true;
}

/*
 * Compare two records on the full key's columns from first_col on (those
 * before it known equal), each as key_compare_column does.  Used to check
 * the sorted order where strxfrm decided it (refine.c).
 */
bool
key_compare_inputs(KeyBuildContext *ctx, int first_col,
				   const Datum *a_values, const bool *a_isnull,
				   const Datum *b_values, const bool *b_isnull,
				   int *result)
{
	*result = 0;
	for (int c = first_col; c < ctx->layout->full_cols; c++)
	{
		if (!key_compare_column(ctx, c, a_values[c], a_isnull[c],
								b_values[c], b_isnull[c], result))
			return false;
		if (*result != 0)
			return true;
	}
	return true;
}

/* Whether two non-NULL values of a column are the very same, byte for byte. */
static bool
key_inputs_identical_column(const KeyColumn *col, Datum a, Datum b)
{
	switch (col->kind)
	{
		case KEY_UUID:
		case KEY_INTERVAL:
			return memcmp(DatumGetPointer(a), DatumGetPointer(b), col->value_bytes) == 0;
		case KEY_TEXT:
			if (col->text_source == TEXT_NAME)
				return strncmp(NameStr(*DatumGetName(a)), NameStr(*DatumGetName(b)),
							   NAMEDATALEN) == 0;
			pg_fallthrough;
		case KEY_BYTEA:
		case KEY_NUMERIC:
		case KEY_INET:
			return VARSIZE_ANY_EXHDR(DatumGetPointer(a)) == VARSIZE_ANY_EXHDR(DatumGetPointer(b)) &&
				memcmp(VARDATA_ANY(DatumGetPointer(a)), VARDATA_ANY(DatumGetPointer(b)),
					   VARSIZE_ANY_EXHDR(DatumGetPointer(a))) == 0;
		case KEY_FLOAT4:
			return DatumGetFloat4(a) == DatumGetFloat4(b) ||
				(isnan(DatumGetFloat4(a)) && isnan(DatumGetFloat4(b)));
		case KEY_FLOAT8:
			return DatumGetFloat8(a) == DatumGetFloat8(b) ||
				(isnan(DatumGetFloat8(a)) && isnan(DatumGetFloat8(b)));
		case KEY_BOOL:
			return DatumGetBool(a) == DatumGetBool(b);
		case KEY_CHAR:
			return DatumGetChar(a) == DatumGetChar(b);
		case KEY_INT2:
			return DatumGetInt16(a) == DatumGetInt16(b);
		case KEY_INT4:
		case KEY_OID:
			return DatumGetInt32(a) == DatumGetInt32(b);
		default:
			return DatumGetInt64(a) == DatumGetInt64(b);
	}
}

/*
 * Whether two records hold the very same key column values, byte for byte:
 * then they are equal under any collation, and a tie range of such records
 * needs no refinement however long its keys.
 */
bool
key_inputs_identical(const KeyLayout *layout,
					 const Datum *a_values, const bool *a_isnull,
					 const Datum *b_values, const bool *b_isnull)
{
	for (int c = 0; c < layout->full_cols; c++)
	{
		if (a_isnull[c] != b_isnull[c])
			return false;
		if (!a_isnull[c] &&
			!key_inputs_identical_column(&layout->cols[c], a_values[c], b_values[c]))
			return false;
	}
	return true;
}

/* The bytes of a record's variable-width key values, all together. */
size_t
key_inputs_bytes(const KeyLayout *layout, const Datum *values, const bool *isnull)
{
	size_t		total = 0;

	for (int c = 0; c < layout->full_cols; c++)
	{
		const KeyColumn *col = &layout->cols[c];

		if (isnull[c] || !KEY_KIND_IS_VARWIDTH(col->kind))
			continue;
		if (col->kind == KEY_TEXT && col->text_source == TEXT_NAME)
			total += NAMEDATALEN;
		else
			total += VARSIZE_ANY_EXHDR(DatumGetPointer(values[c]));
	}
	return total;
}

/*
 * A context for one thread.  Called in the backend (it clones ICU
 * collators, which is not PostgreSQL code either, but is done before the
 * threads start); NULL with errbuf set if memory or ICU fails.
 */
KeyBuildContext *
key_build_context_create(const KeyLayout *layout, char *errbuf, size_t errlen)
{
	KeyBuildContext *ctx = calloc(1, sizeof(KeyBuildContext));

	if (ctx == NULL || (ctx->collators = calloc(Max(layout->ncols, 1), sizeof(void *))) == NULL)
	{
		free(ctx);
		snprintf(errbuf, errlen, "out of memory for a key builder");
		return NULL;
	}
	ctx->layout = layout;
#ifdef USE_ICU
	for (int c = 0; c < layout->full_cols; c++)
	{
		const KeyColumn *col = &layout->cols[c];
		UErrorCode	status = U_ZERO_ERROR;

		if (col->kind != KEY_TEXT || col->collate != COLLATE_ICU)
			continue;
		ctx->collators[c] = clone_collator((const UCollator *) col->icu_collator, &status);
		if (U_FAILURE(status) || ctx->collators[c] == NULL)
		{
			snprintf(errbuf, errlen, "could not clone ICU collator: %s", u_errorName(status));
			key_build_context_free(ctx);
			return NULL;
		}
	}
#endif
	return ctx;
}

void
key_build_context_free(KeyBuildContext *ctx)
{
	if (ctx == NULL)
		return;
#ifdef USE_ICU
	for (int c = 0; c < ctx->layout->ncols; c++)
		if (ctx->collators[c] != NULL)
			ucol_close((UCollator *) ctx->collators[c]);
#endif
	free(ctx->collators);
	free(ctx->cstr[0]);
	free(ctx->cstr[1]);
	free(ctx->xfrm);
	free(ctx->col_bytes[0]);
	free(ctx->col_bytes[1]);
	free(ctx);
}

/* Make the context's tasks watch *stop (threadpool.c sets it to drop work). */
void
key_build_set_stop_flag(KeyBuildContext *ctx, volatile bool *stop)
{
	ctx->stop = stop;
}

/* Whether the work is being dropped; the task should return false. */
bool
key_build_stopped(KeyBuildContext *ctx)
{
	if (ctx->stop != NULL && *ctx->stop)
	{
		strlcpy(ctx->error, "interrupted", sizeof(ctx->error));
		return true;
	}
	return false;
}

const char *
key_build_error(KeyBuildContext *ctx)
{
	return ctx->error[0] ? ctx->error : "key building failed";
}

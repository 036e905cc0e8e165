/*-------------------------------------------------------------------------
 *
 * libc_primary.c
 *	  The primary weights of ASCII characters under a libc collation,
 *	  checked to compose, so that a key span can be built without
 *	  strxfrm_l.
 *
 * glibc's strxfrm_l writes a string's weights level by level: the primary
 * weights of all its characters, a 0x01 byte, the secondary weights, and
 * so on.  A key span that the primary level fills (the first 32 bytes
 * of an md5 hash, a name, a code) needs only those weights, but strxfrm_l
 * computes every level of the whole string, and under a libc collation
 * that transform is most of a text sort's CPU time, and, with many sorts
 * sharing the CPUs, most of what holds their throughput down
 * (bench/results/service.md measures it).
 *
 * So for each locale a backend sorts under, the primary weight of each
 * printable ASCII character (and tab, newline, carriage return) is taken
 * once from strxfrm_l of the character alone: the bytes before its first
 * 0x01.  The table is kept only if the weights compose: for every pair of
 * those characters, the first level of strxfrm_l's output for the pair is
 * the two weights one after the other.  That rules out contractions
 * between ASCII characters (a locale in which "ch" is a letter of its
 * own) and any reordering of the first level; a locale with either gets
 * no table, and its keys come from strxfrm_l alone.  keys_build.c
 * assembles the primary level of an all-ASCII string from the table as
 * far as the key span needs, and calls strxfrm_l only where the span
 * reaches past it.
 *
 * Nothing rests on the table being right.  A composition the pairs cannot
 * show (three characters that contract) would give a key that differs
 * from strxfrm_l's, which at worst puts two strings out of strcoll_l's
 * order; the check of every adjacent pair after the sort (refine.c) finds
 * and repairs that, as it does where strxfrm_l itself disagrees with
 * strcoll_l.
 *
 * Tables are built in the backend, once per locale for its life (about
 * ten thousand transforms of two characters), when the key layout asks for
 * one (libc_primary_weights, keys.c), and read by the pool threads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "keys/libc_primary.h"

/* locales with a table (or found to have none), most recent first */
typedef struct KnownLocale
{
	locale_t	locale;
	LibcPrimaryWeights *weights;	/* NULL: the weights do not compose */
	struct KnownLocale *next;
} KnownLocale;

static KnownLocale *known_locales = NULL;

/*
 * The first level of strxfrm_l's output for str: its bytes before the
 * first 0x01, into out (room for cap bytes); false if there is no 0x01 (a
 * locale whose transform has no levels) or the level is longer than cap.
 */
static bool
first_level(locale_t locale, const char *str, unsigned char *out, size_t cap,
			size_t *len)
{
	char		buf[256];
	size_t		n = strxfrm_l(buf, str, sizeof(buf), locale);
	const char *sep;

	if (n >= sizeof(buf))
		return false;
	sep = memchr(buf, 0x01, n);
	if (sep == NULL || (size_t) (sep - buf) > cap)
		return false;
	*len = sep - buf;
	memcpy(out, buf, *len);
	return true;
}

static bool
table_character(int c)
{
	return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r';
}

/* Each character's weight, then the check that every pair composes. */
static LibcPrimaryWeights *
build_weights(locale_t locale)
{
	LibcPrimaryWeights *w = MemoryContextAllocZero(TopMemoryContext,
												   sizeof(LibcPrimaryWeights));
	int			nweighted = 0;

	for (int c = 0; c < 128; c++)
	{
		char		str[2] = {(char) c, '\0'};
		size_t		len;

		w->len[c] = LIBC_PRIMARY_NONE;
		if (table_character(c) &&
			first_level(locale, str, w->bytes[c], LIBC_PRIMARY_MAX_BYTES, &len))
		{
			w->len[c] = (unsigned char) len;
			nweighted++;
		}
	}
	if (nweighted == 0)
	{
		pfree(w);
		return NULL;
	}

	for (int a = 0; a < 128; a++)
	{
		if (w->len[a] == LIBC_PRIMARY_NONE)
			continue;
		for (int b = 0; b < 128; b++)
		{
			char		str[3] = {(char) a, (char) b, '\0'};
			unsigned char got[2 * LIBC_PRIMARY_MAX_BYTES];
			size_t		len;

			if (w->len[b] == LIBC_PRIMARY_NONE)
				continue;
			if (!first_level(locale, str, got, sizeof(got), &len) ||
				len != (size_t) w->len[a] + w->len[b] ||
				memcmp(got, w->bytes[a], w->len[a]) != 0 ||
				memcmp(got + w->len[a], w->bytes[b], w->len[b]) != 0)
			{
				pfree(w);
				return NULL;
			}
		}
	}
	return w;
}

/*
 * The primary weights of ASCII characters under locale, or NULL where
 * they do not compose (keys then come from strxfrm_l alone).
 */
const LibcPrimaryWeights *
libc_primary_weights(locale_t locale)
{
	KnownLocale *known;

	for (known = known_locales; known != NULL; known = known->next)
		if (known->locale == locale)
			return known->weights;

	known = MemoryContextAlloc(TopMemoryContext, sizeof(KnownLocale));
	known->locale = locale;
	known->weights = build_weights(locale);
	elog(DEBUG2, "gpusort: a libc collation's ASCII primary weights %s",
		 known->weights ? "compose: keys assembled where the span allows" :
		 "do not compose: keys from strxfrm_l");
	known->next = known_locales;
	known_locales = known;
	return known->weights;
}

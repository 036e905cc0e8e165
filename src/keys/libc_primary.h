/*-------------------------------------------------------------------------
 *
 * libc_primary.h
 *	  The primary weights of ASCII characters under a libc collation, from
 *	  which keys_build.c assembles the beginning of an ASCII string's
 *	  strxfrm_l output without calling strxfrm_l (libc_primary.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_LIBC_PRIMARY_H
#define GPUSORT_LIBC_PRIMARY_H

#include <locale.h>

/* the most bytes of one character's primary weight that the table holds */
#define LIBC_PRIMARY_MAX_BYTES	4

/* LibcPrimaryWeights.len of a character whose weight the table lacks */
#define LIBC_PRIMARY_NONE		0xFF

/*
 * For each ASCII byte, the bytes its primary weight adds to the first
 * level of strxfrm_l's output (none for a character ignored at that
 * level), or LIBC_PRIMARY_NONE.
 */
typedef struct LibcPrimaryWeights
{
	unsigned char len[128];
	unsigned char bytes[128][LIBC_PRIMARY_MAX_BYTES];
} LibcPrimaryWeights;

extern const LibcPrimaryWeights *libc_primary_weights(locale_t locale);

#endif							/* GPUSORT_LIBC_PRIMARY_H */

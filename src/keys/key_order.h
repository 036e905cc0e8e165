/*-------------------------------------------------------------------------
 *
 * key_order.h
 *	  The order of normalized keys: what every engine sorts by, and what the
 *	  merges and the GPU service's key-range split compare.  Plain C (no
 *	  PostgreSQL calls), so that the CPU engine's radix sort and the GPU
 *	  kernel tests can include it.
 *
 * A key is key_words 64-bit words, word 0 most significant (keys.h lays
 * them out).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_KEY_ORDER_H
#define GPUSORT_KEY_ORDER_H

#include <stdint.h>

/*
 * Word by word as unsigned numbers, as memcmp would order their big-endian
 * bytes: -1, 0 or +1.
 */
static inline int
gs_compare_key_words(const uint64_t *a, const uint64_t *b, int key_words)
{
	for (int w = 0; w < key_words; w++)
	{
		if (a[w] != b[w])
			return a[w] < b[w] ? -1 : 1;
	}
	return 0;
}

#endif							/* GPUSORT_KEY_ORDER_H */

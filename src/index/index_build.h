/*-------------------------------------------------------------------------
 *
 * index_build.h
 *	  btree index builds through gpusort (index_build.c): what _PG_init
 *	  calls to route them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_INDEX_BUILD_H
#define GPUSORT_INDEX_BUILD_H

#include "postgres.h"

extern void gpusort_index_build_init(void);

#endif							/* GPUSORT_INDEX_BUILD_H */

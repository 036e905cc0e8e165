/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  What differs between the PostgreSQL major versions gpusort builds
 *	  against (15, 17 and 18), in one place.
 *
 * The rest of the code includes this header where an API is not the same
 * in every version, and calls what it defines: the newer spelling where
 * an older server only lacks it, a small function of gpusort's own where
 * the versions differ in substance.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUSORT_COMPAT_H
#define GPUSORT_COMPAT_H

#include "postgres.h"

#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#if PG_VERSION_NUM < 180000
#include "access/stratnum.h"
#endif

/*
 * A GUC check hook's "extra" is freed by the GUC machinery: with free()
 * up to 15, with guc_free() (a memory context of its own) from 16 on, so
 * it must come from the matching allocator.
 */
#if PG_VERSION_NUM < 160000
#define guc_malloc(elevel, size) malloc(size)
#endif

/*
 * This process's index in ProcGlobal->allProcs: 17 keeps it in
 * MyProcNumber, where PGPROC.pgprocno was before.
 */
#if PG_VERSION_NUM >= 170000
#define gpusort_my_procno()	((int) MyProcNumber)
#else
#define gpusort_my_procno()	(MyProc->pgprocno)
#endif

/*
 * Whether collation orders strings by their bytes (C, POSIX, and from 17
 * on the builtin provider's collations).  18 keeps this in the locale
 * itself, which it returns for every collation, the default one included.
 */
static inline bool
gpusort_collate_is_c(Oid collation)
{
#if PG_VERSION_NUM >= 180000
	return pg_newlocale_from_collation(collation)->collate_is_c;
#else
	return lc_collate_is_c(collation);
#endif
}

/*
 * The operator family and input type of ordering operator opno, and
 * whether it sorts descending (its btree strategy is "greater than");
 * false if opno is no btree ordering operator.  18 names the strategy as
 * a CompareType.
 */
static inline bool
gpusort_ordering_op_properties(Oid opno, Oid *opfamily, Oid *opcintype,
							   bool *descending)
{
#if PG_VERSION_NUM >= 180000
	CompareType cmptype;

	if (!get_ordering_op_properties(opno, opfamily, opcintype, &cmptype))
		return false;
	*descending = (cmptype == COMPARE_GT);
#else
	int16		strategy;

	if (!get_ordering_op_properties(opno, opfamily, opcintype, &strategy))
		return false;
	*descending = (strategy == BTGreaterStrategyNumber);
#endif
	return true;
}

#endif							/* GPUSORT_COMPAT_H */

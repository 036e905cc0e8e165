/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  What differs between the PostgreSQL major versions gpusort builds
 *	  against (15, 17, 18 and 19), in one place.
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
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif
#if PG_VERSION_NUM >= 190000
#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_database.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "utils/syscache.h"
#endif

/*
 * 19's copyObject() uses typeof_unqual where its configure found it, a
 * keyword of C23 that gpusort's -std=gnu11 does not have; GCC (14 on) and
 * clang know it as __typeof_unqual__ in every mode.  An older GCC than
 * the one PostgreSQL was built with (sid's 19 on the GPU host's gcc 13)
 * has neither, and gets typeof: the copy keeps its argument's qualifiers.
 */
#if PG_VERSION_NUM >= 190000 && defined(HAVE_TYPEOF_UNQUAL) && \
	!defined(typeof_unqual) && !defined(__cplusplus) && \
	(!defined(__STDC_VERSION__) || __STDC_VERSION__ < 202311L)
#if defined(__clang__) || !defined(__GNUC__) || __GNUC__ >= 14
#define typeof_unqual __typeof_unqual__
#else
#define typeof_unqual __typeof__
#endif
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
 * 19 finishes a tuple descriptor built by hand (CreateTemplateTupleDesc,
 * TupleDescInitEntry) with TupleDescFinalize, which fills in its cached
 * offsets; before, there was nothing to finish.
 */
#if PG_VERSION_NUM < 190000
#define TupleDescFinalize(tupdesc) ((void) (tupdesc))
#endif

/*
 * Whether the relation's storage is new in this transaction: the relation
 * created in it, or given a new relfilenode in it (REINDEX, TRUNCATE,
 * CLUSTER).  16 renamed the fields' relfilenode relfilelocator.
 */
#if PG_VERSION_NUM >= 160000
#define gpusort_storage_new_in_xact(rel) \
	((rel)->rd_createSubid != InvalidSubTransactionId || \
	 (rel)->rd_firstRelfilelocatorSubid != InvalidSubTransactionId || \
	 (rel)->rd_newRelfilelocatorSubid != InvalidSubTransactionId)
#else
#define gpusort_storage_new_in_xact(rel) \
	((rel)->rd_createSubid != InvalidSubTransactionId || \
	 (rel)->rd_firstRelfilenodeSubid != InvalidSubTransactionId || \
	 (rel)->rd_newRelfilenodeSubid != InvalidSubTransactionId)
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

/*
 * The provider of a collation's locale (COLLPROVIDER_LIBC, _ICU, ...), its
 * libc locale_t and its ICU collator.  19 no longer records the provider
 * in the locale, whose provider-specific fields are an anonymous union:
 * the provider comes from the catalog, the database's for the default
 * collation.
 */
#if PG_VERSION_NUM >= 190000
static inline char
gpusort_locale_provider(pg_locale_t locale, Oid collation)
{
	HeapTuple	tup;
	char		provider;

	if (locale->is_default)
	{
		tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
		provider = ((Form_pg_database) GETSTRUCT(tup))->datlocprovider;
	}
	else
	{
		tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for collation %u", collation);
		provider = ((Form_pg_collation) GETSTRUCT(tup))->collprovider;
	}
	ReleaseSysCache(tup);
	return provider;
}
#define gpusort_locale_libc(locale)	((locale)->lt)
#define gpusort_locale_icu_collator(locale) ((locale)->icu.ucol)
#else
#define gpusort_locale_provider(locale, collation) ((locale)->provider)
#define gpusort_locale_libc(locale)	((locale)->info.lt)
#define gpusort_locale_icu_collator(locale) ((locale)->info.icu.ucol)
#endif

/*
 * Whether a node's instrumentation times it (EXPLAIN ANALYZE with TIMING):
 * 19 keeps the node's counters in a NodeInstrumentation around the
 * general Instrumentation that has need_timer.
 */
#if PG_VERSION_NUM >= 190000
#define gpusort_instr_timed(instrument) \
	((instrument) != NULL && (instrument)->instr.need_timer)
#else
#define gpusort_instr_timed(instrument) \
	((instrument) != NULL && (instrument)->need_timer)
#endif

/*
 * A case that falls through to the next: 19 builds with
 * -Wimplicit-fallthrough=5, which takes no comment for it, only the
 * attribute that 19's pg_fallthrough is.
 */
#ifndef pg_fallthrough
#if defined(__has_attribute)
#if __has_attribute(fallthrough)
#define pg_fallthrough __attribute__((fallthrough))
#endif
#endif
#ifndef pg_fallthrough
#define pg_fallthrough
#endif
#endif

/*
 * pqsignal()'s "ignore the signal": 19's handlers take the signal's
 * information too, so SIG_IGN is no pqsigfunc there; PG_SIG_IGN is cast
 * to one.
 */
#ifndef PG_SIG_IGN
#define PG_SIG_IGN	SIG_IGN
#endif

/* ExecInitScanTupleSlot(): 19 adds the slot's flags (none here) */
#if PG_VERSION_NUM >= 190000
#define gpusort_init_scan_slot(estate, ss, tupdesc, ops) \
	ExecInitScanTupleSlot(estate, ss, tupdesc, ops, 0)
#else
#define gpusort_init_scan_slot(estate, ss, tupdesc, ops) \
	ExecInitScanTupleSlot(estate, ss, tupdesc, ops)
#endif

/*
 * planner_hook's parameters, and the same passed on to the next planner:
 * 19 adds the ExplainState of an EXPLAIN that plans the query (else NULL).
 */
#if PG_VERSION_NUM >= 190000
#define GPUSORT_PLANNER_PARAMS \
	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams, ExplainState *es
#define GPUSORT_PLANNER_ARGS parse, query_string, cursorOptions, boundParams, es
#else
#define GPUSORT_PLANNER_PARAMS \
	Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams
#define GPUSORT_PLANNER_ARGS parse, query_string, cursorOptions, boundParams
#endif

#endif							/* GPUSORT_COMPAT_H */

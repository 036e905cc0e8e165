/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  btree index builds through gpusort: the index's rows ordered by a
 *	  sort of the sort module, then handed in that order to PostgreSQL's
 *	  own btbuild, which writes the index it would have written.
 *
 * No hook sits in index_build(): it calls the ambuild of the index's
 * relcache entry, whose IndexAmRoutine (rd_indam) the entry holds in its
 * own memory (rd_indexcxt) and keeps while the index stays open
 * (RelationReloadIndexInfo).  So gpusort_index_build_init(), from _PG_init,
 * registers a relcache callback that gives a btree index about to be
 * built a copy of that routine whose ambuild is index_build_btree() here.
 * The callback runs right after the entry is rebuilt by the
 * CommandCounterIncrement that comes before each build in the same
 * transaction: index_create's (CREATE INDEX, ALTER TABLE ADD PRIMARY KEY
 * or UNIQUE, a partition's index, pg_restore), for the index that the
 * object access hook saw created just before (OAT_POST_CREATE), and
 * RelationSetNewRelfilenode's in reindex_index (REINDEX, CLUSTER, VACUUM
 * FULL, a rewriting ALTER TABLE; RelationSetNewRelfilenumber from 16 on),
 * for the index that ReindexIsProcessingIndex() names.  Only index_build() calls ambuild.
 * CREATE and REINDEX INDEX CONCURRENTLY build in a later transaction than
 * the one that gave the index its storage, and index_build_btree() leaves
 * such a build to btbuild; so does every build the callback missed: the
 * worst case is PostgreSQL's own build.
 *
 * index_build_btree() decides whether gpusort takes the build
 * (index_build_choose: the settings, the table's size, the keys, and
 * whether PostgreSQL's build would have maintenance workers); if not,
 * it calls btbuild as index_build() would have.  If so, it scans the table
 * with PostgreSQL's own table_index_build_scan, so that HOT chains, a
 * partial index's predicate, expressions and which tuples are alive are
 * decided as btbuild decides them, and puts each row (the index's columns,
 * the heap TID as an int8, whether it is alive) into a sort ordered as
 * nbtree orders its tuples: each key column by its operator class's btree
 * order, then the heap TID.  Then btbuild runs, serially, over a copy of
 * the table's access method routine whose index_build_range_scan replays
 * the sorted rows into btbuild's own callback (replay_range_scan): its
 * tuplesort finds them in order, one comparison a row, and still makes the
 * unique checks and raises their errors, keeps dead tuples apart, and
 * btbuild deduplicates, truncates suffixes, follows fillfactor, stores
 * INCLUDE columns, writes WAL and reports progress as ever, so that the
 * index is PostgreSQL's, page for page.  A wrong order from the sort would
 * cost time, never a wrong index.
 *
 * gpusort's part, the scan into its sort and the sort, runs in an
 * internal subtransaction (scan_and_sort), as a PL/pgSQL block with an
 * EXCEPTION clause runs its statements: if it fails (out of memory, a
 * temporary file, the GPU, an injected fault), the error is logged, the
 * subtransaction rolled back, which releases the scan's pins and
 * snapshots, and the sort's memory and temporary file are freed; then
 * btbuild builds the index as if gpusort had never taken it.  A cancel,
 * a timeout, a deadlock or a shutdown is raised again instead.  The sort
 * itself runs under a resource owner of its own, a child of the build's,
 * so that its temporary file outlives the subtransaction's commit and is
 * closed when the sort ends or fails.  btbuild's pass over the sorted
 * rows is not in the subtransaction: its errors (a unique violation) are
 * the build's own.  In parallel mode, where no subtransaction may start,
 * the build is btbuild's from the start.
 *
 * gpusort_stat counts the builds gpusort sorted, by the engine that
 * ordered them, and those it left to PostgreSQL, by why (a fallback
 * among them); a DEBUG1 line says the same of each build, a LOG line of
 * each fallback.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/nbtree.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/index.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "optimizer/plancat.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"

#include "index/index_build.h"
#include "sort/sort.h"
#include "support/compat.h"
#include "support/faults.h"
#include "support/settings.h"
#include "support/stat.h"

/*
 * The index that index_create() has just created in this transaction,
 * until its build: its entry gets the routine at the CommandCounterIncrement
 * between the two.
 */
static Oid	created_index = InvalidOid;

/* route_index is looking an entry up: a callback within it does nothing */
static bool in_callback = false;
static object_access_hook_type prev_object_access_hook = NULL;

/* a build's sort, its description and what replay_range_scan returns */
typedef struct IndexBuildSort
{
	MemoryContext cxt;			/* the sort and its slots */
	ResourceOwner owner;		/* the sort's temporary file */
	Sorter	   *sorter;
	TupleDesc	tupdesc;		/* the index's columns, TID, alive */
	TupleTableSlot *slot;		/* a row put in */
	TupleTableSlot *sorted;		/* a row read back */
	int			natts;			/* the index's columns */
	int			nkeys;			/* its key columns */
	AttrNumber *attNums;
	Oid		   *sortOperators;
	Oid		   *sortCollations;
	bool	   *nullsFirst;
	double		expected_rows;
	double		reltuples;		/* the table scan's count */
} IndexBuildSort;

/* the sort that replay_range_scan replays, during btbuild only */
static IndexBuildSort *replaying = NULL;

/* the resource owner of scan_and_sort's scan, its subtransaction's */
static ResourceOwner scan_owner = NULL;

/*
 * The TID as an int8 that sorts as ItemPointerCompare orders TIDs: the
 * block above the offset, both unsigned, within 48 bits.
 */
static inline int64
tid_to_int8(ItemPointer tid)
{
	return ((int64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

static inline void
int8_to_tid(int64 value, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (value >> 16),
				   (OffsetNumber) (value & 0xFFFF));
}

/*
 * Where gpusort.index_builds is auto, is the build one whose comparisons
 * cost enough that sorting it twice pays (once by gpusort, once more, in
 * order, by btbuild's tuplesort)?  Text under a collation other than "C"
 * and numeric, in any key column.
 */
static bool
costly_comparisons(Relation index)
{
	TupleDesc	desc = RelationGetDescr(index);

	for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(index); i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			type = getBaseType(att->atttypid);
		char		category;
		bool		preferred;

		get_type_category_preferred(type, &category, &preferred);
		if (type == NUMERICOID)
			return true;
		if (category == TYPCATEGORY_STRING &&
			OidIsValid(index->rd_indcollation[i]) &&
			!gpusort_collate_is_c(index->rd_indcollation[i]))
			return true;
	}
	return false;
}

/*
 * Whether gpusort sorts this build, and how: the sort's description in
 * *bs.  INDEX_BUILD_TAKEN, or why the build is left to btbuild.
 */
static IndexBuildLeft
index_build_choose(Relation heap, Relation index, IndexInfo *indexInfo,
				   IndexBuildSort *bs)
{
	TupleDesc	idesc = RelationGetDescr(index);
	BlockNumber pages;
	double		tuples;
	double		allvisfrac;

	if (!gpusort_enabled)
		return INDEX_LEFT_DISABLED;
	if (gpusort_index_builds == GPUSORT_INDEX_BUILDS_OFF)
		return INDEX_LEFT_SETTING;
	if (!gpusort_storage_new_in_xact(index))
		return INDEX_LEFT_LATER_XACT;
	/* scan_and_sort's subtransaction cannot start in parallel mode */
	if (IsInParallelMode())
		return INDEX_LEFT_PARALLEL_MODE;
	/* REINDEX SYSTEM's: the sort's own catalog lookups stay out of them */
	if (IsCatalogRelation(heap))
		return INDEX_LEFT_CATALOG;

	/* an empty table's estimate is the planner's guess of ten pages */
	if (RelationGetNumberOfBlocks(heap) == 0)
		return INDEX_LEFT_SMALL;
	estimate_rel_size(heap, NULL, &pages, &tuples, &allvisfrac);
	if (tuples < (double) gpusort_min_rows)
		return INDEX_LEFT_SMALL;
	bs->expected_rows = tuples;

	bs->natts = IndexRelationGetNumberOfAttributes(index);
	bs->nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	bs->attNums = palloc(sizeof(AttrNumber) * (bs->nkeys + 1));
	bs->sortOperators = palloc(sizeof(Oid) * (bs->nkeys + 1));
	bs->sortCollations = palloc(sizeof(Oid) * (bs->nkeys + 1));
	bs->nullsFirst = palloc(sizeof(bool) * (bs->nkeys + 1));
	for (int i = 0; i < bs->nkeys; i++)
	{
		int16		option = index->rd_indoption[i];

		/* nbtree's order of the column: its operator class's, as _bt_mkscankey's */
		bs->attNums[i] = i + 1;
		bs->sortOperators[i] =
			get_opfamily_member(index->rd_opfamily[i],
								index->rd_opcintype[i],
								index->rd_opcintype[i],
								(option & INDOPTION_DESC) ?
								BTGreaterStrategyNumber : BTLessStrategyNumber);
		bs->sortCollations[i] = index->rd_indcollation[i];
		bs->nullsFirst[i] = (option & INDOPTION_NULLS_FIRST) != 0;
		if (!OidIsValid(bs->sortOperators[i]))
			return INDEX_LEFT_NO_KEY;
	}
	if (!gpusort_keyless_sorts &&
		!gpusort_sort_column_has_key(TupleDescAttr(idesc, 0)->atttypid,
									 bs->sortOperators[0],
									 bs->sortCollations[0]))
		return INDEX_LEFT_NO_KEY;
	if (gpusort_index_builds == GPUSORT_INDEX_BUILDS_AUTO &&
		!costly_comparisons(index))
		return INDEX_LEFT_CHEAP;

	/*
	 * gpusort's scan and btbuild's pass over the sorted rows are serial:
	 * where PostgreSQL's build would have its maintenance workers, it was
	 * as fast or faster than the CPU engine's (docs/index-builds.md)
	 */
	if (gpusort_index_builds == GPUSORT_INDEX_BUILDS_AUTO &&
		indexInfo->ii_ParallelWorkers > 0)
		return INDEX_LEFT_PARALLEL;

	/* then the heap TID, ascending, as nbtree breaks ties */
	bs->attNums[bs->nkeys] = bs->natts + 1;
	bs->sortOperators[bs->nkeys] = Int8LessOperator;
	bs->sortCollations[bs->nkeys] = InvalidOid;
	bs->nullsFirst[bs->nkeys] = false;
	return INDEX_BUILD_TAKEN;
}

/* The sort's tuples: the index's columns, then the TID and whether alive. */
static TupleDesc
build_tupdesc(Relation index, int natts)
{
	TupleDesc	idesc = RelationGetDescr(index);
	TupleDesc	desc = CreateTemplateTupleDesc(natts + 2);

	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(idesc, i);

		TupleDescInitEntry(desc, i + 1, NULL, att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, i + 1, att->attcollation);
	}
	TupleDescInitEntry(desc, natts + 1, NULL, INT8OID, -1, 0);
	TupleDescInitEntry(desc, natts + 2, NULL, BOOLOID, -1, 0);
	TupleDescFinalize(desc);
	return desc;
}

/* table_index_build_scan's callback: one row into the sort */
static void
put_row(Relation index, ItemPointer tid, Datum *values, bool *isnull,
		bool tupleIsAlive, void *state)
{
	IndexBuildSort *bs = (IndexBuildSort *) state;
	TupleTableSlot *slot = bs->slot;

	ExecClearTuple(slot);
	memcpy(slot->tts_values, values, sizeof(Datum) * bs->natts);
	memcpy(slot->tts_isnull, isnull, sizeof(bool) * bs->natts);
	slot->tts_values[bs->natts] = Int64GetDatum(tid_to_int8(tid));
	slot->tts_isnull[bs->natts] = false;
	slot->tts_values[bs->natts + 1] = BoolGetDatum(tupleIsAlive);
	slot->tts_isnull[bs->natts + 1] = false;
	ExecStoreVirtualTuple(slot);
	/* the sort's file is its owner's, not the subtransaction's */
	CurrentResourceOwner = bs->owner;
	gpusort_sort_puttupleslot(bs->sorter, slot);
	CurrentResourceOwner = scan_owner;
}

/*
 * The table access method's index_build_range_scan, as btbuild calls it
 * through table_index_build_scan while index_build_btree replays: the
 * sorted rows, in order, into btbuild's callback, and the count of the
 * table's tuples that the real scan returned.
 */
static double
replay_range_scan(Relation table_rel, Relation index_rel,
				  struct IndexInfo *index_info, bool allow_sync,
				  bool anyvisible, bool progress,
				  BlockNumber start_blockno, BlockNumber numblocks,
				  IndexBuildCallback callback, void *callback_state,
				  TableScanDesc scan)
{
	IndexBuildSort *bs = replaying;
	TupleTableSlot *slot;

	/* btbuild scans once, serially, from the table's start to its end */
	if (bs == NULL || scan != NULL || start_blockno != 0 ||
		numblocks != InvalidBlockNumber)
		elog(ERROR, "gpusort: unexpected scan of \"%s\" during an index build",
			 RelationGetRelationName(table_rel));
	replaying = NULL;
	gpusort_fault_point(GPUSORT_PHASE_REPLAY);
	slot = bs->sorted;
	while (gpusort_sort_gettupleslot(bs->sorter, true, slot))
	{
		ItemPointerData tid;

		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(slot);
		int8_to_tid(DatumGetInt64(slot->tts_values[bs->natts]), &tid);
		callback(index_rel, &tid, slot->tts_values, slot->tts_isnull,
				 DatumGetBool(slot->tts_values[bs->natts + 1]), callback_state);
	}
	return bs->reltuples;
}

/* The sort's memory and resource owner go: isCommit where it ended well. */
static void
release_sort(IndexBuildSort *bs, bool isCommit)
{
	/* the memory first: its callbacks stop the sort's pool threads */
	MemoryContextDelete(bs->cxt);
	ResourceOwnerRelease(bs->owner, RESOURCE_RELEASE_BEFORE_LOCKS,
						 isCommit, false);
	ResourceOwnerRelease(bs->owner, RESOURCE_RELEASE_LOCKS, isCommit, false);
	ResourceOwnerRelease(bs->owner, RESOURCE_RELEASE_AFTER_LOCKS,
						 isCommit, false);
	ResourceOwnerDelete(bs->owner);
}

/*
 * Whether btbuild may build the index after this error of gpusort's part:
 * not after a cancel, a timeout, a deadlock or a shutdown, which are to
 * end the statement as they would end PostgreSQL's build.
 */
static bool
error_falls_back(ErrorData *edata)
{
	if (edata->elevel >= FATAL)
		return false;
	switch (edata->sqlerrcode)
	{
		case ERRCODE_QUERY_CANCELED:
		case ERRCODE_ADMIN_SHUTDOWN:
		case ERRCODE_CRASH_SHUTDOWN:
		case ERRCODE_LOCK_NOT_AVAILABLE:
		case ERRCODE_T_R_DEADLOCK_DETECTED:
		case ERRCODE_IDLE_IN_TRANSACTION_SESSION_TIMEOUT:
			return false;
		default:
			return true;
	}
}

/*
 * gpusort's part of the build: the table scanned into the sort, and the
 * sort, in an internal subtransaction.  False where it failed, logged,
 * and the build is btbuild's; an error that is not to fall back is raised
 * again, once the subtransaction and the sort are gone.
 */
static bool
scan_and_sort(Relation heap, Relation index, IndexInfo *indexInfo,
			  IndexBuildSort *bs)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *edata = NULL;

	bs->cxt = AllocSetContextCreate(oldcxt, "gpusort index build",
									ALLOCSET_DEFAULT_SIZES);
	bs->owner = ResourceOwnerCreate(oldowner, "gpusort index build");
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(bs->cxt);
	scan_owner = CurrentResourceOwner;
	PG_TRY();
	{
		bs->tupdesc = build_tupdesc(index, bs->natts);
		bs->slot = MakeSingleTupleTableSlot(bs->tupdesc, &TTSOpsVirtual);
		bs->sorted = MakeSingleTupleTableSlot(bs->tupdesc, &TTSOpsMinimalTuple);
		CurrentResourceOwner = bs->owner;
		bs->sorter = gpusort_sort_begin(bs->tupdesc, bs->nkeys + 1, bs->attNums,
										bs->sortOperators, bs->sortCollations,
										bs->nullsFirst, bs->expected_rows,
										GPUSORT_SORT_MAINTENANCE);
		CurrentResourceOwner = scan_owner;

		/* btbuild's phases, as its own scan and sort report them */
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
									 PROGRESS_BTREE_PHASE_INDEXBUILD_TABLESCAN);
		bs->reltuples = table_index_build_scan(heap, index, indexInfo, true,
											   true, put_row, bs, NULL);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
									 PROGRESS_BTREE_PHASE_PERFORMSORT_1);
		CurrentResourceOwner = bs->owner;
		gpusort_sort_performsort(bs->sorter);
		CurrentResourceOwner = scan_owner;

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		scan_owner = NULL;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		scan_owner = NULL;
	}
	PG_END_TRY();
	if (edata == NULL)
		return true;

	release_sort(bs, false);
	if (!error_falls_back(edata))
		ReThrowError(edata);
	stat_count_index_build_left(INDEX_LEFT_FALLBACK);
	ereport(LOG,
			(errmsg("gpusort: index \"%s\" left to PostgreSQL's build: %s",
					RelationGetRelationName(index),
					index_build_left_name(INDEX_LEFT_FALLBACK)),
			 errdetail("%s", edata->message)));
	FreeErrorData(edata);
	return false;
}

/*
 * The build through gpusort: the table scanned into the sort, then btbuild
 * over the sorted rows; btbuild alone where gpusort's part failed.
 */
static IndexBuildResult *
build_sorted(Relation heap, Relation index, IndexInfo *indexInfo,
			 IndexBuildSort *bs)
{
	IndexBuildResult *result;
	const TableAmRoutine *table_am = heap->rd_tableam;
	TableAmRoutine *replay_am;
	int			workers = indexInfo->ii_ParallelWorkers;
	const GpuSortStats *stats;

	if (!scan_and_sort(heap, index, indexInfo, bs))
		return btbuild(heap, index, indexInfo);

	/* said before btbuild, whose unique check may end the build */
	stats = gpusort_sort_get_stats(bs->sorter);
	stat_count_index_build(stats->engine);
	elog(DEBUG1, "gpusort: index \"%s\" built through gpusort: " INT64_FORMAT " rows sorted by %s%s%s",
		 RelationGetRelationName(index), stats->records,
		 sort_engine_name(stats->engine),
		 stats->fallback ? ", fallback: " : "",
		 stats->fallback ? stats->fallback : "");

	replay_am = palloc(sizeof(TableAmRoutine));
	memcpy(replay_am, table_am, sizeof(TableAmRoutine));
	replay_am->index_build_range_scan = replay_range_scan;
	PG_TRY();
	{
		heap->rd_tableam = replay_am;
		indexInfo->ii_ParallelWorkers = 0;
		replaying = bs;
		result = btbuild(heap, index, indexInfo);
	}
	PG_FINALLY();
	{
		heap->rd_tableam = table_am;
		indexInfo->ii_ParallelWorkers = workers;
		replaying = NULL;
	}
	PG_END_TRY();

	gpusort_sort_end(bs->sorter);
	ExecDropSingleTupleTableSlot(bs->slot);
	ExecDropSingleTupleTableSlot(bs->sorted);
	release_sort(bs, true);
	pfree(replay_am);
	return result;
}

/*
 * The ambuild of the btree indexes that the relcache callback reached: a
 * build through gpusort, or btbuild's own.
 */
static IndexBuildResult *
index_build_btree(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildSort bs;
	IndexBuildLeft left;

	if (RelationGetRelid(index) == created_index)
		created_index = InvalidOid;
	memset(&bs, 0, sizeof(bs));
	left = index_build_choose(heap, index, indexInfo, &bs);
	if (left == INDEX_BUILD_TAKEN)
		return build_sorted(heap, index, indexInfo, &bs);

	/*
	 * At DEBUG1 where gpusort could have sorted it; at DEBUG2 where it is
	 * off, or the table empty or small, or a catalog, as for every build
	 * without gpusort, so that a session at DEBUG1 sees nothing new there
	 */
	stat_count_index_build_left(left);
	elog((left == INDEX_LEFT_DISABLED || left == INDEX_LEFT_SETTING ||
		  left == INDEX_LEFT_SMALL || left == INDEX_LEFT_CATALOG) ? DEBUG2 : DEBUG1,
		 "gpusort: index \"%s\" left to PostgreSQL's build: %s",
		 RelationGetRelationName(index), index_build_left_name(left));
	return btbuild(heap, index, indexInfo);
}

/*
 * Give the index relid, if it is a btree index about to be built in this
 * transaction, the routine whose ambuild is index_build_btree.  Its entry
 * has just been rebuilt, and is open: looking it up reads no catalog.
 */
static void
route_index(Datum arg, Oid relid)
{
	Relation	rel;

	if (!OidIsValid(relid))
		relid = created_index;	/* the whole cache was rebuilt */
	if (!OidIsValid(relid) || in_callback || !IsTransactionState())
		return;
	if (relid != created_index && !ReindexIsProcessingIndex(relid))
		return;

	in_callback = true;
	rel = RelationIdGetRelation(relid);
	in_callback = false;
	if (rel == NULL)
		return;
	if (rel->rd_rel->relkind == RELKIND_INDEX &&
		rel->rd_rel->relam == BTREE_AM_OID &&
		rel->rd_indam != NULL && rel->rd_indexcxt != NULL &&
		rel->rd_indam->ambuild == btbuild)
	{
		IndexAmRoutine *routine = MemoryContextAlloc(rel->rd_indexcxt,
													 sizeof(IndexAmRoutine));

		/* a copy: the entry's own routine may be the access method's */
		memcpy(routine, rel->rd_indam, sizeof(IndexAmRoutine));
		routine->ambuild = index_build_btree;
		rel->rd_indam = routine;
	}
	RelationClose(rel);
}

/* index_create's post-create hook: note the index, for route_index */
static void
note_created(ObjectAccessType access, Oid classId, Oid objectId, int subId,
			 void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_POST_CREATE && classId == RelationRelationId &&
		subId == 0)
		created_index = objectId;
}

/* an index noted and never built is forgotten with its transaction */
static void
forget_created(XactEvent event, void *arg)
{
	created_index = InvalidOid;
	replaying = NULL;
}

static void
forget_created_sub(SubXactEvent event, SubTransactionId mySubid,
				   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		created_index = InvalidOid;
		replaying = NULL;
	}
}

/* From _PG_init: route btree index builds through index_build_btree. */
void
gpusort_index_build_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = note_created;
	CacheRegisterRelcacheCallback(route_index, (Datum) 0);
	RegisterXactCallback(forget_created, NULL);
	RegisterSubXactCallback(forget_created_sub, NULL);
}

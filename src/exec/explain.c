/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN output of Custom Scan (GpuSort): gpusort_explain_node, which
 *	  the node's ExplainCustomScan (nodeGpuSort.c) calls with what the
 *	  plan keeps of the Sort (plan_info.h) and the sort's statistics; and of
 *	  a parallel GpuSort's load, Custom Scan (GpuSortLoad):
 *	  gpusort_explain_load (nodeGpuSortLoad.c).
 *
 * Without ANALYZE the node shows its Sort Key exactly as a Sort node would
 * (COLLATE, DESC, USING and NULLS decorations included), so a plan reads
 * the same with and without gpusort apart from the node's name.  With
 * ANALYZE it adds what the sort did: the engine (GPU, CPU) or PostgreSQL's
 * comparators, the GPU's name and the algorithm (one line in TEXT, three
 * properties in the formats that programs read), why the GPU was not used
 * when it was not, the key width, the records and how many of them the
 * comparators ordered, the memory budget and the peak of a
 * batch, whether the server's budget cut a batch short, the runs written to
 * temporary files, merge passes and disk used (as Sort reports its external
 * merge), and the time of each phase.  The load node shows, with
 * ANALYZE, the rows its participants loaded and passed up, and with
 * VERBOSE a line for each participant.  Every item goes through
 * ExplainProperty*, so TEXT, JSON, YAML and XML all work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"	/* ExplainProperty*, moved in 18 */
#endif
#include "nodes/nodeFuncs.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "exec/explain.h"

/*
 * Append " COLLATE x", " DESC", " USING op" and NULLS placement to a sort
 * key's text, as EXPLAIN writes them for Sort: each only where it differs
 * from what the bare expression would mean.
 */
static void
append_sort_options(StringInfo buf, Node *expr, Oid sortop, Oid collation,
					bool nulls_first)
{
	Oid			type = exprType(expr);
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	bool		descending = false;

	if (OidIsValid(collation) && collation != get_typcollation(type))
	{
		char	   *name = get_collation_name(collation);

		if (name == NULL)
			elog(ERROR, "cache lookup failed for collation %u", collation);
		appendStringInfo(buf, " COLLATE %s", quote_identifier(name));
	}
	if (sortop == tc->gt_opr)
	{
		appendStringInfoString(buf, " DESC");
		descending = true;
	}
	else if (sortop != tc->lt_opr)
	{
		appendStringInfo(buf, " USING %s", get_opname(sortop));
		(void) get_equality_op_for_ordering_op(sortop, &descending);
	}
	if (nulls_first && !descending)
		appendStringInfoString(buf, " NULLS FIRST");
	else if (!nulls_first && descending)
		appendStringInfoString(buf, " NULLS LAST");
}

static void
explain_sort_keys(CustomScanState *node, const GpuSortPlanInfo *info,
				  List *ancestors, ExplainState *es)
{
	Plan	   *plan = node->ss.ps.plan;
	List	   *context;
	List	   *keys = NIL;
	bool		useprefix;

	/* qualify columns as Sort does: 18 leaves its RTE_GROUP entry uncounted */
#if PG_VERSION_NUM >= 180000
	useprefix = (es->rtable_size > 1 || es->verbose);
#else
	useprefix = (list_length(es->rtable) > 1 || es->verbose);
#endif

	context = set_deparse_context_plan(es->deparse_cxt, plan, ancestors);
	for (int i = 0; i < info->numCols; i++)
	{
		TargetEntry *tle = get_tle_by_resno(plan->targetlist, info->sortColIdx[i]);
		StringInfoData buf;

		if (tle == NULL)
			elog(ERROR, "no tlist entry for key %d", info->sortColIdx[i]);
		initStringInfo(&buf);
		appendStringInfoString(&buf, deparse_expression((Node *) tle->expr, context,
														useprefix, true));
		append_sort_options(&buf, (Node *) tle->expr, info->sortOperators[i],
							info->collations[i], info->nullsFirst[i]);
		keys = lappend(keys, buf.data);
	}
	ExplainPropertyList("Sort Key", keys, es);
}

static void
explain_ms(const char *label, double ms, ExplainState *es)
{
	ExplainPropertyFloat(label, "ms", ms, 3, es);
}

void
gpusort_explain_node(CustomScanState *node, const GpuSortPlanInfo *info,
					 const GpuSortStats *stats,
					 List *ancestors, ExplainState *es)
{
	explain_sort_keys(node, info, ancestors, es);

	if (!es->analyze || stats == NULL)
		return;

	/*
	 * Text: one line, "GPU: <device>, <algorithm>".  The other formats are
	 * read by programs: the engine's kind, the device and the algorithm are
	 * properties of their own.
	 */
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfoString(&buf, sort_engine_name(stats->engine));
		if (stats->device[0] != '\0')
			appendStringInfo(&buf, ": %s", stats->device);
		if (stats->algorithm[0] != '\0')
			appendStringInfo(&buf, ", %s", stats->algorithm);
		ExplainPropertyText("Sort Engine", buf.data, es);
	}
	else
	{
		ExplainPropertyText("Sort Engine", sort_engine_name(stats->engine), es);
		if (stats->device[0] != '\0')
			ExplainPropertyText("Sort Device", stats->device, es);
		if (stats->algorithm[0] != '\0')
			ExplainPropertyText("Sort Algorithm", stats->algorithm, es);
	}
	if (stats->fallback)
		ExplainPropertyText("Fallback", stats->fallback, es);

	ExplainPropertyInteger("Key Width", "bytes", stats->key_words * 8, es);
	ExplainPropertyText("Key Kind", stats->key_kind ? stats->key_kind : "exact", es);
	ExplainPropertyInteger("Records", NULL, stats->records, es);
	/* how many threads depends on the machine: shown under VERBOSE */
	if (stats->threads > 0 && es->verbose)
		ExplainPropertyInteger("Threads", NULL, stats->threads, es);
	if (stats->refine_rounds > 0)
		ExplainPropertyText("Refined",
							psprintf(INT64_FORMAT " records in %d rounds%s",
									 stats->refined, stats->refine_rounds,
									 stats->refined_on_gpu ? ", on the GPU" : ""),
							es);
	if (stats->collated > 0)
		ExplainPropertyInteger("Collation Sorted", NULL, stats->collated, es);
	ExplainPropertyInteger("Resolved by Comparator", NULL, stats->resolved, es);
	if (stats->checked_pairs > 0)
	{
		ExplainPropertyInteger("Collation Checked Pairs", NULL, stats->checked_pairs, es);
		ExplainPropertyInteger("Collation Repaired", NULL, stats->repaired, es);
	}
	ExplainPropertyInteger("Memory Budget", "kB", (stats->budget + 1023) / 1024, es);
	ExplainPropertyInteger("Memory Used", "kB", (stats->memory + 1023) / 1024, es);
	if (stats->server_limited || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyBool("Server Memory Limited", stats->server_limited, es);
	if (stats->device_memory > 0)
		ExplainPropertyInteger("GPU Memory Used", "kB",
							   (stats->device_memory + 1023) / 1024, es);
	if (stats->runs_written > 0 || es->format != EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyInteger("Runs Written", NULL, stats->runs_written, es);
		if (stats->runs_behind > 0)
			ExplainPropertyInteger("Runs Written Behind", NULL, stats->runs_behind, es);
		ExplainPropertyInteger("Merge Passes", NULL, stats->merge_passes, es);
		if (stats->merge_threads > 1)
			ExplainPropertyInteger("Merge Threads", NULL, stats->merge_threads, es);
		ExplainPropertyInteger("Disk Used", "kB", stats->disk_kb, es);
	}
	if (stats->sorts > 1)
		ExplainPropertyInteger("Sorts", NULL, stats->sorts, es);
	/* whether the threads copied rows ahead depends on the machine too */
	if (stats->emit_copied > 0 && es->verbose)
		ExplainPropertyInteger("Emit Copied", "rows", stats->emit_copied, es);

	if (es->timing)
	{
		explain_ms("Load Time", stats->load_ms, es);
		explain_ms("Encode Time", stats->encode_ms, es);
		explain_ms("Sort Time", stats->sort_ms, es);
		if (stats->device_memory > 0)
		{
			explain_ms("GPU Transfer Time", stats->transfer_ms, es);
			explain_ms("GPU Kernel Time", stats->device_sort_ms, es);
		}
		/*
		 * the pool threads' busy time added up over the threads: CPU time,
		 * which may exceed the query's own, and is named so
		 */
		if (stats->generic_keys)
			explain_ms("Key Build CPU Time", stats->key_build_ms, es);
		if (stats->refine_rounds > 0 || stats->refine_ms > 0)
			explain_ms("Refine Time", stats->refine_ms, es);
		if (stats->checked_pairs > 0)
			explain_ms("Collation Check Time", stats->check_ms, es);
		explain_ms("Resolve Time", stats->resolve_ms, es);
		if (stats->runs_written > 0)
		{
			explain_ms("Spill Time", stats->spill_ms, es);
			explain_ms("Merge Time", stats->merge_ms, es);
		}
		explain_ms("Emit Time", stats->emit_ms, es);
	}
}

/*
 * EXPLAIN ANALYZE of a parallel GpuSort's load node, from what each of its
 * nparts participants did (the leader last): the rows loaded and passed
 * up, and with VERBOSE and TIMING, as PostgreSQL shows its nodes'
 * per-worker figures, a line for each participant that finished.
 */
void
gpusort_explain_load(const LoadFigures *parts, int nparts, ExplainState *es)
{
	int64		loaded = 0;
	int64		passed = 0;

	for (int i = 0; i < nparts; i++)
	{
		loaded += parts[i].loaded;
		passed += parts[i].passed;
	}
	ExplainPropertyInteger("Rows Loaded", NULL, loaded, es);
	ExplainPropertyInteger("Rows Passed Up", NULL, passed, es);
	if (!es->timing || !es->verbose)
		return;
	for (int i = 0; i < nparts; i++)
	{
		char		label[32];
		char		line[160];

		if (!parts[i].done)
			continue;
		if (i == nparts - 1)
		{
			snprintf(label, sizeof(label), "Leader Load");
			snprintf(line, sizeof(line),
					 INT64_FORMAT " rows scanned, " INT64_FORMAT " moved from workers, %.3f ms",
					 parts[i].loaded, parts[i].moved, parts[i].load_ms);
		}
		else
		{
			snprintf(label, sizeof(label), "Worker %d Load", i);
			snprintf(line, sizeof(line),
					 INT64_FORMAT " rows into " UINT64_FORMAT " kB of blocks, " INT64_FORMAT " passed up, %.3f ms",
					 parts[i].loaded, parts[i].bytes / 1024, parts[i].passed,
					 parts[i].load_ms);
		}
		ExplainPropertyText(label, line, es);
	}
}

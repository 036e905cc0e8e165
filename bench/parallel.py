#!/usr/bin/env python3
"""Parallel GpuSort against PostgreSQL's serial and parallel Sort.

  bench/parallel.py --rows 10000000,100000000 --out DIR [--runs 2]

For each row count, on table t_N(k int8, pad text, f float8) (bench/scale.py's
shape t, made the same way), and each query

  SELECT * FROM t_N ORDER BY k OFFSET N
  SELECT * FROM t_N ORDER BY f, k OFFSET N
  SELECT * FROM t_N ORDER BY pad COLLATE "C" OFFSET N

it runs, interleaved, in the same run on the same table:

  native       PostgreSQL's Sort, no workers
  native-par   PostgreSQL's parallel sort (Gather Merge over Sort), forced
               (parallel costs 0) with the table's parallel_workers = W
  gpusort      serial GpuSort (no workers)
  gpusort-par  parallel GpuSort as the planner makes it with PostgreSQL's
               default parallel costs and the table's parallel_workers = W

each in a fresh connection, then --runs more times in that connection
(warm), then EXPLAIN ANALYZE for the GpuSort settings.  Also the load the
parallel GpuSort is measured against: SELECT count(*) with W workers.
Medians and ratios go to parallel.md, everything to parallel.json.
--big-queries limits the queries at row counts of 50M and more (default:
ORDER BY k only), where native serial sorts take minutes.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (bench/scale.py: tables, psql, sessions)

QUERIES = {
    "k": "ORDER BY k",
    "fk": "ORDER BY f, k",
    "padC": 'ORDER BY pad COLLATE "C"',
}


def settings(workers, budget):
    base = {"work_mem": "8GB", "jit": "off", "gpusort.max_memory": budget}
    forced = {"parallel_setup_cost": "0", "parallel_tuple_cost": "0",
              "min_parallel_table_scan_size": "0"}
    return {
        "native": dict(base, **{"gpusort.enabled": "off", "max_parallel_workers_per_gather": "0"}),
        "native-par": dict(base, **forced, **{"gpusort.enabled": "off",
                                              "max_parallel_workers_per_gather": str(workers)}),
        "gpusort": dict(base, **{"gpusort.engine": "gpu", "max_parallel_workers_per_gather": "0"}),
        "gpusort-par": dict(base, **{"gpusort.engine": "gpu",
                                     "max_parallel_workers_per_gather": str(workers)}),
    }


def find(plan, pred):
    stack = [plan]
    while stack:
        node = stack.pop()
        if pred(node):
            return node
        stack.extend(node.get("Plans", []))
    return None


def phases(doc):
    """The figures of a GpuSort plan that say where the time went."""
    plan = doc["Plan"]
    gs = find(plan, lambda n: n.get("Custom Plan Provider") == "GpuSort")
    load = find(plan, lambda n: n.get("Custom Plan Provider") == "GpuSortLoad")
    gather = find(plan, lambda n: n.get("Node Type") == "Gather")
    out = {"execution_ms": doc.get("Execution Time")}
    if gs:
        for key in ("Sort Engine", "Sort Device", "Sort Algorithm", "Fallback", "Records",
                    "Load Time", "Encode Time", "Sort Time", "Resolve Time", "Emit Time",
                    "Memory Used", "Runs Written"):
            if key in gs:
                out[key] = gs[key]
    if gather:
        out["Gather ms"] = gather.get("Actual Total Time")
        out["Workers Launched"] = gather.get("Workers Launched")
    if load:
        for key in load:
            if key.startswith(("Rows Loaded", "Rows Passed Up", "Shared Memory", "Worker ",
                               "Leader Load")):
                out[key] = load[key]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="10000000")
    ap.add_argument("--runs", type=int, default=2, help="warm runs after the fresh one")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--budget", default="32GB", help="gpusort.max_memory")
    ap.add_argument("--big-queries", default="k")
    ap.add_argument("--settings", default="native,native-par,gpusort,gpusort-par")
    ap.add_argument("--out", default="bench/out/parallel")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {"facts": scale.server_facts(), "runs": []}

    def save():
        with open(os.path.join(args.out, "parallel.json"), "w") as f:
            json.dump(results, f, indent=1)

    sets = settings(args.workers, args.budget)
    chosen = [s for s in args.settings.split(",") if s]
    for n in [int(x) for x in args.rows.split(",") if x]:
        name, facts = scale.make_table("t", n, 16, None)
        scale.psql("ALTER TABLE %s SET (parallel_workers = %d)" % (name, args.workers))
        count_q = "SELECT count(*) FROM %s" % name
        out = scale.psql("\\timing on\n" + (count_q + ";\n") * 3,
                         {"max_parallel_workers_per_gather": str(args.workers), "jit": "off"})
        counts = scale.timings(out)
        results["runs"].append({"rows": n, "query": "count", "setting": "parallel count(*)",
                                "ms": counts})
        scale.log("  %s parallel count(*): %s ms" % (name, " ".join("%.0f" % t for t in counts)))
        queries = QUERIES if n < 50000000 else {q: QUERIES[q] for q in args.big_queries.split(",")}
        for qname, order in queries.items():
            sql = "SELECT * FROM %s %s OFFSET %d" % (name, order, n)
            for s in chosen:
                runs = args.runs if n < 50000000 or s.startswith("gpusort") else 0
                explain = s.startswith("gpusort")
                fresh, warm, _, _ = scale.session(sql, sets[s], runs, False)
                entry = {"rows": n, "query": qname, "sql": sql, "setting": s, "gucs": sets[s],
                         "fresh_ms": fresh, "warm_ms": warm}
                if explain:
                    text = scale.psql("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) %s;" % sql, sets[s])
                    entry["explain"] = phases(json.loads(text[text.index("["):])[0])
                results["runs"].append(entry)
                save()
                scale.log("  %s %-5s %-12s fresh %7.3f s  warm %s" % (
                    name, qname, s, fresh / 1000, " ".join("%.3f" % (w / 1000) for w in warm)))
                if explain:
                    scale.log("      " + json.dumps(entry["explain"]))
    write_md(results, args.out)


def write_md(results, out):
    lines = ["| rows | query | setting | fresh s | warm s (median) | vs native | vs native-par |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    by = {}
    for r in results["runs"]:
        if r["query"] == "count":
            continue
        by[(r["rows"], r["query"], r["setting"])] = r

    def best(r):
        w = r["warm_ms"]
        return scale.median(w) if w else r["fresh_ms"]

    for (n, q, s), r in sorted(by.items(), key=lambda kv: kv[0]):
        nat = by.get((n, q, "native"))
        par = by.get((n, q, "native-par"))
        w = best(r)
        lines.append("| %s | %s | %s | %.3f | %s | %s | %s |" % (
            scale.human(n), q, s, r["fresh_ms"] / 1000,
            "%.3f" % (scale.median(r["warm_ms"]) / 1000) if r["warm_ms"] else "-",
            "%.2fx" % (best(nat) / w) if nat else "-",
            "%.2fx" % (best(par) / w) if par else "-"))
    for r in results["runs"]:
        if r["query"] == "count":
            lines.append("\n%s rows, parallel count(*): %s ms" % (
                scale.human(r["rows"]), ", ".join("%.0f" % t for t in r["ms"])))
    with open(os.path.join(out, "parallel.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

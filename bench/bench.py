#!/usr/bin/env python3
"""bench/bench.py: gpusort against PostgreSQL's own Sort, same run, same data.

Connects with psql (PGHOST/PGPORT/PGUSER from the environment; bench/run.sh
starts a throwaway server and calls this), builds the tables, and times each
query under each setting:

  native       gpusort.enabled = off (PostgreSQL's Sort, serial)
  native-par8  gpusort.enabled = off, a forced 8-worker parallel plan
  cpu          GpuSort on the CPU engine
  gpu          GpuSort on the GPU engine (gpusort.engine = gpu)
  gpu-bucket   the GPU engine with gpusort.gpu_algorithm = bucket forced
  gpu-radix    the GPU engine with gpusort.gpu_algorithm = radix forced
               (these two only where asked for in --settings, and on the
               queries that run on gpu: they check auto's choice)

Each (query, setting) runs in one session: one warm-up (which also pays the
per-backend CUDA start-up, as a pooled connection would once), then --runs
timed runs (psql's \\timing, wall time of the statement on the server side of
the socket; the queries return no rows).  One EXPLAIN ANALYZE per pair
records which engine really sorted.  Writes results.json, results.md (the
medians and the ratios to native) and, if matplotlib is there, chart.png.

Query groups (--groups): "main" (the query mix on t_N), "dist" (ORDER BY k
over each --distributions table) and "text": ORDER BY a 32-character text
column in the database's collation (en_US.UTF-8 on bench/run.sh's server
where that locale is installed), in "C" and in ICU's "und-x-icu", and ORDER
BY a numeric(12,2) column, on tx_N(id int8, pad text, num numeric).  The
default is "main,dist"; --queries text
(or --groups text) runs the text group alone.  The text sorts in the
database's collation and in ICU are slow with PostgreSQL's Sort (about 50 s
at 10M rows in en_US), so they run --slow-runs times (default 1), their
warm-up is ORDER BY id (which reads the table and starts CUDA), and the
EXPLAIN ANALYZE run is left out for native.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

SETTINGS = {
    "native": "SET gpusort.enabled = off;",
    "native-par8": ("SET gpusort.enabled = off; SET max_parallel_workers_per_gather = 8; "
                    "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                    "SET min_parallel_table_scan_size = 0;"),
    "cpu": "SET gpusort.enabled = on; SET gpusort.engine = cpu; SET gpusort.min_rows = 0;",
    "gpu": "SET gpusort.enabled = on; SET gpusort.engine = gpu; SET gpusort.min_rows = 0;",
}
# the GPU engine with one algorithm forced, to check gpu_algorithm = auto's
# choice; where a query runs on "gpu", it also runs on these when asked for
GPU_VARIANTS = ["gpu-bucket", "gpu-radix"]
for _variant in GPU_VARIANTS:
    SETTINGS[_variant] = SETTINGS["gpu"] + " SET gpusort.gpu_algorithm = %s;" % _variant[4:]

# k: the sort key of each distribution (g = 1..n)
DISTRIBUTIONS = {
    "uniform": "(hashint8(g) & 4611686018427387903)::int8",
    "gaussian": "(1e12 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::int8",
    "zipf": "least(floor(power(1 - random(), -1.5)), 1e15)::int8",
    "sorted": "g::int8",
    "reversed": "(%(n)d - g)::int8",
    "few-distinct": "(hashint8(g) & 15)::int8",
    "all-equal": "42::int8",
}


def psql(sql, capture=True):
    proc = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"],
                          input=sql, text=True, capture_output=True)
    if proc.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (proc.stderr, sql[:500]))
    return proc.stdout


def make_tables(n, distributions, need_main=True, need_text=False):
    """t_N(k, pad, f) for the query mix; d_<dist>_N(k, pad) per distribution;
    tx_N(id, pad, num) for the text group."""
    name = "t_%d" % n
    exists = (not need_main or
              psql("SELECT to_regclass('%s') IS NOT NULL" % name).strip() == "t")
    if not exists:
        print("  creating %s" % name, flush=True)
        psql("""SELECT setseed(0.42);
CREATE TABLE %(t)s AS
  SELECT (hashint8(g) & 4611686018427387903)::int8 AS k,
         substr(md5(g::text), 1, 32) AS pad,
         ((hashint8(g + 7) & 1048575) / 1024)::float8 AS f
    FROM generate_series(1, %(n)d) g;
ALTER TABLE %(t)s SET (parallel_workers = 8);
VACUUM ANALYZE %(t)s;""" % {"t": name, "n": n})
    for dist in distributions:
        dname = "d_%s_%d" % (dist.replace("-", "_"), n)
        if psql("SELECT to_regclass('%s') IS NOT NULL" % dname).strip() == "t":
            continue
        print("  creating %s" % dname, flush=True)
        psql("""SELECT setseed(0.42);
CREATE TABLE %(t)s AS
  SELECT %(k)s AS k, substr(md5(g::text), 1, 32) AS pad
    FROM generate_series(1, %(n)d) g;
VACUUM ANALYZE %(t)s;""" % {"t": dname, "n": n, "k": DISTRIBUTIONS[dist] % {"n": n}})
    xname = "tx_%d" % n
    if need_text and psql("SELECT to_regclass('%s') IS NOT NULL" % xname).strip() != "t":
        print("  creating %s" % xname, flush=True)
        psql("""SELECT setseed(0.42);
CREATE TABLE %(t)s AS
  SELECT g::int8 AS id, md5(random()::text) AS pad,
         (random() * 1e6)::numeric(12,2) AS num
    FROM generate_series(1, %(n)d) g;
VACUUM ANALYZE %(t)s;""" % {"t": xname, "n": n})


def text_queries(n, collation):
    """The text group: (label, sql, settings, warm-up sql or None)."""
    t = "tx_%d" % n
    warm = "SELECT * FROM %s ORDER BY id OFFSET %d" % (t, n)
    return [
        ("text: order by pad (%s)" % collation, "SELECT * FROM %s ORDER BY pad OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"], warm),
        ("text: order by pad C", "SELECT * FROM %s ORDER BY pad COLLATE \"C\" OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"], None),
        ("text: order by pad und-x-icu",
         "SELECT * FROM %s ORDER BY pad COLLATE \"und-x-icu\" OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"], warm),
        ("text: order by num", "SELECT * FROM %s ORDER BY num OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"], None),
    ]


def queries(n, distributions):
    t = "t_%d" % n
    qs = [
        ("scan", "SELECT * FROM %s OFFSET %d" % (t, n), ["native"]),
        ("order by k", "SELECT * FROM %s ORDER BY k OFFSET %d" % (t, n),
         ["native", "native-par8", "cpu", "gpu"]),
        ("order by f, k", "SELECT * FROM %s ORDER BY f, k OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"]),
        ("merge join", "SELECT a.k, b.f FROM %s a JOIN %s b USING (k) OFFSET %d" % (t, t, n),
         ["native", "cpu", "gpu"]),
        ("window", "SELECT k, row_number() OVER (ORDER BY k) FROM %s OFFSET %d" % (t, n),
         ["native", "cpu", "gpu"]),
        ("limit 100", "SELECT * FROM %s ORDER BY k LIMIT 100" % t,
         ["native", "cpu", "gpu"]),
    ]
    for dist in distributions:
        d = "d_%s_%d" % (dist.replace("-", "_"), n)
        qs.append(("order by k [%s]" % dist, "SELECT * FROM %s ORDER BY k OFFSET %d" % (d, n),
                   ["native", "cpu", "gpu"]))
    return qs


JOIN_SETTINGS = "SET enable_hashjoin = off; SET enable_nestloop = off;"


def run_one(query, setting, runs, warmup=None, explain=True):
    """Median wall time of `runs` runs in one session, and the GpuSort details.
    The warm-up is the query itself unless `warmup` is given; `explain`
    False leaves out the EXPLAIN ANALYZE run (and the details)."""
    extra = JOIN_SETTINGS if "JOIN" in query else ""
    script = [SETTINGS[setting], extra, "SET work_mem = '8GB';", (warmup or query) + ";", "\\timing on"]
    script += [query + ";"] * runs
    script += ["\\timing off"]
    if explain:
        script += ["EXPLAIN (ANALYZE, FORMAT JSON) " + query + ";"]
    out = psql("\n".join(script) + "\n")
    times = [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    plan_json = out[out.index("["):] if "[" in out else "[]"
    details = find_gpusort(json.loads(plan_json)[0]["Plan"]) if plan_json != "[]" else None
    return statistics.median(times), times, details


def find_gpusort(node):
    if node.get("Custom Plan Provider") == "GpuSort":
        keep = ("Sort Engine", "Sort Device", "Sort Algorithm", "Fallback", "Key Width",
                "Records", "Resolved by Comparator",
                "Load Time", "Encode Time", "Sort Time", "GPU Transfer Time",
                "GPU Kernel Time", "Resolve Time", "Emit Time", "GPU Memory Used")
        return {k: node[k] for k in keep if k in node}
    for child in node.get("Plans", []):
        found = find_gpusort(child)
        if found:
            return found
    return None


def engine_text(details):
    """The engine as EXPLAIN's text format writes it: "GPU: <device>, <algorithm>"."""
    if not details or "Sort Engine" not in details:
        return ""
    text = details["Sort Engine"]
    if details.get("Sort Device"):
        text += ": " + details["Sort Device"]
    if details.get("Sort Algorithm"):
        text += ", " + details["Sort Algorithm"]
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000000,10000000",
                    help="table sizes, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--settings", default="native,native-par8,cpu,gpu")
    ap.add_argument("--distributions", default=",".join(DISTRIBUTIONS),
                    help="distributions for the ORDER BY k runs ('' for none)")
    ap.add_argument("--distribution-rows", type=int, default=None,
                    help="run the distributions only at this size (default: the largest)")
    ap.add_argument("--queries", default="",
                    help="run only queries whose label contains one of these "
                         "comma-separated strings (e.g. '[' for the distributions, "
                         "'text' for the text group)")
    ap.add_argument("--groups", default="main,dist",
                    help="query groups: main, dist, text (default main,dist; "
                         "--queries naming 'text' adds the text group)")
    ap.add_argument("--slow-runs", type=int, default=1,
                    help="timed runs of the slow text sorts (database collation, ICU)")
    ap.add_argument("--out", default="bench/out")
    args = ap.parse_args()

    sizes = [int(x) for x in args.rows.split(",") if x]
    settings = [s for s in args.settings.split(",") if s]
    dists = [d for d in args.distributions.split(",") if d]
    dist_rows = args.distribution_rows or max(sizes)
    os.makedirs(args.out, exist_ok=True)

    groups = [g for g in args.groups.split(",") if g]
    only = [q for q in args.queries.split(",") if q]
    want_text = "text" in groups or any("text" in q for q in only)
    collation = "-"
    if want_text:
        collation = psql("SHOW lc_collate").strip()
        if not re.match(r"en_US\.utf-?8$", collation, re.I):
            print("warning: the database's collation is %s, not en_US.UTF-8 "
                  "(install the locale: test/install-deps.sh)" % collation, flush=True)
        if psql("SELECT to_regcollation('\"und-x-icu\"') IS NOT NULL").strip() != "t":
            sys.exit("the server has no ICU collation und-x-icu (PostgreSQL built without ICU?)")

    results = []
    for n in sizes:
        print("== %d rows" % n, flush=True)
        n_dists = dists if n == dist_rows and "dist" in groups else []
        # the main mix (always, also with --queries), the distributions
        # (their tables only at --distribution-rows), the text group
        main = queries(n, [])
        todo = [(q, None, False) for q in main if "main" in groups or only]
        todo += [(q, None, False) for q in queries(n, n_dists)[len(main):]]
        if want_text:
            todo += [((label, sql, wanted), warm, warm is not None)
                     for label, sql, wanted, warm in text_queries(n, collation)]
        todo = [t for t in todo if not only or any(q in t[0][0] for q in only)]
        need_main = any(" t_%d " % n in t[0][1] + " " for t in todo)
        used_dists = [d for d in n_dists
                      if any(" d_%s_%d " % (d.replace("-", "_"), n) in t[0][1] + " " for t in todo)]
        make_tables(n, used_dists, need_main=need_main,
                    need_text=any(" tx_%d " % n in t[0][1] + " " for t in todo))
        for (label, sql, wanted), warm, slow in todo:
            if "gpu" in wanted:
                wanted = wanted + GPU_VARIANTS
            for setting in wanted:
                if setting not in settings:
                    continue
                start = time.time()
                med, times, details = run_one(sql, setting, args.slow_runs if slow else args.runs,
                                              warmup=warm, explain=not (slow and setting.startswith("native")))
                results.append({"rows": n, "query": label, "sql": sql, "setting": setting,
                                "median_ms": med, "times_ms": times, "gpusort": details})
                engine = engine_text(details) or "-"
                print("  %-24s %-12s %10.1f ms  (%s)  [%.0fs]" %
                      (label, setting, med, engine, time.time() - start), flush=True)

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_markdown(results, settings, os.path.join(args.out, "results.md"))
    draw_chart(results, os.path.join(args.out, "chart.png"))


def table_rows(results):
    keyed = {}
    for r in results:
        keyed.setdefault((r["rows"], r["query"]), {})[r["setting"]] = r
    return keyed


def write_markdown(results, settings, path):
    keyed = table_rows(results)
    cols = [s for s in ["native", "native-par8", "cpu", "gpu"] + GPU_VARIANTS if s in settings]
    lines = ["| rows | query | " + " | ".join("%s ms" % c for c in cols) +
             " | native / cpu | native / gpu | native-par8 / gpu | GpuSort engine (gpu run) |",
             "|---:|---|" + "---:|" * len(cols) + "---:|---:|---:|---|"]
    for (n, q), by in keyed.items():
        def ms(s):
            return "%.1f" % by[s]["median_ms"] if s in by else ""

        def ratio(a, b):
            if a in by and b in by and by[b]["median_ms"] > 0:
                return "%.2fx" % (by[a]["median_ms"] / by[b]["median_ms"])
            return ""
        engine = engine_text((by.get("gpu") or {}).get("gpusort"))
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" %
                     (n, q, " | ".join(ms(c) for c in cols), ratio("native", "cpu"),
                      ratio("native", "gpu"), ratio("native-par8", "gpu"), engine))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def draw_chart(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no chart")
        return
    keyed = table_rows(results)
    labels, native, cpu, gpu = [], [], [], []
    for (n, q), by in keyed.items():
        if "native" not in by or ("cpu" not in by and "gpu" not in by):
            continue
        labels.append("%s\n%dM" % (q, n // 1000000) if n >= 1000000 else "%s\n%d" % (q, n))
        native.append(by["native"]["median_ms"])
        cpu.append(by["cpu"]["median_ms"] if "cpu" in by else 0)
        gpu.append(by["gpu"]["median_ms"] if "gpu" in by else 0)
    if not labels:
        return
    fig, ax = plt.subplots(figsize=(max(8, len(labels) * 1.1), 5))
    x = range(len(labels))
    w = 0.27
    ax.bar([i - w for i in x], native, w, label="PostgreSQL Sort")
    ax.bar(list(x), cpu, w, label="GpuSort, CPU engine")
    ax.bar([i + w for i in x], gpu, w, label="GpuSort, GPU engine")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("median time, ms (log)")
    ax.set_yscale("log")
    ax.set_title("gpusort vs PostgreSQL 15 Sort (same run, same data)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("chart: %s" % path)


if __name__ == "__main__":
    main()

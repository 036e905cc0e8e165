#!/usr/bin/env python3
"""bench/bench.py: gpusort against PostgreSQL's own Sort, same run, same data.

Connects with psql (PGHOST/PGPORT/PGUSER from the environment; bench/run.sh
starts a throwaway server and calls this), builds the tables, and times each
query under each setting:

  native       gpusort.enabled = off (PostgreSQL's Sort, serial)
  native-par8  gpusort.enabled = off, a forced 8-worker parallel plan
  cpu          GpuSort on the CPU engine
  gpu          GpuSort on the GPU engine (gpusort.engine = gpu)

Each (query, setting) runs in one session: one warm-up (which also pays the
per-backend CUDA start-up, as a pooled connection would once), then --runs
timed runs (psql's \\timing, wall time of the statement on the server side of
the socket; the queries return no rows).  One EXPLAIN ANALYZE per pair
records which engine really sorted.  Writes results.json, results.md (the
medians and the ratios to native) and, if matplotlib is there, chart.png.
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


def make_tables(n, distributions, need_main=True):
    """t_N(k, pad, f) for the query mix; d_<dist>_N(k, pad) per distribution."""
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


def run_one(query, setting, runs):
    """Median wall time of `runs` runs in one session, and the GpuSort details."""
    extra = JOIN_SETTINGS if "JOIN" in query else ""
    script = [SETTINGS[setting], extra, "SET work_mem = '8GB';", query + ";", "\\timing on"]
    script += [query + ";"] * runs
    script += ["\\timing off", "EXPLAIN (ANALYZE, FORMAT JSON) " + query + ";"]
    out = psql("\n".join(script) + "\n")
    times = [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    plan_json = out[out.index("["):] if "[" in out else "[]"
    details = find_gpusort(json.loads(plan_json)[0]["Plan"]) if plan_json != "[]" else None
    return statistics.median(times), times, details


def find_gpusort(node):
    if node.get("Custom Plan Provider") == "GpuSort":
        keep = ("Sort Engine", "Fallback", "Key Width", "Records", "Resolved by Comparator",
                "Load Time", "Encode Time", "Sort Time", "GPU Transfer Time",
                "GPU Kernel Time", "Resolve Time", "Emit Time", "GPU Memory Used")
        return {k: node[k] for k in keep if k in node}
    for child in node.get("Plans", []):
        found = find_gpusort(child)
        if found:
            return found
    return None


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
                         "comma-separated strings (e.g. '[' for the distributions)")
    ap.add_argument("--out", default="bench/out")
    args = ap.parse_args()

    sizes = [int(x) for x in args.rows.split(",") if x]
    settings = [s for s in args.settings.split(",") if s]
    dists = [d for d in args.distributions.split(",") if d]
    dist_rows = args.distribution_rows or max(sizes)
    os.makedirs(args.out, exist_ok=True)

    results = []
    for n in sizes:
        print("== %d rows" % n, flush=True)
        make_tables(n, dists if n == dist_rows else [], need_main=not args.queries.startswith("["))
        only = [q for q in args.queries.split(",") if q]
        for label, sql, wanted in queries(n, dists if n == dist_rows else []):
            if only and not any(q in label for q in only):
                continue
            for setting in wanted:
                if setting not in settings:
                    continue
                start = time.time()
                med, times, details = run_one(sql, setting, args.runs)
                results.append({"rows": n, "query": label, "sql": sql, "setting": setting,
                                "median_ms": med, "times_ms": times, "gpusort": details})
                engine = (details or {}).get("Sort Engine", "-")
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
    cols = [s for s in ("native", "native-par8", "cpu", "gpu") if s in settings]
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
        engine = ((by.get("gpu") or {}).get("gpusort") or {}).get("Sort Engine", "")
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

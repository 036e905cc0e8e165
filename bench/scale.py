#!/usr/bin/env python3
"""bench/scale.py: gpusort against PostgreSQL's Sort at every size.

The scaling run of sorts that outgrow memory: for each row count in
--rows and each table shape in --tables,

  s   s_N(k int8, f float8)    k and f pseudo-random (hashes of the row number)
  p   p_N(k int8, pad text)    pad = md5(row number), 32 characters
  t   t_N(k int8, pad text, f float8)   both of the above

it builds the table (UNLOGGED, loaded by --load-jobs parallel INSERTs,
VACUUM ANALYZE, one scan to warm the caches), times

  SELECT * FROM <t> ORDER BY k OFFSET N        (returns no rows)

(or, with --orders, each of several ORDER BY lists in turn: 'k;f, k;pad
COLLATE "C"' on the t shape; an entry that starts with SELECT, WITH or COPY
is a whole statement instead, {t} standing for the table and {n} for its
rows, for a sort under other work:

  SELECT k, row_number() OVER (PARTITION BY k % 1000 ORDER BY f) FROM {t} OFFSET {n}
  SELECT DISTINCT ON (pad) pad, k FROM {t} ORDER BY pad, k OFFSET {n}
  COPY (SELECT * FROM {t} ORDER BY f, k) TO '/dev/null' (FORMAT csv)
  SELECT k % 1000, string_agg(pad, ',' ORDER BY k) FROM {t} GROUP BY 1 OFFSET {n}

which DuckDB runs too) under each of --settings, then drops the table, so
that only one table of the largest size is ever on disk (the GPU host has
64 GB):

  native   gpusort.enabled = off: PostgreSQL's Sort, serial
  native-par8  the same with max_parallel_workers_per_gather = 8
  gpu      gpusort.engine = gpu, every other gpusort setting at its default
  gpu-par8 the same with max_parallel_workers_per_gather = 8
  cpu      gpusort.engine = cpu, likewise
  duckdb   DuckDB, in this process, on a copy of the table it makes from
           the same expressions and checks against PostgreSQL's
           (bench/duckdb_peer.py: it needs libduckdb.so, which that file's
           head says how to fetch)

and, unless --no-scan, the floor, timed like a setting and recorded as
the setting "scan" (scale.md gives each setting's time over it):

  scan     SELECT * FROM <t> OFFSET N: the same statement without ORDER BY,
           one backend reading every row (no parallel workers)

All of them run with work_mem = 8GB, max_parallel_workers_per_gather = 0
and jit off; gpusort's own budget (gpusort.max_memory) is left at the
default, which is what is measured: never below work_mem for each
process that sorts, as PostgreSQL's Sort would have.
The settings go in as PGOPTIONS, so the first statement a connection runs
is the sort itself.  Each setting is timed two ways, with psql's \\timing
(the statement as the client sees it, result included, which is empty):

  fresh   the first statement of a new connection: the backend's start-up
          costs (CUDA context, caches) included, as for a short-lived client
  warm    the same statement again in a connection that has run it before

Per setting (the scan first), one connection runs the statement 1 + --runs
times (its first run is a fresh sample, the others warm ones) and, for the
gpusort settings (--explain-settings), one EXPLAIN (ANALYZE, FORMAT JSON),
whose GpuSort node is stored whole: engine, fallback, runs written, merge passes, disk used and
whatever else the node reports.  Then --fresh-runs - 1 more connections per
setting each run it once, taking the settings in turn, so that native and
gpusort share the same table and the same state of the machine.

Outputs, under --out (default bench/out/scale), rewritten after each
connection, so that a run killed part way still leaves what it measured:
  scale.json       every sample, the EXPLAIN nodes, the server and host
  scale.md         rows, table, setting, medians, native / setting,
                   setting / scan; where native-par8 or duckdb ran, a
                   second table of each gpusort setting against them
  scale-chart.png  native / setting (warm: solid, fresh: dashed) against rows
  scale-per-row.png  nanoseconds per row (warm median / rows) against rows,
                   one line per table and setting, the scan dashed: a sort
                   that scales linearly is a flat line

A full run (10M to 300M rows, two shapes, three settings) takes longer than
one call of the GPU host may (10 minutes), so it can be split over calls
(e.g. one row count per call) and put together afterwards, without
measuring, by  scale.py --combine a/scale.json b/scale.json --out DIR
(files from before the scan was measured just leave its ratios empty).

bench/scale.sh builds gpusort, starts the server and calls this.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_png  # noqa: E402  (bench/chart_png.py, beside this file)
import duckdb_peer  # noqa: E402  (bench/duckdb_peer.py)
from shapes import SHAPES, SHAPE_BYTES  # noqa: E402  (bench/shapes.py)

# every setting runs with these
COMMON = {"work_mem": "8GB", "max_parallel_workers_per_gather": "0", "jit": "off"}
SETTINGS = {
    "native": {"gpusort.enabled": "off"},
    "native-par8": {"gpusort.enabled": "off", "max_parallel_workers_per_gather": "8"},
    "gpu": {"gpusort.engine": "gpu"},
    "gpu-par8": {"gpusort.engine": "gpu", "max_parallel_workers_per_gather": "8"},
    "cpu": {"gpusort.engine": "cpu"},
    # not PostgreSQL: DuckDB on the same rows (bench/duckdb_peer.py)
    "duckdb": None,
}
# the order of the settings in scale.md and the charts
SETTING_ORDER = {"scan": 0, "native": 1, "native-par8": 2, "duckdb": 3, "gpu": 4, "gpu-par8": 5,
                 "cpu": 6}


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def pgoptions(gucs):
    return " ".join("-c %s=%s" % (k, v) for k, v in gucs.items())


def psql(sql, gucs=None, check=True):
    """Runs sql in a new psql connection; returns stdout.  gucs go in as
    PGOPTIONS, so they are set before the first statement."""
    env = dict(os.environ)
    if gucs:
        env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " " + pgoptions(gucs)).strip()
    proc = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"],
                          input=sql, text=True, capture_output=True, env=env)
    if check and proc.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (proc.stderr.strip(), sql[:500]))
    return proc.stdout


def timings(out):
    # "Time: 1234.567 ms" or, past a minute, "Time: 61234.567 ms (01:01.235)"
    return [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]


def human(n):
    for div, suffix in ((10 ** 9, "G"), (10 ** 6, "M"), (10 ** 3, "K")):
        if n >= div and n % (div // 1000 or 1) == 0:
            return ("%g" % (n / div)) + suffix
    return str(n)


def server_facts():
    """What the numbers depend on: versions, the gpusort build and GPUs,
    the server settings that matter, the host."""
    facts = {"version": psql("SELECT version()").strip()}
    for guc in ("work_mem", "shared_buffers", "jit", "max_parallel_workers_per_gather",
                "gpusort.max_memory", "gpusort.engine", "gpusort.min_rows",
                "gpusort.gpu_min_rows", "gpusort.threads", "temp_tablespaces"):
        facts[guc] = psql("SELECT current_setting('%s', true)" % guc).strip()
    # the GPU service opens its GPUs after the server has started: on a host
    # with a GPU, wait a while for it, so that the facts say what the sorts met
    deadline = time.time() + (30 if shutil.which("nvidia-smi") else 0)
    while True:
        facts["gpusort_info"] = psql(
            "SELECT coalesce(json_agg(i), '[]') FROM gpusort_info() i", check=False).strip()
        try:
            facts["gpusort_info"] = json.loads(facts["gpusort_info"])
        except ValueError:
            break
        if time.time() >= deadline or any("gpu" in (i.get("engines") or "")
                                          for i in facts["gpusort_info"]):
            break
        time.sleep(1)
    facts["nproc"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split(":")[1].split()[0])
            facts["mem_total"] = "%.0f GiB" % (kb / 2 ** 20)
    except OSError:
        pass
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True)
        facts["gpus"] = smi.stdout.strip()
    # a copy of the tree (the GPU host's) may carry a stale .git: say so
    here = os.path.dirname(os.path.abspath(__file__))
    git = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
    facts["commit"] = os.environ.get("GPUSORT_COMMIT") or (
        git.stdout.strip() + (" with changes" if dirty.stdout.strip() else ""))
    facts["date"] = time.strftime("%Y-%m-%d %H:%M:%S")
    return facts


def disk_free(path):
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def make_table(shape, n, jobs, data_dir):
    """Creates <shape>_n with `jobs` INSERTs of row ranges in parallel, then
    VACUUM ANALYZE (hint bits and the visibility map set here, not in the
    first timed scan) and one full scan, so every setting finds the table
    equally cached.  Returns its name and facts about the load."""
    name = "%s_%d" % (shape, n)
    cols, exprs = SHAPES[shape]
    free = disk_free(data_dir) if data_dir else None
    need = 2 * SHAPE_BYTES[shape] * n      # the table, and a sort spilling as much
    if free is not None and free < need:
        log("warning: %.1f GB free by the data directory, the table and a spilling sort "
            "may need about %.1f GB" % (free / 1e9, need / 1e9))
    start = time.time()
    # parallel_workers: settings that allow 8 workers per Gather get 8
    # (the planner would give a 13 GB table 7), as native's 8-worker sort
    psql("DROP TABLE IF EXISTS %s; CREATE UNLOGGED TABLE %s (%s) WITH (parallel_workers = 8);"
         % (name, name, cols))
    jobs = max(1, min(jobs, n // 100000 or 1))
    procs, step = [], (n + jobs - 1) // jobs
    for j in range(jobs):
        lo, hi = j * step + 1, min(n, (j + 1) * step)
        if lo > hi:
            break
        # generate_series in the target list streams (ProjectSet); in FROM it
        # would be materialized first, spilling at these sizes
        sql = "INSERT INTO %s SELECT %s FROM (SELECT generate_series(%d, %d) AS g) r;" % (
            name, exprs, lo, hi)
        procs.append(subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit("loading %s failed: %s" % (name, err.strip()))
    loaded = time.time()
    psql("VACUUM ANALYZE %s;" % name)
    vacuumed = time.time()
    count = int(psql("SELECT count(*) FROM %s" % name).strip())
    if count != n:
        sys.exit("%s has %d rows, not %d" % (name, count, n))
    size = int(psql("SELECT pg_relation_size('%s')" % name).strip())
    facts = {"load_s": round(loaded - start, 1), "vacuum_s": round(vacuumed - loaded, 1),
             "jobs": len(procs), "bytes": size}
    log("  %s: %d rows, %.2f GB, loaded in %.0f s (%d jobs), vacuum analyze %.0f s" %
        (name, n, size / 1e9, loaded - start, len(procs), vacuumed - loaded))
    return name, facts


def plan_node(plan):
    """The GpuSort node of a plan, else its Sort node (native), else None."""
    found = None
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.get("Custom Plan Provider") == "GpuSort":
            return node
        if node.get("Node Type") == "Sort" and found is None:
            found = node
        stack.extend(node.get("Plans", []))
    return found


def session(query, gucs, warm_runs, explain):
    """One connection: the query 1 + warm_runs times, then optionally its
    EXPLAIN (ANALYZE, FORMAT JSON).  Returns (fresh ms, [warm ms], node,
    execution ms of the EXPLAIN)."""
    script = ["\\timing on"] + [query + ";"] * (1 + warm_runs) + ["\\timing off"]
    if explain:
        # COPY has no EXPLAIN: its query's is explained
        copied = re.match(r"\s*COPY\s*\((.*)\)\s*TO\b", query, re.I | re.S)
        script.append("EXPLAIN (ANALYZE, FORMAT JSON) " +
                      (copied.group(1) if copied else query) + ";")
    out = psql("\n".join(script) + "\n", gucs)
    times = timings(out)
    if len(times) != 1 + warm_runs:
        sys.exit("expected %d timings, got: %s" % (1 + warm_runs, out[:500]))
    node, exec_ms = None, None
    if explain and "[" in out:
        doc = json.loads(out[out.index("["):])[0]
        node = plan_node(doc["Plan"])
        exec_ms = doc.get("Execution Time")
        if node is not None:
            # the scan under the sort is of no interest here, and large in XML-ish detail
            node = {k: v for k, v in node.items() if k != "Plans"}
    return times[0], times[1:], node, exec_ms


def median(xs):
    return statistics.median(xs) if xs else None


def measure(name, n, shape, settings, orders, args, table_facts, results, save, duck):
    """Every setting on one table, interleaved, for each ORDER BY list in
    orders, and the scan unless --no-scan, its entries appended to results
    as they are measured; save() after each connection, so that a run
    stopped at the GPU host's time limit keeps what it has.  The setting
    duckdb runs in duck, which holds the same rows under the same name."""
    # (setting, ORDER BY, statement, GUCs).  The scan is the sort's
    # statement without ORDER BY: the same rows read by one backend and
    # dropped by the same Limit, so that setting / scan is what sorting
    # costs over reading; one for the table, whatever the orders.  It goes
    # first: cheap, so that a run cut short still has its floor.
    plans = []
    if not args.no_scan:
        plans.append(("scan", None, "SELECT * FROM %s OFFSET %d" % (name, n),
                      dict(COMMON, max_parallel_workers_per_gather="0")))
    for order in orders:
        sort = statement_of(order, name, n)
        plans += [(s, order, duckdb_peer.duckdb_sql(sort), None) if settings[s] is None
                  else (s, order, sort, dict(COMMON, **settings[s])) for s in settings]
    explain_for = set(args.explain_settings.split(",")) if args.explain_settings != "" else set()
    res = {}
    for s, order, query, gucs in plans:
        start = time.time()
        if gucs is None:
            fresh, warm = duck.session(query, args.runs)
            node, exec_ms = None, None
        else:
            fresh, warm, node, exec_ms = session(query, gucs, args.runs, s in explain_for)
        res[s, order] = {"rows": n, "table": shape, "order": order, "setting": s, "sql": query,
                         "gucs": gucs, "fresh_ms": [fresh], "warm_ms": warm, "explain": node,
                         "explain_execution_ms": exec_ms, "table_facts": table_facts}
        results.append(res[s, order])
        save()
        engine = describe_plan(node) if node else ""
        log("  %-4s %-8s %sfresh %8.2f s  warm %s  %s [%.0f s]" %
            (shape + "_" + human(n), s, label_of(order), fresh / 1000,
             " ".join("%.2f" % (w / 1000) for w in warm) or "-", engine, time.time() - start))
    for i in range(1, args.fresh_runs):
        for s, order, query, gucs in plans:
            if gucs is None:
                t = duck.session(query, 0)[0]
            else:
                t = timings(psql("\\timing on\n%s;\n" % query, gucs))[0]
            res[s, order]["fresh_ms"].append(t)
            save()
            log("  %-4s %-8s %sfresh %8.2f s  (connection %d)" %
                (shape + "_" + human(n), s, label_of(order), t / 1000, i + 1))


def describe_plan(node):
    """A short account of how the sort ran, from its EXPLAIN node."""
    if not node:
        return ""
    if node.get("Custom Plan Provider") == "GpuSort":
        engine = str(node.get("Sort Engine", "GpuSort"))
        if node.get("Sort Device"):
            engine += ": " + node["Sort Device"]
        if node.get("Sort Algorithm"):
            engine += ", " + node["Sort Algorithm"]
        parts = [engine]
        if node.get("Fallback"):
            parts.append("fallback: %s" % node["Fallback"])
    else:
        parts = ["Sort: %s" % node.get("Sort Method", "?")]
    for key in ("Runs Written", "Merge Passes"):
        if key in node:
            parts.append("%s %s" % (key.lower(), node[key]))
    for key in ("Disk Used", "Sort Space Used"):
        if key in node:
            kind = node.get("Sort Space Type", "")
            parts.append("%s %s kB%s" % (key.lower(), node[key], " (%s)" % kind.lower() if kind else ""))
    # GpuSort's phases, which say what bounds it
    phases = [(p, node.get("%s Time" % p)) for p in
              ("Load", "Encode", "Sort", "Resolve", "Spill", "Merge", "Emit")]
    phases = ["%s %.0f" % (p.lower(), t) for p, t in phases if isinstance(t, (int, float))]
    if phases:
        parts.append("ms: " + " ".join(phases))
    return ", ".join(parts)


def is_statement(order):
    """Whether an --orders entry is a whole statement, not an ORDER BY list."""
    return re.match(r"\s*(SELECT|WITH|COPY)\b", order or "", re.I) is not None


def statement_of(order, name, n):
    """The statement timed for an --orders entry on table name of n rows."""
    if is_statement(order):
        return order.replace("{t}", name).replace("{n}", str(n))
    return "SELECT * FROM %s ORDER BY %s OFFSET %d" % (name, order, n)


def order_of(r):
    """An entry's ORDER BY list; files from before --orders sorted by k."""
    return r.get("order") or "k"


def series_order(r):
    """The ORDER BY list an entry's line in a chart stands for: none for the
    scan, which is one line per table whatever the orders."""
    return "" if r["setting"] == "scan" else order_of(r)


def label_of(order):
    """A chart's or the log's mention of an ORDER BY list: none for k alone
    (or the scan's none), and a collation by its name alone (the charts'
    font has no quotes)."""
    if order in (None, "", "k"):
        return ""
    if is_statement(order):
        return "(%s) " % re.sub(r"\s+", " ", order)[:48]
    return "(%s) " % re.sub(r'\s+COLLATE\s+"?([^"\s,]+)"?', r" \1", order)


def ratio(a, b):
    return a / b if a and b else None


def write_outputs(results, facts, out):
    os.makedirs(out, exist_ok=True)
    for r in results:
        r["fresh_median_ms"] = median(r["fresh_ms"])
        r["warm_median_ms"] = median(r["warm_ms"])
    with open(os.path.join(out, "scale.json"), "w") as f:
        json.dump({"server": facts, "results": results}, f, indent=1)
    native = {(r["rows"], r["table"], order_of(r)): r for r in results if r["setting"] == "native"}
    # absent from files written before the scan was measured: ratios left empty
    scan = {(r["rows"], r["table"]): r for r in results if r["setting"] == "scan"}
    shapes = list(SHAPES)
    orders = list(dict.fromkeys(order_of(r) for r in results if r["setting"] != "scan"))
    results = sorted(results, key=lambda r: (r["rows"], shapes.index(r["table"]) if r["table"] in shapes
                                             else 9, -1 if r["setting"] == "scan"
                                             else orders.index(order_of(r)),
                                             SETTING_ORDER.get(r["setting"], 9), r["setting"]))

    def sec(ms):
        # three decimals: small sizes (the CI check) run in tens of ms
        return "%.3f" % (ms / 1000) if ms is not None else ""

    def rx(x):
        return "%.2fx" % x if x is not None else ""
    lines = ["| rows | table | ORDER BY | setting | warm median s | fresh median s | "
             "native / setting, warm | native / setting, fresh | setting / scan, warm | "
             "how it sorted (EXPLAIN ANALYZE) |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        nat = native.get((r["rows"], r["table"], order_of(r)))
        floor = scan.get((r["rows"], r["table"]))
        # native / scan would read as a speed-up over native: the scan's row
        # has only its times
        no_native = r["setting"] in ("native", "scan") or not nat
        warm_ratio = None if no_native else ratio(nat["warm_median_ms"], r["warm_median_ms"])
        fresh_ratio = None if no_native else ratio(nat["fresh_median_ms"], r["fresh_median_ms"])
        scan_ratio = (None if r["setting"] == "scan" or not floor
                      else ratio(r["warm_median_ms"], floor["warm_median_ms"]))
        how = ("no sort: the rows read and dropped" if r["setting"] == "scan"
               else describe_plan(r.get("explain")))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "{:,}".format(r["rows"]), r["table"],
            "" if r["setting"] == "scan" else "`%s`" % order_of(r), r["setting"], sec(r["warm_median_ms"]),
            sec(r["fresh_median_ms"]), rx(warm_ratio), rx(fresh_ratio), rx(scan_ratio), how))
    lines += peer_lines(results, scan, sec, rx)
    charts = []
    if draw(results, native, os.path.join(out, "scale-chart.png")):
        charts.append("[native / setting](scale-chart.png)")
    if draw_per_row(results, os.path.join(out, "scale-per-row.png")):
        charts.append("[nanoseconds per row](scale-per-row.png) (warm medians; a sort that "
                      "scales linearly is a flat line%s)" % (", the scan dashed" if scan else ""))
    tables = sorted({r["table"] for r in results})
    lists = [o for o in orders if not is_statement(o)]
    head = ["# gpusort scaling: %s" % ", ".join(
                (["`SELECT * FROM t ORDER BY %s OFFSET n`" % " | ".join(lists or ["k"])]
                 if lists or not orders else []) + ["`%s`" % o for o in orders if is_statement(o)]), "",
            "Tables: %s%s. " % (", ".join("`%s(%s)`" % (t, SHAPES[t][0]) for t in tables),
                                " (pad: 32 characters)" if any("pad" in SHAPES[t][0] for t in tables)
                                else "")
            + "work_mem %s, shared_buffers %s, gpusort.max_memory %s (as the server "
            "reported it), max_parallel_workers_per_gather 0 (8 for the settings ending in "
            "-par8), jit off. %s"
            "Warm: the median of the statement repeated in one connection; fresh: the median "
            "of the first statement of new connections. Native / setting above 1 means gpusort "
            "is faster. The scan is the floor: `SELECT * FROM t OFFSET n`, the same statement "
            "without ORDER BY, one backend reading every row; setting / scan is how many scans "
            "of the table the sorted statement takes. "
            "The last column is from one EXPLAIN (ANALYZE, FORMAT JSON) run per setting "
            "(native only where --explain-settings names it: it costs one more full sort); "
            "scale.json holds the whole node." % (
                facts.get("work_mem", "?"), facts.get("shared_buffers", "?"),
                facts.get("gpusort.max_memory", "?"),
                ("duckdb: %s, on the same rows (checked), `COLLATE \"C\"` left out (DuckDB "
                 "compares bytes), timed from the client as psql times PostgreSQL; fresh is a "
                 "new connection's first statement. " % facts["duckdb"])
                if facts.get("duckdb") else ""), "",
            "Server: %s; %s CPUs, %s; GPU: %s; gpusort at %s; %s." % (
                facts.get("version", "?").split(",")[0], facts.get("nproc", "?"),
                facts.get("mem_total", "?"), facts.get("gpus") or "none",
                facts.get("commit", "?"), facts.get("date", "?")), ""]
    if charts:
        head += ["Charts: %s." % "; ".join(charts), ""]
    with open(os.path.join(out, "scale.md"), "w") as f:
        f.write("\n".join(head + lines) + "\n")
    return lines


def peer_lines(results, scan, sec, rx):
    """scale.md's second table: each gpusort setting against PostgreSQL's
    parallel Sort (native-par8) and DuckDB, where the run timed them."""
    peers = [p for p in ("native-par8", "duckdb") if any(r["setting"] == p for r in results)]
    if not peers:
        return []
    by = {(r["rows"], r["table"], order_of(r), r["setting"]): r for r in results}
    out = ["", "## Against PostgreSQL's parallel Sort and DuckDB", "",
           "Each peer's median over gpusort's (above 1: gpusort is faster), warm / fresh; "
           "the last column is gpusort's warm median over the scan's.", "",
           "| rows | table | ORDER BY | setting | warm s | fresh s | %s | setting / scan |"
           % " | ".join("%s / setting" % p for p in peers),
           "|---:|---|---|---|---:|---:|%s---:|" % ("---:|" * len(peers))]
    for r in results:
        if r["setting"] in ("scan", "native", "native-par8", "duckdb"):
            continue
        cells = []
        for p in peers:
            peer = by.get((r["rows"], r["table"], order_of(r), p))
            cells.append("%s / %s" % (rx(ratio(peer["warm_median_ms"], r["warm_median_ms"])),
                                      rx(ratio(peer["fresh_median_ms"], r["fresh_median_ms"])))
                         if peer else "")
        floor = scan.get((r["rows"], r["table"]))
        out.append("| %s | %s | `%s` | %s | %s | %s | %s | %s |" % (
            "{:,}".format(r["rows"]), r["table"], order_of(r), r["setting"],
            sec(r["warm_median_ms"]), sec(r["fresh_median_ms"]), " | ".join(cells),
            rx(ratio(r["warm_median_ms"], floor["warm_median_ms"])) if floor else ""))
    return out


def draw(results, native, path):
    """native / setting against rows: one solid line per table and setting
    (warm medians) and a dashed one of the same colour (fresh medians).
    The scan is left out: it sorts nothing.  Returns whether it drew."""
    keys = sorted({(r["table"], order_of(r), r["setting"]) for r in results
                   if r["setting"] not in ("native", "scan")})
    series = []
    for i, (table, order, setting) in enumerate(keys):
        color = chart_png.PALETTE[i % len(chart_png.PALETTE)]
        for kind, dashed in (("warm", False), ("fresh", True)):
            pts = []
            for r in results:
                nat = native.get((r["rows"], r["table"], order))
                if (r["table"], order_of(r), r["setting"]) == (table, order, setting) and nat:
                    x = ratio(nat[kind + "_median_ms"], r[kind + "_median_ms"])
                    if x is not None:
                        pts.append((r["rows"], x))
            # fresh: a paler shade, so that it shows where it runs along a warm line
            shade = tuple(int(v + (255 - v) * 0.45) for v in color) if dashed else color
            series.append({"label": "%s %s%s%s" % (table, label_of(order), setting,
                                                   " fresh" if dashed else ""),
                           "points": pts, "color": shade, "dashed": dashed})
    rows = sorted({r["rows"] for r in results})
    if not any(s["points"] for s in series):
        return False
    chart_png.line_chart(
        path, series, title="GPUSORT: NATIVE SORT TIME / GPUSORT TIME",
        xlabel="ROWS (LOG SCALE)", ylabel="SPEED-UP OVER NATIVE SORT", xlog=True,
        xticks=[(n, human(n)) for n in rows], hlines=[(1.0, "NATIVE")],
        note="S: (K INT8, F FLOAT8)\nP: (K INT8, PAD TEXT)\nSOLID: WARM SESSION\n"
             "DASHED: NEW CONNECTION")
    return True


def draw_per_row(results, path):
    """Warm median time / rows in nanoseconds against rows, one line per
    table and setting, native and the scan included.  The ratio chart says
    how a setting does against native, whose own cost per row moves with
    size; this one says how each scales by itself: a statement whose time is
    linear in the rows is a flat line, and a sort's height above its table's
    scan (dashed) is what sorting costs a row.  Returns whether it drew."""
    shapes = list(SHAPES)
    keys = sorted({(r["table"], series_order(r), r["setting"]) for r in results},
                  key=lambda k: (shapes.index(k[0]) if k[0] in shapes else 9, k[0], k[1],
                                 SETTING_ORDER.get(k[2], 9), k[2]))
    series = []
    for i, (table, sort_order, setting) in enumerate(keys):
        pts = [(r["rows"], r["warm_median_ms"] * 1e6 / r["rows"]) for r in results
               if (r["table"], series_order(r), r["setting"]) == (table, sort_order, setting)
               and r["warm_median_ms"]]
        series.append({"label": "%s %s%s" % (table, label_of(sort_order), setting), "points": pts,
                       "color": chart_png.PALETTE[i % len(chart_png.PALETTE)],
                       "dashed": setting == "scan"})
    if not any(s["points"] for s in series):
        return False
    # ticks only where there are points: a row count timed with --runs 0
    # has no warm median, and would fall outside the axis
    rows = sorted({x for s in series for x, _ in s["points"]})
    tables = sorted({k[0] for k in keys}, key=lambda t: shapes.index(t) if t in shapes else 9)
    note = ["%s: (%s)" % (t, SHAPES[t][0] if t in SHAPES else "?") for t in tables]
    if any(s["dashed"] and s["points"] for s in series):
        note += ["DASHED: THE SCAN", "(NO ORDER BY)"]
    chart_png.line_chart(
        path, series, title="TIME PER ROW, WARM MEDIANS: FLAT = LINEAR IN ROWS",
        xlabel="ROWS (LOG SCALE)", ylabel="NANOSECONDS PER ROW", xlog=True,
        xticks=[(n, human(n)) for n in rows],
        note="\n".join(note))
    return True


def load_results(paths):
    """--combine: entries of several scale.json files, a later file's entry
    replacing an earlier one of the same rows, table and setting."""
    merged, facts = {}, {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        facts = doc.get("server", facts)
        for r in doc["results"]:
            merged[(r["rows"], r["table"], order_of(r), r["setting"])] = r
    return list(merged.values()), facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="10000000,50000000,100000000,300000000",
                    help="row counts, comma-separated")
    ap.add_argument("--tables", default="s,p", help="table shapes: s, p, t")
    ap.add_argument("--orders", default="k",
                    help="ORDER BY lists, separated by ';' (e.g. 'k;f, k;pad COLLATE \"C\"' on t)")
    ap.add_argument("--settings", default="native,gpu,cpu",
                    help="settings, comma-separated: %s, or ones given by --define" % ", ".join(SETTINGS))
    ap.add_argument("--define", action="append", default=[], metavar="NAME:GUC=VAL[,GUC=VAL]",
                    help="an extra setting, e.g. 'gpu-1g:gpusort.engine=gpu,gpusort.max_memory=1GB' "
                         "(a superuser setting is fine: the benchmark connects as postgres)")
    ap.add_argument("--runs", type=int, default=3,
                    help="warm runs per setting, after the connection's first (fresh) one")
    ap.add_argument("--fresh-runs", type=int, default=None,
                    help="first statements of a connection per setting (default: --runs, at least 1)")
    ap.add_argument("--explain-settings", default=None,
                    help="settings whose EXPLAIN (ANALYZE, FORMAT JSON) is recorded, one extra run "
                         "each (default: every setting but native; '' for none)")
    ap.add_argument("--no-scan", action="store_true",
                    help="do not time the scan (the statement without ORDER BY, the floor)")
    ap.add_argument("--load-jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="parallel INSERTs loading a table")
    ap.add_argument("--out", default="bench/out/scale")
    ap.add_argument("--combine", nargs="+", metavar="SCALE_JSON",
                    help="measure nothing: merge these scale.json files into --out")
    args = ap.parse_args()

    if args.combine:
        results, facts = load_results(args.combine)
        for line in write_outputs(results, facts, args.out):
            print(line)
        return

    settings = {}
    for d in args.define:
        name, _, spec = d.partition(":")
        SETTINGS[name] = dict(kv.split("=", 1) for kv in spec.split(",") if kv)
    for s in (x for x in args.settings.split(",") if x):
        if s == "scan":
            # its entries are the scan's, and --combine could not tell them apart
            sys.exit("scan is the statement without ORDER BY, timed unless --no-scan; "
                     "give the setting another name")
        if s not in SETTINGS:
            sys.exit("unknown setting %s (known: %s)" % (s, ", ".join(SETTINGS)))
        settings[s] = SETTINGS[s]
    if args.fresh_runs is None:
        args.fresh_runs = max(1, args.runs)
    args.fresh_runs = max(1, args.fresh_runs)
    if args.explain_settings is None:
        args.explain_settings = ",".join(s for s in settings
                                         if not s.startswith("native") and s != "duckdb")
    sizes = [int(x) for x in args.rows.split(",") if x]
    orders = [o.strip() for o in args.orders.split(";") if o.strip()]
    shapes = [t for t in args.tables.split(",") if t]
    for t in shapes:
        if t not in SHAPES:
            sys.exit("unknown table shape %s (known: %s)" % (t, ", ".join(SHAPES)))

    facts = server_facts()
    duck = None
    if "duckdb" in settings:
        duck = duckdb_peer.DuckDB()
        facts["duckdb"] = "DuckDB %s, %d threads, in memory" % (duck.version, duck.threads)
        log(facts["duckdb"])
    log("server: %s; work_mem %s, gpusort.max_memory %s; GPU: %s" % (
        facts["version"].split(",")[0], facts["work_mem"], facts["gpusort.max_memory"],
        facts.get("gpus") or "none"))
    data_dir = psql("SELECT current_setting('data_directory', true)").strip() or None
    results = []
    for n in sizes:
        for shape in shapes:
            log("== %s_%s: %d rows; %s" % (shape, human(n), n, ", ".join(settings)))
            name, table_facts = make_table(shape, n, args.load_jobs, data_dir)
            try:
                if duck:
                    table_facts["duckdb_load_s"] = round(duck.make_table(
                        name, *SHAPES[shape], n) / 1000, 1)
                    fp = duckdb_peer.fingerprint_sql(name, SHAPES[shape][0])
                    mine, theirs = psql(fp).strip(), duck.run(fp)[1]
                    if mine != theirs:
                        sys.exit("DuckDB's %s differs from PostgreSQL's: %s against %s"
                                 % (name, theirs, mine))
                    log("  %s in DuckDB too, made in %.0f s, the same rows (%s)"
                        % (name, table_facts["duckdb_load_s"], mine))
                measure(name, n, shape, settings, orders, args, table_facts, results,
                        lambda: write_outputs(results, facts, args.out), duck)
            finally:
                psql("DROP TABLE IF EXISTS %s;" % name, check=False)
                if duck:
                    duck.run("DROP TABLE IF EXISTS %s" % name)
    lines = write_outputs(results, facts, args.out)
    print("\n".join(lines))
    log("wrote %s/scale.json, scale.md, scale-chart.png, scale-per-row.png" % args.out)


if __name__ == "__main__":
    main()

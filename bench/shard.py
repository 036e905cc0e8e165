#!/usr/bin/env python3
"""bench/shard.py: one table sharded over postgres_fdw servers, against one server.

The same --rows rows, of one of bench/scale.py's table shapes (--table,
with an id column in front for the shards' ranges), are

  single    the table <shape>_<rows> of the coordinator itself, loaded as
            scale.py loads its tables
  sharded   the coordinator's table t, partitioned by range of id into one
            postgres_fdw foreign table a shard server (--shards), each
            shard's part (table part) generated on the shard itself, all
            shards at once

and these queries are timed on both (the OFFSET returns no rows, so the
client's share is nothing; on the sharded table every row still crosses
from its shard to the coordinator):

  k      SELECT <cols> FROM <t> ORDER BY k OFFSET <rows>
  fk     SELECT <cols> FROM <t> ORDER BY f, k OFFSET <rows>   (tables s, t)
  scan   SELECT <cols> FROM <t> OFFSET <rows>   (no sort: for the sharded
         table, how fast the coordinator takes in the shards' rows; one
         fresh and at most one warm run, native only)

under each of --settings (bench/scale.py's: native, gpu, cpu, with
work_mem 8GB, no parallel workers, jit off).  On the sharded table the
coordinator's plan is a Merge Append over the shards' Foreign Scans,
whose remote queries carry the ORDER BY (checked before timing): the
shards sort, and the setting must reach them.  It does through the
foreign servers' libpq option "options" ('-c gpusort.enabled=off ...'),
changed (ALTER SERVER, which also drops the coordinator's cached
connections) before each connection of the coordinator.

Each query, setup and setting is timed as scale.py times it: a connection
runs the statement 1 + --runs times (the first a fresh sample: for the
sharded table the shards' backends are new too, the others warm ones),
then --fresh-runs - 1 more connections run it once each, settings taken
in turn.  For each gpusort setting, one EXPLAIN (ANALYZE) of the sort on
the single table, and one of the remote query on the first shard, are
kept (engine, runs written, ...).

Outputs under --out (default bench/out/shard), rewritten after each
connection: shard.json (every sample, plans, servers) and shard.md (the
table: medians, and single-server native / setting).

bench/shard.sh builds gpusort, starts the servers and calls this.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (bench/scale.py: shapes, settings, timing, facts)

QUERIES = {
    "k": "SELECT {cols} FROM {t} ORDER BY k OFFSET {n}",
    "fk": "SELECT {cols} FROM {t} ORDER BY f, k OFFSET {n}",
    "scan": "SELECT {cols} FROM {t} OFFSET {n}",
}
# the ORDER BY a shard must receive, as postgres_fdw writes it
REMOTE_ORDER = {"k": "ORDER BY k ASC NULLS LAST",
                "fk": "ORDER BY f ASC NULLS LAST, k ASC NULLS LAST"}
log = scale.log


def psql(sql, server=None, gucs=None, check=True, wait=True):
    """Runs sql on server ((host, port); None: the coordinator, PGHOST and
    PGPORT) in a new connection; returns stdout, or the process if not
    wait."""
    env = dict(os.environ)
    if server:
        env["PGHOST"], env["PGPORT"] = server
    if gucs:
        env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " " + scale.pgoptions(gucs)).strip()
    cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
    if not wait:
        return subprocess.Popen(cmd + ["-c", sql], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc = subprocess.run(cmd, input=sql, text=True, capture_output=True, env=env)
    if check and proc.returncode != 0:
        sys.exit("psql failed on %s: %s\n%s" % (server or "the coordinator",
                                                proc.stderr.strip(), sql[:500]))
    return proc.stdout


def wait_all(procs, what):
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit("%s failed: %s" % (what, err.strip()))


def load(args, shards, shape):
    """The shards' parts (all at once, --shard-jobs INSERTs each) and,
    meanwhile, the single table; then the coordinator's partitioned table
    over the shards.  Returns the single table's name and load facts."""
    n = args.rows
    cols, exprs = scale.SHAPES[shape]
    start = time.time()
    step = (n + len(shards) - 1) // len(shards)
    ranges = [(i * step + 1, min(n, (i + 1) * step)) for i in range(len(shards))]
    procs = []
    for server, (lo, hi) in zip(shards, ranges):
        psql("DROP TABLE IF EXISTS part; CREATE UNLOGGED TABLE part (id int8, %s);" % cols, server)
        jobs = max(1, min(args.shard_jobs, (hi - lo + 1) // 100000 or 1))
        jstep = (hi - lo + jobs) // jobs
        for j in range(jobs):
            jlo, jhi = lo + j * jstep, min(hi, lo + (j + 1) * jstep - 1)
            # generate_series in the target list streams, as in scale.py
            procs.append(psql("INSERT INTO part SELECT g, %s FROM (SELECT generate_series(%d, %d) AS g) r"
                              % (exprs, jlo, jhi), server, wait=False))
    single, facts = scale.make_table(shape, n, args.load_jobs, None)
    wait_all(procs, "loading a shard")
    loaded = time.time()
    wait_all([psql("VACUUM ANALYZE part", s, wait=False) for s in shards], "VACUUM ANALYZE on a shard")
    for server, (lo, hi) in zip(shards, ranges):
        got = int(psql("SELECT count(*) FROM part", server).strip())
        if got != hi - lo + 1:
            sys.exit("shard %s has %d rows, not %d" % (server, got, hi - lo + 1))
    facts["shards_s"] = round(time.time() - start, 1)
    log("  shards: %d x %d rows, loaded in %.0f s, vacuum analyze %.0f s (with the single table)" %
        (len(shards), step, loaded - start, time.time() - loaded))

    setup = ["DROP TABLE IF EXISTS t;", "CREATE EXTENSION IF NOT EXISTS postgres_fdw;",
             "CREATE TABLE t (id int8, %s) PARTITION BY RANGE (id);" % cols]
    for i, ((host, port), (lo, hi)) in enumerate(zip(shards, ranges), 1):
        setup += ["DROP SERVER IF EXISTS shard%d CASCADE;" % i,
                  "CREATE SERVER shard%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS "
                  "(host '%s', port '%s', dbname 'postgres', fetch_size '%d', options '');"
                  % (i, host, port, args.fetch_size),
                  "CREATE USER MAPPING FOR CURRENT_USER SERVER shard%d;" % i,
                  "CREATE FOREIGN TABLE t_shard%d PARTITION OF t FOR VALUES FROM (%d) TO (%d) "
                  "SERVER shard%d OPTIONS (table_name 'part');" % (i, lo, hi + 1, i)]
    # No ANALYZE t: postgres_fdw of PostgreSQL 15 samples a foreign table by
    # reading all of it, as long as the scan itself; the ORDER BY reaches
    # the shards on the default estimates too (check_plan makes sure).
    psql("\n".join(setup))
    return single, facts


def shard_options(nshards, gucs):
    """The settings' GUCs for the shards' sessions: the servers' libpq
    options, which postgres_fdw passes when it connects."""
    opts = scale.pgoptions(gucs).replace("'", "''")
    psql("\n".join("ALTER SERVER shard%d OPTIONS (SET options '%s');" % (i, opts)
                   for i in range(1, nshards + 1)))


def check_plan(query, order_by, nshards):
    """EXPLAIN VERBOSE of the sharded query: a Merge Append whose every
    Foreign Scan sends order_by; returns the plan."""
    plan = psql("EXPLAIN (VERBOSE, COSTS OFF) " + query)
    remote = [line for line in plan.splitlines() if "Remote SQL:" in line]
    if order_by and ("Merge Append" not in plan or len(remote) != nshards
                     or not all(line.rstrip().endswith(order_by) for line in remote)):
        sys.exit("the ORDER BY does not reach every shard:\n" + plan)
    return plan


def measure(args, shards, shape, single, results, save):
    n = args.rows
    names = [c.split()[0] for c in scale.SHAPES[shape][0].split(",")]
    explain_for = set(args.explain_settings.split(",")) if args.explain_settings else set()
    for qname in args.queries:
        settings = ["native"] if qname == "scan" else args.settings
        res = {}
        for setup, table in (("single", single), ("sharded", "t")):
            query = QUERIES[qname].format(cols=", ".join(names), t=table, n=n)
            plan = check_plan(query, REMOTE_ORDER.get(qname), len(shards)) if setup == "sharded" else None
            for s in settings:
                gucs = dict(scale.COMMON, **scale.SETTINGS[s])
                if setup == "sharded":
                    shard_options(len(shards), gucs)
                begin = time.time()
                # the scan is a rate, not a comparison: one warm run is enough
                runs = min(args.runs, 1) if qname == "scan" else args.runs
                fresh, warm, node, _ = scale.session(query, gucs, runs,
                                                     setup == "single" and s in explain_for
                                                     and qname != "scan")
                shard_node = None
                if setup == "sharded" and s in explain_for and qname != "scan":
                    remote = QUERIES[qname].format(cols=", ".join(names), t="part", n=0)
                    out = psql("EXPLAIN (ANALYZE, FORMAT JSON) " + remote.replace(" OFFSET 0", ""),
                               shards[0], gucs)
                    shard_node = scale.plan_node(json.loads(out)[0]["Plan"])
                    if shard_node is not None:
                        shard_node = {k: v for k, v in shard_node.items() if k != "Plans"}
                res[(setup, s)] = {"query": qname, "setup": setup, "setting": s, "rows": n,
                                   "table": shape, "sql": query, "gucs": gucs, "plan": plan,
                                   "fresh_ms": [fresh], "warm_ms": warm, "explain": node,
                                   "shard_explain": shard_node}
                results.append(res[(setup, s)])
                save()
                how = scale.describe_plan(node or shard_node)
                log("  %-5s %-7s %-7s fresh %8.2f s  warm %s  %s [%.0f s]" %
                    (qname, setup, s, fresh / 1000, " ".join("%.2f" % (w / 1000) for w in warm) or "-",
                     ("shard 1: " if shard_node else "") + how, time.time() - begin))
        for i in range(1, 1 if qname == "scan" else args.fresh_runs):
            for setup, table in (("single", single), ("sharded", "t")):
                query = QUERIES[qname].format(cols=", ".join(names), t=table, n=n)
                for s in settings:
                    gucs = dict(scale.COMMON, **scale.SETTINGS[s])
                    if setup == "sharded":
                        shard_options(len(shards), gucs)
                    t = scale.timings(psql("\\timing on\n%s;\n" % query, None, gucs))[0]
                    res[(setup, s)]["fresh_ms"].append(t)
                    save()
                    log("  %-5s %-7s %-7s fresh %8.2f s  (connection %d)" % (qname, setup, s, t / 1000, i + 1))


def write_outputs(results, facts, out):
    os.makedirs(out, exist_ok=True)
    for r in results:
        r["fresh_median_ms"] = scale.median(r["fresh_ms"])
        r["warm_median_ms"] = scale.median(r["warm_ms"])
    with open(os.path.join(out, "shard.json"), "w") as f:
        json.dump({"server": facts, "results": results}, f, indent=1)
    by = {(r["query"], r["setup"], r["setting"]): r for r in results}

    def sec(ms):
        return "%.3f" % (ms / 1000) if ms is not None else ""

    def rx(a, b):
        x = scale.ratio(a, b)
        return "%.2fx" % x if x is not None else ""
    lines = ["| query | setup | setting | warm median s | fresh median s | "
             "single native / this, warm | single native / this, fresh | "
             "single, same setting / this, warm | how it sorted (EXPLAIN ANALYZE) |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        base = by.get((r["query"], "single", "native"), {})
        same = by.get((r["query"], "single", r["setting"]), {})
        how = scale.describe_plan(r.get("explain"))
        if r.get("shard_explain"):
            how = "each shard (shard 1): " + scale.describe_plan(r["shard_explain"])
        rate = ""
        if r["query"] == "scan" and r["warm_median_ms"]:
            rate = "%.2fM rows/s" % (r["rows"] / r["warm_median_ms"] / 1000)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["query"], r["setup"], r["setting"], sec(r["warm_median_ms"]), sec(r["fresh_median_ms"]),
            "" if r is base else rx(base.get("warm_median_ms"), r["warm_median_ms"]),
            "" if r is base else rx(base.get("fresh_median_ms"), r["fresh_median_ms"]),
            "" if r is same else rx(same.get("warm_median_ms"), r["warm_median_ms"]),
            how or rate))
    head = ["# gpusort, sharded: %s rows of table %s over %d postgres_fdw shards, against one server" % (
                "{:,}".format(facts["rows"]), facts["table"], facts["shards"]), "",
            "Queries: %s. work_mem %s, max_parallel_workers_per_gather 0, jit off, on the "
            "coordinator and (through the foreign servers' options) on the shards; "
            "gpusort.max_memory %s; fetch_size %d. Warm: the median of the statement repeated "
            "in one connection; fresh: the median of the first statement of new connections "
            "(for the sharded table the shards' connections are new too). Ratios above 1 "
            "mean faster. The single server is the coordinator itself." % (
                "; ".join("%s: `%s`" % (q, QUERIES[q].format(cols="...", t="t", n="n"))
                          for q in facts["queries"]),
                facts.get("work_mem", "?"), facts.get("gpusort.max_memory", "?"),
                facts["fetch_size"]), "",
            "Server: %s; %s CPUs, %s; GPU: %s; gpusort at %s; %s." % (
                facts.get("version", "?").split(",")[0], facts.get("nproc", "?"),
                facts.get("mem_total", "?"), facts.get("gpus") or "none",
                facts.get("commit", "?"), facts.get("date", "?")), ""]
    with open(os.path.join(out, "shard.md"), "w") as f:
        f.write("\n".join(head + lines) + "\n")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", required=True, help="the shard servers: HOST:PORT,... (host: a socket directory)")
    ap.add_argument("--rows", type=int, default=40000000)
    ap.add_argument("--table", default="t", help="table shape of bench/scale.py: %s" % ", ".join(scale.SHAPES))
    ap.add_argument("--queries", default="k,scan", help="queries, comma-separated: %s" % ", ".join(QUERIES))
    ap.add_argument("--settings", default="native,gpu",
                    help="settings of bench/scale.py, comma-separated: %s" % ", ".join(scale.SETTINGS))
    ap.add_argument("--define", action="append", default=[], metavar="NAME:GUC=VAL[,GUC=VAL]",
                    help="an extra setting, as in bench/scale.py, e.g. "
                         "'cpu-all:gpusort.engine=cpu,gpusort.min_rows=0'")
    ap.add_argument("--runs", type=int, default=2,
                    help="warm runs per setting, after the connection's first (fresh) one")
    ap.add_argument("--fresh-runs", type=int, default=None,
                    help="first statements of a connection per setting (default: --runs, at least 1)")
    ap.add_argument("--explain-settings", default=None,
                    help="settings whose sort is explained (default: every setting but native; '' for none)")
    ap.add_argument("--load-jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="parallel INSERTs loading the single table")
    ap.add_argument("--shard-jobs", type=int, default=None,
                    help="parallel INSERTs loading each shard (default: --load-jobs / shards, at least 1)")
    ap.add_argument("--fetch-size", type=int, default=100000,
                    help="postgres_fdw fetch_size: rows a FETCH brings from a shard")
    ap.add_argument("--out", default="bench/out/shard")
    args = ap.parse_args()

    shards = []
    for s in args.shards.split(","):
        host, _, port = s.rpartition(":")
        shards.append((host, port))
    args.queries = [q for q in args.queries.split(",") if q]
    for q in args.queries:
        if q not in QUERIES:
            sys.exit("unknown query %s (known: %s)" % (q, ", ".join(QUERIES)))
        if q == "fk" and " f " not in " %s," % scale.SHAPES.get(args.table, ("",))[0]:
            sys.exit("query fk needs a table with f (s or t)")
    for d in args.define:
        name, _, spec = d.partition(":")
        scale.SETTINGS[name] = dict(kv.split("=", 1) for kv in spec.split(",") if kv)
    args.settings = [s for s in args.settings.split(",") if s]
    for s in args.settings:
        if s not in scale.SETTINGS:
            sys.exit("unknown setting %s (known: %s)" % (s, ", ".join(scale.SETTINGS)))
    if args.table not in scale.SHAPES:
        sys.exit("unknown table shape %s (known: %s)" % (args.table, ", ".join(scale.SHAPES)))
    if args.fresh_runs is None:
        args.fresh_runs = max(1, args.runs)
    args.fresh_runs = max(1, args.fresh_runs)
    if args.shard_jobs is None:
        args.shard_jobs = max(1, args.load_jobs // len(shards))
    if args.explain_settings is None:
        args.explain_settings = ",".join(s for s in args.settings if s != "native")

    facts = scale.server_facts()
    facts.update({"rows": args.rows, "table": args.table, "shards": len(shards),
                  "fetch_size": args.fetch_size, "queries": args.queries,
                  "shard_servers": ["%s:%s" % s for s in shards]})
    log("server: %s; %d shards; GPU: %s" % (facts["version"].split(",")[0], len(shards),
                                            facts.get("gpus") or "none"))
    log("== %s rows, table %s; %s" % ("{:,}".format(args.rows), args.table, ", ".join(args.settings)))
    single, facts["load"] = load(args, shards, args.table)
    results = []
    try:
        measure(args, shards, args.table, single, results,
                lambda: write_outputs(results, facts, args.out))
    finally:
        psql("DROP TABLE IF EXISTS %s;" % single, check=False)
    print("\n".join(write_outputs(results, facts, args.out)))
    log("wrote %s/shard.json, shard.md" % args.out)


if __name__ == "__main__":
    main()

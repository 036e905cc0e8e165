"""bench/trees.py: the same sorts on several trees of gpusort, each with a
server of its own running at once (bench/trees.sh starts them), their
samples interleaved: each round runs every statement on every tree, the
trees in an order that turns by one each round, so that the host's drift
over the call (other tenants, the GPU's clocks, the page cache) falls on
every tree alike instead of on whichever tree ran last.

Each sample is one new connection that runs the statement twice: the first
time is the fresh connection's, the second the warm session's.  The scan
(`SELECT * FROM t OFFSET n`) runs the same way, as the floor, and as the
measure of each server's noise.  Writes trees.json (every sample) and
trees.md (medians, with the range of the samples) under --out; the
phases of each tree's first GpuSort are in trees-plans.txt.

  python3 bench/trees.py --servers NAME=SOCKETDIR:PORT,... [--rows N]
      [--orders 'k;pad COLLATE "C"'] [--settings gpu,gpu-par8] [--runs R]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes import SHAPES  # noqa: E402

SETTINGS = {
    "native": ["SET gpusort.enabled = off"],
    "cpu": ["SET gpusort.engine = cpu"],
    "gpu": ["SET gpusort.engine = gpu"],
    "gpu-par8": ["SET gpusort.engine = gpu",
                 "SET max_parallel_workers_per_gather = 8",
                 "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0"],
}


def psql(server, *commands):
    host, port = server
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port]
    for c in commands:
        args += ["-c", c]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("psql on %s:%s failed: %s" % (host, port, proc.stderr.strip()))
    return proc.stdout


def timed_twice(server, setup, sql):
    """The statement's time on a new connection, then again in it (ms)."""
    out = psql(server, *setup, "\\timing on", sql, sql)
    times = [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    if len(times) != 2:
        raise RuntimeError("expected two timings, got: %r" % out[-300:])
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", required=True)
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--orders", default='k;pad COLLATE "C"')
    ap.add_argument("--settings", default="gpu,gpu-par8")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="bench/out/trees")
    args = ap.parse_args()
    servers = []
    for item in args.servers.split(","):
        name, where = item.split("=", 1)
        host, port = where.rsplit(":", 1)
        servers.append((name, (host, port)))
    orders = [o for o in args.orders.split(";") if o]
    settings = args.settings.split(",")
    n = args.rows
    os.makedirs(args.out, exist_ok=True)

    # the same rows in every server (shapes.py: hashes of the row number)
    cols, exprs = SHAPES["t"]
    procs = []
    for name, server in servers:
        host, port = server
        sql = ["DROP TABLE IF EXISTS t",
               "CREATE TABLE t (%s) WITH (autovacuum_enabled = off)" % cols,
               "INSERT INTO t SELECT %s FROM generate_series(1, %d) g" % (exprs, n),
               "VACUUM ANALYZE t"]
        procs.append(subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host,
                                       "-p", port] + [a for c in sql for a in ("-c", c)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError("making the table failed: " + p.stderr.read())

    statements = [("scan", None, "SELECT * FROM t OFFSET %d" % n)]
    for order in orders:
        for s in settings:
            statements.append((s, order, "SELECT * FROM t ORDER BY %s OFFSET %d" % (order, n)))

    # one untimed pass of everything: shared buffers, the GPU service's
    # first contact, the page cache
    with open(os.path.join(args.out, "trees-plans.txt"), "w") as plans:
        for name, server in servers:
            for s, order, sql in statements:
                setup = SETTINGS.get(s, []) if order else []
                out = psql(server, *setup, "EXPLAIN (ANALYZE, COSTS OFF) " + sql)
                if order and s != "native":
                    plans.write("== %s, %s, ORDER BY %s\n%s\n" % (name, s, order, out))

    samples = {name: {} for name, _ in servers}
    for r in range(args.runs):
        for s, order, sql in statements:
            label = "scan" if order is None else "ORDER BY %s (%s)" % (order, s)
            turn = [servers[(i + r) % len(servers)] for i in range(len(servers))]
            for name, server in turn:
                setup = SETTINGS.get(s, []) if order else []
                fresh, warm = timed_twice(server, setup, sql)
                samples[name].setdefault(label, {"fresh": [], "warm": []})
                samples[name][label]["fresh"].append(fresh)
                samples[name][label]["warm"].append(warm)
        report(args, n, servers, samples, r + 1)
        print("round %d of %d done" % (r + 1, args.runs), flush=True)
    print(report(args, n, servers, samples, args.runs))



def report(args, n, servers, samples, rounds):
    """trees.json and trees.md for the rounds so far."""
    with open(os.path.join(args.out, "trees.json"), "w") as f:
        json.dump({"rows": n, "runs": rounds, "trees": [nm for nm, _ in servers],
                   "samples": samples}, f, indent=1)
    labels = list(samples[servers[0][0]].keys())
    names = [nm for nm, _ in servers]
    lines = ["%d rows, %d rounds; medians in seconds, warm (fresh), "
             "with the warm samples' range" % (n, rounds), "",
             "| statement | " + " | ".join(names) + " |",
             "|---|" + "---:|" * len(names)]
    for label in labels:
        cells = []
        for nm in names:
            w = samples[nm][label]["warm"]
            fr = samples[nm][label]["fresh"]
            cells.append("%.3f (%.3f) %.3f-%.3f" % (statistics.median(w) / 1000,
                                                      statistics.median(fr) / 1000,
                                                      min(w) / 1000, max(w) / 1000))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "trees.md"), "w") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    main()

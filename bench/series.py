#!/usr/bin/env python3
"""bench/series.py: one connection, the same sort again and again, with
what the backend and the kernel did during each statement.

Usage (bench/scale.sh series starts a server and runs it there):
  bench/scale.sh series --rows 50000000 --table p --settings gpu,native --statements 5

The scaling benchmark (bench/scale.py) reports a connection's first
statement apart from the ones after it.  This tool looks at each statement
of a connection on its own, to explain why one of them is slower than the
others.  It builds the table as bench/scale.py does, then, per setting, runs
one psql connection that executes `SELECT * FROM t ORDER BY k OFFSET n`
--statements times with client_min_messages = debug1, so that gpusort's own
line for each sort (src/sort/sort.c: load, encode, sort, spill and merge times,
measured without EXPLAIN's per-row timing) comes back with it.  Before the
first statement and after each one, a shell snapshot records the backend's
page faults and CPU time (/proc/PID/stat), its resident and huge-page
memory (/proc/PID/status, smaps_rollup), and the kernel's counters of
transparent huge pages, compaction and reclaim (/proc/vmstat) and free
memory (/proc/meminfo).  The report gives, per statement, its time,
gpusort's phases and the differences of those counters.

Output under --out: series.md (the table), series.json, and the raw
psql output and snapshots per setting.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (bench/scale.py: table shapes, psql, make_table)

VMSTAT = ["thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc",
          "thp_split_pmd", "compact_stall", "compact_fail", "compact_success",
          "pgscan_direct", "pgscan_kswapd", "pgsteal_direct", "pglazyfreed",
          "pgfault", "pgmajfault", "allocstall_normal", "allocstall_movable"]
MEMINFO = ["MemFree", "Cached", "AnonHugePages", "LazyFree"]
# levels, reported as they stand after a statement; the rest are counters,
# reported as what the statement added
LEVELS = ("VmRSS", "RssAnon", "ProcAnonHuge") + tuple(MEMINFO)

# a snapshot: label, then key=value pairs, one line, appended to $1
SNAP = r"""#!/bin/sh
f=$1; label=$2; pid=$(tr -d ' \n' < "$3")
{
  printf '%s t=%s ' "$label" "$(date +%s.%N)"
  awk '{printf "minflt=%s majflt=%s utime=%s stime=%s ", $10, $12, $14, $15}' /proc/$pid/stat
  awk '/^VmRSS|^RssAnon/ {gsub(":", ""); printf "%s=%s ", $1, $2}' /proc/$pid/status
  awk '/^AnonHugePages/ {printf "ProcAnonHuge=%s ", $2}' /proc/$pid/smaps_rollup 2>/dev/null
  awk -v want="VMSTAT" 'BEGIN {n = split(want, w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1}
       keep[$1] {printf "%s=%s ", $1, $2}' /proc/vmstat
  awk -v want="MEMINFO" 'BEGIN {n = split(want, w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1}
       {k = $1; sub(":", "", k)} keep[k] {printf "%s=%s ", k, $2}' /proc/meminfo
  echo
} >> "$f"
""".replace("VMSTAT", " ".join(VMSTAT)).replace("MEMINFO", " ".join(MEMINFO))

PHASES = re.compile(r"gpusort: (\d+) records sorted by (.*?) in (\d+) runs \(load (\d+) ms, "
                    r"encode (\d+) ms, key build \d+ ms busy, sort (\d+) ms, refine \d+ ms, "
                    r"check \d+ ms, comparators \d+ ms, spill (\d+) ms, merge (\d+) ms\)")


def parse_snap(line):
    label, rest = line.split(" ", 1)
    return label, {k: float(v) for k, v in (kv.split("=", 1) for kv in rest.split())}


def connection(name, gucs, query, statements, outdir):
    """One connection running query `statements` times; returns a row per statement."""
    snapfile = os.path.join(outdir, "%s.snap" % name)
    pidfile = os.path.join(outdir, "%s.pid" % name)
    snapsh = os.path.join(outdir, "snap.sh")
    for f in (snapfile, pidfile):
        if os.path.exists(f):
            os.unlink(f)
    lines = ["SET client_min_messages = debug1;", "\\o %s" % pidfile,
             "SELECT pg_backend_pid();", "\\o",
             "\\! sh %s %s start %s" % (snapsh, snapfile, pidfile), "\\timing on"]
    for i in range(statements):
        lines += [query + ";", "\\! sh %s %s s%d %s" % (snapsh, snapfile, i + 1, pidfile)]
    env = dict(os.environ)
    env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " " + scale.pgoptions(gucs)).strip()
    proc = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"],
                          input="\n".join(lines) + "\n", text=True, capture_output=True, env=env)
    with open(os.path.join(outdir, "%s.psql" % name), "w") as f:
        f.write(proc.stdout + "\n--- stderr\n" + proc.stderr)
    if proc.returncode != 0:
        sys.exit("psql failed for %s: %s" % (name, proc.stderr.strip()[-2000:]))
    times = scale.timings(proc.stdout)
    phases = PHASES.findall(proc.stderr)
    with open(snapfile) as f:
        snaps = [parse_snap(l.strip()) for l in f if l.strip()]
    rows = []
    for i in range(statements):
        before, after = snaps[i][1], snaps[i + 1][1]
        delta = {k: after[k] - before.get(k, 0) for k in after if k != "t" and k not in LEVELS}
        row = {"statement": i + 1, "ms": times[i] if i < len(times) else None, "delta": delta,
               "after": {k: after.get(k) for k in LEVELS}}
        if i < len(phases):
            p = phases[i]
            row["phases"] = {"records": int(p[0]), "how": p[1], "runs": int(p[2]),
                             "load": int(p[3]), "encode": int(p[4]), "sort": int(p[5]),
                             "spill": int(p[6]), "merge": int(p[7])}
        rows.append(row)
        scale.log("  %-10s statement %d: %8.0f ms  %s  minflt %+.0f  cpu %.1f s  thp_fault_alloc %+.0f  "
                  "thp_fault_fallback %+.0f  compact_stall %+.0f  pgscan_direct %+.0f  pglazyfreed %+.0f" % (
                      name, i + 1, row["ms"] or -1,
                      "load %(load)d encode %(encode)d sort %(sort)d spill %(spill)d merge %(merge)d" % row["phases"]
                      if "phases" in row else "-",
                      delta.get("minflt", 0), (delta.get("utime", 0) + delta.get("stime", 0)) / 100,
                      delta.get("thp_fault_alloc", 0), delta.get("thp_fault_fallback", 0),
                      delta.get("compact_stall", 0), delta.get("pgscan_direct", 0),
                      delta.get("pglazyfreed", 0)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50000000)
    ap.add_argument("--table", default="p", help="table shape: %s" % ", ".join(scale.SHAPES))
    ap.add_argument("--settings", default="gpu,native",
                    help="settings, comma-separated: %s, or ones given by --define" % ", ".join(scale.SETTINGS))
    ap.add_argument("--define", action="append", default=[], metavar="NAME:GUC=VAL[,GUC=VAL]")
    ap.add_argument("--statements", type=int, default=5)
    ap.add_argument("--load-jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--out", default="bench/out/series")
    args = ap.parse_args()

    for d in args.define:
        name, _, spec = d.partition(":")
        scale.SETTINGS[name] = dict(kv.split("=", 1) for kv in spec.split(",") if kv)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "snap.sh"), "w") as f:
        f.write(SNAP)
    data_dir = scale.psql("SELECT current_setting('data_directory', true)").strip() or None
    table, facts = scale.make_table(args.table, args.rows, args.load_jobs, data_dir)
    query = "SELECT * FROM %s ORDER BY k OFFSET %d" % (table, args.rows)
    results = {"rows": args.rows, "table": args.table, "table_facts": facts, "settings": {}}
    for s in (x for x in args.settings.split(",") if x):
        if s not in scale.SETTINGS:
            sys.exit("unknown setting %s" % s)
        gucs = dict(scale.COMMON)
        gucs.update(scale.SETTINGS[s])
        scale.log("== %s: %s" % (s, scale.pgoptions(gucs)))
        results["settings"][s] = connection(s, gucs, query, args.statements, args.out)
        with open(os.path.join(args.out, "series.json"), "w") as f:
            json.dump(results, f, indent=1)
    scale.psql("DROP TABLE %s;" % table)

    md = ["| setting | statement | s | load | spill | merge | emit and the rest | minor faults | "
          "backend CPU s | THP faults | THP fallbacks | compaction stalls | direct reclaim scans |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, rows in results["settings"].items():
        for r in rows:
            p, d = r.get("phases"), r["delta"]
            rest = r["ms"] - sum(p[k] for k in ("load", "encode", "sort", "spill", "merge")) if p else None
            md.append("| %s | %d | %.2f | %s | %s | %s | %s | %.0f | %.1f | %.0f | %.0f | %.0f | %.0f |" % (
                s, r["statement"], r["ms"] / 1000,
                p["load"] if p else "", p["spill"] if p else "", p["merge"] if p else "",
                "%.0f" % rest if p else "", d.get("minflt", 0),
                (d.get("utime", 0) + d.get("stime", 0)) / 100, d.get("thp_fault_alloc", 0),
                d.get("thp_fault_fallback", 0), d.get("compact_stall", 0), d.get("pgscan_direct", 0)))
    with open(os.path.join(args.out, "series.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

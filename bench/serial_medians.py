# bench/serial_medians.py: medians of bench/parallel-ab.sh --mode serial
# logs, one line a table size, kind (warm: one session's statements after
# its first; fresh: the first statement of new connections) and build: the
# statement, and its stages from gpusort's DEBUG1 line, in ms.  "rest" is
# the statement less load, encode and sort: starting, emitting the rows.
# The scan (the same statement without ORDER BY) is the host's floor; its
# spread is the host's noise.  Several logs pool their samples.
#
#   python3 bench/serial_medians.py serial-ab.log [more.log ...]
import re
import statistics
import sys

STAGES = re.compile(r"^(\w+) (warm|fresh): (\d+) records sorted.*"
                    r"\(load (\d+) ms, encode (\d+) ms.* sort (\d+) ms")
SCAN = re.compile(r"^(\w+) warm: SCAN")
TIME = re.compile(r"^(\w+) (warm|fresh): Time: ([\d.]+) ms")

samples = {}
for path in sys.argv[1:]:
    rows = None
    pending = None
    for line in open(path):
        m = STAGES.match(line)
        if m:
            build, kind, rows = m.group(1), m.group(2), int(m.group(3))
            pending = (build, kind, [int(m.group(i)) for i in (4, 5, 6)])
            continue
        m = SCAN.match(line)
        if m:
            pending = (m.group(1), "scan", None)
            continue
        m = TIME.match(line)
        if m and pending:
            build, kind, stages = pending
            ms = float(m.group(3))
            s = samples.setdefault((rows, kind, build), {"statement": []})
            s["statement"].append(ms)
            if stages:
                for name, v in zip(("load", "encode", "sort"), stages):
                    s.setdefault(name, []).append(v)
                s.setdefault("rest", []).append(ms - sum(stages))
            pending = None

for (rows, kind, build), s in sorted(samples.items()):
    print("%11d %-5s %-3s n=%-2d %s" % (
        rows, kind, build, len(s["statement"]),
        "  ".join("%s %.0f" % (k, statistics.median(v)) for k, v in s.items())))

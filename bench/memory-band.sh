#!/bin/bash
# bench/memory-band.sh: a sort just above the memory PostgreSQL's Sort needs
# to sort in memory, GpuSort against Sort in the same session, on the same
# rows, at the same budget (work_mem for Sort, gpusort.max_memory for
# GpuSort).
#
# The rows of TAP test 019_temp_space.pl: ROWS (default 1000000) of
# (id int4, k int4, pad text of 32 characters), ORDER BY k, id.  The
# budgets: Sort's own peak in memory (EXPLAIN ANALYZE at 1GB, the least
# that keeps it in memory), a tenth and a fifth more, and 1GB.  There a
# GpuSort with keys would hold more than Sort and write a run; it gives its
# keys up and sorts in memory by the comparators.  Each statement runs RUNS
# times (default 5), Sort and GpuSort in turn, each on a new connection;
# the medians, their ratio, what each wrote (EXPLAIN ANALYZE), and every
# sample (on standard error).
#
#   bench/memory-band.sh [RUNS]   against the server of $PGHOST/$PGPORT,
#                                 gpusort preloaded and installed
set -euo pipefail
runs=${1:-5}
rows=${ROWS:-1000000}
psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS gpusort;
DROP TABLE IF EXISTS band;
CREATE TABLE band AS
  SELECT g::int4 AS id, hashint8(g) AS k, md5(g::text) AS pad
  FROM generate_series(1, $rows) g;
VACUUM ANALYZE band;
SQL
explain="EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM band ORDER BY k, id"
query="SELECT * FROM band ORDER BY k, id OFFSET $rows"
peak=$(psql -X -At -c "SET gpusort.enabled = off; SET work_mem = '1GB';" -c "$explain" \
  | sed -n 's/.*Memory: \([0-9]*\)kB.*/\1/p')
echo "PostgreSQL: $(psql -X -At -c 'SHOW server_version'); $rows rows; Sort's peak in memory ${peak} kB"
echo "| budget | Sort | Sort wrote | GpuSort | GpuSort wrote | how GpuSort sorted | GpuSort / Sort |"
echo "|---|---:|---|---:|---|---|---:|"
for budget in "${peak}kB" "$((peak * 11 / 10))kB" "$((peak * 12 / 10))kB" 1GB; do
  native_set="SET gpusort.enabled = off; SET work_mem = '$budget';"
  gpu_set="SET gpusort.max_memory = '$budget';"
  native_wrote=$(psql -X -At -c "$native_set" -c "$explain" | grep -o 'Disk: [0-9]*kB' || echo none)
  gpu_plan=$(psql -X -At -c "$gpu_set" -c "$explain")
  gpu_wrote=$(echo "$gpu_plan" | grep -o 'Disk Used: [0-9]* kB' || echo none)
  engine=$(echo "$gpu_plan" | sed -n 's/^ *Sort Engine: //p')
  samples=$(for _ in $(seq "$runs"); do
      psql -X -At -c "$native_set" -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/native \1/p'
      psql -X -At -c "$gpu_set" -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/gpusort \1/p'
    done)
  echo "$samples" | python3 -c '
import sys, statistics
budget, nw, gw, engine = sys.argv[1:5]
s = {"native": [], "gpusort": []}
for line in sys.stdin:
    k, v = line.split()
    s[k].append(float(v))
n, g = statistics.median(s["native"]), statistics.median(s["gpusort"])
print("| %s | %.1f | %s | %.1f | %s | %s | %.2f |" % (budget, n, nw, g, gw, engine, g / n))
print("samples %s: native %s; gpusort %s" % (budget, s["native"], s["gpusort"]), file=sys.stderr)
' "$budget" "$native_wrote" "$gpu_wrote" "$engine"
done

#!/bin/bash
# bench/never-slower.sh: the shapes where GpuSort must not be slower than
# PostgreSQL's Sort on the same plan, GpuSort against Sort on the same
# rows, in the same run, at the same budget (work_mem for Sort,
# gpusort.max_memory for GpuSort):
#   budget   ROWS_TEXT (default 1000000) rows of md5 text, ORDER BY t, at
#            budgets from 64 kB up (BUDGETS, default 64kB 1MB 4MB 16MB
#            256MB): how many runs each writes, and how long it takes;
#   keyless  ROWS_TYPES (default 300000) rows, ORDER BY a type without a
#            normalized key (int4range, int4[], jsonb, citext): at the
#            defaults the planner leaves such a Sort to PostgreSQL, so the
#            plan is Sort's ("Sort" in the engine column); with
#            gpusort.keyless_sorts = on GpuSort's comparators order it, for
#            the record;
#   multi    ROWS_MULTI (default 2000000) rows of (k int8 with KEYS_MULTI
#            distinct values, default ROWS_MULTI/10, t md5 text), ORDER BY
#            k, t in the database's collation (en_US.UTF-8 where the server
#            has it), and the same rows ORDER BY b, t, b a boolean (two tie
#            ranges of a million rows), at MULTI_BUDGET (default 1GB, where
#            both sorts hold their rows in memory).
# SHAPES (default "budget keyless multi") picks the shapes to run.
# Each statement runs RUNS times (default 3), Sort and GpuSort in turn, each
# on a new connection (a fresh session: its start-up included, as for a
# short-lived client); the table gives the medians, their ratio, what each
# wrote to temporary files and how GpuSort sorted (EXPLAIN ANALYZE), and
# standard error every sample.
#
#   bench/never-slower.sh [RUNS]   against the server of $PGHOST/$PGPORT,
#                                  gpusort preloaded
set -euo pipefail
runs=${1:-3}
rows_text=${ROWS_TEXT:-1000000}
rows_types=${ROWS_TYPES:-300000}
rows_multi=${ROWS_MULTI:-2000000}
keys_multi=${KEYS_MULTI:-$((rows_multi / 10))}
multi_budget=${MULTI_BUDGET:-1GB}
shapes=${SHAPES:-budget keyless multi}
budgets=${BUDGETS:-64kB 1MB 4MB 16MB 256MB}
psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
CREATE EXTENSION IF NOT EXISTS citext;
DROP TABLE IF EXISTS ns_text, ns_types, ns_multi;
CREATE TABLE ns_text AS SELECT md5(g::text) AS t FROM generate_series(1, $rows_text) g;
CREATE TABLE ns_types AS
  SELECT g AS id, int4range(g % 1000, g % 1000 + 1 + g % 17) AS r,
         ARRAY[g % 100, hashint4(g) % 1000] AS ia,
         jsonb_build_object('a', g % 500, 'b', md5(g::text)) AS j,
         (md5(g::text))::citext AS c
  FROM generate_series(1, $rows_types) g;
CREATE TABLE ns_multi AS
  SELECT (hashint4(g) % $keys_multi)::int8 AS k, hashint4(g * 3) % 2 = 0 AS b,
         md5(g::text) AS t
  FROM generate_series(1, $rows_multi) g;
VACUUM ANALYZE ns_text, ns_types, ns_multi;
SQL
echo "PostgreSQL: $(psql -X -At -c 'SHOW server_version'); collation $(psql -X -At -c 'SHOW lc_collate'); $(nproc) CPUs; gpusort.engine $(psql -X -At -c 'SHOW gpusort.engine')"
echo
echo "| shape | statement | budget | Sort ms | Sort wrote | GpuSort ms | GpuSort wrote | how GpuSort sorted | GpuSort / Sort |"
echo "|---|---|---|---:|---|---:|---|---|---:|"

# measure SHAPE BUDGET EXTRA_GPUSORT_SETTINGS SELECT...: one row of the table
measure() {
  local shape=$1 budget=$2 extra=$3 query=$4
  local native_set="SET max_parallel_workers_per_gather = 0; SET gpusort.enabled = off; SET work_mem = '$budget';"
  local gpu_set="SET max_parallel_workers_per_gather = 0; SET work_mem = '$budget'; SET gpusort.max_memory = '$budget'; $extra"
  local explain="EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query"
  local native_plan gpu_plan native_wrote gpu_wrote how samples
  native_plan=$(psql -X -At -c "$native_set" -c "$explain")
  gpu_plan=$(psql -X -At -c "$gpu_set" -c "$explain")
  native_wrote=$(echo "$native_plan" | grep -o 'Disk: [0-9]*kB' | head -1 || true)
  gpu_wrote=$(echo "$gpu_plan" | sed -n 's/^ *Runs Written: \([0-9]*\).*/\1 runs/p' | head -1)
  gpu_wrote="${gpu_wrote:-none}$(echo "$gpu_plan" | sed -n 's/^ *Disk Used: \([0-9]* kB\).*/, \1/p' | head -1)"
  if echo "$gpu_plan" | grep -q 'Custom Scan (GpuSort)'; then
    how=$(echo "$gpu_plan" | sed -n 's/^ *Sort Engine: //p' | head -1)
  else
    how="Sort (left to PostgreSQL)"; gpu_wrote=${native_wrote:-none}
  fi
  samples=$(for _ in $(seq "$runs"); do
      psql -X -At -c "$native_set" -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/native \1/p'
      psql -X -At -c "$gpu_set" -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/gpusort \1/p'
    done)
  echo "$samples" | python3 -c '
import sys, statistics
shape, query, budget, nw, gw, how = sys.argv[1:7]
s = {"native": [], "gpusort": []}
for line in sys.stdin:
    k, v = line.split()
    s[k].append(float(v))
n, g = statistics.median(s["native"]), statistics.median(s["gpusort"])
print("| %s | `%s` | %s | %.0f | %s | %.0f | %s | %s | %.2f |" % (shape, query, budget, n, nw or "none", g, gw, how, g / n))
print("samples %s %s %s: native %s; gpusort %s" % (shape, query, budget, s["native"], s["gpusort"]), file=sys.stderr)
' "$shape" "${query% OFFSET*}" "$budget" "$native_wrote" "$gpu_wrote" "$how"
}

case " $shapes " in *" budget "*)
  for budget in $budgets; do
    measure budget "$budget" "" "SELECT * FROM ns_text ORDER BY t OFFSET $rows_text"
  done;;
esac
case " $shapes " in *" keyless "*)
  for col in r ia j c; do
    measure keyless 64MB "" "SELECT * FROM ns_types ORDER BY $col OFFSET $rows_types"
  done
  for col in r c; do
    measure keyless 64MB "SET gpusort.keyless_sorts = on;" "SELECT * FROM ns_types ORDER BY $col OFFSET $rows_types"
  done;;
esac
case " $shapes " in *" multi "*)
  measure multi "$multi_budget" "" "SELECT k, t FROM ns_multi ORDER BY k, t OFFSET $rows_multi"
  measure multi "$multi_budget" "" "SELECT b, t FROM ns_multi ORDER BY b, t OFFSET $rows_multi";;
esac
psql -X -q -c "DROP TABLE ns_text, ns_types, ns_multi"

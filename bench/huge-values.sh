#!/bin/bash
# bench/huge-values.sh: sorts of a few huge values, GpuSort against
# PostgreSQL's Sort in the same session, on the same rows.
#
# Four rows of text of VALUE_MB (default 100) MB each, stored out of line
# and compressed, alike but for their last characters, so that every
# comparison reads them whole; sorted by that text under each kind of
# collation: "C" (bytes), libc's C.UTF-8, ICU's und-x-icu, a
# nondeterministic ICU collation (und-u-ks-level2, case-insensitive), and
# "C" again at a 64 kB budget (work_mem and gpusort.max_memory).  Only the
# row's id goes to the client.  Each query runs RUNS times (default 5) in
# one session, native and gpusort in turn; the medians, their ratio, and
# every sample.
#
#   bench/huge-values.sh [RUNS]    against the server of $PGHOST/$PGPORT,
#                                  gpusort installed (GPUSORT_ENGINE: the
#                                  engine to force, default gpu)
set -euo pipefail
runs=${1:-5}
mb=${VALUE_MB:-100}
engine=${GPUSORT_ENGINE:-gpu}
psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS gpusort;
DROP TABLE IF EXISTS huge;
CREATE TABLE huge (id int, v text);
INSERT INTO huge
  SELECT i, repeat(md5('huge'), $mb * 1024 * 1024 / 32) || chr(64 + (i * 7) % 26)
    FROM generate_series(1, 4) i;
DROP COLLATION IF EXISTS huge_libc;
DROP COLLATION IF EXISTS huge_ci;
CREATE COLLATION huge_libc (provider = libc, locale = 'C.UTF-8');
CREATE COLLATION huge_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
VACUUM ANALYZE huge;
SQL
psql -X -qAt -c "SELECT 'stored: ' || pg_size_pretty(pg_total_relation_size('huge')) || ' for ' || pg_size_pretty(sum(octet_length(v))) FROM huge"

# time_query SETUP QUERY: RUNS times \timing's milliseconds, one a line
time_query() {
  { echo "LOAD 'gpusort'; SET gpusort.engine = $engine; SET gpusort.min_rows = 0; $1"
    echo '\timing on'
    for _ in $(seq "$runs"); do echo "$2;"; done
  } | psql -X -q -o /dev/null 2>&1 | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf '%-34s %10s %10s %7s\n' 'ORDER BY' 'native ms' 'gpusort ms' 'ratio'
while IFS='|' read -r name order setup; do
  q="SELECT id FROM huge ORDER BY $order"
  a=$(psql -X -qAt -c "SET gpusort.enabled = off; $setup $q" | tr '\n' ,)
  b=$(psql -X -qAt -c "LOAD 'gpusort'; SET gpusort.engine = $engine; SET gpusort.min_rows = 0; $setup $q" | tr '\n' ,)
  [ "$a" = "$b" ] || { echo "$name: gpusort returned $b, Sort $a" >&2; exit 1; }
  native=$(time_query "SET gpusort.enabled = off; $setup" "$q")
  gpusort=$(time_query "$setup" "$q")
  n=$(echo "$native" | median); g=$(echo "$gpusort" | median)
  printf '%-34s %10.1f %10.1f %7.2f\n' "$name" "$n" "$g" "$(awk -v g="$g" -v n="$n" 'BEGIN {print g / n}')"
  echo "  samples native: $(echo $native)  gpusort: $(echo $gpusort)"
done <<'EOF2'
v COLLATE "C"|v COLLATE "C"|
v COLLATE huge_libc (C.UTF-8)|v COLLATE huge_libc|
v COLLATE "und-x-icu"|v COLLATE "und-x-icu"|
v COLLATE huge_ci (nondeterministic)|v COLLATE huge_ci|
v COLLATE "C", 64 kB|v COLLATE "C"|SET work_mem = '64kB'; SET gpusort.max_memory = '64kB';
EOF2
psql -X -q -c "DROP TABLE huge"

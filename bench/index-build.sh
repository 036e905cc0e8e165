#!/bin/bash
# bench/index-build.sh: CREATE INDEX built by PostgreSQL and through
# gpusort, on the same rows, in the same run, at the same
# maintenance_work_mem (MWM, default 1GB):
#   int8   ROWS_INT8 (default 10000000) rows of random int8, CREATE INDEX
#          ON (k);
#   text   ROWS_TEXT (default 1000000) rows of md5 text, CREATE INDEX ON
#          (t) in the database's collation (en_US.UTF-8 where the server
#          has it).
# Each build runs RUNS times (default 3), the three in turn each time: PostgreSQL's serial
# build (max_parallel_maintenance_workers = 0), PostgreSQL's build with
# WORKERS maintenance workers (default: the server's
# max_parallel_maintenance_workers), and gpusort's (gpusort.index_builds =
# on); each on a new connection, the index dropped after it.  The table
# gives the medians and their ratios, and standard error every sample.
#
#   bench/index-build.sh [RUNS]   against the server of $PGHOST/$PGPORT,
#                                 gpusort preloaded
set -euo pipefail
runs=${1:-3}
rows_int8=${ROWS_INT8:-10000000}
rows_text=${ROWS_TEXT:-1000000}
mwm=${MWM:-1GB}
psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
DROP TABLE IF EXISTS ib_int8, ib_text;
CREATE TABLE ib_int8 AS SELECT (random() * 9e18)::int8 AS k FROM generate_series(1, $rows_int8);
CREATE TABLE ib_text AS SELECT md5(g::text) AS t FROM generate_series(1, $rows_text) g;
VACUUM ANALYZE ib_int8, ib_text;
SQL

# one build's seconds: the statement's own time, on a new connection
build() {
	local settings=$1 table=$2 column=$3
	psql -X -q -v ON_ERROR_STOP=1 -At <<SQL
SET maintenance_work_mem = '$mwm';
$settings
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX ib_idx ON $table ($column);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3);
DROP INDEX ib_idx;
SQL
}

declare -A how=(
	[serial]="SET gpusort.enabled = off; SET max_parallel_maintenance_workers = 0;"
	[workers]="SET gpusort.enabled = off; ${WORKERS:+SET max_parallel_maintenance_workers = $WORKERS;}"
	[gpusort]="SET gpusort.index_builds = on;"
)
printf '%-6s %-8s %s\n' key build "seconds (median of $runs; samples)"
for key in int8 text; do
	column=$([ $key = int8 ] && echo k || echo t)
	declare -A samples=([serial]="" [workers]="" [gpusort]="")
	for ((i = 0; i < runs; i++)); do
		for who in serial workers gpusort; do
			s=$(build "${how[$who]}" "ib_$key" "$column")
			samples[$who]+="$s "
			echo "$key $who $s" >&2
		done
	done
	declare -A med=()
	for who in serial workers gpusort; do
		med[$who]=$(printf '%s\n' ${samples[$who]} | sort -n | sed -n "$(((runs + 1) / 2))p")
		printf '%-6s %-8s %s (%s)\n' "$key" "$who" "${med[$who]}" "${samples[$who]% }"
	done
	awk -v s="${med[serial]}" -v w="${med[workers]}" -v g="${med[gpusort]}" -v k="$key" \
		'BEGIN { printf "%-6s gpusort against serial %.2fx, against workers %.2fx\n", k, s / g, w / g }'
done

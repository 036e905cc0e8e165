#!/bin/bash
# test/gpu/pgbench.sh: many clients sorting at once, gpusort on and off.
#
#   test/gpu/pgbench.sh [OUTDIR]        (OUTDIR defaults to $OUT/pgbench or test/gpu/out/pgbench)
#
# Starts a throwaway server (bench/pgserver.sh) with gpusort preloaded,
# fills a table of PGBENCH_ROWS rows, then runs pgbench twice on the same
# data, with the same clients and duration: once with gpusort.enabled = on
# (on PGBENCH_ENGINE) and once off (PostgreSQL's Sort).  Each transaction is
# one of the scripts in test/gpu/pgbench/ (ORDER BY an integer, a float and
# an integer, text, a window function), each sorting the PGBENCH_SPAN rows
# of one of PGBENCH_WINDOWS ranges of ids, chosen at random, and checks its
# own result against the aggregates of that range, which need no sort and
# are computed once before the runs (bench_expect): a wrong row is an
# error, and the check costs an index probe, so that throughput measures
# the sorts rather than the checking.
#
# The server has shared_buffers = 4GB, as bench/scale.sh's, so that the
# table lies in shared buffers as it would on a server of this size: with
# the default 128 MB every query's scan would read its 2M rows' pages from
# the kernel's page cache through the buffer pool's clock sweep, contended
# by every client, which is neither gpusort's work nor native's.  work_mem
# stays at its default (4 MB), as on a server with hundreds of connections,
# so native sorts spill.
#
# It fails unless, in both runs, no client aborted and no transaction
# failed, no ERROR or FATAL reached the server log (a GPU out of memory
# must end in a fallback, never in an error), and, with gpusort on, the
# GpuSorts happened (counted from the DEBUG1 line each sort logs).  It
# reports transactions per second on and off, how the sorts were done, the
# most host memory all sorts held at once (gpusort_stat, sampled each
# second) against gpusort.server_memory, the runs written for each memory
# budget, and, where there are GPUs, the sorts each GPU served
# (gpusort_gpus) and the most memory nvidia-smi showed in use on each,
# sampled each second, against the service's budget for it.
#
# Environment (defaults for the GPU host; for a quick run elsewhere, e.g.
# PGBENCH_ENGINE=cpu PGBENCH_CLIENTS=8 PGBENCH_DURATION=20 PGBENCH_ROWS=500000
# PGBENCH_SPAN=100000):
#   PGBENCH_CLIENTS   clients (32)
#   PGBENCH_DURATION  seconds of each run (300)
#   PGBENCH_ROWS      rows in the table (2000000)
#   PGBENCH_SPAN      rows each query sorts (250000)
#   PGBENCH_WINDOWS   ranges of ids the queries choose from (16)
#   PGBENCH_ENGINE    gpusort.engine for the "on" run (gpu)
#   PGBENCH_EXTRA_CONF more server settings (lines)
#   PGBENCH_MODES     which runs, in order ("on off"; "on" alone to compare
#                     variants of gpusort against a native run made once)
#   GPUSORT_NO_BUILD  1: use the installed gpusort, do not build and install
#   PG_CONFIG, GPUSORT_TEST_USER as for test/run.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-${OUT:+$OUT/pgbench}}
out=${out:-$root/test/gpu/out/pgbench}
clients=${PGBENCH_CLIENTS:-32}
duration=${PGBENCH_DURATION:-300}
rows=${PGBENCH_ROWS:-2000000}
span=${PGBENCH_SPAN:-250000}
windows=${PGBENCH_WINDOWS:-16}
step=$(( windows > 1 ? (rows - span) / (windows - 1) : 0 ))
engine=${PGBENCH_ENGINE:-gpu}
modes=${PGBENCH_MODES:-on off}
mkdir -p "$out"
export PG_CONFIG=${PG_CONFIG:-pg_config}

if [ "${GPUSORT_NO_BUILD:-0}" != 1 ]; then
  make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" && make -C "$root" -s PG_CONFIG="$PG_CONFIG" install \
    || { echo "FAIL: build"; exit 1; }
fi

# shellcheck source=../../bench/pgserver.sh
. "$root/bench/pgserver.sh"
dir=$(mktemp -d /tmp/gpusort-pgbench.XXXXXX)
export PGSERVER_PORT=${PGSERVER_PORT:-54341}
trap 'pgserver_stop' EXIT
pgserver_start "$dir" \
  "shared_preload_libraries = 'gpusort'" \
  "gpusort.engine = '$engine'" \
  "gpusort.min_rows = 0" \
  "gpusort.gpu_min_rows = 0" \
  "max_connections = $((clients + 20))" \
  "shared_buffers = '4GB'" \
  "max_parallel_workers_per_gather = 0" \
  "jit = off" \
  "lc_messages = 'C'" \
  "log_min_messages = debug1" \
  "log_line_prefix = '%m [%p] '" \
  "${PGBENCH_EXTRA_CONF:-}" || { echo "FAIL: server start"; exit 1; }
log=$dir/server.log

psql -XqAt -v ON_ERROR_STOP=1 <<SQL || { echo "FAIL: setup"; exit 1; }
CREATE EXTENSION gpusort;
CREATE TABLE bench AS
  SELECT g AS id, hashint4(g) % 1000000 AS k, md5(g::text) AS s,
         (hashint4(g + 1) % 100000)::float8 / 7 AS f
    FROM generate_series(1, $rows) g;
CREATE INDEX ON bench (id);
ANALYZE bench;
-- what each range's sorts must give, computed with aggregates, no sort
CREATE TABLE bench_expect AS
  SELECT lo, a.min_k, a.max_k, a.max_f, a.max_s,
         (SELECT max(k) FROM bench WHERE id BETWEEN lo AND lo + $span - 1 AND f = a.max_f) AS max_k_at_max_f
    FROM (SELECT 1 + w * $step AS lo FROM generate_series(0, $windows - 1) w) r,
         LATERAL (SELECT min(k) AS min_k, max(k) AS max_k, max(f) AS max_f, max(s) AS max_s
                    FROM bench WHERE id BETWEEN lo AND lo + $span - 1) a;
CREATE UNIQUE INDEX ON bench_expect (lo);
SQL
echo "== pgbench: $clients clients, ${duration}s per run, $rows rows, $span rows per sort ($windows ranges), engine $engine"
psql -XqAt -c "SELECT 'gpusort ' || version || ', ' || build || ', engines ' || engines || ', ' || gpus FROM gpusort_info()"
psql -XqAt -c "EXPLAIN (COSTS OFF) SELECT k FROM bench WHERE id BETWEEN 1 AND $span ORDER BY k DESC, id OFFSET $span - 1" \
  | grep -q 'Custom Scan (GpuSort)' || { echo "FAIL: the queries are not GpuSorts"; exit 1; }

# runs written so far for each budget: "max_memory, server_memory"
stat_runs()
{
  psql -XqAt -c "SELECT string_agg(value::text, ', ' ORDER BY detail) FROM gpusort_stat WHERE what = 'runs written'"
}

# sorts served so far by each GPU of the service: "device:served ..."
gpus_served()
{
  psql -XqAt -c "SELECT coalesce(string_agg(device || ':' || served, ' ' ORDER BY device), 'no GPU') FROM gpusort_gpus"
}
have_smi=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && have_smi=1

scripts=()
for f in "$root"/test/gpu/pgbench/*.sql; do scripts+=(-f "$f"); done
status=0
declare -A tps
for mode in $modes; do
  offset=$(stat -c %s "$log")
  runs_before=$(stat_runs)
  served_before=$(gpus_served)
  : > "$out/gpu-memory-$mode.csv"
  PGOPTIONS="-c gpusort.enabled=$mode" pgbench -n -c "$clients" -j "$clients" -T "$duration" \
      -D span="$span" -D windows="$windows" -D step="$step" -P 30 "${scripts[@]}" > "$out/pgbench-$mode.log" 2>&1 &
  pgbench_pid=$!
  # the host memory all sorts hold together, sampled each second
  held_peak=0
  while kill -0 "$pgbench_pid" 2>/dev/null; do
    held=$(psql -XqAt -c "SELECT value FROM gpusort_stat WHERE what = 'now' AND detail = 'sort memory held'" 2>/dev/null)
    [ -n "$held" ] && [ "$held" -gt "$held_peak" ] && held_peak=$held
    [ $have_smi = 1 ] && nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits \
        >> "$out/gpu-memory-$mode.csv" 2>/dev/null
    sleep 1
  done
  wait "$pgbench_pid"
  rc=$?
  runs_after=$(stat_runs)
  tail -c +$((offset + 1)) "$log" > "$out/server-$mode.log"
  tps[$mode]=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$out/pgbench-$mode.log" | head -1)
  processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out/pgbench-$mode.log")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out/pgbench-$mode.log")
  aborted=$(grep -c 'aborted' "$out/pgbench-$mode.log")
  errors=$(grep -cE '(ERROR|FATAL|PANIC): ' "$out/server-$mode.log")
  gpu_oom=$(grep -ciE '(ERROR|FATAL): .*(out of memory|cuda|gpu)' "$out/server-$mode.log")
  by_gpu=$(grep -c 'gpusort: .* sorted by GPU' "$out/server-$mode.log")
  by_cpu=$(grep -c 'gpusort: .* sorted by CPU' "$out/server-$mode.log")
  by_cmp=$(grep -c 'gpusort: .* sorted by PostgreSQL comparators' "$out/server-$mode.log")
  gpu_fallbacks=$(grep 'gpusort: ' "$out/server-$mode.log" | grep -c 'fallback: .*GPU')
  echo "gpusort $mode: tps ${tps[$mode]:-?}, transactions ${processed:-?}, failed ${failed:-0}," \
       "clients aborted $aborted, server errors $errors (GPU/out of memory $gpu_oom);" \
       "sorts by GPU $by_gpu, CPU $by_cpu, comparators $by_cmp, GPU fallbacks $gpu_fallbacks"
  echo "gpusort $mode: sort memory held at most $((held_peak / 1048576)) MB of gpusort.server_memory's" \
       "$(($(psql -XqAt -c "SELECT value FROM gpusort_stat WHERE detail = 'sort memory limit'") / 1048576)) MB;" \
       "runs written (for gpusort.max_memory, for gpusort.server_memory): before $runs_before, after $runs_after"
  if [ $have_smi = 1 ]; then
    echo "gpusort $mode: sorts served by each GPU (device:served): before $served_before, after $(gpus_served);" \
         "GPU memory in use at most (nvidia-smi, MiB): $(awk -F', *' '$2 > m[$1] { m[$1] = $2 }
             END { for (d in m) printf "%s:%d ", d, m[d] }' "$out/gpu-memory-$mode.csv");" \
         "the service's budget per GPU (MiB): $(psql -XqAt -c "SELECT coalesce(string_agg(device || ':' || memory_budget / 1048576, ' ' ORDER BY device), 'no GPU') FROM gpusort_gpus")"
  fi
  grep -E '(ERROR|FATAL|PANIC): ' "$out/server-$mode.log" | sed 's/^[^]]*] //' | sort | uniq -c | sort -rn | head -5
  grep 'gpusort: ' "$out/server-$mode.log" | grep 'fallback: ' | sed 's/.*fallback: /  fallback: /' \
    | sort | uniq -c | sort -rn | head -5
  if [ $rc -ne 0 ] || [ "$aborted" -ne 0 ] || [ "${failed:-0}" -ne 0 ] || [ "$errors" -ne 0 ] \
     || [ -z "$processed" ] || [ "$processed" -eq 0 ]; then
    tail -5 "$out/pgbench-$mode.log"
    echo "FAIL: gpusort $mode: errors in the pgbench run"
    status=1
  fi
  if [ "$mode" = on ]; then
    sorted=$((by_gpu + by_cpu + by_cmp))
    if [ "$sorted" -eq 0 ]; then echo "FAIL: no GpuSort ran"; status=1; fi
    if [ "$engine" = gpu ] && [ "$by_gpu" -eq 0 ]; then echo "FAIL: the GPU did no sort"; status=1; fi
  fi
done
if [ -n "${tps[on]:-}" ] && [ -n "${tps[off]:-}" ]; then
  echo "throughput: gpusort on ${tps[on]} tps, off ${tps[off]} tps: $(awk -v a="${tps[on]}" -v b="${tps[off]}" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "?" }')"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > "$out/gpu-after.txt" 2>&1
fi
[ $status -eq 0 ] && echo "== pgbench passed" || echo "== pgbench FAILED"
exit $status

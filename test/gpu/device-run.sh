#!/bin/bash
# test/gpu/device-run.sh: the phases of one run on the GPU test host
# (test/gpu/README.md: how the host gets PostgreSQL and gpusort).
#
#   test/gpu/prepare.sh                                   (here, once)
#   source .device/pg-on-device.sh && test/gpu/device-run.sh PHASE...    (there)
#   export PG_MAJOR=17; source .device/pg-on-device.sh && test/gpu/device-run.sh PHASE...
#
# PHASE: tests (test/gpu/run.sh: regression suite on the GPU engine and
# kernel tests), bench (bench/run.sh on 1M and 10M rows), targets (the
# speed targets at 10M rows, bench/results/speed-10m.md: ORDER BY k, ORDER BY
# f, k, LIMIT 100, numeric and COLLATE "C", native against the GPU, and the
# first three with each GPU algorithm forced, to check gpu_algorithm =
# auto), text (the text and numeric queries at 10M rows, native against the
# GPU), dists (the distribution runs at 10M rows), kernel
# (bench/kernel_bench.sh), pgbench (test/gpu/pgbench.sh: 32 clients,
# gpusort on then off, 150 s each by default), fuzz (the long round of
# test/fuzz/fuzz.py with gpusort.engine = gpu: seed 1 and a random one,
# FUZZ_MINUTES, default 6, FUZZ_ROWS rows, default 20000), resident
# (test/gpu/resident.sh: DROP DATABASE and the like while a GPU sort holds
# the GPU), admission (test/gpu/admission.sh: a request that does not fit
# holds up none behind it that does), core (PostgreSQL's own core regression suite, test/core/run.sh,
# gpusort off and then forced onto the GPU for every sort; the suite's
# sources and builds travel in .device/core, made here by
# GPUSORT_CORE_CACHE=.device/core test/core/run.sh prepare).  Logs and
# results go to $OUT (default /tmp/gpusort-out).  The PostgreSQL is the one
# PG_CONFIG names (pg-on-device.sh sets it, and PG_MAJOR picks 15, 17 or 19).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/gpusort-out}
mkdir -p "$out"
cd "$root"
# ICU's headers of the server's ICU version: pg-on-device.sh unpacks them
# beside PostgreSQL and puts them on CPATH; the same from .device/ otherwise
PG_CONFIG=${PG_CONFIG:-pg_config}
pgroot=${PG_CONFIG%/usr/lib/postgresql/*}
if [ "$pgroot" != "$PG_CONFIG" ] && [ ! -d "$pgroot/usr/include/unicode" ]; then
  debs=.device/debs; [ "${PG_MAJOR:-15}" = 15 ] || debs=.device/debs-$PG_MAJOR
  for f in "$debs"/icu-headers.tar.gz "$debs"/libicu-dev_*.deb; do
    case $f in
      *.tar.gz) [ -f "$f" ] && tar -xzf "$f" -C "$pgroot" ;;
      *.deb) [ -f "$f" ] && dpkg -x "$f" "$pgroot" ;;
    esac
  done
fi
[ -d "$pgroot/usr/include/unicode" ] && case ":${CPATH:-}:" in
  *":$pgroot/usr/include:"*) ;;
  *) export CPATH=$pgroot/usr/include${CPATH:+:$CPATH} ;;
esac
# build_install PHASE: build and install gpusort for the phase that needs
# it installed, the log in $out/PHASE-build.log (its tail if it fails)
build_install() {
  { make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" && make -s PG_CONFIG="$PG_CONFIG" install; } \
    > "$out/$1-build.log" 2>&1 || { tail -20 "$out/$1-build.log"; return 1; }
}
echo "PostgreSQL: $("$PG_CONFIG" --version)" > "$out/postgresql.txt"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > "$out/gpu.txt" 2>&1
for phase in "$@"; do
  echo "== $phase ($(date +%T))"
  case $phase in
    tests)
      GPUSORT_TEST_USER=pgrun test/gpu/run.sh "$out/tests" ;;
    bench)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 1000000,10000000 --runs 3 \
        --distributions '' --out "$out/bench" > "$out/bench.log" 2>&1
      tail -25 "$out/bench.log" ;;
    text)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --slow-runs 2 \
        --settings native,gpu --queries text --out "$out/text" > "$out/text.log" 2>&1
      tail -25 "$out/text.log" ;;
    targets)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --distributions '' \
        --settings native,native-par8,cpu,gpu,gpu-bucket,gpu-radix \
        --queries 'scan,order by k,order by f,limit 100' --out "$out/targets" > "$out/targets.log" 2>&1
      tail -12 "$out/targets.log"
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --settings native,gpu \
        --queries 'text: order by num,text: order by pad C' --out "$out/targets-text" \
        > "$out/targets-text.log" 2>&1
      tail -8 "$out/targets-text.log" ;;
    cancel)
      make -s install >/dev/null 2>&1; test/gpu/cancel.sh 10 2>&1 | tail -5 ;;
    phases)
      bench/phases.sh 10000000 > "$out/phases.log" 2>&1; cat "$out/phases.log" ;;
    dists)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 3 --settings native,cpu,gpu \
        --queries '[' --out "$out/dists" > "$out/dists.log" 2>&1
      tail -15 "$out/dists.log" ;;
    profile)
      GPUSORT_TEST_USER=pgrun bench/run.sh --rows 10000000 --runs 2 --settings cpu,gpu \
        --distributions '' --queries 'order by k' --out "$out/profile" > "$out/profile.log" 2>&1
      tail -8 "$out/profile.log"
      python3 -c "import json; [print(r['setting'], r['median_ms'], json.dumps(r['gpusort'])) for r in json.load(open('$out/profile/results.json'))]" ;;
    pgbench)
      GPUSORT_TEST_USER=pgrun PGBENCH_DURATION=${PGBENCH_DURATION:-150} \
        test/gpu/pgbench.sh "$out/pgbench" > "$out/pgbench.log" 2>&1
      tail -20 "$out/pgbench.log" ;;
    fuzz)
      for loc in en_US de_DE sv_SE; do
        locale -a 2>/dev/null | grep -qi "^$loc\.utf-\?8$" || localedef -i "$loc" -f UTF-8 "$loc.UTF-8" 2>/dev/null
      done
      build_install fuzz || continue
      python3 test/fuzz/fuzz.py --pg-config "$PG_CONFIG" --engine gpu --user pgrun \
        --seed 1 --seed random --minutes "${FUZZ_MINUTES:-6}" --rows "${FUZZ_ROWS:-20000}" \
        --max-failures 3 --minimize-seconds 60 --log-dir "$out/fuzz" > "$out/fuzz.log" 2>&1
      tail -15 "$out/fuzz.log" ;;
    resident)
      build_install resident || continue
      test/gpu/resident.sh "$out/resident" 2>&1 | tee "$out/resident.log" ;;
    admission)
      build_install admission || continue
      test/gpu/admission.sh "$out/admission" 2>&1 | tee "$out/admission.log" ;;
    core)
      build_install core || continue
      GPUSORT_TEST_USER=pgrun GPUSORT_CORE_CACHE=$root/.device/core \
        GPUSORT_CORE_EXTRA_CONF="gpusort.gpu_min_rows = 0
log_min_messages = debug1" test/core/run.sh off gpu > "$out/core.log" 2>&1
      tail -30 "$out/core.log" ;;
    kernel)
      bench/kernel_bench.sh > "$out/kernel_bench.log" 2>&1; tail -30 "$out/kernel_bench.log" ;;
  esac
done
echo "== done ($(date +%T))"

# bench/build.sh: sourced by the benchmarks that start servers of their own
# (bench/scale.sh, bench/shard.sh) after they set root: the PostgreSQL to
# use (PG_CONFIG, else the pg_config on PATH, else Debian's 15), and
# gpusort built and installed against it.  On the GPU host
# (test/gpu/pg-on-device.sh, which also puts ICU's headers on CPATH) that
# PostgreSQL lives under /opt/pg or /opt/pg17, and the servers run as the
# user pgrun, since commands there run as root, which PostgreSQL refuses.
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)}
if [[ $PG_CONFIG == /opt/pg* ]]; then
  export GPUSORT_TEST_USER=${GPUSORT_TEST_USER:-pgrun}
fi
if [ "${GPUSORT_NO_BUILD:-0}" != 1 ]; then
  make -C "$root" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG"
  make -C "$root" -s PG_CONFIG="$PG_CONFIG" install
fi

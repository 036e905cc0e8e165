# test/gpu/pg-on-device.sh: PostgreSQL on the GPU test host, which has no
# PostgreSQL and no network.  test/gpu/prepare.sh puts Debian's packages in
# .device/ and this script beside them; on the host, from the project root:
#
#   source .device/pg-on-device.sh                     # PostgreSQL 15
#   export PG_MAJOR=17; source .device/pg-on-device.sh  # PostgreSQL 17
#   export PG_MAJOR=19; source .device/pg-on-device.sh  # PostgreSQL 19
#
# It unpacks the packages of PG_MAJOR (15: Debian 12's, from .device/debs;
# 17: trixie's, from .device/debs-17) under /opt/pg (15) or /opt/pg17 (17),
# or 19's tree (experimental's, with sid's C library and loader, which its
# programs are patched to use, from .device/debs-19) under /opt/pg19;
# Debian's builds are relocatable, so pg_config and PGXS report paths under
# there.  It adds the libraries the host's Ubuntu lacks (ICU 72 or 76, and
# LDAP only if the host has no libldap.so.2; 19's tree has its own), puts that version's ICU
# headers on CPATH for the build, starts a server as the unprivileged user
# pgrun (PostgreSQL refuses to run as root) on socket directory /tmp, and
# exports PG_CONFIG, PATH, PGHOST, PGPORT, PGUSER, PGDATA and
# LD_LIBRARY_PATH, and a function pg_restart (exported, so that the test
# scripts call it too) that starts the server again with PG_EXTRA_OPTS
# (e.g. "-c shared_preload_libraries=gpusort"), its log in
# /tmp/pg-MAJOR.log, and fails if it does not start.  Sourcing
# it again on a warm host reuses what is there.

_pgdev_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_MAJOR=${PG_MAJOR:-15}
case $PG_MAJOR in
  15) _pgdev_root=/opt/pg; _pgdev_debs=$_pgdev_dir/debs; export PGPORT=5432 ;;
  17) _pgdev_root=/opt/pg17; _pgdev_debs=$_pgdev_dir/debs-17; export PGPORT=5433 ;;
  19) _pgdev_root=/opt/pg19; _pgdev_debs=$_pgdev_dir/debs-19; export PGPORT=5434 ;;
  *) echo "pg-on-device: PG_MAJOR is 15, 17 or 19, not $PG_MAJOR" >&2; return 1 2>/dev/null || exit 1 ;;
esac
export PG_MAJOR
export PGBIN=$_pgdev_root/usr/lib/postgresql/$PG_MAJOR/bin
export PG_CONFIG=$PGBIN/pg_config
# 19's tree holds sid's C library, which the host's own programs must not
# load: its programs find their libraries by their RPATH instead
if [ "$PG_MAJOR" != 19 ]; then
  export LD_LIBRARY_PATH=$_pgdev_root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# the libraries the server would load, from the loader it uses
_pgdev_ldd() {
  if [ -x "$_pgdev_root/ld-linux-x86-64.so.2" ]; then
    "$_pgdev_root/ld-linux-x86-64.so.2" --list "$1"
  else
    ldd "$1"
  fi
}
export PATH=$PGBIN:$PATH PGHOST=/tmp PGUSER=postgres PGDATA=/tmp/pgdata-$PG_MAJOR

if [ ! -x "$PGBIN/postgres" ]; then
  ls "$_pgdev_debs"/postgresql-"$PG_MAJOR"_*.deb >/dev/null 2>&1 || [ -f "$_pgdev_debs/pg$PG_MAJOR-tree.tar.xz" ] \
    || echo "pg-on-device: no PostgreSQL $PG_MAJOR packages in $_pgdev_debs (run test/gpu/prepare.sh $PG_MAJOR first)" >&2
  mkdir -p "$_pgdev_root"
  for _pgdev_txz in "$_pgdev_debs"/*.tar.xz; do
    [ -f "$_pgdev_txz" ] && tar -xJf "$_pgdev_txz" -C "$_pgdev_root"
  done
  for _pgdev_deb in "$_pgdev_debs"/*.deb; do
    [ -f "$_pgdev_deb" ] && dpkg -x "$_pgdev_deb" "$_pgdev_root"
  done
  for _pgdev_tgz in "$_pgdev_debs"/*.tar.gz; do
    [ -f "$_pgdev_tgz" ] && tar -xzf "$_pgdev_tgz" -C "$_pgdev_root"
  done
  # LDAP: only where the host lacks the library the server was linked with
  if [ -d "$_pgdev_debs/fallback" ] && _pgdev_ldd "$PGBIN/postgres" | grep -q 'not found'; then
    for _pgdev_deb in "$_pgdev_debs"/fallback/*.deb; do dpkg -x "$_pgdev_deb" "$_pgdev_root"; done
  fi
fi
if _pgdev_ldd "$PGBIN/postgres" | grep 'not found' >&2; then
  echo "pg-on-device: PostgreSQL $PG_MAJOR lacks the libraries above" >&2
fi
# ICU's headers (PostgreSQL's pg_locale.h includes unicode/ucol.h), of the
# ICU version this server was built with
[ -d "$_pgdev_root/usr/include/unicode" ] \
  && export CPATH=$_pgdev_root/usr/include${CPATH:+:$CPATH}

# IPC::Run for the TAP tests, where prepare.sh brought it (.device/perl)
for _pgdev_deb in "$_pgdev_dir"/perl/libipc-run-perl_*.deb; do
  [ -f "$_pgdev_deb" ] || continue
  [ -d /opt/perl ] || dpkg -x "$_pgdev_deb" /opt/perl
  export PERL5LIB=/opt/perl/usr/share/perl5${PERL5LIB:+:$PERL5LIB}
done

id pgrun >/dev/null 2>&1 || useradd -m pgrun
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" && chown pgrun "$PGDATA"
  su pgrun -c "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} $PGBIN/initdb -D $PGDATA -A trust -U postgres" \
    > /tmp/initdb-$PG_MAJOR.log 2>&1 \
    || { echo "pg-on-device: initdb failed:"; cat /tmp/initdb-$PG_MAJOR.log; }
fi
pg_restart() {
  su pgrun -c "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} $PGBIN/pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
  su pgrun -c "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} $PGBIN/pg_ctl -D $PGDATA -l /tmp/pg-$PG_MAJOR.log -w \
    -o \"-k /tmp -p $PGPORT -c listen_addresses='' -c jit=off ${PG_EXTRA_OPTS:-}\" start" >/dev/null \
    || { echo "pg-on-device: server start failed:"; tail -20 /tmp/pg-$PG_MAJOR.log; return 1; }
}
export -f pg_restart
pg_restart
"$PGBIN/psql" -X -At -c "SELECT 'postgres ready: ' || version()" || tail -20 /tmp/pg-$PG_MAJOR.log

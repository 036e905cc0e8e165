# bench/pgserver.sh: a throwaway PostgreSQL server for the demo and the
# benchmarks.  Source it, then:
#   pgserver_start DIR 'setting = value' ...   # initdb + start, socket in DIR
#   psql ...                                   # PGHOST/PGPORT/PGUSER are set
#   pgserver_stop                              # stop and remove DIR
# For several servers at once, call pgserver_start once for each, with its
# own DIR and PGSERVER_PORT (PGHOST and PGPORT are then the last one's),
# and pgserver_stop_all at the end.
# As root the server runs as an unprivileged user (GPUSORT_TEST_USER,
# default postgres), since PostgreSQL refuses to run as root.

source "$(dirname "${BASH_SOURCE[0]}")/../test/server_user.sh"

PG_CONFIG=${PG_CONFIG:-pg_config}
PGSERVER_BIN=$("$PG_CONFIG" --bindir)
PGSERVER_ALL=()

_pgserver_as() {
  if [ "$(id -u)" = 0 ]; then
    # from /, which that user may enter: a checkout under /root is not
    # (the server's directory is absolute, made by pgserver_start)
    (cd / && runuser -u "${GPUSORT_TEST_USER:-postgres}" -- "$@")
  else
    "$@"
  fi
}

pgserver_start() {
  PGSERVER_DIR=$(realpath -m "$1"); shift
  if [ "$(id -u)" = 0 ]; then
    server_user_add "${GPUSORT_TEST_USER:-postgres}"
  fi
  rm -rf "$PGSERVER_DIR"; mkdir -p "$PGSERVER_DIR"
  [ "$(id -u)" = 0 ] && chown "${GPUSORT_TEST_USER:-postgres}" "$PGSERVER_DIR"
  local locale=C.UTF-8
  locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$' && locale=en_US.UTF-8
  _pgserver_as "$PGSERVER_BIN/initdb" -D "$PGSERVER_DIR/data" -A trust -U postgres \
      --locale="$locale" -E UTF8 >"$PGSERVER_DIR/initdb.log" 2>&1 \
    || { cat "$PGSERVER_DIR/initdb.log"; return 1; }
  {
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$PGSERVER_DIR'"
    echo "port = ${PGSERVER_PORT:-54329}"
    for setting in "$@"; do echo "$setting"; done
  } >> "$PGSERVER_DIR/data/postgresql.conf"
  _pgserver_as "$PGSERVER_BIN/pg_ctl" -D "$PGSERVER_DIR/data" -l "$PGSERVER_DIR/server.log" -w start >/dev/null \
    || { tail -20 "$PGSERVER_DIR/server.log"; return 1; }
  PGSERVER_ALL+=("$PGSERVER_DIR")
  export PGHOST=$PGSERVER_DIR PGPORT=${PGSERVER_PORT:-54329} PGUSER=postgres PGDATABASE=postgres
  export PATH=$PGSERVER_BIN:$PATH
}

pgserver_stop() {
  [ -n "${PGSERVER_DIR:-}" ] || return 0
  _pgserver_as "$PGSERVER_BIN/pg_ctl" -D "$PGSERVER_DIR/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$PGSERVER_DIR"
  PGSERVER_DIR=
}

# every server pgserver_start started, stopped and removed
pgserver_stop_all() {
  local dir
  for dir in "${PGSERVER_ALL[@]}"; do
    _pgserver_as "$PGSERVER_BIN/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$dir"
  done
  PGSERVER_ALL=()
  PGSERVER_DIR=
}

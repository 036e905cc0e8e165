#!/bin/bash
# test/chroot.sh: test gpusort against a PostgreSQL major version that the
# machine's own Debian release does not ship, in a Debian chroot that does.
#
#   test/chroot.sh create DIR MAJOR   make DIR a chroot of the Debian suite
#                                     that ships PostgreSQL MAJOR, with what
#                                     test/install-deps.sh installs
#   test/chroot.sh run DIR MAJOR [VAR=VALUE ...] [-- COMMAND ...]
#                                     copy this working tree into DIR and run
#                                     test/run.sh there against MAJOR (or
#                                     COMMAND, from the tree's root), with
#                                     the variables given (USE_CUDA=0,
#                                     GPUSORT_SPILL=1, ...)
#
# PostgreSQL 17 comes from trixie, 18 from sid, and 19 (a beta or release
# candidate) from experimental on top of sid: only the packages listed in
# experimental_pkgs are taken from it, by an apt preferences file; the rest
# stays sid's.  Their binaries need a newer C library than Debian 12 has,
# so they are never installed on the machine itself.  Where DIR already is
# a chroot of the suite (a copy of another one: cp -a), debootstrap is
# skipped and only what is missing is added.  The build, the server and
# every test run inside the chroot, in a bare environment (env -i
# PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root: no LANG, no terminal,
# stdin from /dev/null, as in a minimal container, a cron job or a CI
# login, which the README's commands must survive), in a mount namespace
# of their own (/proc, /dev and a private /dev/shm for PostgreSQL's
# dynamic shared memory), so that nothing stays mounted when the command
# ends, however it ends.  Needs root and debootstrap (installed if missing).
#
# Environment:
#   GPUSORT_CHROOT_SUITE   Debian suite to use instead of MAJOR's default
#   GPUSORT_CHROOT_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   GPUSORT_CHROOT_CACHE   directory that keeps downloaded packages between
#                          chroots and attempts (default: none)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mirror=${GPUSORT_CHROOT_MIRROR:-http://deb.debian.org/debian}

die() { echo "chroot.sh: $*" >&2; exit 1; }

suite_for() {
  case "$1" in
    15) echo bookworm ;;
    17) echo trixie ;;
    18|19) echo sid ;;
    *) die "no Debian suite known for PostgreSQL $1 (set GPUSORT_CHROOT_SUITE)" ;;
  esac
}

# majors that come from experimental, and the packages taken from it: the
# server's own and the libpq that they need at least
needs_experimental() { [ "$1" = 19 ]; }
experimental_pkgs() {
  echo "postgresql-$1 postgresql-client-$1 postgresql-server-dev-$1 postgresql-$1-jit libpq5 libpq-dev"
}

# run "$@" up to 3 times, 20 s apart: mirrors and networks fail now and then
retry() {
  local n
  for n in 1 2 3; do
    "$@" && return 0
    [ $n = 3 ] || { echo "chroot.sh: '$*' failed, again in 20 s" >&2; sleep 20; }
  done
  return 1
}

# run a command in the chroot, in a mount namespace that ends with it;
# "binds" lists pairs of a directory outside and where it appears inside
binds=()
in_chroot() {
  local dir=$1; shift
  unshare --mount --propagation private -- /bin/bash -c '
    set -e
    dir=$1; nbinds=$2; shift 2
    mount -t proc proc "$dir/proc"
    mount --bind /dev "$dir/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$dir/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$dir/dev/pts" 2>/dev/null || true
    while [ "$nbinds" -gt 0 ]; do
      mount --bind "$1" "$dir/$2"; shift 2; nbinds=$((nbinds - 2))
    done
    exec chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        "$@" < /dev/null' in_chroot "$dir" ${#binds[@]} "${binds[@]}" "$@"
}

create() {
  local dir=$1 major=$2 suite cache_opt=() n
  suite=${GPUSORT_CHROOT_SUITE:-$(suite_for "$major")}
  [ "$(id -u)" = 0 ] || die "create: run as root"
  command -v debootstrap >/dev/null || {
    retry apt-get update -qq && DEBIAN_FRONTEND=noninteractive retry apt-get install -y -qq debootstrap >/dev/null
  } || die "cannot install debootstrap"
  if [ -n "${GPUSORT_CHROOT_CACHE:-}" ]; then
    mkdir -p "$GPUSORT_CHROOT_CACHE/debootstrap-$suite" "$GPUSORT_CHROOT_CACHE/apt-$suite/partial"
    cache_opt=(--cache-dir="$(cd "$GPUSORT_CHROOT_CACHE" && pwd)/debootstrap-$suite")
  fi

  echo "== chroot $dir: Debian $suite for PostgreSQL $major"
  if [ -x "$dir/usr/bin/apt-get" ] && grep -qs "^deb [^ ]* $suite main" "$dir/etc/apt/sources.list"; then
    echo "== $dir already is a chroot of $suite: debootstrap skipped"
  else
    for n in 1 2 3; do
      rm -rf "$dir"
      mkdir -p "$dir"
      debootstrap --variant=minbase "${cache_opt[@]}" "$suite" "$dir" "$mirror" \
          > "$dir.debootstrap.log" 2>&1 && break
      tail -5 "$dir.debootstrap.log" >&2
      [ $n = 3 ] && die "debootstrap $suite failed 3 times (log: $dir.debootstrap.log)"
      echo "chroot.sh: debootstrap failed, again in 20 s" >&2
      sleep 20
    done
    rm -f "$dir.debootstrap.log"
  fi

  # experimental's Release says NotAutomatic (priority 1): nothing comes
  # from it but what the preferences file raises to sid's 500, where its
  # version is the higher one
  if needs_experimental "$major"; then
    echo "deb $mirror experimental main" > "$dir/etc/apt/sources.list.d/gpusort-experimental.list"
    cat > "$dir/etc/apt/preferences.d/gpusort-experimental" <<PREF
Package: $(experimental_pkgs "$major")
Pin: release a=experimental
Pin-Priority: 500
PREF
  fi

  # no services start inside the chroot, and no cluster is created: the
  # tests start their own servers
  printf '#!/bin/sh\nexit 101\n' > "$dir/usr/sbin/policy-rc.d"
  chmod 755 "$dir/usr/sbin/policy-rc.d"
  mkdir -p "$dir/etc/postgresql-common/createcluster.d"
  echo "create_main_cluster = false" > "$dir/etc/postgresql-common/createcluster.d/gpusort.conf"
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  # sid's Release file is valid for a week only: a mirror that lags, or a
  # clock ahead, would make apt refuse it, and a throwaway test chroot has
  # no use for that check
  echo 'Acquire::Check-Valid-Until "false";' > "$dir/etc/apt/apt.conf.d/90gpusort-valid-until"
  # apt's downloads outlive the chroot where a cache is given
  if [ -n "${GPUSORT_CHROOT_CACHE:-}" ]; then
    mkdir -p "$dir/var/cache/gpusort-apt"
    cat > "$dir/etc/apt/apt.conf.d/90gpusort-cache" <<'APT'
Dir::Cache::archives "/var/cache/gpusort-apt";
Binary::apt::APT::Keep-Downloaded-Packages "true";
APT
    binds=("$(cd "$GPUSORT_CHROOT_CACHE" && pwd)/apt-$suite" /var/cache/gpusort-apt)
  fi

  cp "$root/test/install-deps.sh" "$root/test/progress.sh" "$dir/root/"
  in_chroot "$dir" env PG_MAJOR="$major" /root/install-deps.sh \
    || die "installing PostgreSQL $major and the test dependencies in $dir failed"
  binds=()
  in_chroot "$dir" test -x "/usr/lib/postgresql/$major/bin/pg_config" \
    || die "$dir has no /usr/lib/postgresql/$major/bin/pg_config"
  echo "== chroot $dir ready: $(in_chroot "$dir" "/usr/lib/postgresql/$major/bin/pg_config" --version)"
}

run() {
  local dir=$1 major=$2; shift 2
  local pgc=/usr/lib/postgresql/$major/bin/pg_config vars=() command=(test/run.sh)
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
      shift
      command=("$@")
      break
    fi
    vars+=("$1")
    shift
  done
  [ "$(id -u)" = 0 ] || die "run: run as root"
  [ -x "$dir$pgc" ] || die "$dir has no PostgreSQL $major (test/chroot.sh create $dir $major)"
  # a fresh copy of the tree (tracked and untracked files, not what git
  # ignores: no objects of another build)
  rm -rf "$dir/gpusort"
  mkdir -p "$dir/gpusort"
  if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$dir/gpusort"
  else
    (cd "$root" && tar --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - .) | tar -xf - -C "$dir/gpusort"
  fi
  in_chroot "$dir" env PG_CONFIG="$pgc" ${vars[@]+"${vars[@]}"} \
    /bin/bash -c 'cd /gpusort && exec "$@"' run "${command[@]}"
}

case "${1:-}" in
  create) [ $# = 3 ] || die "usage: $0 create DIR MAJOR"; create "$2" "$3" ;;
  run) [ $# -ge 3 ] || die "usage: $0 run DIR MAJOR [VAR=VALUE ...] [-- COMMAND ...]"; run "$2" "$3" "${@:4}" ;;
  *) die "usage: $0 create DIR MAJOR | run DIR MAJOR [VAR=VALUE ...] [-- COMMAND ...]" ;;
esac

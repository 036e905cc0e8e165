#!/bin/bash
# test/gpu/prepare.sh: run here, in the project root, before a run on the
# GPU test host that builds gpusort there (test/gpu/README.md).
#
#   test/gpu/prepare.sh [MAJOR...]      MAJOR: 15, 17, 19 (default: 15 17)
#   test/gpu/prepare.sh duckdb          the benchmarks' peer, below
#
# The host has no PostgreSQL and no network, so Debian's packages travel
# along in .device/ (git-ignored; GPUSORT_DEVICE_DIR to put them elsewhere):
#  - 15: the shared ../shared/device/prepare.sh fetches Debian 12's
#    PostgreSQL 15 into .device/debs; this adds Debian 12's libicu-dev, since
#    PostgreSQL's pg_locale.h includes ICU's headers, which the host lacks;
#  - 17: trixie's PostgreSQL 17 (server, client, server headers and PGXS,
#    libpq5), ICU 76 and its headers, into .device/debs-17, through apt with
#    trixie's package lists kept apart from this machine's; and trixie's
#    LDAP library in .device/debs-17/fallback, unpacked on the host only if
#    it lacks libldap.so.2.  Trixie's binaries need glibc 2.38, which the
#    host's Ubuntu 24.04 has (2.39);
#  - 19: experimental's PostgreSQL 19, taken from a sid chroot that has it
#    (test/chroot.sh create DIR 19; GPUSORT_CHROOT_19, default
#    /var/tmp/gpusort-19, made if missing), as one tree to unpack under
#    /opt/pg19: the server's files, ICU's headers, and every library its
#    programs and modules load, sid's C library and loader among them.
#    Sid's binaries need glibc 2.43, so its programs are given sid's
#    loader and libraries (patchelf: the interpreter and an RPATH under
#    /opt/pg19), and the host's own programs keep the host's.  JIT's
#    module and LLVM stay behind (the servers run with jit = off).
# Of libicu-dev only ICU's headers are kept (icu-headers.tar.gz, a tenth of
# the package), so that one version's directory stays well within what a
# run on the host may carry.  Then test/gpu/pg-on-device.sh goes to
# .device/, where the host sources it.
#
# duckdb: DuckDB's libduckdb.so from npm, xz-compressed (about 16 MB), into
# .device/duckdb, for the benchmarks' setting duckdb (bench/duckdb_peer.py).
#
# With GPUSORT_BASE_COMMIT=COMMIT, .device/base.tar gets that commit's tree
# (git archive): the older build that test/gpu/compare.sh and
# bench/parallel-ab.sh --base measure this tree against on the host.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${GPUSORT_SHARED_DEVICE:-$root/../shared/device}
device=${GPUSORT_DEVICE_DIR:-$root/.device}
majors=${*:-15 17}
mirror=${GPUSORT_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# libicu-dev_*.deb in $1 -> $1/icu-headers.tar.gz (usr/include/unicode)
icu_headers() {
  local dir=$1 deb tmp
  for deb in "$dir"/libicu-dev_*.deb; do
    [ -f "$deb" ] || continue
    tmp=$(mktemp -d)
    dpkg -x "$deb" "$tmp"
    tar -C "$tmp" -czf "$dir/icu-headers.tar.gz" usr/include/unicode
    rm -rf "$tmp" "$deb"
  done
  [ -f "$dir/icu-headers.tar.gz" ] || { echo "prepare: no ICU headers in $dir" >&2; exit 1; }
}

# pack_sid_tree CHROOT MAJOR OUT: PostgreSQL MAJOR of the sid chroot, with
# the libraries it loads and sid's loader, as a tree to unpack under
# /opt/pgMAJOR, in the tarball OUT
pack_sid_tree() {
  local chroot=$1 major=$2 out=$3 prefix=/opt/pg$2 stage f lib elves
  stage=$(mktemp -d)
  chmod 755 "$stage"   # the tree's top: /opt/pgMAJOR on the host
  mkdir -p "$stage/usr/lib/postgresql" "$stage/usr/share/postgresql" "$stage/usr/include" \
    "$stage/usr/lib/x86_64-linux-gnu"
  cp -a "$chroot/usr/lib/postgresql/$major" "$stage/usr/lib/postgresql/"
  rm -rf "$stage/usr/lib/postgresql/$major/lib/llvmjit"* "$stage/usr/lib/postgresql/$major/lib/bitcode"
  cp -a "$chroot/usr/share/postgresql/$major" "$stage/usr/share/postgresql/"
  # what a test in the chroot installed of gpusort stays there
  rm -f "$stage/usr/lib/postgresql/$major/lib/gpusort.so" \
    "$stage/usr/share/postgresql/$major/extension/gpusort"*
  cp -a "$chroot/usr/include/postgresql" "$chroot/usr/include/unicode" "$stage/usr/include/"
  cp -L "$chroot/lib64/ld-linux-x86-64.so.2" "$stage/ld-linux-x86-64.so.2"
  # every library that a program or module of the server loads (pg_regress
  # under lib/pgxs too)
  elves=$(find "$stage/usr/lib/postgresql/$major" -type f \
            -exec sh -c '[ "$(head -c 4 "$1" | od -An -c | tr -d " ")" = 177ELF ]' _ {} \; -print)
  for f in $elves; do
    chroot "$chroot" ldd "${f#$stage}" | awk '$3 ~ /^\// { print $3 }'
  done | sort -u | while read -r lib; do
    cp -L "$chroot$lib" "$stage/usr/lib/x86_64-linux-gnu/"
  done
  # the programs (those with an interpreter) load sid's
  for f in $elves; do
    patchelf --print-interpreter "$f" >/dev/null 2>&1 || continue
    patchelf --set-interpreter "$prefix/ld-linux-x86-64.so.2" --force-rpath \
      --set-rpath "$prefix/usr/lib/x86_64-linux-gnu" "$f"
  done
  tar -C "$stage" -cJf "$out" .
  rm -rf "$stage"
}

for major in $majors; do
  case $major in
    15)
      if [ -z "${GPUSORT_DEVICE_DIR:-}" ]; then
        bash "$shared/prepare.sh"
      else
        # the shared script writes into the checkout's own .device/
        mkdir -p "$device/debs"
        (cd "$device/debs" && { ls postgresql-15_*.deb >/dev/null 2>&1 ||
          apt-get download -qq postgresql-15 postgresql-client-15 postgresql-server-dev-15 \
            libpq5 libicu72 libldap-2.5-0; })
      fi
      (cd "$device/debs" && { [ -f icu-headers.tar.gz ] || ls libicu-dev_*.deb >/dev/null 2>&1 ||
         apt-get download -qq -o APT::Sandbox::User=root libicu-dev; })
      icu_headers "$device/debs"
      ;;
    17)
      mkdir -p "$device/debs-17/fallback"
      if ! ls "$device/debs-17"/postgresql-17_*.deb >/dev/null 2>&1; then
        apt_dir=$(mktemp -d)
        trap 'rm -rf "$apt_dir"' EXIT
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
        echo "deb $mirror trixie main" > "$apt_dir/sources.list"
        echo "deb http://security.debian.org/debian-security trixie-security main" >> "$apt_dir/sources.list"
        apt_opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
                  -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache"
                  -o Dir::State::status=/dev/null -o APT::Get::List-Cleanup=false
                  -o APT::Sandbox::User=root)
        n=0
        until apt-get "${apt_opts[@]}" -qq update; do
          n=$((n + 1)); [ $n -lt 3 ] || { echo "prepare: apt-get update for trixie failed" >&2; exit 1; }
          sleep 15
        done
        (cd "$device/debs-17" && apt-get "${apt_opts[@]}" -qq download \
           postgresql-17 postgresql-client-17 postgresql-server-dev-17 libpq5 libicu76 libicu-dev)
        (cd "$device/debs-17/fallback" && apt-get "${apt_opts[@]}" -qq download libldap2)
      fi
      icu_headers "$device/debs-17"
      ls "$device/debs-17"/postgresql-17_*.deb >/dev/null
      ;;
    19)
      chroot19=${GPUSORT_CHROOT_19:-/var/tmp/gpusort-19}
      [ -x "$chroot19/usr/lib/postgresql/19/bin/postgres" ] || "$root/test/chroot.sh" create "$chroot19" 19
      command -v patchelf >/dev/null || apt-get install -y -qq patchelf
      mkdir -p "$device/debs-19"
      [ -f "$device/debs-19/pg19-tree.tar.xz" ] ||
        pack_sid_tree "$chroot19" 19 "$device/debs-19/pg19-tree.tar.xz"
      ;;
    duckdb)
      [ -f "$device/duckdb/libduckdb.so.xz" ] ||
        python3 "$root/bench/duckdb_peer.py" fetch "$device/duckdb"
      ;;
    *) echo "prepare: PostgreSQL $major is not carried to the GPU host (15, 17 or 19)" >&2; exit 1 ;;
  esac
done
# Perl's IPC::Run (architecture-independent), which the TAP tests need and
# the host lacks
mkdir -p "$device/perl"
(cd "$device/perl" && { ls libipc-run-perl_*.deb >/dev/null 2>&1 ||
   apt-get download -qq -o APT::Sandbox::User=root libipc-run-perl; })
cp "$root/test/gpu/pg-on-device.sh" "$device/pg-on-device.sh"
if [ -n "${GPUSORT_BASE_COMMIT:-}" ]; then
  git -C "$root" archive -o "$device/base.tar" "$GPUSORT_BASE_COMMIT"
  echo "prepared: $device/base.tar ($GPUSORT_BASE_COMMIT)"
fi
du -sh "$device"/debs* | sed 's/^/prepared: /'

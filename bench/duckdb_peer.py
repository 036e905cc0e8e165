#!/usr/bin/env python3
"""bench/duckdb_peer.py: DuckDB, the CPU peer, timed beside PostgreSQL.

DuckDB is what people pick when PostgreSQL sorts too slowly, so the
benchmarks time it on the same rows as PostgreSQL's Sort and GpuSort.  It
runs in the benchmark's own process through DuckDB's C API (libduckdb.so,
loaded with ctypes): no DuckDB Python package, no network, nothing to
build, which is what the GPU host allows.  The library is the one npm's
@duckdb/node-bindings-linux-x64 ships (MIT); `bench/duckdb_peer.py fetch
DIR` puts it, compressed with xz, under DIR (test/gpu/prepare.sh duckdb
does so for the GPU host), and $DUCKDB_LIB or the first of
$GPUSORT_DEVICE_DIR/duckdb, .device/duckdb and bench/duckdb that holds
libduckdb.so or libduckdb.so.xz is loaded (an .xz is unpacked to /tmp).

The database is in memory, DuckDB's fastest configuration, with one
thread per core (PRAGMA threads) unless $DUCKDB_THREADS says otherwise.
A table is made from the very expressions PostgreSQL's table is loaded
with (bench/shapes.py's SHAPES are written in the SQL both accept), and
check() compares a fingerprint of the two, so a ratio is never of
different rows.  As with psql's \\timing, a statement is timed from the
client: query() returns the milliseconds duckdb_query took, result
included (empty: the statements end in OFFSET n).  "Fresh" is a new
connection's first statement, as for PostgreSQL; with the database
already open in the process, DuckDB has no start-up cost to pay there.

Run alone, it sorts a table and prints the times:
  bench/duckdb_peer.py bench ROWS     (SELECT * ... ORDER BY k OFFSET n)
"""

import ctypes
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time

NPM_PACKAGE = "@duckdb/node-bindings-linux-x64"


def library_path():
    """Where libduckdb.so is, unpacking an .xz copy to /tmp first."""
    if os.environ.get("DUCKDB_LIB"):
        return os.environ["DUCKDB_LIB"]
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.join(here, "..", ".device", "duckdb"), os.path.join(here, "duckdb")]
    if os.environ.get("GPUSORT_DEVICE_DIR"):
        dirs.insert(0, os.path.join(os.environ["GPUSORT_DEVICE_DIR"], "duckdb"))
    for d in dirs:
        so = os.path.join(d, "libduckdb.so")
        if os.path.exists(so):
            return so
        if os.path.exists(so + ".xz"):
            out = os.path.join(tempfile.gettempdir(), "gpusort-libduckdb-%d.so" % os.path.getsize(so + ".xz"))
            if not os.path.exists(out):
                with lzma.open(so + ".xz") as src, open(out + ".part", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.rename(out + ".part", out)
            return out
    sys.exit("no libduckdb.so: run bench/duckdb_peer.py fetch .device/duckdb, or set DUCKDB_LIB")


class DuckDB:
    """One in-memory DuckDB database, its connections made on demand."""

    def __init__(self, threads=None):
        lib = ctypes.CDLL(library_path())
        lib.duckdb_library_version.restype = ctypes.c_char_p
        lib.duckdb_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.duckdb_connect.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.duckdb_disconnect.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.duckdb_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.duckdb_result_error.argtypes = [ctypes.c_void_p]
        lib.duckdb_result_error.restype = ctypes.c_char_p
        lib.duckdb_row_count.argtypes = [ctypes.c_void_p]
        lib.duckdb_row_count.restype = ctypes.c_uint64
        lib.duckdb_value_varchar.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
        lib.duckdb_value_varchar.restype = ctypes.c_void_p
        lib.duckdb_free.argtypes = [ctypes.c_void_p]
        lib.duckdb_destroy_result.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.version = lib.duckdb_library_version().decode()
        self.db = ctypes.c_void_p()
        if lib.duckdb_open(None, ctypes.byref(self.db)) != 0:
            sys.exit("duckdb_open failed")
        self.threads = int(threads or os.environ.get("DUCKDB_THREADS") or os.cpu_count() or 1)
        self.conn = self.connect()
        self.run("PRAGMA threads = %d" % self.threads, self.conn)

    def connect(self):
        conn = ctypes.c_void_p()
        if self.lib.duckdb_connect(self.db, ctypes.byref(conn)) != 0:
            sys.exit("duckdb_connect failed")
        return conn

    def disconnect(self, conn):
        self.lib.duckdb_disconnect(ctypes.byref(conn))

    def run(self, sql, conn=None):
        """Runs sql; returns (milliseconds, first row's first value or None)."""
        result = ctypes.create_string_buffer(64)      # duckdb_result: 48 bytes
        start = time.perf_counter()
        state = self.lib.duckdb_query(conn or self.conn, sql.encode(), result)
        ms = (time.perf_counter() - start) * 1000
        try:
            if state != 0:
                err = self.lib.duckdb_result_error(result)
                sys.exit("DuckDB: %s\n%s" % (err.decode() if err else "error", sql[:500]))
            value = None
            if self.lib.duckdb_row_count(result) > 0:
                p = self.lib.duckdb_value_varchar(result, 0, 0)
                if p:
                    value = ctypes.string_at(p).decode()
                    self.lib.duckdb_free(p)
            return ms, value
        finally:
            self.lib.duckdb_destroy_result(result)

    def make_table(self, name, cols, exprs, n):
        """name(cols) holding exprs of g for g from 1 to n, as PostgreSQL's."""
        self.run("DROP TABLE IF EXISTS %s" % name)
        self.run("CREATE TABLE %s (%s)" % (name, cols))
        ms, _ = self.run("INSERT INTO %s SELECT %s FROM generate_series(1, %d) AS r(g)"
                         % (name, exprs, n))
        return ms

    def session(self, sql, warm_runs):
        """A new connection runs sql 1 + warm_runs times: (fresh ms, [warm ms])."""
        conn = self.connect()
        try:
            times = [self.run(sql, conn)[0] for _ in range(1 + warm_runs)]
        finally:
            self.disconnect(conn)
        return times[0], times[1:]


def fingerprint_sql(name, cols):
    """One text value both PostgreSQL and DuckDB compute alike for a table
    of bench/scale.py's shapes: row count, exact sums of k and of f's 53
    bits, and the least and greatest pad."""
    names = [c.split()[0] for c in cols.split(",")]
    parts = ["count(*)::text", "sum(k)::text"]
    if "f" in names:
        parts.append("sum((f * 9007199254740992::float8)::int8)::text")
    if "pad" in names:
        # md5's hex digits order alike under every collation
        parts += ["min(pad)", "max(pad)"]
    return "SELECT %s FROM %s" % (" || '/' || ".join(parts), name)


def duckdb_sql(sql):
    """A statement of the benchmarks as DuckDB takes it: DuckDB compares
    text by bytes, which is PostgreSQL's COLLATE "C", and knows no "C"."""
    return sql.replace(' COLLATE "C"', "")


def fetch(dest):
    """npm pack the bindings, keep libduckdb.so as dest/libduckdb.so.xz."""
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", "--silent", NPM_PACKAGE], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        tgz = [f for f in os.listdir(tmp) if f.endswith(".tgz")][0]
        subprocess.run(["tar", "xzf", tgz, "package/libduckdb.so"], cwd=tmp, check=True)
        with open(os.path.join(tmp, "package", "libduckdb.so"), "rb") as src, \
                lzma.open(os.path.join(dest, "libduckdb.so.xz.part"), "wb", preset=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.rename(os.path.join(dest, "libduckdb.so.xz.part"), os.path.join(dest, "libduckdb.so.xz"))
        with open(os.path.join(dest, "SOURCE"), "w") as f:
            f.write("%s (%s), libduckdb.so, MIT\n" % (NPM_PACKAGE, tgz))
    print("wrote %s/libduckdb.so.xz (%s)" % (dest, tgz))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "fetch":
        fetch(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "bench":
        n = int(sys.argv[2])
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from shapes import SHAPES
        duck = DuckDB()
        cols, exprs = SHAPES["s"]
        print("DuckDB %s, %d threads; s_%d made in %.0f ms" % (
            duck.version, duck.threads, n, duck.make_table("s", cols, exprs, n)))
        fresh, warm = duck.session("SELECT * FROM s ORDER BY k OFFSET %d" % n, 3)
        print("fresh %.0f ms, warm %s ms" % (fresh, " ".join("%.0f" % w for w in warm)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

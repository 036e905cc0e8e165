"""bench/shapes.py: the benchmark tables' columns and the SQL that fills
them, shared by bench/scale.py (PostgreSQL) and bench/duckdb_peer.py
(DuckDB), which make the very same rows from it."""

# k: a full-range int8, f: 53 bits scaled into [0, 1), both from
# multiplicative hashes of the row number g (h1 and h3 below, bijections
# of g modulo 2^32, so k and f are distinct), pad: md5 of g.  Hashes of
# the row number rather than random(): the parallel loaders then need no
# seeds and every run sorts the same data.  Written in the SQL PostgreSQL
# and DuckDB both take, with no intermediate past int8, so that DuckDB
# (bench/duckdb_peer.py) makes the very same rows.
H1 = "((g::int8 * 2654435761) % 4294967296)"
H3 = "((g::int8 * 1597334677) % 4294967296)"
K = "((%s - 2147483648) * 4294967296 + (%s * 2147483629) %% 4294967296)" % (H1, H1)
F = "((%s * 2097152 + %s %% 2097152)::float8 / 9007199254740992::float8)" % (H3, H1)
PAD = "md5(g::text)"
SHAPES = {
    "s": ("k int8, f float8", "%s, %s" % (K, F)),
    "p": ("k int8, pad text", "%s, %s" % (K, PAD)),
    "t": ("k int8, pad text, f float8", "%s, %s, %s" % (K, PAD, F)),
}
# bytes per row on disk, roughly (tuple header, data, line pointer): for
# the warning when the disk looks too small for table plus spill files
SHAPE_BYTES = {"s": 44, "p": 80, "t": 88}

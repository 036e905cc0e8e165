--
-- 040_toast: sorting TOASTed values.
--
-- Long text (> 2 kB) stored compressed inline/out of line (STORAGE
-- EXTENDED, the default) and uncompressed out of line (STORAGE EXTERNAL),
-- and long bytea: sorted by the long column itself (the comparators must
-- detoast, and the values differ only after a long common prefix), and by
-- a short key while the long values ride along (the sorted tuples hold
-- TOAST pointers that must still be read correctly).  The checks first
-- show that the values really are TOASTed.  Every sort is compared with
-- PostgreSQL's Sort by gs_check.
--
SET search_path = gs, public;

CREATE TABLE gs_toast_ext (id int, k int, s text, b bytea);
CREATE TABLE gs_toast_extern (id int, k int, s text, b bytea);
ALTER TABLE gs_toast_extern ALTER COLUMN s SET STORAGE EXTERNAL, ALTER COLUMN b SET STORAGE EXTERNAL;

-- compressible values: a long common prefix, the difference at the end;
-- some short, some NULL
INSERT INTO gs_toast_ext
SELECT g, hashint4(g) % 50,
       CASE WHEN g % 50 = 0 THEN NULL
            WHEN g % 10 = 1 THEN 'short ' || (hashint4(g) % 100)
            ELSE repeat('common prefix ', 300 + g % 3) || (hashint4(g) % 500) END,
       CASE WHEN g % 40 = 0 THEN NULL ELSE convert_to(repeat('ab', 2000) || (hashint4(g) % 300), 'UTF8') END
  FROM generate_series(1, 1200) g;
-- incompressible values for EXTERNAL: md5 chains
INSERT INTO gs_toast_extern
SELECT g, hashint4(g) % 50,
       CASE WHEN g % 50 = 0 THEN NULL
            WHEN g % 10 = 1 THEN 'short ' || (hashint4(g) % 100)
            ELSE (SELECT string_agg(md5((g % 200)::text || i), '') FROM generate_series(1, 80) i) || (hashint4(g) % 7) END,
       CASE WHEN g % 40 = 0 THEN NULL ELSE decode((SELECT string_agg(md5((g % 150)::text || i), '') FROM generate_series(1, 150) i), 'hex') END
  FROM generate_series(1, 1200) g;
ANALYZE gs_toast_ext, gs_toast_extern;

-- the values are TOASTed: compressed in one table, stored out of line
-- uncompressed in the other
SELECT bool_and(pg_column_size(s) < octet_length(s) / 10) FILTER (WHERE s NOT LIKE 'short%') AS ext_compressed,
       min(octet_length(s)) FILTER (WHERE s NOT LIKE 'short%') > 2048 AS ext_long
  FROM gs_toast_ext;
SELECT bool_and(pg_column_size(s) >= octet_length(s)) FILTER (WHERE s NOT LIKE 'short%') AS extern_uncompressed,
       min(octet_length(s)) FILTER (WHERE s NOT LIKE 'short%') > 2048 AS extern_long,
       bool_and(octet_length(b) > 2048) AS extern_b_long,
       pg_relation_size(reltoastrelid) > 0 AS extern_has_toast
  FROM gs_toast_extern, pg_class WHERE relname = 'gs_toast_extern'
 GROUP BY reltoastrelid;

-- sorted by the long values
SELECT tab, q, gs_check(format(q, tab), k) AS result
  FROM unnest(ARRAY['gs_toast_ext', 'gs_toast_extern']) WITH ORDINALITY AS ts(tab, tn),
       (VALUES (1, 'SELECT s, id FROM %I ORDER BY s', 1),
               (2, 'SELECT s, id FROM %I ORDER BY s DESC NULLS LAST', 1),
               (3, 'SELECT s, id FROM %I ORDER BY s COLLATE "C"', 1),
               (4, 'SELECT b, id FROM %I ORDER BY b', 1),
               (5, 'SELECT k, s, id FROM %I ORDER BY k, s DESC', 2),
               (6, 'SELECT s, b, id FROM %I ORDER BY s, b', 2),
               (7, 'SELECT k, id, s, b FROM %I ORDER BY k, id', 2)) AS qs(qn, q, k)
 ORDER BY tn, qn;

-- the long values come back whole, in order (string_agg reads the rows
-- in the subquery's order only where no other aggregate of the same
-- query needs its input sorted: from 16 on, count(DISTINCT) would have
-- the planner sort it by md5(s) first)
SELECT id, k, md5(s) AS md5_s, octet_length(s) AS len_s, md5(b) AS md5_b
  FROM (SELECT id, k, s, b FROM gs_toast_extern WHERE id % 97 = 7 ORDER BY k, id) x;
SELECT count(*) AS rows, (SELECT count(DISTINCT md5(s)) FROM gs_toast_extern) AS distinct_s,
       sum(octet_length(s)) AS total_len, md5(string_agg(md5(s), ',')) AS all_md5
  FROM (SELECT s FROM gs_toast_extern ORDER BY s COLLATE "C", id) x;
SET gpusort.enabled = off;
SELECT count(*) AS rows, (SELECT count(DISTINCT md5(s)) FROM gs_toast_extern) AS distinct_s,
       sum(octet_length(s)) AS total_len, md5(string_agg(md5(s), ',')) AS all_md5
  FROM (SELECT s FROM gs_toast_extern ORDER BY s COLLATE "C", id) x;
RESET gpusort.enabled;

--
-- 130_varwidth_plans: text, numeric and interval keys in plans that
-- depend on the sort order of their input.
--
-- * Merge Join on text with a libc collation (de_DE), on numeric (1.1
--   must meet 1.10: equal keys must come out adjacent), on interval ('1
--   mon' meets '30 days') and on text with a nondeterministic ICU
--   collation ('ABC' meets 'abc'); inner, left and full joins;
-- * DISTINCT / DISTINCT ON on text (Unique), GROUP BY numeric, interval and
--   text (GroupAggregate, hash aggregation off);
-- * window functions PARTITION BY text ORDER BY numeric;
-- * SCROLL cursors over text and numeric sorts moving backward;
-- * LIMIT / OFFSET on text and numeric sorts (bounds of at least half the
--   input, so the Sort is GpuSort).
-- Results are compared with PostgreSQL's own plan by gs_check (and
-- SCROLL cursors by gs.cursor_check); where equal keys of different
-- forms (1.1 and 1.10, '1 mon' and '30 days', 'ABC' and 'abc') would make
-- the representative of a group depend on the order of ties, the output
-- shows a canonical form (trim_scale, justify_interval, a count).
--
SET search_path = gs, public;

-- the collations of 100_text_collations, for this file alone
DO $$
BEGIN
  IF to_regcollation('gs_de') IS NULL THEN
    CREATE COLLATION gs_de (provider = libc, locale = 'de_DE.utf8');
  END IF;
  IF to_regcollation('gs_nd_ci') IS NULL THEN
    CREATE COLLATION gs_nd_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  END IF;
END $$;

CREATE TABLE gs_vwa (id int, s text COLLATE gs_de, n numeric, iv interval, c text COLLATE gs_nd_ci, t text, m numeric(10,2));
CREATE TABLE gs_vwb (id int, s text COLLATE gs_de, n numeric, iv interval, c text COLLATE gs_nd_ci);
INSERT INTO gs_vwa
SELECT g,
       CASE WHEN g % 97 = 0 THEN NULL
            ELSE (ARRAY['Äpfel', 'apfel', 'Apfel', 'Ärger', 'arg', 'Bär', 'bar', 'Öl', 'ol', 'Ol', 'Übel', 'ubel',
                        'Straße', 'strasse', 'Zoo', 'zoo', 'éclair', 'eclair', '', ' x'])[1 + abs(hashint4(g)) % 20] ||
                 CASE WHEN g % 3 = 0 THEN '' ELSE ' ' || (abs(hashint4(g + 1)) % 40)::text END END,
       CASE WHEN g % 89 = 0 THEN NULL
            WHEN g % 50 = 1 THEN 'NaN'
            ELSE round((abs(hashint4(g + 2)) % 3000)::numeric / 100, 2 + g % 3) END,
       CASE WHEN g % 83 = 0 THEN NULL
            WHEN g % 2 = 0 THEN (abs(hashint4(g + 3)) % 600) * interval '1 day'
            ELSE (abs(hashint4(g + 3)) % 20) * interval '1 mon' + (abs(hashint4(g + 4)) % 30) * interval '24 hours' END,
       CASE WHEN g % 79 = 0 THEN NULL
            ELSE (ARRAY['abc', 'ABC', 'Abc', 'abd', 'ABD', 'x', 'X', 'hello world', 'Hello World', 'HELLO WORLD',
                        'zz', 'ZZ', 'Zz'])[1 + abs(hashint4(g + 5)) % 13] || (abs(hashint4(g + 6)) % 300)::text END,
       md5((g % 5000)::text),
       CASE WHEN g % 73 = 0 THEN NULL ELSE (abs(hashint4(g + 7)) % 100000)::numeric / 100 END
  FROM generate_series(1, 20000) g;
INSERT INTO gs_vwb
SELECT g,
       CASE WHEN g % 53 = 0 THEN NULL
            ELSE (ARRAY['Äpfel', 'apfel', 'Ärger', 'Bär', 'Öl', 'Übel', 'Straße', 'zoo', 'eclair', ''])[1 + abs(hashint4(g)) % 10] ||
                 CASE WHEN g % 3 = 0 THEN '' ELSE ' ' || (abs(hashint4(g + 1)) % 40)::text END END,
       CASE WHEN g % 59 = 0 THEN NULL ELSE round((abs(hashint4(g + 2)) % 3000)::numeric / 100, 1 + g % 4) END,
       CASE WHEN g % 61 = 0 THEN NULL
            WHEN g % 2 = 0 THEN (abs(hashint4(g + 3)) % 600) * interval '24 hours'
            ELSE (abs(hashint4(g + 3)) % 20) * interval '30 days' + (abs(hashint4(g + 4)) % 30) * interval '1 day' END,
       CASE WHEN g % 67 = 0 THEN NULL
            ELSE (ARRAY['ABC', 'abd', 'X', 'hello WORLD', 'zZ'])[1 + abs(hashint4(g + 5)) % 5] || (abs(hashint4(g + 6)) % 300)::text END
  FROM generate_series(1, 600) g;
ANALYZE gs_vwa, gs_vwb;

-- Merge Join: both inputs sorted by GpuSort; equal keys in different forms
-- must meet.  Serial: a Gather above the join would return its rows in no
-- defined order, and gs_check compares orders.
SET enable_hashjoin = off;
SET enable_nestloop = off;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF)
SELECT a.s, a.id, b.id FROM gs_vwa a JOIN gs_vwb b ON a.s = b.s;
SELECT q, gs_check(q) AS result FROM (VALUES
  ('SELECT a.s, a.id AS aid, b.id AS bid FROM gs_vwa a JOIN gs_vwb b ON a.s = b.s'),
  ('SELECT a.s, a.id AS aid, b.id AS bid FROM gs_vwa a LEFT JOIN gs_vwb b ON a.s = b.s'),
  ('SELECT coalesce(a.s, b.s) AS s, a.id AS aid, b.id AS bid FROM gs_vwa a FULL JOIN gs_vwb b ON a.s = b.s'),
  ('SELECT a.n, a.id AS aid, b.id AS bid, b.n AS bn FROM gs_vwa a JOIN gs_vwb b ON a.n = b.n'),
  ('SELECT coalesce(a.n, b.n) AS n, a.id AS aid, b.id AS bid FROM gs_vwa a FULL JOIN gs_vwb b ON a.n = b.n'),
  ('SELECT a.iv, a.id AS aid, b.id AS bid, b.iv AS biv FROM gs_vwa a JOIN gs_vwb b ON a.iv = b.iv'),
  ('SELECT a.c, a.id AS aid, b.id AS bid, b.c AS bc FROM gs_vwa a JOIN gs_vwb b ON a.c = b.c'),
  ('SELECT a.c, a.id AS aid, b.id AS bid FROM gs_vwa a LEFT JOIN gs_vwb b ON a.c = b.c'),
  ('SELECT a.s COLLATE "C" AS s, a.id AS aid, b.id AS bid FROM gs_vwa a JOIN gs_vwb b ON a.s COLLATE "C" = b.s COLLATE "C"')) v(q);
-- the join sizes, with GpuSort and with PostgreSQL's Sort
SELECT (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.n = b.n) AS numeric_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.iv = b.iv) AS interval_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.c = b.c) AS ci_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.s = b.s) AS de_pairs;
SET gpusort.enabled = off;
SELECT (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.n = b.n) AS numeric_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.iv = b.iv) AS interval_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.c = b.c) AS ci_pairs,
       (SELECT count(*) FROM gs_vwa a JOIN gs_vwb b ON a.s = b.s) AS de_pairs;
RESET gpusort.enabled;
RESET enable_hashjoin;
RESET enable_nestloop;
RESET max_parallel_workers_per_gather;

-- DISTINCT and GROUP BY: Unique and GroupAggregate over GpuSort
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
SELECT DISTINCT s FROM gs_vwa;
EXPLAIN (COSTS OFF)
SELECT trim_scale(n) AS n, count(*) FROM gs_vwa GROUP BY n;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT DISTINCT s FROM gs_vwa', 1),
  ('SELECT DISTINCT s COLLATE "C" AS s FROM gs_vwa', 1),
  ('SELECT DISTINCT t FROM gs_vwa', 1),
  ('SELECT DISTINCT ON (s) s, id FROM gs_vwa ORDER BY s, id DESC', 1),
  ('SELECT DISTINCT ON (s COLLATE "und-x-icu") s COLLATE "und-x-icu" AS s, n, id FROM gs_vwa ORDER BY 1, n NULLS FIRST, id', 1),
  ('SELECT count(*) AS groups FROM (SELECT DISTINCT c FROM gs_vwa) d', 1),
  ('SELECT DISTINCT lower(c) AS c FROM gs_vwa', 1),
  ('SELECT trim_scale(n) AS n, count(*), sum(n) FROM gs_vwa GROUP BY n', 1),
  ('SELECT m, count(*), min(id) FROM gs_vwa GROUP BY m', 1),
  ('SELECT s, trim_scale(n) AS n, count(*) FROM gs_vwa GROUP BY s, n', 2),
  ('SELECT trim_scale(n) AS n, s, count(*) FROM gs_vwa GROUP BY n, s ORDER BY n DESC, s', 2),
  ('SELECT justify_interval(iv) AS iv, count(*) FROM gs_vwa GROUP BY iv', 1),
  ('SELECT t, count(*), sum(m) FROM gs_vwa GROUP BY t', 1),
  ('SELECT lower(min(c)) AS c, count(*) FROM gs_vwa GROUP BY c ORDER BY c', 1),
  ('SELECT count(*) AS groups, sum(n2) AS total FROM (SELECT n, count(*) AS n2 FROM gs_vwa GROUP BY n) g', 2)) v(q, k);
RESET enable_hashagg;

-- window functions: PARTITION BY text ORDER BY numeric (functions whose
-- values do not depend on the order of ties)
SELECT * FROM plan_lines('SELECT s, n, rank() OVER (PARTITION BY s ORDER BY n) FROM gs_vwa');
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT s, n, id, row_number() OVER (PARTITION BY s ORDER BY n, id), sum(n) OVER (PARTITION BY s ORDER BY n, id) FROM gs_vwa', 3),
  ('SELECT s, n, rank() OVER w, dense_rank() OVER w, count(*) OVER w, sum(n) OVER w AS running FROM gs_vwa WINDOW w AS (PARTITION BY s ORDER BY n DESC)', 2),
  ('SELECT s COLLATE "C" AS s, n, rank() OVER (PARTITION BY s COLLATE "C" ORDER BY n NULLS FIRST) FROM gs_vwa', 2),
  ('SELECT c, m, rank() OVER (PARTITION BY c ORDER BY m DESC NULLS LAST), count(*) OVER (PARTITION BY c) FROM gs_vwa', 2),
  ('SELECT t, iv, id, row_number() OVER (PARTITION BY t ORDER BY iv, id) FROM gs_vwa', 3),
  ('SELECT n, s, id, row_number() OVER (ORDER BY n, s, id), rank() OVER (PARTITION BY n ORDER BY s) FROM gs_vwa', 3)) v(q, k);

-- SCROLL cursors moving backward: the same FETCH / MOVE sequence on
-- GpuSort and on PostgreSQL's Sort must return the same rows
SELECT q, gs.cursor_check(q, ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH PRIOR',
                                      'FETCH ABSOLUTE 1000', 'FETCH RELATIVE -7', 'MOVE FORWARD 5000', 'FETCH BACKWARD 2',
                                      'FETCH FIRST', 'FETCH PRIOR', 'FETCH NEXT', 'MOVE LAST', 'FETCH NEXT', 'FETCH BACKWARD 2',
                                      'FETCH ABSOLUTE -3', 'MOVE ABSOLUTE 0', 'FETCH FORWARD 2']) AS result
  FROM (VALUES
  ('SELECT s, id FROM gs_vwa ORDER BY s, id'),
  ('SELECT s, id FROM gs_vwa ORDER BY s DESC NULLS LAST, id'),
  ('SELECT c, id FROM gs_vwa ORDER BY c, id DESC'),
  ('SELECT t COLLATE "und-x-icu" AS t, id FROM gs_vwa ORDER BY 1 DESC, id'),
  ('SELECT n, id FROM gs_vwa ORDER BY n NULLS FIRST, id'),
  ('SELECT iv, s, id FROM gs_vwa ORDER BY iv DESC, s, id')) v(q);

-- LIMIT / OFFSET on text and numeric sorts: bounds of at least half the
-- input (smaller ones stay with PostgreSQL's top-N heapsort)
EXPLAIN (COSTS OFF)
SELECT s, id FROM gs_vwa ORDER BY s, id LIMIT 15000 OFFSET 100;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT s, id FROM gs_vwa ORDER BY s, id LIMIT 15000 OFFSET 100', 2),
  ('SELECT s, id FROM gs_vwa ORDER BY s DESC, id LIMIT 12000 OFFSET 3000', 2),
  ('SELECT s COLLATE "C" AS s, id FROM gs_vwa ORDER BY 1 NULLS FIRST, id OFFSET 19900', 2),
  ('SELECT c, id FROM gs_vwa ORDER BY c DESC, id LIMIT 11000', 2),
  ('SELECT n, id FROM gs_vwa ORDER BY n, id LIMIT 10000 OFFSET 5000', 2),
  ('SELECT n, id FROM gs_vwa ORDER BY n DESC NULLS LAST, id OFFSET 19000', 2),
  ('SELECT t, id FROM gs_vwa ORDER BY t, id LIMIT 10000 OFFSET 9999', 2),
  ('SELECT iv, id FROM gs_vwa ORDER BY iv, id FETCH FIRST 12000 ROWS ONLY', 2),
  ('SELECT s, n FROM gs_vwa ORDER BY s, n FETCH FIRST 10500 ROWS WITH TIES', 2)) v(q, k);

-- A key under another collation than its column's (ORDER BY s COLLATE "C")
-- leaves a resjunk copy of the column, relabeled, in the Sort's input.  At
-- the top of a SELECT nothing reads it, so GpuSort's child stops computing
-- it and the scan returns its tuples unprojected (the Seq Scan's Output has
-- no copy); below anything but a Limit the copy stays.  gs_vwm has columns
-- added with defaults, which its older tuples lack on disk.
CREATE TABLE gs_vwm AS SELECT s, id, t FROM gs_vwa;
ALTER TABLE gs_vwm ADD COLUMN d text DEFAULT 'added', ADD COLUMN e int DEFAULT 7;
INSERT INTO gs_vwm SELECT s, id + 100000, t, 'new', id FROM gs_vwa WHERE id % 10 = 0;
ANALYZE gs_vwm;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM gs_vwm ORDER BY s COLLATE "C", id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM gs_vwm ORDER BY s COLLATE "C" DESC, t COLLATE "und-x-icu", id LIMIT 15000 OFFSET 10;
SELECT * FROM plan_lines('SELECT s, id, row_number() OVER (ORDER BY s COLLATE "C", id) FROM gs_vwm', ', VERBOSE');
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT * FROM gs_vwm ORDER BY s COLLATE "C", id', 2),
  ('SELECT * FROM gs_vwm ORDER BY s COLLATE "C" DESC NULLS LAST, id OFFSET 100', 2),
  ('SELECT * FROM gs_vwm ORDER BY s COLLATE "C" DESC, t COLLATE "und-x-icu", id LIMIT 15000 OFFSET 10', 3),
  ('SELECT s, id, d, e FROM gs_vwm ORDER BY s COLLATE "C", id', 2),
  ('SELECT s, id, row_number() OVER (ORDER BY s COLLATE "C", id) FROM gs_vwm', 2),
  ('SELECT s, count(*) FROM (SELECT * FROM gs_vwm ORDER BY s COLLATE "C" OFFSET 0) q GROUP BY s', 1)) v(q, k);
SELECT q, gs.cursor_check(q, ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3',
                                      'FETCH ABSOLUTE 1000', 'FETCH RELATIVE -7', 'FETCH FIRST', 'FETCH PRIOR',
                                      'MOVE LAST', 'FETCH BACKWARD 2']) AS result
  FROM (VALUES
  ('SELECT * FROM gs_vwm ORDER BY s COLLATE "C" DESC, id')) v(q);

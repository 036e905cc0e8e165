--
-- 090_misc: more places and kinds of sorts.
--
-- * tuples whose columns come from a fast default (added with ALTER TABLE
--   ... DEFAULT, not stored in old rows) or sit next to dropped columns;
-- * many sort columns (more than any key width holds);
-- * other types through the comparators: "char", name, money, tid (ctid),
--   pg_lsn, macaddr, ranges; text with a nondeterministic ICU collation
--   (case-insensitive: ties between differently spelled values);
-- * partitioned tables (Append, MergeAppend), UNION ALL branches;
-- * INSERT ... SELECT ... ORDER BY, UPDATE and DELETE over merge joins;
-- * a prepared statement's cached plan executed again and again, and a
--   sort run from a plpgsql loop.
-- Compared with PostgreSQL's Sort by gs_check.
--
SET search_path = gs, public;

-- fast defaults and dropped columns
CREATE TABLE gs_fd AS SELECT g AS id, hashint4(g) % 100 AS k, md5(g::text) AS gone FROM generate_series(1, 3000) g;
ALTER TABLE gs_fd ADD COLUMN d int DEFAULT 42, ADD COLUMN t text DEFAULT 'default text', ADD COLUMN f float8 DEFAULT 'NaN';
ALTER TABLE gs_fd DROP COLUMN gone;
INSERT INTO gs_fd SELECT g, hashint4(g) % 100, g % 50, 'new ' || g, g / 7.0 FROM generate_series(3001, 4000) g;
ANALYZE gs_fd;
SELECT gs_check('SELECT d, k, t, f, id FROM gs_fd ORDER BY d, k, t', 3);
SELECT gs_check('SELECT t, f, id FROM gs_fd ORDER BY t DESC, f', 2);
SELECT gs_check('SELECT f, d, id FROM gs_fd ORDER BY f NULLS FIRST, d DESC', 2);
SELECT gs_check('SELECT k, id, d, t FROM gs_fd ORDER BY k, id', 2);
SELECT d, t, count(*) FROM (SELECT d, t FROM gs_fd ORDER BY k) s GROUP BY d, t HAVING count(*) > 1 ORDER BY d;

-- many sort columns
CREATE TABLE gs_wide AS
SELECT g AS id, g % 2 AS c1, g % 3 AS c2, (g % 5)::int8 AS c3, (g % 7)::float8 AS c4, (g % 11)::int2 AS c5,
       g % 13 = 0 AS c6, (g % 17)::text AS c7, date '2020-01-01' + g % 19 AS c8, (g % 23)::numeric AS c9,
       CASE WHEN g % 29 = 0 THEN NULL ELSE g % 31 END AS c10
  FROM generate_series(1, 5000) g;
SELECT gs_check('SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, id FROM gs_wide
                  ORDER BY c1, c2 DESC, c3, c4 DESC, c5, c6, c7, c8 DESC, c9, c10 NULLS FIRST, id', 11);
SELECT gs_check('SELECT c10, c9, c8, c7, c6, c5, c4, c3, c2, c1, id FROM gs_wide
                  ORDER BY c10 DESC NULLS LAST, c9, c8, c7 COLLATE "C", c6 DESC, c5, c4, c3 DESC, c2, c1, id', 11);

-- other types, all through the comparators
CREATE TABLE gs_other AS
SELECT g AS id, chr(65 + g % 26)::"char" AS ch, ('n' || g % 37)::name AS nm, (g % 1000 / 7.0)::numeric::money AS m,
       ('0/' || to_hex(hashint4(g) & 65535))::pg_lsn AS lsn,
       ('08:00:2b:01:02:' || lpad(to_hex(g % 256), 2, '0'))::macaddr AS mac,
       numrange((g % 10)::numeric, (g % 10 + g % 3)::numeric) AS nr,
       tstzrange(timestamptz '2020-01-01 00:00+00' + g % 9 * interval '1 day', NULL) AS tr
  FROM generate_series(1, 3000) g;
SELECT c AS col, gs_check(format('SELECT %I, id FROM gs_other ORDER BY %I DESC', c, c)) AS result
  FROM unnest(ARRAY['ch', 'nm', 'm', 'lsn', 'mac', 'nr', 'tr']) WITH ORDINALITY AS cs(c, n)
 ORDER BY n;
SELECT gs_check('SELECT ctid AS tid, id FROM gs_other ORDER BY ctid DESC');

-- a nondeterministic collation: 'abc' = 'ABC', ties that differ in bytes
CREATE COLLATION gs_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE gs_ci_t AS
SELECT g AS id, (ARRAY['abc', 'ABC', 'Abc', 'abd', 'ABD', 'b', 'B', 'a', 'A'])[1 + g % 9] COLLATE gs_ci AS w
  FROM generate_series(1, 2000) g;
SELECT gs_check('SELECT w, id FROM gs_ci_t ORDER BY w');
SELECT gs_check('SELECT w, id FROM gs_ci_t ORDER BY w DESC, id', 2);
SELECT lower(w) AS w, count(*) FROM (SELECT w FROM gs_ci_t ORDER BY w) s GROUP BY 1 ORDER BY 1;

-- partitioned tables and UNION ALL
CREATE TABLE gs_part (id int, k int, s text) PARTITION BY RANGE (id);
CREATE TABLE gs_part_1 PARTITION OF gs_part FOR VALUES FROM (0) TO (2000);
CREATE TABLE gs_part_2 PARTITION OF gs_part FOR VALUES FROM (2000) TO (4000);
CREATE TABLE gs_part_3 PARTITION OF gs_part FOR VALUES FROM (4000) TO (6000);
INSERT INTO gs_part SELECT g, hashint4(g) % 300, md5(g::text) FROM generate_series(0, 5999) g;
ANALYZE gs_part;
SELECT gs_check('SELECT k, s, id FROM gs_part ORDER BY k, s', 2);
SELECT gs_check('SELECT id, k FROM gs_part ORDER BY id DESC');
SET enable_partitionwise_aggregate = on;
SET enable_hashagg = off;
SELECT gs_check('SELECT id / 10 AS g, count(*), min(k) FROM gs_part GROUP BY 1 ORDER BY 1');
RESET enable_partitionwise_aggregate;
RESET enable_hashagg;
EXPLAIN (COSTS OFF)
(SELECT k, id FROM gs_part_1 ORDER BY k) UNION ALL (SELECT k, id FROM gs_part_2 ORDER BY k DESC);
SELECT gs_check('SELECT k, id FROM ((SELECT k, id FROM gs_part_1 ORDER BY k) UNION ALL (SELECT k, id FROM gs_part_2 ORDER BY k DESC)) u ORDER BY k, id', 2);

-- INSERT ... SELECT ... ORDER BY keeps the order (a serial column shows it)
CREATE TABLE gs_ins (n serial, k int, id int);
INSERT INTO gs_ins (k, id) SELECT k, id FROM gs_part ORDER BY k DESC, id;
SELECT count(*) AS out_of_order
  FROM (SELECT k, id, lag(k) OVER (ORDER BY n) AS pk, lag(id) OVER (ORDER BY n) AS pid FROM gs_ins) s
 WHERE (pk, -pid) < (k, -id);
SELECT min(n), max(n), count(*) FROM gs_ins;

-- UPDATE and DELETE over merge joins of GpuSorts
SET enable_hashjoin = off;
SET enable_nestloop = off;
CREATE TABLE gs_upd AS SELECT id, k, 0 AS hits FROM gs_part;
EXPLAIN (COSTS OFF)
UPDATE gs_upd u SET hits = hits + 1 FROM gs_fd f WHERE u.k = f.k;
UPDATE gs_upd u SET hits = hits + 1 FROM gs_fd f WHERE u.k = f.k;
SELECT sum(hits), count(*) FILTER (WHERE hits > 0) FROM gs_upd;
DELETE FROM gs_upd u USING gs_fd f WHERE u.k = f.k AND f.d = 42;
SELECT count(*) FROM gs_upd;
RESET enable_hashjoin;
RESET enable_nestloop;
-- what those should have been, by other means
SET gpusort.enabled = off;
SELECT count(*) AS rows_to_update FROM gs_part p WHERE EXISTS (SELECT 1 FROM gs_fd f WHERE f.k = p.k);
SELECT count(*) AS rows_to_keep FROM gs_part p WHERE NOT EXISTS (SELECT 1 FROM gs_fd f WHERE f.k = p.k AND f.d = 42);
RESET gpusort.enabled;

-- a cached plan executed many times, and a sort in a plpgsql loop
PREPARE gs_prep(int) AS SELECT k, id FROM gs_part WHERE k > $1 ORDER BY k DESC, id;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE gs_prep(0);
CREATE FUNCTION gs.prep_digest(lo int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  acc text := '';
BEGIN
  FOR r IN EXECUTE format('EXECUTE gs_prep(%s)', lo) LOOP
    acc := md5(acc || r.k || ':' || r.id);
  END LOOP;
  RETURN acc;
END $$;
CREATE TABLE gs_prep_results AS SELECT lo, prep_digest(lo) AS d FROM generate_series(-300, 300, 50) lo;
SET gpusort.enabled = off;
DEALLOCATE gs_prep;
PREPARE gs_prep(int) AS SELECT k, id FROM gs_part WHERE k > $1 ORDER BY k DESC, id;
SELECT count(*) AS runs, count(*) FILTER (WHERE d = prep_digest(lo)) AS same_as_native FROM gs_prep_results;
RESET gpusort.enabled;
RESET plan_cache_mode;
DEALLOCATE gs_prep;

CREATE FUNCTION gs.loop_sorts(n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  i int;
  v int[];
  bad int := 0;
BEGIN
  FOR i IN 1 .. n LOOP
    SELECT array_agg(k) INTO v FROM (SELECT k FROM gs_part WHERE id % n = i - 1 ORDER BY k DESC) s;
    IF v IS DISTINCT FROM (SELECT array_agg(k ORDER BY k DESC) FROM gs_part WHERE id % n = i - 1) THEN
      bad := bad + 1;
    END IF;
  END LOOP;
  RETURN format('%s sorts, %s wrong', n, bad);
END $$;
SELECT loop_sorts(40);

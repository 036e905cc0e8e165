--
-- 030_multicol: several sort columns, key widths, input shapes, big sorts.
--
-- * multi-column ORDER BY mixing exact and inexact columns and directions;
-- * gpusort.key_width 8, 16, 24 and 32: columns that do not fit (or fit
--   only in part, e.g. int8 + float8 in 8 bytes) go to the comparators;
--   EXPLAIN ANALYZE (engine cpu) shows Key Width, Key Kind and how many
--   records the comparators ordered; invalid widths are refused;
-- * duplicates, all-equal input, presorted and reversed input (strictly and
--   with ties), empty input, one row, two rows;
-- * 200k-row sorts (several 128K-record chunks): ints, int8 + float8, text,
--   presorted and reversed, and a first NULL that appears only after the
--   first chunk (the key layout changes and every key is encoded again).
-- Every case is compared with PostgreSQL's Sort by gs_check.
--
SET search_path = gs, public;

-- gs_check at every key width; 'ok' if all four are
CREATE FUNCTION gs.check_widths(q text, nkeys int DEFAULT 1) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  w int;
  r text;
  result text := '';
BEGIN
  FOREACH w IN ARRAY ARRAY[8, 16, 24, 32] LOOP
    PERFORM set_config('gpusort.key_width', w::text, true);
    r := gs.gs_check(q, nkeys);
    result := result || CASE WHEN result = '' THEN '' ELSE ', ' END || w || ': ' ||
              CASE WHEN r LIKE 'ok%' THEN 'ok' ELSE r END;
  END LOOP;
  PERFORM set_config('gpusort.key_width', '32', true);
  RETURN result;
END $$;

CREATE TABLE gs_multi AS
SELECT g AS id,
       CASE WHEN g % 97 = 0 THEN NULL ELSE hashint4(g) % 10 END AS a,
       CASE WHEN g % 89 = 0 THEN NULL ELSE (ARRAY['apple', 'Apple', 'banana', 'cherry', 'Cherry', 'date'])[1 + abs(hashint4(g + 1)) % 6] END AS b,
       CASE WHEN g % 83 = 0 THEN NULL WHEN g % 211 = 1 THEN 'NaN'::float8 ELSE (hashint4(g + 2) % 50)::float8 / 4 END AS c,
       CASE WHEN g % 79 = 0 THEN NULL ELSE hashint4extended(g, 3) % 20 * 1000000000000 END AS d,
       CASE WHEN g % 73 = 0 THEN NULL ELSE round((hashint4(g + 4) % 30)::numeric / 3, 1 + g % 2) END AS e,
       CASE WHEN g % 71 = 0 THEN NULL ELSE timestamp '2020-01-01' + (hashint4(g + 5) % 5) * interval '1 hour' END AS f,
       CASE WHEN g % 67 = 0 THEN NULL ELSE ('0000000' || (abs(hashint4(g + 6)) % 4) || '-0000-0000-0000-000000000000')::uuid END AS u,
       (hashint4(g + 7) % 3)::int2 AS s,
       hashint4(g + 8) % 2 = 0 AS bo
  FROM generate_series(1, 20000) g;
ANALYZE gs_multi;

-- mixed exact and inexact columns, mixed directions
SELECT gs_check('SELECT a, b, c, id FROM gs_multi ORDER BY a, b, c', 3);
SELECT gs_check('SELECT a, c, id FROM gs_multi ORDER BY a DESC, c NULLS FIRST, id', 3);
SELECT gs_check('SELECT b, a, id FROM gs_multi ORDER BY b COLLATE "C" DESC, a, id', 3);
SELECT gs_check('SELECT b, a, id FROM gs_multi ORDER BY b DESC NULLS LAST, a NULLS FIRST, id DESC', 3);
SELECT gs_check('SELECT e, a, id FROM gs_multi ORDER BY e, a DESC', 2);
SELECT gs_check('SELECT e, b, c, id FROM gs_multi ORDER BY e DESC, b, c DESC', 3);
SELECT gs_check('SELECT s, bo, a, b, id FROM gs_multi ORDER BY s, bo DESC, a, b', 4);
-- more bytes than any key width: int4 + int8 + float8 + timestamp + uuid + int4
SELECT gs_check('SELECT a, d, c, f, u, id FROM gs_multi ORDER BY a, d DESC, c, f DESC NULLS LAST, u, id', 6);
SELECT gs_check('SELECT u, f, e, b, id FROM gs_multi ORDER BY u DESC, f, e, b', 4);

-- the same at every key width
SELECT q, check_widths(q, k) AS result
  FROM (VALUES ('SELECT d, c, id FROM gs_multi ORDER BY d, c', 2),
               ('SELECT d, c, id FROM gs_multi WHERE d IS NOT NULL AND c IS NOT NULL ORDER BY d, c', 2),
               ('SELECT d, c, id FROM gs_multi ORDER BY d DESC, c DESC, id', 3),
               ('SELECT a, d, c, f, u, id FROM gs_multi ORDER BY a, d DESC, c, f DESC NULLS LAST, u, id', 6),
               ('SELECT u, d, a, id FROM gs_multi ORDER BY u, d, a DESC, id', 4),
               ('SELECT a, b, c, id FROM gs_multi ORDER BY a NULLS FIRST, b, c', 3),
               ('SELECT s, bo, e, id FROM gs_multi ORDER BY s DESC, bo, e', 3)) v(q, k);

-- int8 + float8 in 8 bytes: the float8 goes to the comparators.  In a
-- budget where the keys fit (with the spill variant's 64kB the batches go
-- without keys, and no layout is built)
SET gpusort.max_memory = '64MB';
SET gpusort.key_width = 8;
SELECT * FROM analyze_lines('SELECT d, c FROM gs_multi WHERE d IS NOT NULL AND c IS NOT NULL ORDER BY d, c',
                            'GpuSort|Key|Records|Resolved');
SET gpusort.key_width = 16;
SELECT * FROM analyze_lines('SELECT d, c FROM gs_multi WHERE d IS NOT NULL AND c IS NOT NULL ORDER BY d, c',
                            'GpuSort|Key|Records|Resolved');
-- with NULLs each column needs a NULL byte: 1 + 8 + 1 + 8 bytes, so 16 is a prefix
SELECT * FROM analyze_lines('SELECT d, c FROM gs_multi ORDER BY d, c', 'Key|Records|Resolved');
SET gpusort.key_width = 24;
SELECT * FROM analyze_lines('SELECT d, c FROM gs_multi ORDER BY d, c', 'Key|Records|Resolved');
SET gpusort.key_width = 32;
-- text leads: nothing but its NULL byte is in the key
SELECT * FROM analyze_lines('SELECT b, a FROM gs_multi ORDER BY b, a', 'Key|Records|Resolved');
SELECT * FROM analyze_lines('SELECT b, a FROM gs_multi WHERE b IS NOT NULL ORDER BY b, a', 'Key|Records|Resolved');
RESET gpusort.key_width;
RESET gpusort.max_memory;

-- invalid key widths are refused
SET gpusort.key_width = 12;
SET gpusort.key_width = 0;
SET gpusort.key_width = 40;
SHOW gpusort.key_width;

-- input shapes
CREATE TABLE gs_shapes AS
SELECT g AS id, g AS up, 100001 - g AS down, g / 10 AS up_dups, (100001 - g) / 10 AS down_dups,
       7 AS same, 'same text' AS same_t, hashint4(g) % 5 AS few, lpad(g::text, 6, '0') AS up_t
  FROM generate_series(1, 50000) g;
ANALYZE gs_shapes;
SELECT c AS col, dir, gs_check(format('SELECT %I, id FROM gs_shapes ORDER BY %I %s', c, c, dir)) AS result
  FROM unnest(ARRAY['up', 'down', 'up_dups', 'down_dups', 'same', 'same_t', 'few', 'up_t']) WITH ORDINALITY AS cs(c, cn),
       unnest(ARRAY['', 'DESC']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;
-- presorted on the key, the rest for the comparators
SELECT gs_check('SELECT up_dups, up_t, id FROM gs_shapes ORDER BY up_dups, up_t DESC', 2);
SELECT gs_check('SELECT down, up_t, id FROM gs_shapes ORDER BY down DESC, up_t', 2);
SELECT gs_check('SELECT same, few, same_t, up_t FROM gs_shapes ORDER BY same, few DESC, same_t, up_t', 4);
-- the last rows of a reversed sort (OFFSET: the bound is the whole input)
SELECT string_agg(up::text, ' ') AS last_up FROM (SELECT up FROM gs_shapes ORDER BY down LIMIT 50000 OFFSET 49990) s;
EXPLAIN (COSTS OFF) SELECT up FROM gs_shapes ORDER BY down LIMIT 50000 OFFSET 49990;

-- empty input, one row, two rows
SELECT gs_check('SELECT id FROM gs_shapes WHERE id < 0 ORDER BY id');
SELECT gs_check('SELECT up_t, id FROM gs_shapes WHERE id < 0 ORDER BY up_t DESC');
SELECT gs_check('SELECT id FROM gs_shapes WHERE id BETWEEN 5 AND 5 ORDER BY id');
SELECT gs_check('SELECT up_t, id FROM gs_shapes WHERE id = 5 ORDER BY up_t');
SELECT gs_check('SELECT down, id FROM gs_shapes WHERE id IN (5, 6) ORDER BY down');
SELECT gs_check('SELECT up, id FROM gs_shapes WHERE id IN (5, 6) ORDER BY up DESC');
SELECT gs_check('SELECT nullif(g, 1) AS x FROM generate_series(1, 1) g ORDER BY x');
SELECT gs_check('SELECT x FROM (VALUES (NULL::int), (NULL), (1)) v(x) ORDER BY x');
SELECT * FROM (SELECT id FROM gs_shapes WHERE id < 0 ORDER BY id) s;
SELECT * FROM (SELECT id, up_t FROM gs_shapes WHERE id = 5 ORDER BY up_t) s;

-- 200k rows
CREATE TABLE gs_big AS
SELECT g AS id, hashint4(g) AS i, hashint4extended(g, 1) % 1000 AS i8, (hashint4(g + 1) % 1000)::float8 / 7 AS f,
       md5(g::text) AS t
  FROM generate_series(1, 200000) g;
-- a single NULL, in the second 128K-record chunk
UPDATE gs_big SET i8 = NULL, f = NULL WHERE id = 190000;
VACUUM ANALYZE gs_big;
SELECT gs_check('SELECT i, id FROM gs_big ORDER BY i');
SELECT gs_check('SELECT i8, f, id FROM gs_big ORDER BY i8, f DESC', 2);
SELECT gs_check('SELECT f, i8, id FROM gs_big ORDER BY f NULLS FIRST, i8, id', 3);
SELECT gs_check('SELECT id FROM gs_big ORDER BY id');
SELECT gs_check('SELECT id FROM gs_big ORDER BY id DESC');
SELECT gs_check('SELECT left(t, 2) AS k, i8, id FROM gs_big ORDER BY 1, 2', 2);
-- the late NULL did reach the key: 1 + 8 bytes, NULL first (in a budget
-- where the keys fit, as above)
SET gpusort.max_memory = '64MB';
SELECT * FROM analyze_lines('SELECT i8 FROM gs_big ORDER BY i8 NULLS FIRST', 'Key|Records|Resolved');
RESET gpusort.max_memory;
SELECT (array_agg(ROW(i8, f, id)))[1:2] AS first_two FROM (SELECT i8, f, id FROM gs_big ORDER BY i8 NULLS FIRST, id) s;
SELECT (array_agg(ROW(i8, f, id)))[199999:200000] AS last_two FROM (SELECT i8, f, id FROM gs_big ORDER BY i8 NULLS FIRST, id) s;

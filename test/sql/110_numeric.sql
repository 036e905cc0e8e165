--
-- 110_numeric: numeric keys, compared with PostgreSQL's Sort by gs_check.
--
-- NaN (above everything, equal to itself), 'Infinity' and '-Infinity', 0
-- in every scale and from '-0', equal values in different scales (1.1,
-- 1.10, 1.100: gs_check compares the sort keys with numeric equality, so
-- such ties may come in either order; the rows themselves are compared as
-- text, so each row keeps its own scale), magnitudes from 1e-1000 to
-- 1e1000 and values up to ~1000 digits that differ only in their last
-- digit, boundaries of PostgreSQL's base-10000 digits (9999, 10000,
-- 0.0001, 0.00009999), negatives of all of these, numeric(10,2) and
-- numeric(40,20) columns, ASC/DESC, NULLS FIRST/LAST, and multi-column
-- keys mixing numeric with int and text.
--
SET search_path = gs, public;

-- special and boundary values, each many times over
CREATE TABLE gs_nspecial (v numeric);
INSERT INTO gs_nspecial VALUES ('NaN'), ('Infinity'), ('-Infinity'), (0), ('-0'), (0.0), (0.000), ('-0.00'),
  (1.1), (1.10), (1.100), (1.1000000000000000000000000001), (1.0999999999999999999999999999),
  (-1.1), (-1.10), (-1.100), (1), (1.0), (1.00), (-1), (-1.0),
  (1e100), (-1e100), (1e-100), (-1e-100), (1.0e100), (10e99), (1e1000), (-1e1000), (1e-1000), (-1e-1000),
  (9999), (10000), (10001), (99999999), (100000000), (100000001), (9999.9999), (9999.99999),
  (0.0001), (0.00009999), (0.0001000), (0.00010001), (0.9999), (0.99999999), (1e-4), (1e-5), (1e-8),
  (12345678901234567890), (12345678901234567890.5), (-12345678901234567890), (0.5), (-0.5), (2), (-2),
  (3.14159265358979323846264338327950288), (3.14159265358979323846264338327950289), (3.1415926535897932384626433832795028),
  ((repeat('7', 500) || '1')::numeric), ((repeat('7', 500) || '2')::numeric), ((repeat('7', 499) || '2')::numeric),
  (('0.' || repeat('0', 500) || '1')::numeric), (('0.' || repeat('0', 500) || '2')::numeric),
  (('0.' || repeat('0', 499) || '1')::numeric), (('0.' || repeat('3', 900) || '1')::numeric),
  (('0.' || repeat('3', 900) || '2')::numeric), (('-0.' || repeat('3', 900) || '1')::numeric),
  ((repeat('9', 1000))::numeric), ((repeat('9', 999))::numeric), (('-' || repeat('9', 1000))::numeric),
  ((repeat('9', 500) || '.' || repeat('9', 500))::numeric), ((repeat('1', 300) || '.' || repeat('1', 300) || '2')::numeric);

CREATE TABLE gs_num (id int, n numeric, m numeric(10,2), p numeric(40,20), i int, t text);
INSERT INTO gs_num
SELECT g,
       CASE WHEN g % 53 = 0 THEN NULL
            WHEN g % 4 = 0 THEN (SELECT v FROM gs_nspecial OFFSET abs(hashint4(g)) % (SELECT count(*) FROM gs_nspecial) LIMIT 1)
            WHEN g % 4 = 1 THEN round(hashint4(g)::numeric / 1000, g % 6)                 -- one value in several scales
            WHEN g % 4 = 2 THEN hashint8(g)::numeric * 10::numeric ^ ((abs(hashint4(g + 1)) % 60) - 30)  -- wide magnitudes
            ELSE (hashint4(g) % 200)::numeric / (1 + g % 7) END,                            -- many ties
       CASE WHEN g % 47 = 0 THEN NULL ELSE (hashint4(g + 2) % 10000000)::numeric / 100 END,
       CASE WHEN g % 43 = 0 THEN NULL ELSE (hashint8(g + 3)::numeric / 1e10 * (1 + g % 3))::numeric(40, 20) END,
       abs(hashint4(g + 4)) % 10,
       CASE WHEN g % 41 = 0 THEN NULL ELSE (ARRAY['a', 'B', 'é', 'b', ''])[1 + g % 5] END
  FROM generate_series(1, 30000) g;
ANALYZE gs_num;
SELECT count(*) AS num_rows, count(*) FILTER (WHERE n = 'NaN') > 20 AS has_nan,
       count(*) FILTER (WHERE n = 'Infinity') > 20 AS has_inf, count(*) FILTER (WHERE n = '-Infinity') > 20 AS has_minus_inf,
       count(DISTINCT n) > 10000 AS many_distinct, count(DISTINCT n::text) > count(DISTINCT n) AS scales_differ
  FROM gs_num;

-- every numeric column in every direction and NULL placement
SELECT col, dir, gs_check(format('SELECT %1$I, id FROM gs_num ORDER BY %1$I %2$s', col, dir)) AS result
  FROM unnest(ARRAY['n', 'm', 'p']) WITH ORDINALITY AS cs(col, cn),
       unnest(ARRAY['', 'DESC', 'NULLS FIRST', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- the special values alone, with many copies (big groups of equal keys
-- in different scales)
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY v', 1),
  ('SELECT v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY v DESC', 1),
  ('SELECT v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY v, g DESC', 2),
  ('SELECT v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY v DESC, g', 2),
  ('SELECT -v AS v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY 1', 1),
  ('SELECT v * 3 AS v, g FROM gs_nspecial, generate_series(1, 60) g ORDER BY 1 DESC', 1)) v(q, k);

-- multi-column: numeric with int and text, and numeric after an exact key
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT n, i, id FROM gs_num ORDER BY n, i', 2),
  ('SELECT n, i, id FROM gs_num ORDER BY n DESC NULLS LAST, i DESC, id', 3),
  ('SELECT i, n, id FROM gs_num ORDER BY i, n', 2),
  ('SELECT i, n, id FROM gs_num ORDER BY i DESC, n NULLS FIRST, id', 3),
  ('SELECT m, n, id FROM gs_num ORDER BY m, n DESC', 2),
  ('SELECT n, m, p, id FROM gs_num ORDER BY n, m DESC NULLS FIRST, p', 3),
  ('SELECT n, t, id FROM gs_num ORDER BY n, t', 2),
  ('SELECT t, n, id FROM gs_num ORDER BY t COLLATE "C" DESC, n', 2),
  ('SELECT round(n, 2) AS r, id FROM gs_num WHERE n NOT IN (''NaN'', ''Infinity'', ''-Infinity'') ORDER BY 1', 1),
  ('SELECT trunc(p) AS r, p, id FROM gs_num ORDER BY 1 DESC, 2', 2),
  ('SELECT (m * 1.5)::numeric(12,3) AS k, id FROM gs_num ORDER BY 1 NULLS FIRST', 1),
  ('SELECT n::float8 AS f, n, id FROM gs_num WHERE n = 0 OR abs(n) BETWEEN 1e-300 AND 1e300 ORDER BY 1, 2', 2)) v(q, k);

-- the order itself, printed in GpuSort order: NaN above Infinity above
-- every number; 1.1 = 1.10 = 1.100 (ties in id order here)
SELECT string_agg(v::text, ' ' ORDER BY rn) AS numeric_order
  FROM (SELECT v, row_number() OVER () AS rn
          FROM (SELECT v FROM (VALUES ('NaN'::numeric, 1), ('-Infinity', 2), ('Infinity', 3), (1.10, 4), (1.1, 5),
                                      (1.100, 6), (-0.0, 7), (0, 8), (1e-20, 9), (-1e20, 10), (9999, 11), (10000, 12),
                                      (0.0001, 13), (0.00009999, 14), (-1.1, 15), (NULL, 16)) x(v, i)
                 ORDER BY v NULLS FIRST, i) s) s;

-- every power of ten from 1e-40 to 1e40 (each side of PostgreSQL's
-- base-10000 digit boundaries) times mantissas just under, at and just
-- over it, both signs, in several scales
CREATE TABLE gs_npow AS
SELECT row_number() OVER () AS id, v
  FROM (SELECT round(sg * mt * 10::numeric ^ k, 45) AS v
          FROM generate_series(-40, 40) k,
               unnest(ARRAY[1, 1.5, 9.9999, 0.99999, 1.00001, 5]) mt,
               unnest(ARRAY[1, -1]) sg
        UNION ALL
        SELECT trim_scale(sg * mt * 10::numeric ^ k)
          FROM generate_series(-40, 40, 3) k,
               unnest(ARRAY[1, 9.9999, 1.00001]) mt,
               unnest(ARRAY[1, -1]) sg) s,
       generate_series(1, 4) c;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT v, id FROM gs_npow ORDER BY v', 1),
  ('SELECT v, id FROM gs_npow ORDER BY v DESC', 1),
  ('SELECT v, id FROM gs_npow ORDER BY v, id DESC', 2),
  ('SELECT abs(v) AS a, v, id FROM gs_npow ORDER BY 1 DESC, 2', 2)) v(q, k);

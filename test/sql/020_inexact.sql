--
-- 020_inexact: types and orderings without exact keys, ordered by
-- PostgreSQL's comparators among equal keys.
--
-- text with the database's collation (en_US.UTF-8) and COLLATE "C",
-- varchar, bpchar, name, numeric (NaN, +-Infinity, 1.1 vs 1.10), interval
-- ('1 day' = '24 hours'), bytea, arrays (with NULL elements), jsonb, inet,
-- timetz, ranges and composite rows; a domain over int4 (exact keys) and
-- over text; non-default operator classes: text ORDER BY ... USING ~<~
-- (text_pattern_ops) and a user-defined reverse int4 operator class.  Each
-- case is compared with PostgreSQL's Sort by gs_check; small lists are
-- printed in GpuSort order so the expected file shows the collation order.
--
SET search_path = gs, public;

CREATE TABLE gs_inexact (
  id  int,
  s   text,
  vc  varchar(40),
  bc  char(6),
  nm  name,
  n   numeric,
  iv  interval,
  ba  bytea,
  ia  int[],
  ta  text[],
  j   jsonb,
  ip  inet,
  tt  timetz,
  r   int4range
);

-- words that collate differently under en_US.UTF-8 and C: case, accents,
-- punctuation, spaces, empty strings, common prefixes
CREATE TABLE gs_words (w text);
INSERT INTO gs_words VALUES ('resume'), ('Resume'), ('RESUME'), ('résumé'), ('Résumé'), ('re-sume'), ('re sume'),
  (' resume'), (''), ('a'), ('A'), ('b'), ('B'), ('_x'), ('-x'), ('x'), ('X1'), ('x10'), ('x2'), ('zebra'),
  ('Zebra'), ('Ångström'), ('angstrom'), ('éclair'), ('eclair'), ('Eclair'), ('coop'), ('co-op'), ('co op'),
  ('straße'), ('strasse'), ('Strasse'), ('ｆｕｌｌ'), ('full'), ('日本'), ('中文'), ('zz'), ('~'), ('!'), ('1'), ('10'), ('9');

INSERT INTO gs_inexact
SELECT g,
       CASE WHEN g % 31 = 0 THEN NULL
            WHEN g % 3 = 0 THEN (SELECT w FROM gs_words OFFSET abs(hashint4(g)) % 42 LIMIT 1)
            ELSE (SELECT w FROM gs_words OFFSET abs(hashint4(g)) % 42 LIMIT 1) || md5(g::text)::text END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE left(md5((g % 700)::text), 1 + abs(hashint4(g)) % 20) END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE left(md5((g % 300)::text), abs(hashint4(g + 1)) % 7) END,
       left(md5((g % 900)::text), 1 + g % 12),
       CASE WHEN g % 37 = 0 THEN NULL
            WHEN g % 101 = 1 THEN 'NaN'::numeric
            WHEN g % 103 = 2 THEN 'Infinity'::numeric
            WHEN g % 107 = 3 THEN '-Infinity'::numeric
            WHEN g % 5 = 0 THEN round((hashint4(g) % 1000)::numeric / 10, 1)
            WHEN g % 5 = 1 THEN round((hashint4(g) % 1000)::numeric / 10, 3)   -- 1.1 and 1.100
            ELSE (hashint8(g)::numeric * 1e-10)::numeric(40, 12) END,
       CASE WHEN g % 41 = 0 THEN NULL
            WHEN g % 4 = 0 THEN (abs(hashint4(g)) % 40) * interval '1 day'
            WHEN g % 4 = 1 THEN (abs(hashint4(g)) % 40) * interval '24 hours'   -- equal to days
            WHEN g % 4 = 2 THEN (abs(hashint4(g)) % 3) * interval '1 month' - (hashint4(g + 1) % 100) * interval '1 minute'
            ELSE (abs(hashint4(g)) % 3) * interval '30 days' END,
       CASE WHEN g % 43 = 0 THEN NULL ELSE decode(left(md5(g::text), 2 * (g % 9)), 'hex') END,
       CASE WHEN g % 47 = 0 THEN NULL
            WHEN g % 5 = 0 THEN ARRAY[g % 7, NULL, g % 3]
            ELSE ARRAY(SELECT hashint4(g * 10 + k) % 5 FROM generate_series(1, g % 4) k) END,
       CASE WHEN g % 53 = 0 THEN NULL ELSE ARRAY[left(md5(g::text), 1 + g % 3), CASE WHEN g % 2 = 0 THEN NULL ELSE 'x' END] END,
       CASE WHEN g % 59 = 0 THEN NULL
            WHEN g % 3 = 0 THEN jsonb_build_object('a', g % 10)
            WHEN g % 3 = 1 THEN to_jsonb(g % 17)
            ELSE jsonb_build_array(g % 5, left(md5(g::text), 2)) END,
       CASE WHEN g % 61 = 0 THEN NULL
            WHEN g % 2 = 0 THEN ('10.' || (g % 256) || '.' || (hashint4(g) & 255) || '.0/' || (8 + g % 25))::inet
            ELSE ('::ffff:' || (g % 256) || ':1')::inet END,
       CASE WHEN g % 67 = 0 THEN NULL
            ELSE (time '00:00' + (abs(hashint4(g)) % 86400) * interval '1 second')::timetz
                 AT TIME ZONE (((hashint4(g + 3) % 12)::text || ':00')::interval) END,
       CASE WHEN g % 71 = 0 THEN NULL
            WHEN g % 71 = 1 THEN 'empty'::int4range
            ELSE int4range(hashint4(g) % 100, CASE WHEN g % 5 = 0 THEN NULL ELSE hashint4(g) % 100 + 1 + g % 7 END) END
  FROM generate_series(1, 4000) g;
ANALYZE gs_inexact;

-- every column ASC and DESC NULLS LAST
SELECT c AS col, dir,
       gs_check(format('SELECT %I, id FROM gs_inexact ORDER BY %I %s', c, c, dir)) AS result
  FROM unnest(ARRAY['s', 'vc', 'bc', 'nm', 'n', 'iv', 'ba', 'ia', 'ta', 'j', 'ip', 'tt', 'r']) WITH ORDINALITY AS cs(c, cn),
       unnest(ARRAY['', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- text in other collations and with other operator classes
SELECT gs_check('SELECT s, id FROM gs_inexact ORDER BY s COLLATE "C"');
SELECT gs_check('SELECT s COLLATE "C" AS s, id FROM gs_inexact ORDER BY 1 DESC');
SELECT gs_check('SELECT s COLLATE "POSIX" AS s, id FROM gs_inexact ORDER BY 1 NULLS FIRST');
SELECT gs_check('SELECT s COLLATE "en_US" AS s, id FROM gs_inexact ORDER BY 1');
SELECT gs_check('SELECT vc COLLATE "C" AS vc, id FROM gs_inexact ORDER BY 1 DESC');
SELECT gs_check('SELECT s, id FROM gs_inexact ORDER BY s USING ~<~');
SELECT gs_check('SELECT s, id FROM gs_inexact ORDER BY s USING ~>~ NULLS LAST');
SELECT gs_check('SELECT upper(s) AS k, id FROM gs_inexact ORDER BY 1');
SELECT gs_check('SELECT (s || vc) AS k, id FROM gs_inexact ORDER BY 1 DESC');

-- the collation orders themselves (letters and digits only in the printed
-- lists: punctuation and non-ASCII order vary between glibc versions; the
-- gs_check lines below compare every word with the native sort)
SELECT string_agg(quote_literal(w), ' ') AS en_us
  FROM (SELECT w FROM gs_words WHERE w ~ '^[A-Za-z0-9]+$' ORDER BY w) s;
SELECT string_agg(quote_literal(w), ' ') AS c_collation
  FROM (SELECT w FROM gs_words WHERE w ~ '^[A-Za-z0-9]+$' ORDER BY w COLLATE "C") s;
SELECT string_agg(quote_literal(w), ' ') AS pattern_ops
  FROM (SELECT w FROM gs_words WHERE w ~ '^[A-Za-z0-9]+$' ORDER BY w USING ~>~) s;
SELECT gs_check('SELECT w FROM gs_words ORDER BY w');
SELECT gs_check('SELECT w FROM gs_words ORDER BY w COLLATE "C" DESC');

-- numeric: 1.1 and 1.10 are equal, NaN above Infinity above every number
SELECT string_agg(n::text, ' ') AS numeric_asc
  FROM (SELECT n FROM (VALUES (1.10::numeric, 1), (1.1, 2), (1.100, 3), ('NaN', 4), ('Infinity', 5), ('-Infinity', 6),
                              (-0.0, 7), (0, 8), (1e-20, 9), (-1e20, 10), (NULL, 11)) v(n, i)
         ORDER BY n, i) s;
SELECT gs_check($$SELECT n, i FROM (VALUES (1.10::numeric, 1), (1.1, 2), (1.100, 3), ('NaN', 4), ('Infinity', 5),
                  ('-Infinity', 6), (-0.0, 7), (0, 8), (1e-20, 9), (-1e20, 10), (NULL, 11)) v(n, i) ORDER BY n DESC$$);

-- interval: equal intervals in different units are ties for both sorts
SELECT gs_check($$SELECT iv, i FROM (VALUES (interval '1 day', 1), ('24 hours', 2), ('1 mon', 3), ('30 days', 4),
                  ('720 hours', 5), ('-1 day', 6), ('1 year', 7), ('360 days', 8), (NULL, 9)) v(iv, i) ORDER BY iv$$);
SELECT string_agg(iv::text, ' | ') AS interval_asc
  FROM (SELECT iv FROM (VALUES (interval '1 day 1 second', 1), ('25 hours', 2), ('-1 day', 6), ('1 year', 7),
                               ('359 days', 8)) v(iv, i) ORDER BY iv) s;

-- domains: over int4 (exact keys) and over text (comparators)
CREATE DOMAIN gs_dint AS int4 CHECK (VALUE <> 13);
CREATE DOMAIN gs_dtext AS text COLLATE "C";
-- (filled by INSERT, which PostgreSQL runs without parallel workers: under
-- forced parallel plans CREATE TABLE AS ran the LIMIT below over a Gather
-- rescanned for each row, which PostgreSQL 15 itself, without gpusort,
-- let return no row now and then, and the table came out a few rows short)
CREATE TABLE gs_domains (di gs_dint, dt gs_dtext, id int4);
INSERT INTO gs_domains
  SELECT (hashint4(g) % 100000)::gs_dint, w, g
    FROM generate_series(1, 3000) g,
         LATERAL (SELECT w FROM gs_words OFFSET g % 42 LIMIT 1) w
   WHERE hashint4(g) % 100000 <> 13;
SELECT gs_check('SELECT di, id FROM gs_domains ORDER BY di');
SELECT gs_check('SELECT di, id FROM gs_domains ORDER BY di DESC');
SELECT gs_check('SELECT dt, id FROM gs_domains ORDER BY dt');
SELECT gs_check('SELECT dt, di, id FROM gs_domains ORDER BY dt DESC, di', 2);

-- a user-defined operator class for int4 that orders in reverse
CREATE FUNCTION gs_int4_rev_cmp(int4, int4) RETURNS int4
  LANGUAGE sql IMMUTABLE STRICT AS 'SELECT btint4cmp($2, $1)';
CREATE OPERATOR <<< (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4gt);
CREATE OPERATOR <<<= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4ge);
CREATE OPERATOR === (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4eq);
CREATE OPERATOR >>>= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4le);
CREATE OPERATOR >>> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4lt);
CREATE OPERATOR CLASS gs_int4_rev_ops FOR TYPE int4 USING btree AS
  OPERATOR 1 <<<, OPERATOR 2 <<<=, OPERATOR 3 ===, OPERATOR 4 >>>=, OPERATOR 5 >>>,
  FUNCTION 1 gs_int4_rev_cmp(int4, int4);
CREATE TABLE gs_rev AS SELECT CASE WHEN g % 50 = 0 THEN NULL ELSE hashint4(g) % 1000 END AS v, g AS id
  FROM generate_series(1, 2000) g;
SELECT gs_check('SELECT v, id FROM gs_rev ORDER BY v USING <<<');
SELECT gs_check('SELECT v, id FROM gs_rev ORDER BY v USING >>> NULLS FIRST');
SELECT gs_check('SELECT v, id FROM gs_rev ORDER BY v USING <<<, id', 2);
SELECT string_agg(coalesce(v::text, 'null'), ' ') AS reverse_opclass
  FROM (SELECT v FROM (VALUES (1), (-5), (NULL), (7), (0), (2147483647), (-2147483648)) x(v) ORDER BY v USING <<<) s;
SELECT string_agg(coalesce(v::text, 'null'), ' ') AS reverse_opclass_desc
  FROM (SELECT v FROM (VALUES (1), (-5), (NULL), (7), (0), (2147483647), (-2147483648)) x(v) ORDER BY v USING >>>) s;

-- composite rows
CREATE TYPE gs_pair AS (a numeric, b text);
SELECT gs_check('SELECT ROW(n, s)::gs_pair AS rw, id FROM gs_inexact ORDER BY 1');
SELECT gs_check('SELECT ROW(id % 7, s)::gs_pair AS rw, id FROM gs_inexact ORDER BY 1 DESC');

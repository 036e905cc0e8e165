--
-- 100_text_collations: text, varchar, bpchar and name under every kind of
-- collation, compared with PostgreSQL's Sort by gs_check.
--
-- Collations: "C" and "POSIX" (bytes), the database default (en_US.UTF-8),
-- libc de_DE and sv_SE (created here from the locales de_DE.utf8 and
-- sv_SE.utf8 that test/install-deps.sh generates; strxfrm, whose order the
-- encoder must check against strcoll), ICU "und-x-icu", "de-x-icu" and
-- "sv-x-icu" (sort keys), and two nondeterministic ICU collations: gs_nd_ci
-- (und-u-ks-level2: case-insensitive) and gs_nd_ai (und-u-ks-level1: case- and
-- accent-insensitive), under which strings with different bytes are equal.
--
-- Data: accents (e é è ê ë E É), case, punctuation, leading, trailing and
-- inner spaces, tabs and control characters, empty strings, NULLs,
-- multi-byte UTF-8 (ß ø å ä ö Ω emoji, combining accents, ligatures),
-- char(n) padding ('ab' = 'ab   ', and 'ab' < E'ab\t' < 'ab!' because
-- trailing spaces do not count), strings that share long prefixes (URLs,
-- paths, padded item codes, and strings that differ only at byte 7..1000
-- or only in case or accents after 40+ equal bytes, so that the difference
-- lies beyond any fixed-width key prefix), long TOASTed strings
-- (compressed, and STORAGE EXTERNAL), strings on which glibc's strxfrm
-- and strcoll disagree (leading combining marks: the collation check must
-- repair them), and multi-column ORDER BY mixing text with integers, DESC
-- and NULLS FIRST.  Results are pass/fail flags;
-- only orders that are the same in every glibc and ICU version are printed.
--
SET search_path = gs, public;

CREATE COLLATION gs_de (provider = libc, locale = 'de_DE.utf8');
CREATE COLLATION gs_sv (provider = libc, locale = 'sv_SE.utf8');
CREATE COLLATION gs_nd_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE COLLATION gs_nd_ai (provider = icu, locale = 'und-u-ks-level1', deterministic = false);

-- the collations are the real thing: ö sorts with o in German and after z
-- in Swedish; gs_nd_ci ignores case but not accents; gs_nd_ai ignores both
SELECT 'ö' < 'z' COLLATE gs_de AS de_o_umlaut_before_z,
       'ö' > 'z' COLLATE gs_sv AS sv_o_umlaut_after_z,
       'ö' < 'z' COLLATE "de-x-icu" AS de_icu_before_z,
       'ö' > 'z' COLLATE "sv-x-icu" AS sv_icu_after_z,
       'Straße' = 'STRAßE' COLLATE gs_nd_ci AS ci_case_equal,
       'resume' <> 'résumé' COLLATE gs_nd_ci AS ci_accents_differ,
       'resume' = 'RÉSUMÉ' COLLATE gs_nd_ai AS ai_equal,
       'é' = U&'e\0301' COLLATE gs_nd_ci AS ci_canonical_equal;

-- the collations every case runs under
CREATE TABLE gs_colls (cn int, coll text);
INSERT INTO gs_colls VALUES (1, 'default'), (2, 'C'), (3, 'POSIX'), (4, 'gs_de'), (5, 'gs_sv'),
  (6, 'und-x-icu'), (7, 'de-x-icu'), (8, 'sv-x-icu'), (9, 'gs_nd_ci'), (10, 'gs_nd_ai');

-- words that collate differently from their bytes and from each other
CREATE TABLE gs_tw (wn serial, w text);
INSERT INTO gs_tw (w) VALUES
  ('e'), ('E'), ('é'), ('É'), ('è'), ('ê'), ('ë'), ('Ë'), (U&'e\0301'), ('ea'), ('éa'), ('Ea'), ('eb'),
  ('resume'), ('Resume'), ('RESUME'), ('résumé'), ('Résumé'), ('re-sume'), ('re sume'), ('resume '),
  (' resume'), ('  resume'), ('re  sume'), ('re_sume'), ('re.sume'), ('re,sume'), (E're\tsume'),
  (''), (' '), ('  '), ('a'), ('A'), ('á'), ('à'), ('â'), ('ä'), ('Ä'), ('å'), ('Å'), ('æ'), ('Æ'),
  ('aa'), ('Aa'), ('AA'), ('ab'), ('aB'), ('b'), ('B'), ('o'), ('O'), ('ö'), ('Ö'), ('ø'), ('Ø'), ('oe'),
  ('œ'), ('z'), ('Z'), ('zz'), ('þ'), ('ss'), ('SS'), ('ß'), ('ẞ'), ('straße'), ('Straße'), ('strasse'),
  ('STRASSE'), ('strase'), ('v'), ('w'), ('V'), ('W'), ('vw'), ('wv'), ('i'), ('I'), ('ı'), ('İ'),
  ('fi'), ('ﬁ'), ('ﬃ'), ('ffi'), ('Ω'), ('ω'), (U&'\2126'), ('Ωmega'), ('omega'), ('π'), ('Я'), ('я'),
  ('日本'), ('中文'), ('한국어'), ('😀'), ('😀a'), ('a😀'), ('🎉🎉'), ('x😀y'), ('ｆｕｌｌ'), ('full'),
  ('-'), ('--'), ('-a'), ('a-'), ('a-b'), ('ab-'), ('_'), ('.'), (','), ('!'), ('?'), ('~'), ('#1'),
  ('1'), ('01'), ('10'), ('2'), ('1.5'), ('1,5'), ('Ⅻ'), ('½'), ('²'), ('co-op'), ('coop'), ('co op'),
  ('Coop'), ('ch'), ('c'), ('h'), ('cz'), ('ñ'), ('n'), ('N'), ('ny'), ('ij'), ('ĳ'), ('å a'), ('åa');

-- 12000 rows: single words, pairs with and without a space, words with
-- numbers, case-changed pairs; varchar prefixes of each other and with
-- trailing spaces; char(8) with control characters and padding; name
CREATE TABLE gs_tc (id int, grp int, s text, vc varchar(80), bc char(8), nm name);
INSERT INTO gs_tc
SELECT g, abs(hashint4(g + 5)) % 7,
       CASE WHEN g % 97 = 0 THEN NULL
            WHEN g % 5 = 0 THEN w1
            WHEN g % 5 = 1 THEN w1 || ' ' || w2
            WHEN g % 5 = 2 THEN w1 || w2
            WHEN g % 5 = 3 THEN w1 || '-' || (abs(hashint4(g)) % 100)::text
            WHEN g % 10 = 4 THEN upper(w1 || w2)
            ELSE lower(w2 || ' ' || w1) END,
       CASE WHEN g % 89 = 0 THEN NULL
            WHEN g % 3 = 0 THEN left(w1 || w2 || w1, 1 + g % 12)
            WHEN g % 3 = 1 THEN w1 || repeat(' ', g % 4)
            ELSE w2 || w1 END,
       CASE WHEN g % 83 = 0 THEN NULL
            ELSE (ARRAY['ab', 'ab ', 'ab   ', E'ab\t', E'ab\x01', 'ab!', 'a', '', ' ', 'AB', 'Ab', 'äb', 'åb',
                        E'a\tb', 'a b', 'é', 'e', 'E', 'ß', 'ss'])[1 + abs(hashint4(g + 2)) % 20] ||
                 left(w2, g % 3) END,
       (w1 || (g % 50)::text)::name
  FROM (SELECT array_agg(w ORDER BY wn) AS ws, count(*)::int AS nw FROM gs_tw) a,
       generate_series(1, 12000) g,
       LATERAL (SELECT ws[1 + abs(hashint4(g)) % nw] AS w1, ws[1 + abs(hashint4(g + 1)) % nw] AS w2) ws;
ANALYZE gs_tc;
SELECT count(*) AS tc_rows, count(DISTINCT s) > 5000 AS many_distinct, count(*) FILTER (WHERE s = '') > 0 AS has_empty,
       count(*) - count(s) AS null_s FROM gs_tc;

-- every column under every collation, ASC and DESC NULLS LAST
SELECT col, coll, dir,
       gs_check(format('SELECT %1$I COLLATE %2$I AS k, id FROM gs_tc ORDER BY 1 %3$s', col, coll, dir)) AS result
  FROM unnest(ARRAY['s', 'vc', 'bc', 'nm']) WITH ORDINALITY AS cs(col, cn),
       gs_colls,
       unnest(ARRAY['', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cs.cn, gs_colls.cn, dn;

-- NULLS FIRST, DESC NULLS FIRST, and the column's own collation left alone
SELECT q, gs_check(q) AS result FROM (VALUES
  ('SELECT s, id FROM gs_tc ORDER BY s NULLS FIRST'),
  ('SELECT s, id FROM gs_tc ORDER BY s DESC'),
  ('SELECT vc COLLATE "C" AS k, id FROM gs_tc ORDER BY 1 DESC NULLS FIRST'),
  ('SELECT bc COLLATE gs_sv AS k, id FROM gs_tc ORDER BY 1 NULLS FIRST'),
  ('SELECT s COLLATE "und-x-icu" AS k, id FROM gs_tc ORDER BY 1 DESC'),
  ('SELECT s COLLATE gs_nd_ci AS k, id FROM gs_tc ORDER BY 1 DESC NULLS FIRST'),
  ('SELECT nm, id FROM gs_tc ORDER BY nm'),
  ('SELECT nm, id FROM gs_tc ORDER BY nm DESC'),
  ('SELECT vc, id FROM gs_tc ORDER BY vc'),
  ('SELECT bc, id FROM gs_tc ORDER BY bc')) v(q);

-- multi-column: text with integers, DESC and NULLS FIRST in between
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT grp, s, id FROM gs_tc ORDER BY grp, s', 2),
  ('SELECT grp, s COLLATE "C" AS s, id FROM gs_tc ORDER BY grp DESC, 2 NULLS FIRST', 2),
  ('SELECT s COLLATE gs_de AS s, grp, id FROM gs_tc ORDER BY 1, grp DESC', 2),
  ('SELECT s COLLATE gs_sv AS s, grp, id FROM gs_tc ORDER BY 1 DESC NULLS FIRST, grp, id', 3),
  ('SELECT s COLLATE "C" AS s, vc COLLATE "und-x-icu" AS vc, id FROM gs_tc ORDER BY 1 DESC NULLS FIRST, 2, id', 3),
  ('SELECT bc, s COLLATE gs_sv AS s, id FROM gs_tc ORDER BY bc, 2 NULLS FIRST, id DESC', 3),
  ('SELECT grp, s COLLATE gs_nd_ci AS s, id FROM gs_tc ORDER BY grp DESC, 2, id', 3),
  ('SELECT s COLLATE gs_nd_ci AS s, nm, id FROM gs_tc ORDER BY 1 DESC, nm, id', 3),
  ('SELECT s COLLATE gs_nd_ai AS s, grp, id FROM gs_tc ORDER BY 1, grp DESC, id', 3),
  ('SELECT vc COLLATE "sv-x-icu" AS vc, grp, s COLLATE "POSIX" AS s FROM gs_tc ORDER BY 1 NULLS FIRST, grp, 3 DESC', 3),
  ('SELECT vc COLLATE "de-x-icu" AS vc, s COLLATE gs_de AS s, id FROM gs_tc ORDER BY 1 DESC, 2, id', 3),
  ('SELECT s, vc, bc, nm, id FROM gs_tc ORDER BY s, vc DESC, bc, nm DESC, id', 5),
  ('SELECT (s || vc) COLLATE gs_de AS k, id FROM gs_tc ORDER BY 1', 1),
  ('SELECT lower(s) AS k, upper(vc) AS k2, id FROM gs_tc ORDER BY 1, 2 DESC, id', 3)) v(q, k);

-- char(n) padding: trailing spaces do not count, so 'ab' = 'ab   ' and
-- 'ab' sorts before E'ab\x01', E'ab\t' and 'ab!' in bytes; varchar and
-- text keep their trailing spaces (printed in GpuSort order, "C")
CREATE TABLE gs_bp (id int, b char(5), v varchar(5), t text);
INSERT INTO gs_bp
SELECT g, x, x, x
  FROM generate_series(1, 3000) g,
       LATERAL (SELECT CASE WHEN g % 50 = 0 THEN NULL
                            ELSE (ARRAY['ab', 'ab ', 'ab   ', E'ab\t', E'ab\x01', 'ab!', 'a', '', ' ', 'AB',
                                        'Ab', 'äb', 'a b', 'a  b', 'abc', 'ab c', E'a\x01', 'ab~'])[1 + abs(hashint4(g)) % 18] END) xs(x);
SELECT string_agg(quote_literal(replace(replace(b, E'\t', '<tab>'), E'\x01', '<01>')), ' ') AS bpchar_c_order
  FROM (SELECT DISTINCT b COLLATE "C" AS b FROM gs_bp WHERE b IS NOT NULL ORDER BY 1) s;
SELECT string_agg(quote_literal(replace(replace(v, E'\t', '<tab>'), E'\x01', '<01>')), ' ') AS varchar_c_order
  FROM (SELECT DISTINCT v COLLATE "C" AS v FROM gs_bp WHERE v IS NOT NULL ORDER BY 1) s;
SELECT col, coll, dir,
       gs_check(format('SELECT %1$I COLLATE %2$I AS k, id FROM gs_bp ORDER BY 1 %3$s', col, coll, dir)) AS result
  FROM unnest(ARRAY['b', 'v', 't']) WITH ORDINALITY AS cs(col, cn),
       gs_colls,
       unnest(ARRAY['', 'DESC NULLS FIRST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cs.cn, gs_colls.cn, dn;

-- equal under the collation but not in bytes: big groups of case (and
-- accent, and canonically equivalent) variants; ties may come in any
-- order, and the comparison of the keys uses the same collation
CREATE TABLE gs_eq (id int, s text);
INSERT INTO gs_eq
SELECT g, CASE WHEN g % 61 = 0 THEN NULL
               ELSE (ARRAY['abc', 'ABC', 'Abc', 'aBC', 'abC', 'äbc', 'ÄBC', 'Äbc', 'abd', 'ABD', 'ab', 'AB',
                           'straße', 'STRASSE', 'Strasse', 'strasse', 'STRAßE', 'é', 'É', U&'e\0301', U&'E\0301',
                           'e', 'E', 'ê', 'resume', 'RÉSUMÉ', 'Résumé', 'résumé', 'RESUME', '', ' ', 'a b', 'A B',
                           'ǅ', 'Ǆ', 'ǆ', 'Ω', U&'\2126', 'ω'])[1 + abs(hashint4(g)) % 39] ||
                    CASE WHEN g % 3 = 0 THEN ' ' || (ARRAY['x', 'X', 'y'])[1 + g % 3] ELSE '' END END
  FROM generate_series(1, 8000) g;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT s COLLATE gs_nd_ci AS s, id FROM gs_eq ORDER BY 1', 1),
  ('SELECT s COLLATE gs_nd_ci AS s, id FROM gs_eq ORDER BY 1 DESC NULLS LAST', 1),
  ('SELECT s COLLATE gs_nd_ai AS s, id FROM gs_eq ORDER BY 1', 1),
  ('SELECT s COLLATE gs_nd_ai AS s, id FROM gs_eq ORDER BY 1 DESC', 1),
  ('SELECT s COLLATE gs_nd_ci AS s, id FROM gs_eq ORDER BY 1, id', 2),
  ('SELECT s COLLATE gs_nd_ai AS s, id FROM gs_eq ORDER BY 1 DESC, id DESC', 2),
  ('SELECT s COLLATE "und-x-icu" AS s, id FROM gs_eq ORDER BY 1', 1),
  ('SELECT s, id FROM gs_eq ORDER BY s', 1),
  ('SELECT s COLLATE gs_de AS s, id FROM gs_eq ORDER BY 1 DESC', 1),
  ('SELECT s COLLATE "C" AS s, id FROM gs_eq ORDER BY 1', 1)) v(q, k);
-- the case-insensitive groups themselves (ASCII only: same in every ICU)
SELECT string_agg(format('%s:%s', lower(k), n), ' ' ORDER BY lower(k) COLLATE "C") AS ci_groups
  FROM (SELECT min(s) AS k, count(*) AS n FROM gs_eq WHERE s ~ '^[A-Za-z ]+$' GROUP BY s COLLATE gs_nd_ci) g;

-- long shared prefixes: URLs, paths and item codes that share 40+ leading
-- bytes; strings that differ first at byte 7..1000 (around every key
-- width); strings that differ after a long prefix only in case or accents
-- (where a sort key's first level ties), or in case early but letters late
CREATE TABLE gs_px (id int, s text);
INSERT INTO gs_px
SELECT g, CASE WHEN g % 101 = 0 THEN NULL
  WHEN g % 8 = 0 THEN 'https://www.example.com/catalog/products/category-' || (g % 7) || '/item?id=' ||
                      lpad((abs(hashint4(g)) % 100000)::text, 8, '0')
  WHEN g % 8 = 1 THEN '/var/lib/postgresql/15/main/base/16384/' || (abs(hashint4(g)) % 5000) || '.' || (g % 3)
  WHEN g % 8 = 2 THEN 'warehouse/north/zone-a/shelf-0001/bin-0001/ITEM-' || lpad((abs(hashint4(g)) % 4000)::text, 9, '0')
  WHEN g % 8 = 3 THEN repeat('x', (ARRAY[7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39, 40, 41, 47, 48, 63, 64, 65,
                                         127, 128, 129, 255, 256, 1000])[1 + abs(hashint4(g)) % 26]) ||
                      (ARRAY['', 'a', 'A', 'b', 'á', '-', ' ', '0', 'ß', '😀', 'x', 'X', 'xa', 'Y'])[1 + abs(hashint4(g + 1)) % 14]
  WHEN g % 8 = 4 THEN 'ITEM-' || lpad((abs(hashint4(g)) % 3000)::text, 9, '0') || '-REVISION-2024-' ||
                      (ARRAY['a', 'A', 'á', 'Á', 'ä', 'b', 'B', '', ' ', 'ae', 'Ae'])[1 + abs(hashint4(g + 1)) % 11]
  WHEN g % 8 = 5 THEN (ARRAY['Prefix', 'prefix', 'PREFIX', 'préfix', 'Préfix'])[1 + abs(hashint4(g)) % 5] ||
                      repeat('-shared', 8) || chr(97 + abs(hashint4(g + 1)) % 26)
  WHEN g % 8 = 6 THEN repeat('ab', 30) || ' ' || repeat('cd', abs(hashint4(g)) % 5) || (g % 13)
  ELSE repeat('Ω😀', 12) || lpad((abs(hashint4(g)) % 500)::text, 4, '0') || (ARRAY['ø', 'o', 'ö', 'å', 'z'])[1 + g % 5]
  END
  FROM generate_series(1, 12000) g;
ANALYZE gs_px;
SELECT count(*) AS px_rows, count(DISTINCT s) > 6000 AS many_distinct FROM gs_px;
SELECT coll, dir,
       gs_check(format('SELECT s COLLATE %1$I AS k, id FROM gs_px ORDER BY 1 %2$s', coll, dir)) AS result
  FROM gs_colls, unnest(ARRAY['', 'DESC']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY gs_colls.cn, dn;
SELECT gs_check('SELECT left(s, 60) AS k, s, id FROM gs_px ORDER BY 1, 2 DESC, id', 3) AS prefix_then_whole;
SELECT gs_check('SELECT (id % 3) AS k, s COLLATE gs_de AS s, id FROM gs_px ORDER BY 1, 2 NULLS FIRST, id', 3) AS int_then_prefix;
SELECT gs_check('SELECT s COLLATE "C" AS s, id FROM gs_px WHERE s LIKE $q$x%$q$ ORDER BY 1 DESC, id', 2) AS byte_boundaries;

-- long values, TOASTed: compressed (the default) and uncompressed out of
-- line (STORAGE EXTERNAL); several KB with a common prefix and the
-- difference at the end, in case, accents or letters
CREATE TABLE gs_long (id int, k int, s text, x text);
ALTER TABLE gs_long ALTER COLUMN x SET STORAGE EXTERNAL;
INSERT INTO gs_long
SELECT g, g % 5,
       CASE WHEN g % 40 = 0 THEN NULL
            WHEN g % 10 = 1 THEN 'short ' || (ARRAY['a', 'A', 'é'])[1 + g % 3]
            ELSE repeat('Lorem ipsum dolor sit amet, ', 150 + g % 3) ||
                 (ARRAY['zeta', 'Zeta', 'žeta', 'eta', 'Éta', 'ETA', ''])[1 + abs(hashint4(g)) % 7] ||
                 (abs(hashint4(g)) % 50) END,
       CASE WHEN g % 45 = 0 THEN NULL
            WHEN g % 10 = 2 THEN 'short'
            ELSE (SELECT string_agg(md5((g % 9)::text || i), '') FROM generate_series(1, 110) i) ||
                 (ARRAY['ö', 'o', 'O', 'ø', 'z', 'Z', ''])[1 + abs(hashint4(g + 3)) % 7] ||
                 md5(g::text) END
  FROM generate_series(1, 300) g;
ANALYZE gs_long;
SELECT bool_and(pg_column_size(s) < octet_length(s) / 10) FILTER (WHERE s NOT LIKE 'short%') AS s_compressed,
       min(octet_length(s)) FILTER (WHERE s NOT LIKE 'short%') > 4000 AS s_long,
       bool_and(pg_column_size(x) >= octet_length(x)) FILTER (WHERE x <> 'short') AS x_uncompressed,
       min(octet_length(x)) FILTER (WHERE x <> 'short') > 3000 AS x_long
  FROM gs_long;
SELECT q, gs_check(q) AS result FROM (VALUES
  ('SELECT s, id FROM gs_long ORDER BY s'),
  ('SELECT s, id FROM gs_long ORDER BY s DESC NULLS FIRST'),
  ('SELECT s COLLATE "C" AS s, id FROM gs_long ORDER BY 1'),
  ('SELECT s COLLATE gs_de AS s, id FROM gs_long ORDER BY 1 DESC'),
  ('SELECT s COLLATE "und-x-icu" AS s, id FROM gs_long ORDER BY 1'),
  ('SELECT s COLLATE gs_nd_ci AS s, id FROM gs_long ORDER BY 1 NULLS FIRST'),
  ('SELECT x, id FROM gs_long ORDER BY x DESC'),
  ('SELECT x COLLATE "C" AS x, id FROM gs_long ORDER BY 1 NULLS FIRST'),
  ('SELECT x COLLATE gs_sv AS x, id FROM gs_long ORDER BY 1'),
  ('SELECT x COLLATE "sv-x-icu" AS x, id FROM gs_long ORDER BY 1 DESC'),
  ('SELECT x COLLATE gs_nd_ai AS x, id FROM gs_long ORDER BY 1')) v(q);
SELECT gs_check('SELECT k, s, id FROM gs_long ORDER BY k DESC, s, id', 3) AS int_then_long;
SELECT gs_check('SELECT x COLLATE gs_nd_ai AS x, s COLLATE "C" AS s, id FROM gs_long ORDER BY 1, 2 DESC, id', 3) AS long_ai_then_c;
SELECT gs_check('SELECT k, id, x, s FROM gs_long ORDER BY k, id', 2) AS long_values_ride_along;

-- strings on which glibc's strxfrm disagrees with strcoll (which
-- PostgreSQL's Sort calls): on glibc 2.36, strings that begin with a
-- combining mark, e.g. strcoll puts 'Ω' after U&'\0308,Ω' and strxfrm
-- before it; the order of the keys must be checked and repaired (other
-- glibc versions may have other such strings or none: the checks compare
-- with PostgreSQL's Sort whatever the order is)
CREATE TABLE gs_xfrm (id int, k int, s text);
INSERT INTO gs_xfrm
SELECT g, g % 7,
       CASE WHEN g % 101 = 0 THEN NULL
            WHEN g % 3 = 0 THEN repeat('prefix/', 6) ELSE '' END ||
       (SELECT string_agg((ARRAY[U&'\0308', ',', 'Ω', U&'\2126', 'É', 'è', U&'\0301', '~', 's', 'ſ', 'a', ' ', 'e',
                                 'E', 'ß', U&'\0308\0308'])[1 + abs(hashint4(g * 10 + j)) % 16], '')
          FROM generate_series(0, abs(hashint4(g)) % 8) j)
  FROM generate_series(1, 15000) g;
INSERT INTO gs_xfrm VALUES (0, 0, 'Ω'), (-1, 0, U&'\0308,Ω'), (-2, 0, U&'e\0300\0301'), (-3, 0, U&'\0308,É'),
  (-4, 0, U&'\0308~s'), (-5, 0, 'ſ');
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT s, id FROM gs_xfrm ORDER BY s', 1),
  ('SELECT s, id FROM gs_xfrm ORDER BY s DESC NULLS LAST', 1),
  ('SELECT s COLLATE gs_de AS s, id FROM gs_xfrm ORDER BY 1 NULLS FIRST', 1),
  ('SELECT s COLLATE gs_sv AS s, id FROM gs_xfrm ORDER BY 1 DESC', 1),
  ('SELECT k, s, id FROM gs_xfrm ORDER BY k, s', 2),
  ('SELECT s, k, id FROM gs_xfrm ORDER BY s DESC, k', 2),
  ('SELECT s, id FROM gs_xfrm WHERE id <= 0 ORDER BY s', 1)) v(q, k);

-- ASCII strings whose key window lies within the first level of strxfrm's
-- output, so that the key is assembled from the characters' primary
-- weights rather than transformed (libc_primary.c): long enough to fill
-- the window, in hex, mixed case, with punctuation, spaces, tabs and
-- digits; pairs equal at the first level (a digest and its upper case),
-- whose order refinement takes from strxfrm's later levels.  Besides the
-- order, the check after the sort must have repaired nothing (however many
-- runs the sort wrote, each checked on its own): strxfrm and
-- strcoll agree on these strings, so a repair would mean a key that is
-- not strxfrm's.
CREATE TABLE gs_ascii (id int, s text);
INSERT INTO gs_ascii
SELECT g,
       CASE g % 6
         WHEN 0 THEN md5((g / 6)::text)
         WHEN 1 THEN upper(md5((g / 6)::text))
         WHEN 2 THEN 'Item-' || lpad((g % 500)::text, 6, '0') || ' of ' || md5((g % 300)::text)
         WHEN 3 THEN replace(md5((g / 6)::text), 'a', '-a')
         WHEN 4 THEN E'x\t' || md5((g % 700)::text) || ' ' || (g % 3)::text
         ELSE 'The quick brown fox, ' || (g % 97)::text || '! jumps over ' || md5((g % 50)::text)
       END
  FROM generate_series(1, 30000) g;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT s, id FROM gs_ascii ORDER BY s', 1),
  ('SELECT s, id FROM gs_ascii ORDER BY s DESC', 1),
  ('SELECT s COLLATE gs_de AS s, id FROM gs_ascii ORDER BY 1', 1),
  ('SELECT s COLLATE gs_sv AS s, id FROM gs_ascii ORDER BY 1 DESC', 1),
  ('SELECT s, id FROM gs_ascii ORDER BY s, id DESC', 2)) v(q, k);
-- in a budget where the keys fit: with the spill variant's 64kB the
-- batches go without keys, and there is nothing to check
SET gpusort.max_memory = '64MB';
SELECT * FROM gs.analyze_lines('SELECT * FROM gs_ascii ORDER BY s', 'Collation Repaired');
SELECT * FROM gs.analyze_lines('SELECT * FROM gs_ascii ORDER BY s COLLATE gs_sv DESC', 'Collation Repaired');
RESET gpusort.max_memory;

--
-- 010_types: the types with exact normalized keys.
--
-- int2, int4, int8, oid, bool, float4, float8, date, time, timestamp,
-- timestamptz and uuid, each sorted ASC and DESC with NULLS FIRST and LAST,
-- with and without NULLs, compared with PostgreSQL's Sort by gs_check; the
-- data holds each type's extremes and special values: min/max of the
-- integer types, oids above 2^31 (unsigned order), NaN (also NaNs with the
-- sign bit set), -0 and +0, +-Infinity, date/timestamp +-infinity and the
-- ends of their ranges, uuids with and without the high bit.  Small lists of
-- the special values are also printed in GpuSort order, so the expected
-- file shows the order itself.
--
SET search_path = gs, public;

CREATE TABLE gs_types (
  id  int,
  i2  int2,
  i4  int4,
  i8  int8,
  o   oid,
  b   bool,
  f4  float4,
  f8  float8,
  d   date,
  t   time,
  ts  timestamp,
  tz  timestamptz,
  u   uuid
);

-- pseudo-random values spread over each type's range, a NULL in every
-- column now and then (not in the same rows for every column)
INSERT INTO gs_types
SELECT g,
       CASE WHEN g % 37 = 1 THEN NULL ELSE (hashint4(g) % 32768)::int2 END,
       CASE WHEN g % 41 = 2 THEN NULL ELSE hashint4(g + 1) END,
       CASE WHEN g % 43 = 3 THEN NULL ELSE hashint4extended(g, 0) END,
       CASE WHEN g % 47 = 4 THEN NULL ELSE (hashint4(g + 2)::int8 + 2147483648)::oid END,
       CASE WHEN g % 53 = 5 THEN NULL ELSE hashint4(g + 3) % 2 = 0 END,
       CASE WHEN g % 59 = 6 THEN NULL ELSE (hashint4(g + 4)::float4 / (1 + abs(hashint4(g + 5) % 1000)))::float4 END,
       CASE WHEN g % 61 = 7 THEN NULL ELSE hashint4extended(g, 6)::float8 / (1 + abs(hashint4(g + 7) % 100000)) END,
       CASE WHEN g % 67 = 8 THEN NULL ELSE date '2000-01-01' + (hashint4(g + 8) % 1000000) END,
       CASE WHEN g % 71 = 9 THEN NULL ELSE time '00:00' + (abs(hashint4extended(g, 9)) % 86400000000) * interval '1 microsecond' END,
       CASE WHEN g % 73 = 10 THEN NULL ELSE timestamp '2000-01-01' + hashint4extended(g, 10) % 3000000000000000 * interval '1 microsecond' END,
       CASE WHEN g % 79 = 11 THEN NULL ELSE timestamptz '2000-01-01 00:00+00' + hashint4extended(g, 11) % 3000000000000000 * interval '1 microsecond' END,
       CASE WHEN g % 83 = 12 THEN NULL ELSE md5(g::text)::uuid END
  FROM generate_series(1, 5000) g;

-- the extremes and special values, each in a row of its own
INSERT INTO gs_types (id, i2) VALUES (100001, -32768), (100002, 32767), (100003, 0), (100004, -1), (100005, 1);
INSERT INTO gs_types (id, i4) VALUES (100011, -2147483648), (100012, 2147483647), (100013, 0), (100014, -1), (100015, 1);
INSERT INTO gs_types (id, i8) VALUES (100021, -9223372036854775808), (100022, 9223372036854775807), (100023, 0), (100024, -1), (100025, 1),
  (100026, -2147483649), (100027, 2147483648);
INSERT INTO gs_types (id, o) VALUES (100031, 0), (100032, 4294967295), (100033, 2147483647), (100034, 2147483648), (100035, 1);
INSERT INTO gs_types (id, b) VALUES (100041, true), (100042, false);
INSERT INTO gs_types (id, f4) VALUES (100051, 'NaN'), (100052, 'Infinity'), (100053, '-Infinity'), (100054, '-0'), (100055, '0'),
  (100056, '3.4028235e+38'), (100057, '-3.4028235e+38'), (100058, '1.4e-45'), (100059, '-1.4e-45'), (100060, '1.1754944e-38'),
  (100061, -('NaN'::float4)), (100062, 'Infinity'::float4 - 'Infinity'::float4);
INSERT INTO gs_types (id, f8) VALUES (100071, 'NaN'), (100072, 'Infinity'), (100073, '-Infinity'), (100074, '-0'), (100075, '0'),
  (100076, '1.7976931348623157e+308'), (100077, '-1.7976931348623157e+308'), (100078, '5e-324'), (100079, '-5e-324'),
  (100080, '2.2250738585072014e-308'), (100081, -('NaN'::float8)), (100082, 'Infinity'::float8 - 'Infinity'::float8);
INSERT INTO gs_types (id, d) VALUES (100091, '-infinity'), (100092, 'infinity'), (100093, '4713-01-01 BC'), (100094, '5874897-12-31'),
  (100095, '2000-01-01'), (100096, '1999-12-31');
INSERT INTO gs_types (id, t) VALUES (100101, '00:00'), (100102, '24:00'), (100103, '23:59:59.999999'), (100104, '00:00:00.000001');
INSERT INTO gs_types (id, ts) VALUES (100111, '-infinity'), (100112, 'infinity'), (100113, '4713-01-01 00:00 BC'),
  (100114, '294276-12-31 23:59:59.999999'), (100115, '2000-01-01'), (100116, '1999-12-31 23:59:59.999999');
INSERT INTO gs_types (id, tz) VALUES (100121, '-infinity'), (100122, 'infinity'), (100123, '4713-01-01 00:00+00 BC'),
  (100124, '294276-12-31 23:59:59.999999+00'), (100125, '2000-01-01 00:00+00'), (100126, '1999-12-31 23:59:59.999999+00');
INSERT INTO gs_types (id, u) VALUES (100131, '00000000-0000-0000-0000-000000000000'), (100132, 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
  (100133, '7fffffff-ffff-ffff-ffff-ffffffffffff'), (100134, '80000000-0000-0000-0000-000000000000'),
  (100135, '00000000-0000-0000-0000-000000000001'), (100136, 'ffffffff-ffff-ffff-ffff-fffffffffffe');
ANALYZE gs_types;

-- every column, every direction and NULL placement, with NULLs
SELECT c AS col, dir,
       gs_check(format('SELECT %I, id FROM gs_types ORDER BY %I %s', c, c, dir)) AS result
  FROM unnest(ARRAY['i2', 'i4', 'i8', 'o', 'b', 'f4', 'f8', 'd', 't', 'ts', 'tz', 'u']) WITH ORDINALITY AS cs(c, cn),
       unnest(ARRAY['', 'DESC', 'NULLS FIRST', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- and without NULLs (the key then has no NULL byte)
SELECT c AS col, dir,
       gs_check(format('SELECT %I, id FROM gs_types WHERE %I IS NOT NULL ORDER BY %I %s', c, c, c, dir)) AS result
  FROM unnest(ARRAY['i2', 'i4', 'i8', 'o', 'b', 'f4', 'f8', 'd', 't', 'ts', 'tz', 'u']) WITH ORDINALITY AS cs(c, cn),
       unnest(ARRAY['', 'DESC']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- the whole order decided by the columns' keys: every row is distinct on
-- (column, id), so the output must be exactly the native output
SELECT c AS col, dir,
       gs_check(format('SELECT %I, id FROM gs_types ORDER BY %I %s, id %s', c, c, dir, dir), 2) AS result
  FROM unnest(ARRAY['i2', 'i8', 'o', 'b', 'f4', 'f8', 'ts', 'u']) WITH ORDINALITY AS cs(c, cn),
       unnest(ARRAY['', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- the special values themselves, in GpuSort's order (ties broken by id);
-- the lists show the order: NULLs last (ASC) or first (DESC), NaN above
-- +Infinity, -0 equal to 0, infinity beyond every finite date/timestamp,
-- oids and uuids unsigned
SELECT gs_check('SELECT i2, id FROM gs_types WHERE id > 100000 ORDER BY i2, id', 2);
SELECT string_agg(coalesce(i2::text, 'null'), ' ') AS i2_asc
  FROM (SELECT i2 FROM gs_types WHERE id BETWEEN 100001 AND 100005 OR id = 100011 ORDER BY i2) s;
SELECT string_agg(coalesce(i4::text, 'null'), ' ') AS i4_desc
  FROM (SELECT i4 FROM gs_types WHERE id BETWEEN 100011 AND 100015 OR id = 100001 ORDER BY i4 DESC) s;
SELECT string_agg(coalesce(i8::text, 'null'), ' ') AS i8_asc
  FROM (SELECT i8 FROM gs_types WHERE id BETWEEN 100021 AND 100027 OR id = 100001 ORDER BY i8 NULLS FIRST) s;
SELECT string_agg(coalesce(o::text, 'null'), ' ') AS oid_asc
  FROM (SELECT o FROM gs_types WHERE id BETWEEN 100031 AND 100035 ORDER BY o) s;
SELECT string_agg(coalesce(b::text, 'null'), ' ') AS bool_desc
  FROM (SELECT b FROM gs_types WHERE id BETWEEN 100041 AND 100042 OR id = 100001 ORDER BY b DESC NULLS LAST) s;
SELECT string_agg(coalesce(f4::text, 'null') || '#' || id, ' ') AS f4_asc
  FROM (SELECT f4, id FROM gs_types WHERE id BETWEEN 100051 AND 100062 OR id = 100001 ORDER BY f4, id) s;
SELECT string_agg(coalesce(f4::text, 'null') || '#' || id, ' ') AS f4_desc
  FROM (SELECT f4, id FROM gs_types WHERE id BETWEEN 100051 AND 100062 OR id = 100001 ORDER BY f4 DESC, id) s;
SELECT string_agg(coalesce(f8::text, 'null') || '#' || id, ' ') AS f8_asc
  FROM (SELECT f8, id FROM gs_types WHERE id BETWEEN 100071 AND 100082 OR id = 100001 ORDER BY f8, id) s;
SELECT string_agg(coalesce(f8::text, 'null') || '#' || id, ' ') AS f8_desc_nulls_last
  FROM (SELECT f8, id FROM gs_types WHERE id BETWEEN 100071 AND 100082 OR id = 100001 ORDER BY f8 DESC NULLS LAST, id DESC) s;
SELECT string_agg(coalesce(d::text, 'null'), ' | ') AS date_asc
  FROM (SELECT d FROM gs_types WHERE id BETWEEN 100091 AND 100096 OR id = 100001 ORDER BY d) s;
SELECT string_agg(coalesce(t::text, 'null'), ' | ') AS time_desc
  FROM (SELECT t FROM gs_types WHERE id BETWEEN 100101 AND 100104 OR id = 100001 ORDER BY t DESC) s;
SELECT string_agg(coalesce(ts::text, 'null'), ' | ') AS timestamp_asc
  FROM (SELECT ts FROM gs_types WHERE id BETWEEN 100111 AND 100116 OR id = 100001 ORDER BY ts) s;
SELECT string_agg(coalesce(tz::text, 'null'), ' | ') AS timestamptz_desc
  FROM (SELECT tz FROM gs_types WHERE id BETWEEN 100121 AND 100126 OR id = 100001 ORDER BY tz DESC) s;
SELECT string_agg(coalesce(u::text, 'null'), ' | ') AS uuid_asc
  FROM (SELECT u FROM gs_types WHERE id BETWEEN 100131 AND 100136 OR id = 100001 ORDER BY u NULLS FIRST) s;

-- those lists did come from GpuSort
EXPLAIN (COSTS OFF)
SELECT string_agg(coalesce(u::text, 'null'), ' | ') AS uuid_asc
  FROM (SELECT u FROM gs_types WHERE id BETWEEN 100131 AND 100136 OR id = 100001 ORDER BY u NULLS FIRST) s;

-- domains over exact types keep exact keys
CREATE DOMAIN gs_posint AS int8 CHECK (VALUE > 0);
CREATE TABLE gs_dom8 AS SELECT g::gs_posint AS v, g AS id FROM generate_series(1, 3000) g ORDER BY hashint4(g);
SELECT gs_check('SELECT v, id FROM gs_dom8 ORDER BY v DESC');

-- an expression key and a cast key
SELECT gs_check('SELECT i4::int8 * 3 AS k, id FROM gs_types ORDER BY 1');
SELECT gs_check('SELECT f4::float8 * -2 AS k, id FROM gs_types ORDER BY 1 DESC NULLS LAST');

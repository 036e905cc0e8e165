--
-- 120_other_types: interval, bytea, "char", money, inet/cidr, uuid,
-- arrays and bool keys, compared with PostgreSQL's Sort by gs_check.
--
-- interval: PostgreSQL compares intervals by their span with 1 month = 30
-- days and 1 day = 24 hours, so '1 mon' = '30 days' = '720 hours' and
-- '1 year' = '360 days' (gs_check compares the keys with interval
-- equality: such ties may come in either order); negative, mixed-sign
-- ('1 mon -30 days' = 0) and extreme intervals.  bytea: \x00 bytes inside
-- and at the end, values that are prefixes of each other, the empty
-- value, \xff bytes, long values.  "char": every byte value including
-- \x00 (the empty "char") and bytes above \x7f.  money: negative and
-- extreme amounts.  inet/cidr: v4 and v6, same address with different
-- masks.  uuid, int[] and text[] (NULL elements, empty arrays, prefixes),
-- bool.  Each with NULLs, ASC and DESC, and in multi-column keys.
--
SET search_path = gs, public;

CREATE TABLE gs_ot (id int, iv interval, ba bytea, ch "char", mo money, ip inet, cd cidr, u uuid,
                    ia int[], ta text[], b bool, k int);
INSERT INTO gs_ot
SELECT g,
       CASE WHEN g % 41 = 0 THEN NULL
            WHEN g % 9 = 0 THEN (ARRAY[interval '1 mon', '30 days', '720 hours', '43200 minutes', '1 year', '360 days',
                                       '12 mons', '1 day', '24 hours', '86400 seconds', '-1 day', '-24 hours', '0',
                                       '1 mon -30 days', '-1 mon 30 days', '1 day -24 hours', '00:00:00.000001',
                                       '-00:00:00.000001', '1 mon 1 day', '31 days', '1 mon 24 hours',
                                       '178000000 years', '-178000000 years', '2147483647 days', '-2147483648 days',
                                       '2147483647 mons 2147483647 days 2562047788:00:54.775807',
                                       '-2147483648 mons -2147483648 days -2562047788:00:54.775807'])[1 + abs(hashint4(g)) % 27]
            WHEN g % 9 = 1 THEN (abs(hashint4(g)) % 40) * interval '1 day'
            WHEN g % 9 = 2 THEN (abs(hashint4(g)) % 40) * interval '24 hours'
            WHEN g % 9 = 3 THEN (hashint4(g) % 4) * interval '1 mon' + (hashint4(g + 1) % 60) * interval '1 day'
            WHEN g % 9 = 4 THEN (hashint4(g) % 4) * interval '30 days' - (hashint4(g + 1) % 1000) * interval '1 minute'
            WHEN g % 9 = 5 THEN make_interval(years => hashint4(g) % 3, months => hashint4(g + 1) % 14,
                                              days => hashint4(g + 2) % 45, secs => (hashint4(g + 3) % 100000) / 7.0)
            WHEN g % 9 = 6 THEN -((abs(hashint4(g)) % 100) * interval '1 hour')
            WHEN g % 9 = 7 THEN (hashint8(g) % 100000000000) * interval '1 microsecond'
            ELSE (hashint4(g) % 3) * interval '1 year' - (hashint4(g + 1) % 3) * interval '360 days' END,
       CASE WHEN g % 43 = 0 THEN NULL
            WHEN g % 6 = 0 THEN (ARRAY['\x'::bytea, '\x00', '\x0000', '\x000000', '\x01', '\x0100', '\x00ff', '\xff',
                                       '\xff00', '\xffff', '\x7f', '\x80', '\x61', '\x6100', '\x610000', '\x6162',
                                       '\x616200', '\x6162ff', '\x41', '\x20', '\x2000'])[1 + abs(hashint4(g)) % 21]
            WHEN g % 6 = 1 THEN decode(left(md5(g::text), 2 * (g % 12)), 'hex')
            WHEN g % 6 = 2 THEN decode(repeat('00', g % 40) || lpad(to_hex(abs(hashint4(g)) % 256), 2, '0'), 'hex')
            WHEN g % 6 = 3 THEN decode(repeat('ab', 20 + g % 25) || lpad(to_hex(abs(hashint4(g)) % 65536), 4, '0'), 'hex')
            WHEN g % 6 = 4 THEN decode(repeat('ff', g % 50), 'hex')
            ELSE convert_to(repeat('x', 30 + abs(hashint4(g)) % 3000), 'UTF8') || decode(to_hex(16 + g % 200), 'hex') END,
       CASE WHEN g % 47 = 0 THEN NULL
            WHEN g % 3 = 0 THEN ((abs(hashint4(g)) % 127) + 1)::int4::"char"
            WHEN g % 3 = 1 THEN (ARRAY[''::"char", 'a', 'A', ' ', '~', 'z'])[1 + g % 6]
            ELSE ((abs(hashint4(g)) % 256) - 128)::int4::"char" END,               -- bytes \x80..\xff too
       CASE WHEN g % 53 = 0 THEN NULL
            WHEN g % 10 = 0 THEN (ARRAY['-92233720368547758.08'::money, '92233720368547758.07', '0', '-0.01', '0.01'])[1 + g % 5]
            ELSE ((hashint4(g) % 10000000)::numeric / 100)::money END,
       CASE WHEN g % 59 = 0 THEN NULL
            WHEN g % 4 = 0 THEN ('10.' || (g % 256) || '.' || (hashint4(g) & 255) || '.' || (g % 7) || '/' || (8 + g % 25))::inet
            WHEN g % 4 = 1 THEN ('192.168.' || (g % 3) || '.' || (g % 5))::inet
            WHEN g % 4 = 2 THEN ('2001:db8::' || to_hex(abs(hashint4(g)) % 65536) || '/' || (64 + g % 65))::inet
            ELSE ('::ffff:' || (g % 256) || '.0.0.1')::inet END,
       CASE WHEN g % 61 = 0 THEN NULL
            WHEN g % 2 = 0 THEN set_masklen(('10.' || (g % 256) || '.0.0')::cidr, 8 + (g % 3) * 8)
            ELSE ('2001:db8:' || to_hex(g % 300) || '::/48')::cidr END,
       CASE WHEN g % 67 = 0 THEN NULL
            WHEN g % 5 = 0 THEN (ARRAY['00000000-0000-0000-0000-000000000000'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff',
                                       '80000000-0000-0000-0000-000000000000', '7fffffff-ffff-ffff-ffff-ffffffffffff'])[1 + g % 4]
            ELSE md5((g % 3000)::text)::uuid END,
       CASE WHEN g % 71 = 0 THEN NULL
            WHEN g % 7 = 0 THEN '{}'::int[]
            WHEN g % 7 = 1 THEN ARRAY[g % 5, NULL]
            WHEN g % 7 = 2 THEN ARRAY[NULL::int]
            WHEN g % 7 = 3 THEN ARRAY[[g % 3, 1], [2, g % 2]]
            ELSE ARRAY(SELECT hashint4(g * 10 + j) % 4 FROM generate_series(1, g % 5) j) END,
       CASE WHEN g % 73 = 0 THEN NULL
            WHEN g % 5 = 0 THEN '{}'::text[]
            WHEN g % 5 = 1 THEN ARRAY[(ARRAY['a', 'B', 'é', '', 'ab'])[1 + g % 5], NULL]
            ELSE ARRAY(SELECT (ARRAY['a', 'b', 'A', 'ä', 'aa', ''])[1 + abs(hashint4(g * 7 + j)) % 6] FROM generate_series(1, g % 4) j) END,
       CASE WHEN g % 79 = 0 THEN NULL ELSE hashint4(g) % 3 = 0 END,
       abs(hashint4(g + 9)) % 5
  FROM generate_series(1, 12000) g;
ANALYZE gs_ot;
SELECT count(*) AS ot_rows,
       count(DISTINCT iv) < count(DISTINCT iv::text) AS equal_intervals_differ_in_text,
       count(*) FILTER (WHERE ba = '\x') > 0 AS has_empty_bytea,
       count(DISTINCT ch) > 200 AS many_chars,
       count(*) FILTER (WHERE iv < '0') > 100 AS negative_intervals
  FROM gs_ot;

-- every column ASC, DESC, NULLS FIRST and DESC NULLS LAST
SELECT col, dir, gs_check(format('SELECT %1$I, id FROM gs_ot ORDER BY %1$I %2$s', col, dir)) AS result
  FROM unnest(ARRAY['iv', 'ba', 'ch', 'mo', 'ip', 'cd', 'u', 'ia', 'ta', 'b']) WITH ORDINALITY AS cs(col, cn),
       unnest(ARRAY['', 'DESC', 'NULLS FIRST', 'DESC NULLS LAST']) WITH ORDINALITY AS ds(dir, dn)
 ORDER BY cn, dn;

-- multi-column keys
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT iv, k, id FROM gs_ot ORDER BY iv, k DESC', 2),
  ('SELECT k, iv, id FROM gs_ot ORDER BY k, iv DESC NULLS LAST, id', 3),
  ('SELECT ba, iv, id FROM gs_ot ORDER BY ba DESC, iv, id', 3),
  ('SELECT ch, ba, id FROM gs_ot ORDER BY ch, ba NULLS FIRST', 2),
  ('SELECT b, mo, id FROM gs_ot ORDER BY b DESC, mo, id', 3),
  ('SELECT ip, cd, id FROM gs_ot ORDER BY ip, cd DESC', 2),
  ('SELECT u, ia, id FROM gs_ot ORDER BY u DESC, ia', 2),
  ('SELECT ia, ta, id FROM gs_ot ORDER BY ia, ta COLLATE "C" DESC, id', 3),
  ('SELECT ta, k, id FROM gs_ot ORDER BY ta DESC NULLS LAST, k', 2),
  ('SELECT iv, ba, ch, mo, b, id FROM gs_ot ORDER BY iv DESC, ba, ch DESC, mo, b, id', 6),
  ('SELECT justify_interval(iv) AS j, iv, id FROM gs_ot WHERE iv BETWEEN ''-1000 years'' AND ''1000 years'' ORDER BY 1, 2 DESC', 2),
  ('SELECT -iv AS n, id FROM gs_ot WHERE iv BETWEEN ''-1000 years'' AND ''1000 years'' ORDER BY 1', 1),
  ('SELECT substr(ba, 1, 3) AS p, ba, id FROM gs_ot ORDER BY 1, 2', 2),
  ('SELECT host(ip) AS h, ip, id FROM gs_ot ORDER BY 1 DESC, 2', 2)) v(q, k);

-- equal intervals in different units, many copies: ties for both sorts
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT iv, g FROM (VALUES (interval ''1 mon''), (''30 days''), (''720 hours''), (''1 year''), (''360 days''),
     (''12 mons''), (''1 day''), (''24 hours''), (''-1 day''), (''-24 hours''), (''1 mon -30 days''), (''0'')) v(iv),
     generate_series(1, 300) g ORDER BY iv', 1),
  ('SELECT iv, g FROM (VALUES (interval ''1 mon''), (''30 days''), (''720 hours''), (''1 year''), (''360 days''),
     (''12 mons''), (''1 day''), (''24 hours''), (''-1 day''), (''-24 hours''), (''1 mon -30 days''), (''0'')) v(iv),
     generate_series(1, 300) g ORDER BY iv DESC, g', 2)) v(q, k);

-- the orders themselves, printed in GpuSort order
SELECT string_agg(iv::text, ' | ' ORDER BY rn) AS interval_order
  FROM (SELECT iv, row_number() OVER () AS rn
          FROM (SELECT iv FROM (VALUES (interval '1 day 1 second', 1), ('25 hours', 2), ('-1 day', 3), ('1 year', 4),
                                       ('359 days', 5), ('-00:00:00.000001', 6), ('1 mon -30 days 1 microsecond', 7))
                               x(iv, i) ORDER BY iv) s) s;
SELECT string_agg(coalesce(ba::text, 'null'), ' ' ORDER BY rn) AS bytea_order
  FROM (SELECT ba, row_number() OVER () AS rn
          FROM (SELECT ba FROM (VALUES ('\x6162'::bytea), ('\x'), ('\x00'), ('\x61'), ('\x6100'), ('\xff'), ('\x0000'),
                                       ('\x616200'), ('\x6162ff'), (NULL)) x(ba) ORDER BY ba NULLS FIRST) s) s;
SELECT string_agg(ascii(ch::text)::text, ' ' ORDER BY rn) AS char_order
  FROM (SELECT ch, row_number() OVER () AS rn
          FROM (SELECT ch FROM (VALUES ('a'::"char"), (''), ('A'), ('~'), (' ')) x(ch) ORDER BY ch DESC) s) s;

-- short values exhaustively: every bytea of up to 2 bytes over 00 01 02
-- fe ff and of 3 bytes over 00 01 ff (NUL escaping in the keys, values
-- that are prefixes of each other); every inet/cidr over a set of
-- addresses and netmask lengths (family, network, netmask length, then
-- the whole address)
CREATE TABLE gs_bshort AS
SELECT row_number() OVER () AS id, b
  FROM (SELECT '\x'::bytea AS b
        UNION ALL SELECT decode(x, 'hex') FROM unnest(ARRAY['00', '01', '02', 'fe', 'ff']) x
        UNION ALL SELECT decode(x || y, 'hex') FROM unnest(ARRAY['00', '01', '02', 'fe', 'ff']) x,
                                                    unnest(ARRAY['00', '01', '02', 'fe', 'ff']) y
        UNION ALL SELECT decode(x || y || z, 'hex') FROM unnest(ARRAY['00', '01', 'ff']) x,
                                                         unnest(ARRAY['00', '01', 'ff']) y,
                                                         unnest(ARRAY['00', '01', 'ff']) z
        UNION ALL SELECT NULL) s,
       generate_series(1, 20) c;
CREATE TABLE gs_inet AS
SELECT row_number() OVER () AS id, set_masklen(a::inet, m) AS ip, set_masklen(a::inet, m)::cidr AS cd
  FROM unnest(ARRAY['0.0.0.0', '0.0.0.1', '9.255.255.255', '10.0.0.0', '10.0.0.1', '10.0.1.0', '10.1.0.0',
                    '10.255.255.255', '11.0.0.0', '128.0.0.0', '255.255.255.255']) a,
       unnest(ARRAY[0, 1, 7, 8, 9, 15, 16, 24, 31, 32]) m, generate_series(1, 3) c
UNION ALL
SELECT 1000 + row_number() OVER (), set_masklen(a::inet, m), set_masklen(a::inet, m)::cidr
  FROM unnest(ARRAY['::', '::1', '::ffff:10.0.0.1', '2001:db8::', '2001:db8::1', '2001:db9::', 'fe80::1',
                    '8000::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff']) a,
       unnest(ARRAY[0, 1, 16, 32, 63, 64, 65, 127, 128]) m, generate_series(1, 3) c;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT b, id FROM gs_bshort ORDER BY b', 1),
  ('SELECT b, id FROM gs_bshort ORDER BY b DESC NULLS LAST', 1),
  ('SELECT b, id FROM gs_bshort ORDER BY b NULLS FIRST, id DESC', 2),
  ('SELECT ip, id FROM gs_inet ORDER BY ip', 1),
  ('SELECT ip, id FROM gs_inet ORDER BY ip DESC', 1),
  ('SELECT cd, id FROM gs_inet ORDER BY cd NULLS FIRST', 1),
  ('SELECT cd, ip, id FROM gs_inet ORDER BY cd DESC, ip', 2)) v(q, k);
SELECT string_agg(b::text, ' ' ORDER BY rn) AS bytea_short_order
  FROM (SELECT b, row_number() OVER () AS rn
          FROM (SELECT DISTINCT b FROM gs_bshort WHERE length(b) <= 2 AND b::text !~ '02|fe' ORDER BY b) s) s;

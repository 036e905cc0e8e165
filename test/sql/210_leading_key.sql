--
-- 210_leading_key: ORDER BY fixed-width columns, then a text under a libc or
-- ICU collation: a leading key (keys.h).  The engine sorts the leading
-- columns' keys alone; the text's collation keys are built only for tie
-- ranges of 8,192 records or more (refined, and the collation check over
-- their pairs), and the smaller ranges are sorted by the collation's own
-- comparison in the pool threads (the collation sort).
--
-- * many small tie ranges (an int8 with about ten rows a value) and one
--   large one (9,000 rows of k = 0) in the same sort, NULLs in both
--   columns, duplicates, case and accents, DESC and NULLS FIRST/LAST;
-- * few values before the text (a boolean: every range large);
-- * a third column without a key (int4[]: the comparator pass orders the
--   small ranges instead), an ICU collation, and COLLATE "C" (no leading
--   key: its keys cost no more than the leading columns');
-- * EXPLAIN ANALYZE: Key Kind says "leading", and the records that got a
--   collation key (Refined) and those the collation sort ordered.
-- Every case is compared with PostgreSQL's Sort by gs_check.
--
SET search_path = gs, public;

CREATE TABLE gs_lead AS
  SELECT g AS id,
         CASE WHEN g % 101 = 0 THEN NULL
              WHEN g <= 9000 THEN 0
              ELSE abs(hashint4(g)) % 2000 END::int8 AS k,
         (abs(hashint4(g * 3)) % 3 = 0) AS b,
         CASE WHEN g % 89 = 0 THEN NULL
              ELSE (ARRAY['apple', 'Apple', 'äpple', 'banana', 'Banana', 'été',
                          'ete', 'Ete', 'zebra', 'Zebra', '', ' x'])
                   [1 + abs(hashint4(g * 7)) % 12] || (abs(hashint4(g)) % 5)::text
         END AS t,
         ARRAY[g % 3, g % 7] AS a
  FROM generate_series(1, 30000) g;
ANALYZE gs_lead;

SELECT gs_check('SELECT k, t, id FROM gs_lead ORDER BY k, t', 2) AS k_t;
SELECT gs_check('SELECT k, t, id FROM gs_lead ORDER BY k DESC, t', 2) AS k_desc_t;
SELECT gs_check('SELECT k, t, id FROM gs_lead ORDER BY k NULLS FIRST, t DESC NULLS LAST', 2) AS k_nf_t_desc;
SELECT gs_check('SELECT k, t, id FROM gs_lead ORDER BY k, t, id', 3) AS k_t_id;
SELECT gs_check('SELECT b, t, id FROM gs_lead ORDER BY b, t', 2) AS b_t;
SELECT gs_check('SELECT b, k, t, id FROM gs_lead ORDER BY b DESC, k, t DESC', 3) AS b_k_t;
SELECT gs_check('SELECT k, t, a, id FROM gs_lead ORDER BY k, t, a', 3) AS k_t_keyless;
SELECT gs_check('SELECT k, t COLLATE "und-x-icu" AS t, id FROM gs_lead ORDER BY 1, 2', 2) AS k_t_icu;
SELECT gs_check('SELECT k, t COLLATE "C" AS t, id FROM gs_lead ORDER BY 1, 2', 2) AS k_t_c;

-- the mechanism, where the keys fit (the spill variant's 64kB leaves the
-- batches without keys): of 30,000 records, the 8,919 rows of k = 0 (one
-- range) get a collation key; the collation sort orders the rest, and the
-- collation check looks at the keyed range's pairs alone
SET gpusort.max_memory = '64MB';
SELECT * FROM analyze_lines('SELECT * FROM gs_lead ORDER BY k, t',
                            'Key Kind|Records|Refined|Collation|Resolved');
-- a boolean first: every range large, every record keyed
SELECT * FROM analyze_lines('SELECT * FROM gs_lead ORDER BY b, t',
                            'Key Kind|Records|Refined|Collation|Resolved');
-- a column without a key after the text: the comparator pass, not the
-- collation sort, orders the small ranges
SELECT * FROM analyze_lines('SELECT * FROM gs_lead ORDER BY k, t, a',
                            'Key Kind|Records|Refined|Collation Sorted|Resolved');
-- the text first, or in "C": a prefix as before
SELECT * FROM analyze_lines('SELECT * FROM gs_lead ORDER BY t, k', 'Key Kind');
SELECT * FROM analyze_lines('SELECT * FROM gs_lead ORDER BY k, t COLLATE "C"', 'Key Kind');
RESET gpusort.max_memory;

DROP TABLE gs_lead;

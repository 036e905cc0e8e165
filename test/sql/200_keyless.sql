--
-- 200_keyless: a Sort whose first column has no normalized key (a range,
-- an array, jsonb, citext) is left to PostgreSQL, whose Sort orders it
-- faster than gpusort's comparators would; one whose first column has a
-- key is replaced, its later keyless columns ordered by the comparators
-- among ties.  gpusort.keyless_sorts, on in this suite's configuration so
-- that the other tests reach the comparators, replaces them all.
--
SET search_path = gs, public;
SET max_parallel_workers_per_gather = 0;	-- the same plans in every pass
CREATE EXTENSION citext;

CREATE TABLE gs_kl (id int, r int4range, ia int[], j jsonb, c citext, k int8);
INSERT INTO gs_kl
SELECT g, int4range(g % 100, g % 100 + g % 7 + 1), ARRAY[g % 10, g], jsonb_build_object('a', g % 50),
       (ARRAY['Abc', 'abd', 'ABE', 'b', 'B'])[1 + g % 5] || (g % 13), g % 1000
  FROM generate_series(1, 3000) g;
ANALYZE gs_kl;
CREATE DOMAIN gs_kl_int AS int8;

SET gpusort.keyless_sorts = off;

-- left to PostgreSQL: the first column has no key
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY r');
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY ia DESC, id');
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY j');
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY c, id');
SELECT gs.plan_of('SELECT id FROM gs_kl WHERE r IS NOT NULL ORDER BY r USING >');

-- replaced: the first column has a key (a domain's is its type's)
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY k, r');
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY k::gs_kl_int, c');
SELECT gs.gs_check('SELECT k, c, id FROM gs_kl ORDER BY k, c, id', 3) AS k_c;
SELECT gs.gs_check('SELECT k, r, id FROM gs_kl ORDER BY k DESC, r, id', 3) AS k_r;

-- replaced with gpusort.keyless_sorts, and the rows are Sort's
SET gpusort.keyless_sorts = on;
SELECT gs.plan_of('SELECT * FROM gs_kl ORDER BY r');
SELECT gs.gs_check('SELECT r, id FROM gs_kl ORDER BY r, id', 2) AS range_on;
SELECT gs.gs_check('SELECT c, id FROM gs_kl ORDER BY c, id', 2) AS citext_on;
SELECT gs.gs_check('SELECT j, id FROM gs_kl ORDER BY j DESC, id', 2) AS jsonb_on;

-- EXPLAIN (SETTINGS) names it where it differs from its default (off)
CREATE FUNCTION pg_temp.settings_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, SETTINGS) ' || q LOOP
    IF line LIKE 'Settings:%' THEN
      RETURN line;
    END IF;
  END LOOP;
  RETURN '';
END $$;
SELECT position('gpusort.keyless_sorts = ''on''' IN pg_temp.settings_of('SELECT * FROM gs_kl ORDER BY r')) > 0
  AS shown_when_on;
SET gpusort.keyless_sorts = off;
SELECT position('gpusort.keyless_sorts' IN pg_temp.settings_of('SELECT * FROM gs_kl ORDER BY r')) = 0
  AS not_shown_at_default;

RESET gpusort.keyless_sorts;
RESET max_parallel_workers_per_gather;
DROP TABLE gs_kl;
DROP DOMAIN gs_kl_int;
DROP EXTENSION citext;

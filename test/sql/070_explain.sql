--
-- 070_explain: what EXPLAIN shows of GpuSort.
--
-- * without ANALYZE, in TEXT, JSON, YAML and XML: the Sort Key as a native
--   Sort shows it (DESC, NULLS FIRST/LAST, COLLATE, USING, expressions);
--   gs.plan_diff() checks for many queries that the plan (also VERBOSE) is
--   the native plan with Sort renamed Custom Scan (GpuSort);
-- * with ANALYZE (gpusort.engine = cpu, figures that vary masked): Sort
--   Key, Sort Engine, Key Width, Key Kind, Records, Resolved by Comparator,
--   Memory Used and the phase times, in TEXT, JSON and YAML (where the
--   engine, its device and its algorithm are properties of their own); the
--   JSON fields' types; TIMING OFF drops the times; a GpuSort that never
--   ran shows no sort figures.
-- Serial plans only, also where the suite runs with parallel plans forced:
-- a parallel GpuSort's EXPLAIN is 180_parallel's.
--
SET search_path = gs, public;
SET max_parallel_workers_per_gather = 0;
-- the Memory Budget shown below: 2GB where gpusort.max_memory has its
-- default, -1, which depends on the machine's memory (080_spill checks
-- what it resolves to); the spill pass's 64kB where the suite sets that
DO $$
BEGIN
  IF current_setting('gpusort.max_memory') = '-1' THEN
    PERFORM set_config('gpusort.max_memory', '2GB', false);
  END IF;
END $$;

-- autovacuum leaves the table alone: a VACUUM may move the plans'
-- estimates, which set where the spilling pass cuts its runs
CREATE TABLE gs_ex WITH (autovacuum_enabled = off) AS
SELECT g AS id, hashint4(g) % 1000 AS a, md5(g::text) AS s,
       CASE WHEN g % 10 = 0 THEN NULL ELSE (hashint4(g + 1) % 100)::float8 END AS f
  FROM generate_series(1, 5000) g;
ANALYZE gs_ex;

-- the EXPLAIN of q (options opts) with gpusort on, where it differs from
-- the native plan once 'Sort' is read for 'Custom Scan (GpuSort)'.  One
-- difference is by design: at the top of a SELECT, GpuSort's child no
-- longer returns the trailing resjunk copies of columns that a COLLATE
-- clause in the ORDER BY adds (planner.c), so an Output line of the child
-- may lack trailing columns ('same, child returns no collation copy').
CREATE FUNCTION gs.plan_diff(q text, opts text DEFAULT 'COSTS OFF') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  native text := '';
  gpusort text := '';
  line text;
  nl text[];
  gl text[];
  dropped boolean := false;
BEGIN
  PERFORM set_config('gpusort.enabled', 'off', true);
  FOR line IN EXECUTE format('EXPLAIN (%s) %s', opts, q) LOOP
    native := native || line || E'\n';
  END LOOP;
  PERFORM set_config('gpusort.enabled', 'on', true);
  FOR line IN EXECUTE format('EXPLAIN (%s) %s', opts, q) LOOP
    gpusort := gpusort || line || E'\n';
  END LOOP;
  IF gpusort NOT LIKE '%Custom Scan (GpuSort)%' THEN
    RETURN 'FAIL: no GpuSort';
  END IF;
  IF replace(gpusort, 'Custom Scan (GpuSort)', 'Sort') = native THEN
    RETURN 'same';
  END IF;
  nl := string_to_array(native, E'\n');
  gl := string_to_array(replace(gpusort, 'Custom Scan (GpuSort)', 'Sort'), E'\n');
  IF array_length(nl, 1) = array_length(gl, 1) THEN
    FOR i IN 1 .. array_length(nl, 1) LOOP
      CONTINUE WHEN nl[i] = gl[i];
      IF gl[i] LIKE '%Output: %' AND left(nl[i], length(gl[i])) = gl[i]
         AND substr(nl[i], length(gl[i]) + 1) ~ '^(, \w+)+$' THEN
        dropped := true;
      ELSE
        dropped := NULL;
        EXIT;
      END IF;
    END LOOP;
    IF dropped THEN
      RETURN 'same, child returns no collation copy';
    END IF;
  END IF;
  RETURN 'FAIL:' || E'\n' || native || gpusort;
END $$;

-- EXPLAIN ANALYZE in a format, engine cpu, with times, memory and the radix
-- passes masked
CREATE FUNCTION gs.explain_analyze(q text, fmt text DEFAULT 'TEXT', opts text DEFAULT '') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  PERFORM set_config('gpusort.engine', 'cpu', true);
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, SUMMARY OFF, FORMAT %s%s) %s', fmt, opts, q) LOOP
    line := gs.explain_common(line);
    CONTINUE WHEN line IS NULL;
    line := regexp_replace(line, '\d+\.\d+', 'N.N', 'g');
    line := regexp_replace(line, '(Memory Used"?:? *"?)\d+', '\1N', 'g');
    line := regexp_replace(line, '(Memory-Used>)\d+', '\1N', 'g');
    line := regexp_replace(line, '\(\d+ passes\)', '(N passes)', 'g');
    line := regexp_replace(line, 'presorted check', 'radix sort (N passes)', 'g');
    RETURN NEXT line;
  END LOOP;
END $$;

-- Sort Key decorations, without ANALYZE
EXPLAIN (COSTS OFF)
SELECT id, a, s, f FROM gs_ex ORDER BY a DESC, f NULLS FIRST, s COLLATE "C", id DESC NULLS LAST;
EXPLAIN (COSTS OFF)
SELECT s FROM gs_ex ORDER BY s USING ~<~, lower(s) DESC, a + 1 USING >, f DESC NULLS LAST;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, a + 1 AS b, s FROM gs_ex ORDER BY 2, s COLLATE "C" DESC;
SELECT plan_lines AS "QUERY PLAN" FROM plan_lines(
  'SELECT id, a, s FROM gs_ex ORDER BY a DESC, s COLLATE "C" NULLS FIRST, id USING >', ', FORMAT JSON');
SELECT plan_lines AS "QUERY PLAN" FROM plan_lines(
  'SELECT id, a, s FROM gs_ex ORDER BY a DESC, s COLLATE "C" NULLS FIRST, id USING >', ', FORMAT YAML');
SELECT plan_lines AS "QUERY PLAN" FROM plan_lines('SELECT id, s FROM gs_ex ORDER BY s USING ~>~', ', FORMAT XML');

-- the same as the native plan, but for the node's name
SET enable_hashjoin = off;
SET enable_nestloop = off;
SET enable_hashagg = off;
SELECT q, plan_diff(q) AS costs_off, plan_diff(q, 'COSTS OFF, VERBOSE') AS verbose
  FROM (VALUES ('SELECT id, a, s, f FROM gs_ex ORDER BY a DESC, f NULLS FIRST, s COLLATE "C", id DESC NULLS LAST'),
               ('SELECT s FROM gs_ex ORDER BY s USING ~<~, lower(s) DESC, a + 1 USING >, f DESC NULLS LAST'),
               ('SELECT id, a + 1 AS b, s FROM gs_ex ORDER BY 2, s COLLATE "C" DESC'),
               ('SELECT f, count(*) FROM gs_ex GROUP BY f ORDER BY f DESC'),
               ('SELECT x.id FROM gs_ex x JOIN gs_ex y ON x.s = y.s AND x.a = y.a ORDER BY x.id'),
               ('SELECT id, rank() OVER (PARTITION BY a ORDER BY f DESC) FROM gs_ex'),
               ('SELECT DISTINCT lower(s) FROM gs_ex'),
               ('SELECT a FROM gs_ex INTERSECT SELECT id FROM gs_ex')) v(q);
RESET enable_hashjoin;
RESET enable_nestloop;
RESET enable_hashagg;

-- with ANALYZE
SELECT * FROM explain_analyze('SELECT id, a FROM gs_ex ORDER BY a, id');
SELECT * FROM explain_analyze('SELECT s, a FROM gs_ex ORDER BY s DESC, a');
SELECT * FROM explain_analyze('SELECT f, a FROM gs_ex ORDER BY f NULLS FIRST, a', 'TEXT', ', TIMING OFF');
SELECT * FROM explain_analyze('SELECT id, a FROM gs_ex WHERE id < 0 ORDER BY a', 'TEXT', ', TIMING OFF');
SELECT * FROM explain_analyze('SELECT id, a, f FROM gs_ex ORDER BY a DESC, f', 'JSON');
SELECT * FROM explain_analyze('SELECT id, a, f FROM gs_ex ORDER BY a DESC, f', 'YAML');

-- the GpuSort node's JSON fields and their types
CREATE FUNCTION gs.gpusort_json(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  j text;
BEGIN
  PERFORM set_config('gpusort.engine', 'cpu', true);
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, FORMAT JSON) ' || q INTO j;
  RETURN gs.explain_common(j)::jsonb -> 0 -> 'Plan';
END $$;
SELECT key, jsonb_typeof(value) AS type,
       CASE WHEN key IN ('Node Type', 'Custom Plan Provider', 'Sort Key', 'Key Width', 'Key Kind', 'Records',
                         'Resolved by Comparator', 'Actual Rows', 'Actual Loops')
            THEN value::text END AS value
  FROM jsonb_each(gpusort_json('SELECT s, id FROM gs_ex ORDER BY s COLLATE "C" DESC, id'))
 WHERE key <> 'Plans'
 ORDER BY key;
SELECT (j ->> 'Load Time')::float8 >= 0 AND (j ->> 'Encode Time')::float8 >= 0 AND (j ->> 'Sort Time')::float8 >= 0
       AND (j ->> 'Resolve Time')::float8 >= 0 AND (j ->> 'Emit Time')::float8 >= 0 AS times_ok,
       (j ->> 'Memory Used')::int8 > 0 AS memory_ok,
       j ->> 'Sort Engine' = 'CPU' AS cpu_engine,
       j ->> 'Sort Algorithm' ~ '^(radix sort \(\d+ passes\)|presorted check)$' AS cpu_algorithm,
       NOT j ? 'Sort Device' AS no_device
  FROM gpusort_json('SELECT id FROM gs_ex ORDER BY a') j;

-- a GpuSort that never ran: the outer side of the merge join is empty
SET enable_hashjoin = off;
SET enable_nestloop = off;
SELECT * FROM explain_analyze('SELECT * FROM (SELECT a FROM gs_ex WHERE id < 0) x JOIN (SELECT a FROM gs_ex) y USING (a)',
                              'TEXT', ', TIMING OFF');
RESET enable_hashjoin;
RESET enable_nestloop;

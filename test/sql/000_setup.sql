--
-- 000_setup: helpers and data shared by the regression suite.
--
-- gs_check(query, nkeys) runs a query twice, with PostgreSQL's own Sort
-- (gpusort.enabled = off) and with GpuSort, and says 'ok' only if
--   * the plan has Custom Scan (GpuSort) when enabled and not when disabled,
--   * both runs return the same rows (as a multiset, compared as text),
--   * the first nkeys output columns, the sort keys, come in the same order
--     (compared with the types' equality, so ties may come in any order).
-- The query must put its ORDER BY columns first in its select list.
--
CREATE SCHEMA gs;
SET search_path = gs, public;

-- the plan of a query, as text
CREATE FUNCTION gs.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  result text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    result := result || line || E'\n';
  END LOOP;
  RETURN result;
END $$;

CREATE FUNCTION gs.gs_check(q text, nkeys int DEFAULT 1) RETURNS text
LANGUAGE plpgsql SET client_min_messages = warning AS $$
DECLARE
  was_enabled text := current_setting('gpusort.enabled');
  cols text;
  a_keys text;
  b_keys text;
  n_native bigint;
  n_gpusort bigint;
  bad bigint;
BEGIN
  DROP TABLE IF EXISTS pg_temp.gs_native, pg_temp.gs_gpusort;

  PERFORM set_config('gpusort.enabled', 'off', true);
  IF gs.plan_of(q) LIKE '%GpuSort%' THEN
    RETURN 'FAIL: GpuSort in the plan with gpusort.enabled = off';
  END IF;
  EXECUTE format('CREATE TEMP TABLE gs_native AS SELECT row_number() OVER () AS gs_rn, * FROM (%s) gs_q', q);

  PERFORM set_config('gpusort.enabled', 'on', true);
  IF gs.plan_of(q) NOT LIKE '%Custom Scan (GpuSort)%' THEN
    PERFORM set_config('gpusort.enabled', was_enabled, true);
    RETURN 'FAIL: no GpuSort in the plan:' || E'\n' || gs.plan_of(q);
  END IF;
  EXECUTE format('CREATE TEMP TABLE gs_gpusort AS SELECT row_number() OVER () AS gs_rn, * FROM (%s) gs_q', q);

  -- the comparisons themselves run on PostgreSQL's sort
  PERFORM set_config('gpusort.enabled', 'off', true);
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum),
         string_agg('a.' || quote_ident(attname), ', ' ORDER BY attnum) FILTER (WHERE attnum <= nkeys + 1),
         string_agg('b.' || quote_ident(attname), ', ' ORDER BY attnum) FILTER (WHERE attnum <= nkeys + 1)
    INTO cols, a_keys, b_keys
    FROM pg_attribute
   WHERE attrelid = 'pg_temp.gs_native'::regclass AND attnum > 1 AND NOT attisdropped;

  SELECT count(*) INTO n_native FROM gs_native;
  SELECT count(*) INTO n_gpusort FROM gs_gpusort;
  IF n_native <> n_gpusort THEN
    PERFORM set_config('gpusort.enabled', was_enabled, true);
    RETURN format('FAIL: %s rows from native Sort, %s from GpuSort', n_native, n_gpusort);
  END IF;

  EXECUTE format('SELECT count(*) FROM (SELECT s::text FROM (SELECT %1$s FROM gs_native) s
                    EXCEPT ALL SELECT s::text FROM (SELECT %1$s FROM gs_gpusort) s) d', cols) INTO bad;
  IF bad > 0 THEN
    PERFORM set_config('gpusort.enabled', was_enabled, true);
    RETURN format('FAIL: %s rows differ', bad);
  END IF;

  EXECUTE format('SELECT count(*) FROM gs_native a JOIN gs_gpusort b USING (gs_rn)
                   WHERE ROW(%s, NULL) IS DISTINCT FROM ROW(%s, NULL)', a_keys, b_keys) INTO bad;
  PERFORM set_config('gpusort.enabled', was_enabled, true);
  IF bad > 0 THEN
    RETURN format('FAIL: sort keys differ at %s of %s positions', bad, n_native);
  END IF;
  RETURN format('ok (%s rows)', n_native);
END $$;

-- a row of EXPLAIN's output written the same by every server version the
-- suite runs on, or NULL for a row that only some versions write: 18 gives
-- actual rows with two decimals (the others round them to an integer),
-- every node a "Disabled" property in the formats other than TEXT, and
-- WindowAgg a "Window:" line that its window functions name (where the
-- others write "OVER (?)")
CREATE FUNCTION gs.explain_common(line text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  m text[];
BEGIN
  IF line ~ '^\s*Window: ' THEN
    RETURN NULL;
  END IF;
  LOOP
    m := regexp_match(line, '(rows=|Actual Rows"?: |<Actual-Rows>)(\d+\.\d+)');
    EXIT WHEN m IS NULL;
    line := regexp_replace(line, '(rows=|Actual Rows"?: |<Actual-Rows>)\d+\.\d+',
                           '\1' || round(m[2]::numeric));
  END LOOP;
  line := regexp_replace(line, 'OVER w\d+\M', 'OVER (?)', 'g');
  line := regexp_replace(line, '\n\s*"Disabled": (true|false),', '', 'g');
  line := regexp_replace(line, ',\n\s*"Disabled": (true|false)', '', 'g');
  line := regexp_replace(line, '\n\s*Disabled: (true|false)', '', 'g');
  line := regexp_replace(line, '\n\s*<Disabled>(true|false)</Disabled>', '', 'g');
  RETURN line;
END $$;

-- EXPLAIN (COSTS OFF) of a query, a row per line, as explain_common writes it
CREATE FUNCTION gs.plan_lines(q text, opts text DEFAULT '') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF' || opts || ') ' || q LOOP
    line := gs.explain_common(line);
    IF line IS NOT NULL THEN
      RETURN NEXT line;
    END IF;
  END LOOP;
END $$;

-- the lines of EXPLAIN ANALYZE (on the CPU engine, without timing) that
-- match keep, with the figures that vary from run to run masked
CREATE FUNCTION gs.analyze_lines(q text, keep text DEFAULT '') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  PERFORM set_config('gpusort.engine', 'cpu', true);
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    line := gs.explain_common(line);
    IF line ~ keep THEN
      line := regexp_replace(line, '(Memory Used|Sort Space Used|Disk Used|Disk|Memory): \d+', '\1: N', 'g');
      line := regexp_replace(line, '\(\d+ passes\)', '(N passes)', 'g');
      line := regexp_replace(line, 'presorted check', 'radix sort (N passes)');
      -- figures that depend on how fast parallel workers run, with a tiny
      -- budget: rows a parallel load passed up, ties of inexact keys within
      -- each batch (zero, for exact keys, stays shown)
      line := regexp_replace(line, '(GpuSortLoad\) \(actual rows=)\d+', '\1N');
      line := regexp_replace(line, '(Resolved by Comparator): [1-9]\d*', '\1: N');
      RETURN NEXT line;
    END IF;
  END LOOP;
END $$;

-- the rows every command of cmds returns (none for MOVE) on a
-- SCROLL cursor for q, one line per command
CREATE FUNCTION gs.cursor_log(q text, cmds text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  c refcursor;
  cmd text;
  r record;
  line text;
  log text := '';
BEGIN
  OPEN c SCROLL FOR EXECUTE q;
  FOREACH cmd IN ARRAY cmds LOOP
    line := cmd || ':';
    IF cmd LIKE 'MOVE%' THEN
      EXECUTE format('%s FROM %I', cmd, c);
    ELSE
      FOR r IN EXECUTE format('%s FROM %I', cmd, c) LOOP
        line := line || ' ' || r::text;
      END LOOP;
    END IF;
    log := log || line || E'\n';
  END LOOP;
  CLOSE c;
  RETURN log;
END $$;

-- memory: what the default budgets are taken from, and why (TAP
-- 016_machine_memory checks its figures against the machine's)
SELECT version, build IN ('CUDA', 'CPU-only') AS known_build, engines LIKE '%cpu%' AS has_cpu,
       memory ~ '^(physical memory [0-9.]+ GB|cgroup v[12] limit [0-9.]+ GB \(/.*\), below physical memory [0-9.]+ GB)' AS memory_known
  FROM gpusort_info();

-- a check that passes
SELECT gs.gs_check('SELECT g FROM generate_series(1, 10) g ORDER BY g') AS must_pass;

-- and the checker does catch a difference: here the rows themselves differ
SELECT left(gs.gs_check('SELECT g, random() AS r FROM generate_series(1, 100) g ORDER BY g'), 4) AS must_fail;

-- cursor_log with GpuSort and with PostgreSQL's Sort: 'ok' if the logs match
CREATE FUNCTION gs.cursor_check(q text, cmds text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  native text;
  gpusort text;
BEGIN
  PERFORM set_config('gpusort.enabled', 'off', true);
  IF gs.plan_of(q) LIKE '%GpuSort%' THEN
    RETURN 'FAIL: GpuSort in the plan with gpusort.enabled = off';
  END IF;
  native := gs.cursor_log(q, cmds);
  PERFORM set_config('gpusort.enabled', 'on', true);
  IF gs.plan_of(q) NOT LIKE 'Custom Scan (GpuSort)%' THEN
    RETURN 'FAIL: GpuSort is not the top of the plan';
  END IF;
  gpusort := gs.cursor_log(q, cmds);
  IF native = gpusort THEN
    RETURN 'ok';
  END IF;
  RETURN 'FAIL:' || E'\nnative:\n' || native || 'gpusort:' || E'\n' || gpusort;
END $$;

--
-- The GPU service: the worker, its views, and what reaches it.
--
-- * the postmaster started the worker (gpusort is preloaded here) in a
--   build with CUDA: it is a backend of its own kind in pg_stat_activity,
--   without a database; a build without CUDA starts none;
-- * gpusort_gpus lists a GPU exactly when gpusort_info() says the GPU
--   engine is usable, and every GPU's budget lies within its memory and
--   nothing stays reserved between sorts;
-- * gpusort_stat counts each sort once, by the engine that ordered it, with
--   its rows; a sort forced to the GPU where the service has none counts a
--   fallback and says why in EXPLAIN ANALYZE; a build without CUDA
--   reserves no staging, and between sorts no staging slot is in use
--   and no sort memory is held against the server's budget
--   (gpusort.server_memory, whose value it shows);
-- * a sort split by key range (gpusort.gpu_split_parts) comes out as the
--   unsplit one;
-- * the service's settings are the server's: a session cannot change them,
--   only a superuser's gpusort.service_max_wait, which bounds its own wait.
--
SET search_path = gs, public;
-- the spill variant's budget, 64kB, would leave these sorts' batches
-- without keys (the keys' chunks do not fit it), and no engine would sort
-- them: 64MB there, as here
DO $$
BEGIN
  IF current_setting('gpusort.max_memory') = '64kB' THEN
    PERFORM set_config('gpusort.max_memory', '64MB', false);
  END IF;
END $$;
-- an empty gpusort_gpus says why in a NOTICE (TAP 008_service checks it):
-- not here, where the GPU host and a machine without GPU share the output
SET client_min_messages = warning;

-- one worker in a build with CUDA, none (no gpusort process at all) in one
-- without
SELECT count(*) FILTER (WHERE backend_type = 'gpusort GPU service' AND datname IS NULL)
         = (SELECT CASE build WHEN 'CUDA' THEN 1 ELSE 0 END FROM gpusort_info())
       AND count(*) = count(*) FILTER (WHERE backend_type = 'gpusort GPU service')
         AS workers_fit_build
  FROM pg_stat_activity WHERE backend_type ~* 'gpusort';

SELECT ((SELECT count(*) FROM gpusort_gpus) > 0) = (engines = 'gpu, cpu') AS gpus_match_info
  FROM gpusort_info();
SELECT count(*) FILTER (WHERE memory_budget > memory_total) AS over_budget,
       count(*) FILTER (WHERE memory_in_use <> 0 OR running <> 0) AS still_reserved
  FROM gpusort_gpus;

-- every figure of gpusort_stat, under its name; nothing in use between sorts
SELECT what, detail FROM gpusort_stat ORDER BY what, detail;
SELECT detail, value FROM gpusort_stat
 WHERE what = 'now' AND detail NOT IN ('staging slots', 'sort memory limit') ORDER BY detail;
-- staging: at least 4 slots in a build with CUDA, none in one without
SELECT (value = 0) = (build = 'CPU-only') AND (value = 0 OR value >= 4) AS staging_fits_build
  FROM gpusort_stat, gpusort_info() WHERE what = 'now' AND detail = 'staging slots';
-- the server's budget for sorts: half the machine's memory by default
SELECT value > 0 AS server_budget FROM gpusort_stat WHERE detail = 'sort memory limit';

-- a sort counts once, by its engine, with its rows
CREATE TEMP TABLE stat_before AS SELECT * FROM gpusort_stat;
CREATE TABLE gs_svc AS SELECT (g * 7919) % 30011 AS k FROM generate_series(1, 30000) g;
SELECT count(*), sum(k) FROM (SELECT k FROM gs_svc ORDER BY k OFFSET 0) s;
SELECT a.what, sum(a.value - b.value) AS delta
  FROM gpusort_stat a JOIN stat_before b USING (what, detail)
 WHERE a.what IN ('sorts', 'rows')
 GROUP BY a.what ORDER BY a.what;
SELECT a.detail = CASE current_setting('gpusort.engine') WHEN 'cpu' THEN 'CPU' ELSE 'GPU' END
       OR (current_setting('gpusort.engine') <> 'cpu' AND a.detail = 'CPU'
           AND (SELECT count(*) FROM gpusort_gpus) = 0) AS counted_by_its_engine
  FROM gpusort_stat a JOIN stat_before b USING (what, detail)
 WHERE a.what = 'sorts' AND a.value > b.value;

-- forced to the GPU: where the service has none, the CPU sorts and says why
SET gpusort.engine = gpu;
SET gpusort.gpu_min_rows = 0;
DROP TABLE stat_before;
CREATE TEMP TABLE stat_before AS SELECT * FROM gpusort_stat;
SELECT gs_check('SELECT k FROM gs_svc ORDER BY k DESC');
SELECT (SELECT count(*) FROM gpusort_gpus) > 0
       OR sum(a.value - b.value) FILTER (WHERE a.what = 'fallbacks' AND a.detail = 'no usable GPU') = 1
       AS fallback_counted
  FROM gpusort_stat a JOIN stat_before b USING (what, detail);
CREATE FUNCTION pg_temp.explain_text(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    RETURN NEXT line;
  END LOOP;
END $$;
SELECT (SELECT count(*) FROM gpusort_gpus) > 0
       OR bool_or(line LIKE '%Fallback: no usable GPU%') AS explain_says_why
  FROM pg_temp.explain_text('SELECT k FROM gs_svc ORDER BY k') AS line;
RESET gpusort.engine;
RESET gpusort.gpu_min_rows;

-- a sort split by key range (on a GPU: three parts, whatever the GPUs;
-- elsewhere the CPU engine sorts): the same rows in the same order, ties
-- in input order, for keys of one to four words, skewed and equal keys
CREATE TABLE gs_split AS
  SELECT g AS id, (hashint4(g) % 1000)::int8 AS k, md5(g::text) AS s,
         CASE WHEN g % 3 = 0 THEN 7 ELSE g % 50000 END AS skew
    FROM generate_series(1, 300000) g;
SET gpusort.engine = gpu;
SET gpusort.gpu_min_rows = 0;
SET gpusort.gpu_split_parts = 3;
SELECT gs_check('SELECT k, id FROM gs_split ORDER BY k');
SELECT gs_check('SELECT k, id FROM gs_split ORDER BY k DESC, id', 2);
SELECT gs_check('SELECT skew, k, id FROM gs_split ORDER BY skew, k', 2);
SELECT gs_check('SELECT s, id FROM gs_split ORDER BY s COLLATE "C"');
SELECT gs_check('SELECT id % 1 AS zero, id FROM gs_split ORDER BY zero');
SELECT (SELECT count(*) FROM gpusort_gpus) = 0
       OR bool_or(line LIKE '%3 parts%') AS split_in_three
  FROM pg_temp.explain_text('SELECT k FROM gs_split ORDER BY k') AS line;
RESET gpusort.gpu_split_parts;
RESET gpusort.engine;
RESET gpusort.gpu_min_rows;
DROP TABLE gs_split;

-- server settings
SELECT name, setting, unit, context FROM pg_settings
 WHERE name IN ('gpusort.gpu_devices', 'gpusort.service_gpu_memory_percent',
                'gpusort.service_staging', 'gpusort.service_max_wait',
                'gpusort.pinned_cache', 'gpusort.service_split_rows',
                'gpusort.gpu_split_parts')
 ORDER BY name;
SET gpusort.gpu_devices = '0';
SET gpusort.service_staging = '1GB';
SET gpusort.service_gpu_memory_percent = 90;
SET gpusort.service_max_wait = '10ms';
RESET gpusort.service_max_wait;

DROP TABLE gs_svc;
DROP TABLE stat_before;

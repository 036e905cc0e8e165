--
-- 150_reliability: injected faults (gpusort.inject_fault), and what an
-- ordinary role may and may not do.
--
-- * error:PHASE at each of load, encode, sort, resolve, emit: an ordinary
--   ERROR, and the same backend then sorts correctly;
-- * delay:PHASE:MS at each phase: the result is right; with a
--   statement_timeout shorter than the delay, the query is cancelled in
--   that phase, and the same backend then sorts correctly;
-- * arena_oom: each batch ends where memory ran out and spills as a run;
-- * the GPU faults (gpu_init, gpu_alloc, gpu_h2d, gpu_launch, gpu_kernel,
--   gpu_d2h, gpu_lost): the result is right and, where the suite runs on a
--   GPU, EXPLAIN ANALYZE says "Sort Engine: CPU" and "Fallback: GPU
--   service: ... (injected fault)"; elsewhere the fault is accepted and
--   changes nothing.  gpu_lost makes the GPU service restart (a sticky
--   error); once it is back, the GPU sorts again.  The output is the
--   same on every engine: the checks print ok or what they found.
-- * host memory: a sort's large blocks stay cached for the next sort
--   (gpusort.host_cache), also after an error or a cancel, and no pinned
--   memory stays in use (gpusort_backend_memory()); a smaller sort served
--   from a larger one's cached blocks holds (EXPLAIN's Memory Used) what
--   it holds in a fresh session, not the larger blocks;
-- * security: CREATE EXTENSION and LOAD need a superuser; an ordinary role
--   cannot set the resource and GPU settings, nor inject faults;
--   gpusort_info() returns the build, nothing about sessions, and to this
--   role nothing about the host.
--
SET search_path = gs, public;

CREATE TABLE gs_rel AS
SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s
  FROM generate_series(1, 200000) g;	-- two chunks of 128K records
ANALYZE gs_rel;
-- the spill variant's budget, 64kB, would leave these sorts' batches
-- without keys (the keys' chunks do not fit it), so that the faults of the
-- key phases would never fire, nor large blocks be cached: 4MB there,
-- where the keys fit and the sorts still spill (again after the first \c)
CREATE PROCEDURE gs.budget_for_keys() LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('gpusort.max_memory') = '64kB' THEN
    PERFORM set_config('gpusort.max_memory', '4MB', false);
  END IF;
END $$;
CALL gs.budget_for_keys();

-- Sort Engine (without the algorithm: CPU, GPU: <name>, PostgreSQL
-- comparators) and Fallback of the first GpuSort of q's EXPLAIN ANALYZE, on
-- the suite's engine
CREATE FUNCTION gs.sort_outcome(q text, OUT engine text, OUT fallback text)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF engine IS NULL AND line ~ '^\s*Sort Engine: ' THEN
      engine := regexp_replace(line, '^\s*Sort Engine: ([^,]*).*$', '\1');
    ELSIF fallback IS NULL AND line ~ '^\s*Fallback: ' THEN
      fallback := regexp_replace(line, '^\s*Fallback: ', '');
    END IF;
  END LOOP;
END $$;

-- does this session sort on a GPU?  (gs.gpu, set below)
CREATE FUNCTION gs.on_gpu() RETURNS boolean LANGUAGE sql AS
  $$ SELECT current_setting('gs.gpu')::boolean $$;

-- after a GPU fault: on a GPU, the CPU engine sorted and the Fallback
-- line matches pattern; without one, the CPU engine sorted as always
CREATE FUNCTION gs.gpu_fault_ok(q text, pattern text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  o record;
BEGIN
  o := gs.sort_outcome(q);
  IF gs.on_gpu() AND o.engine = 'CPU' AND o.fallback ~ pattern THEN
    RETURN 'ok';
  ELSIF NOT gs.on_gpu() AND o.engine = 'CPU' AND coalesce(o.fallback, '') !~ 'injected' THEN
    RETURN 'ok';
  END IF;
  RETURN format('FAIL: Sort Engine: %s; Fallback: %s', o.engine, o.fallback);
END $$;

-- no fault: the suite's engine sorted, no Fallback line
CREATE FUNCTION gs.no_fault_ok(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  o record;
BEGIN
  o := gs.sort_outcome(q);
  IF o.fallback IS NULL AND
     ((gs.on_gpu() AND o.engine LIKE 'GPU: %') OR (NOT gs.on_gpu() AND o.engine = 'CPU')) THEN
    RETURN 'ok';
  END IF;
  RETURN format('FAIL: Sort Engine: %s; Fallback: %s', o.engine, o.fallback);
END $$;

SELECT set_config('gs.gpu', (current_setting('gpusort.engine') <> 'cpu' AND engines LIKE 'gpu%')::text,
                  false) IS NOT NULL AS noted
  FROM gpusort_info();
SELECT pg_backend_pid() AS backend \gset

SHOW gpusort.inject_fault;
SELECT gs.no_fault_ok('SELECT k, id FROM gs_rel ORDER BY k');

-- gpusort.engine = auto: GpuSort in the plan with or without a usable GPU;
-- the GPU sorts where there is one, the CPU engine elsewhere, and neither
-- is reported as a fallback
SET gpusort.engine = auto;
SET gpusort.gpu_min_rows = 0;
SELECT plan_of('SELECT k, id FROM gs_rel ORDER BY k') LIKE 'Custom Scan (GpuSort)%' AS auto_gpusort,
       gs.no_fault_ok('SELECT k, id FROM gs_rel ORDER BY k') AS auto_engine;
RESET gpusort.gpu_min_rows;
RESET gpusort.engine;

-- the value is checked
SET gpusort.inject_fault = 'bogus';
SET gpusort.inject_fault = 'error:nowhere';
SET gpusort.inject_fault = 'delay:sort';
SET gpusort.inject_fault = 'delay:sort:-1';
SET gpusort.inject_fault = 'delay:sort:10x';
SET gpusort.inject_fault = 'gpu_lost:now';
SHOW gpusort.inject_fault;

--
-- executor phases: error:PHASE
--
SET gpusort.inject_fault = 'error:load';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'error:encode';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'error:sort';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'error:resolve';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'error:emit';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
-- an error fault in a phase the sort does not reach changes nothing:
-- PostgreSQL's Sort (gpusort off), and a sort that stays in memory
-- (nothing spilled, nothing merged)
SET gpusort.inject_fault = 'error:resolve';
SET gpusort.enabled = off;
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
RESET gpusort.enabled;
SET gpusort.inject_fault = 'error:spill';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SET gpusort.inject_fault = 'error:merge';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
RESET gpusort.inject_fault;
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT pg_backend_pid() = :backend AS same_backend;

--
-- executor phases: delay:PHASE:MS (once per statement)
--
SET gpusort.inject_fault = 'delay:load:20';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SET gpusort.inject_fault = 'delay:encode:20';
SELECT gs_check('SELECT k, s FROM gs_rel ORDER BY k DESC');
SET gpusort.inject_fault = 'delay:sort:20';
SELECT gs_check('SELECT s, id FROM gs_rel ORDER BY s');
SET gpusort.inject_fault = 'delay:resolve:20';
SELECT gs_check('SELECT s, k FROM gs_rel ORDER BY s DESC');
SET gpusort.inject_fault = 'delay:emit:20';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k, id', 2);
SELECT gs.no_fault_ok('SELECT k, id FROM gs_rel ORDER BY k');

-- a statement_timeout shorter than the delay cancels the query in that phase
SET statement_timeout = '300ms';
SET gpusort.inject_fault = 'delay:load:60000';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'delay:encode:60000';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'delay:sort:60000';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'delay:resolve:60000';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'delay:emit:60000';
SELECT count(*), sum(k) FROM (SELECT k FROM gs_rel ORDER BY k) x;
RESET statement_timeout;
RESET gpusort.inject_fault;
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT pg_backend_pid() = :backend AS same_backend;

--
-- out of memory in the arena: each batch ends where memory ran out and is
-- written as a sorted run; the sort goes on, with no fallback
--
SET gpusort.inject_fault = 'arena_oom';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs_check('SELECT s, id FROM gs_rel ORDER BY s DESC');
SELECT o.engine <> 'PostgreSQL comparators' AND o.fallback IS NULL
       AS spilled_ok
  FROM gs.sort_outcome('SELECT k, id FROM gs_rel ORDER BY k') o;
RESET gpusort.inject_fault;

--
-- GPU faults: on a GPU each sort falls back to the CPU engine and says why;
-- without a GPU they are accepted and change nothing.  (The server log of
-- the GPU suite counts logged GPU fallbacks as failures: these are not.)
--
SET log_min_messages = warning;
SET gpusort.inject_fault = 'gpu_init';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: CUDA initialization \(injected fault\)');
SET gpusort.inject_fault = 'gpu_alloc';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: cudaMallocAsync \(injected fault\)');
SET gpusort.inject_fault = 'gpu_h2d';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: cudaMemcpyAsync to the device \(injected fault\)');
SET gpusort.inject_fault = 'gpu_launch';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: launch of \S+ \(injected fault\)');
SET gpusort.inject_fault = 'gpu_kernel';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: kernel execution \(injected fault\)');
SET gpusort.inject_fault = 'gpu_d2h';
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k', '^GPU service: cudaMemcpyAsync to the host \(injected fault\)');
-- text first: the fallback's keys then feed the comparator pass
SELECT gs_check('SELECT s, k FROM gs_rel ORDER BY s COLLATE "C", k', 2);
RESET gpusort.inject_fault;
SELECT gs.no_fault_ok('SELECT k, id FROM gs_rel ORDER BY k');
SELECT pg_backend_pid() = :backend AS same_backend;

-- a GPU lost after the first chunk: a real sticky error leaves the GPU
-- service's CUDA context unusable, so the service fails the sort (the CPU
-- engine sorts its keys), exits, and the postmaster starts a new one with
-- fresh contexts; once it is back, the GPU sorts again, for this backend too
SET gpusort.inject_fault = 'gpu_lost';
SELECT gs.gpu_fault_ok('SELECT k, id FROM gs_rel ORDER BY k',
                       '^GPU service: GPU lost: device lost after the first chunk \(injected fault\)');
RESET gpusort.inject_fault;
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k DESC');
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN NOT gs.on_gpu() OR (SELECT engines = 'gpu, cpu' FROM gpusort_info());
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT pg_backend_pid() = :backend AS same_backend;
SET search_path = gs, public;
SELECT gs.no_fault_ok('SELECT k, id FROM gs_rel ORDER BY k');
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');

--
-- memory kept between sorts: a sort's large blocks go to the backend's
-- host cache (gpusort.host_cache) rather than back to the kernel, the next
-- sort reuses them, and they come back after an error or a cancel too; no
-- pinned memory stays in use after a sort
--
\c
SET search_path = gs, public;
CALL budget_for_keys();
-- serial plans: the blocks of a parallel load follow the workers' timing,
-- and so would the cache's size
SET max_parallel_workers_per_gather = 0;
SELECT host_cached = 0 AS nothing_cached_yet, pinned_in_use = 0 AS no_pinned_in_use
  FROM gpusort_backend_memory();
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k) x;
SELECT host_cached > 0 AS sort_blocks_cached, pinned_in_use = 0 AS no_pinned_in_use
  FROM gpusort_backend_memory();
SELECT host_cached AS cached_after_one FROM gpusort_backend_memory() \gset
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k DESC) x;
SELECT host_cached = :cached_after_one AS reused_not_grown FROM gpusort_backend_memory();
SET gpusort.inject_fault = 'error:emit';
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k) x;
SET gpusort.inject_fault = 'delay:sort:5000';
SET statement_timeout = '300ms';
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k) x;
RESET statement_timeout;
RESET gpusort.inject_fault;
SELECT host_cached = :cached_after_one AS all_returned, host_in_use = 0 AS none_held,
       pinned_in_use = 0 AS no_pinned_in_use
  FROM gpusort_backend_memory();
SELECT gs_check('SELECT k, id FROM gs_rel ORDER BY k');  -- and sorts right on reused blocks
-- gpusort.host_cache = 0 unmaps the cache at once and keeps nothing after
SET gpusort.host_cache = 0;
SELECT host_cached AS cached_with_no_cache FROM gpusort_backend_memory();
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k) x;
SELECT host_cached AS cached_with_no_cache FROM gpusort_backend_memory();
RESET gpusort.host_cache;
-- a sort that reuses cached blocks larger than it asks for counts only
-- what it asked for: a sort of two thirds of the rows after a sort of them
-- all, whose blocks are half as large again as its own, holds what the
-- same sort holds in a fresh session
CREATE FUNCTION gs.memory_used_kb(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF) ' || q INTO j;
  RETURN (jsonb_path_query_first(j, 'strict $.**? (@."Custom Plan Provider" == "GpuSort")')
          ->> 'Memory Used')::bigint;
END $$;
\c
SET search_path = gs, public;
SET max_parallel_workers_per_gather = 0;
SELECT memory_used_kb('SELECT k, id FROM gs_rel WHERE id % 3 <> 0 ORDER BY k') AS fresh_kb \gset
\c
SET search_path = gs, public;
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM (SELECT k, id FROM gs_rel ORDER BY k) x;
SELECT memory_used_kb('SELECT k, id FROM gs_rel WHERE id % 3 <> 0 ORDER BY k') AS after_larger_kb \gset
SELECT :after_larger_kb = :fresh_kb AS holds_what_it_asked_for,
       CASE WHEN :after_larger_kb <> :fresh_kb
            THEN format('%s kB after the larger sort, %s kB fresh', :after_larger_kb, :fresh_kb)
       END AS differs;
SELECT gs_check('SELECT k, id FROM gs_rel WHERE id % 3 <> 0 ORDER BY k');  -- right on reused blocks

--
-- security
--
SELECT name, context FROM pg_settings
 WHERE name IN ('gpusort.max_memory', 'gpusort.gpu_memory', 'gpusort.gpu_devices',
                'gpusort.pinned_cache', 'gpusort.host_cache', 'gpusort.threads',
                'gpusort.service_gpu_memory_percent', 'gpusort.service_staging',
                'gpusort.service_max_wait',
                'gpusort.inject_fault')
 ORDER BY name;
CREATE ROLE regress_gs_rel;
GRANT USAGE ON SCHEMA gs TO regress_gs_rel;
GRANT SELECT ON gs_rel TO regress_gs_rel;
DROP TABLE pg_temp.gs_native, pg_temp.gs_gpusort;  -- gs_check's, owned by the superuser
SET ROLE regress_gs_rel;
-- none of the resource or GPU settings, nor faults
SET gpusort.max_memory = '100GB';
SET gpusort.gpu_memory = '100GB';
SET gpusort.service_gpu_memory_percent = 90;
SET gpusort.pinned_cache = '100GB';
SET gpusort.host_cache = '100GB';
SET gpusort.threads = 64;
SET gpusort.service_max_wait = '24d';  -- one role's wait would hold no GPU admission, but may not be raised
SET gpusort.inject_fault = 'delay:sort:60000';
SET gpusort.inject_fault = '';
SELECT set_config('gpusort.inject_fault', 'gpu_lost', false);
SELECT set_config('gpusort.max_memory', '100GB', true);
ALTER ROLE regress_gs_rel SET gpusort.inject_fault = 'error:load';
ALTER ROLE regress_gs_rel SET gpusort.max_memory = '100GB';
SHOW gpusort.inject_fault;
-- nor load the library by hand
LOAD 'gpusort';
-- gpusort_info(): the version, the build and the engines, nothing about
-- other sessions or their sorts; the GPUs and the memory, which describe
-- the host, are NULL for this role (195_settings)
SELECT version, build IN ('CUDA', 'CPU-only') AS known_build,
       engines IN ('cpu', 'gpu, cpu') AS known_engines,
       gpus IS NULL AND memory IS NULL AS no_host_details
  FROM gpusort_info();
-- gpusort_backend_memory(): the caller's own backend only
SELECT host_in_use >= 0 AND host_cached >= 0 AND pinned_in_use >= 0 AND pinned_cached >= 0
       AS own_figures
  FROM gpusort_backend_memory();
-- and it sorts, within the superuser's limits
SELECT gs_check('SELECT k, id FROM gs_rel WHERE id <= 50000 ORDER BY k');
RESET ROLE;
SELECT proname, pg_get_function_result(oid) AS result, provolatile, prosecdef
  FROM pg_proc WHERE proname IN ('gpusort_info', 'gpusort_backend_memory')
 ORDER BY proname;

-- CREATE EXTENSION needs a superuser (gpusort.control: superuser = true,
-- trusted = false), even with CREATE on the schema
SELECT extname FROM pg_extension WHERE extname = 'gpusort';
BEGIN;
DROP EXTENSION gpusort;
GRANT CREATE ON SCHEMA public TO regress_gs_rel;
SET ROLE regress_gs_rel;
CREATE EXTENSION gpusort;
ROLLBACK;
SELECT extname FROM pg_extension WHERE extname = 'gpusort';

DROP TABLE IF EXISTS pg_temp.gs_native, pg_temp.gs_gpusort;
REVOKE ALL ON gs_rel FROM regress_gs_rel;
REVOKE ALL ON SCHEMA gs FROM regress_gs_rel;
DROP ROLE regress_gs_rel;
DROP TABLE gs_rel;

--
-- 080_spill: sorts that outgrow gpusort.max_memory write sorted runs to
-- temporary files and merge them, and still return the right rows.
--
-- * gpusort.max_memory = 1MB: 50k rows make a few runs, 200k rows tens of
--   runs and several merge passes; EXPLAIN ANALYZE (engine cpu) shows Runs
--   Written, Merge Passes and Disk Used: size alone never sends a sort to
--   PostgreSQL's tuplesort.  At 1MB the keys' own memory does not fit
--   beside the rows, and the batches go without keys (Fallback), as long
--   as Sort's runs and within the budget; at 8MB they have keys; with the
--   input's size known, the last batch, which is merged from memory, is a
--   full one;
-- * over spilled runs: results of plain sorts, text sorts, keys whose
--   first word is all ones (the merge's mark of a run that has ended), a
--   Merge Join (mark and restore on the merged result), a nested loop
--   that rescans the sort (rewinding the merged result), a correlated
--   subquery (sorting again for each outer row), and a SCROLL cursor
--   (backward over the merged result), all compared with PostgreSQL's
--   Sort; a run's file goes as soon as the final merge has read it;
-- * keys that change between runs (a NULL first seen in a late run),
--   libc and ICU collations, numeric, and batches that comparators order
--   (cpu_alloc) merged with others;
-- * gpusort.max_memory and gpu_memory are superuser settings, the service's
--   budget and the server's memory budget (gpusort.server_memory, -1 by
--   default: half the machine's memory) server settings:
--   an ordinary role cannot set them but can set the others.
-- Serial plans only, also where the suite runs with parallel plans forced:
-- a parallel GpuSort that spills is 180_parallel's.
--
SET search_path = gs, public;
SET max_parallel_workers_per_gather = 0;

CREATE TABLE gs_fb WITH (autovacuum_enabled = off) AS
SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s, (hashint4(g + 1) % 1000)::float8 / 3 AS f
  FROM generate_series(1, 200000) g;
-- the plans' estimate of "id <= 50000" sets where runs are cut (the last
-- batch is made a full one), so it must not vary: ANALYZE reads every row
-- rather than a random sample of them, and the table is made with
-- autovacuum off, since a VACUUM moves that estimate (on PostgreSQL 19 to
-- 48,813 rows, for which the third sort below writes 6 runs, not 5)
ALTER TABLE gs_fb ALTER COLUMN id SET STATISTICS 10000;
ANALYZE gs_fb;

SET gpusort.max_memory = '1MB';
SHOW gpusort.max_memory;
-- runs written by the backend, so that each batch takes the whole budget
-- and the runs shown below do not depend on how fast a pool thread wrote
-- the one before (gpusort.write_behind is on again further down)
SET gpusort.write_behind = off;

-- a few runs: 50k rows
SELECT * FROM analyze_lines('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT s, id FROM gs_fb WHERE id <= 50000 ORDER BY s DESC');
-- tens of runs and several merge passes: 200k rows
SELECT * FROM analyze_lines('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC');
SELECT gs_check('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC', 2);
-- keys at the top of the key space: int8's largest value is a key whose
-- first word is all ones, the word the merge also gives a run that has
-- run out; a third of the rows have it, so every run ends with them.  At
-- 8MB, where the batches have keys
SET gpusort.max_memory = '8MB';
SELECT gs_check('SELECT k, id FROM (SELECT CASE WHEN id % 3 = 0 THEN 9223372036854775807 ELSE k::int8 END AS k, id
                   FROM gs_fb) x ORDER BY k');
SELECT count(*) FILTER (WHERE k = 9223372036854775807) AS top_keys, count(*) AS all_rows
  FROM (SELECT k FROM (SELECT CASE WHEN id % 3 = 0 THEN 9223372036854775807 ELSE k::int8 END AS k
                         FROM gs_fb) x ORDER BY k OFFSET 133000) y;
SELECT * FROM analyze_lines('SELECT k FROM (SELECT CASE WHEN id % 3 = 0 THEN 9223372036854775807 ELSE k::int8 END AS k
                                FROM gs_fb) x ORDER BY k', 'Sort Engine|Fallback|Runs Written:');
SET gpusort.max_memory = '1MB';
-- a small sort stays in memory: no runs
SELECT * FROM analyze_lines('SELECT k FROM gs_fb WHERE id <= 1000 ORDER BY k');

-- work_mem does not matter to GpuSort
SET work_mem = '64kB';
SELECT * FROM analyze_lines('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT f, s FROM gs_fb WHERE id <= 30000 ORDER BY f NULLS FIRST, s COLLATE "C"', 2);
SELECT count(*), sum(k::int8 * id) FROM (SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id LIMIT ALL) x;
-- the whole order, not only the multiset: a running hash over the sorted rows
SELECT md5(string_agg(k || ':' || id, ',')) AS ordered_md5 FROM (SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id) x;
SET gpusort.enabled = off;
SELECT md5(string_agg(k || ':' || id, ',')) AS ordered_md5 FROM (SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id) x;
RESET gpusort.enabled;
RESET work_mem;

-- Merge Join over two spilled sorts: the inner one is marked and
-- restored on its merged result, written for random access
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT a.k, a.id, b.id FROM gs_fb a JOIN gs_fb b ON a.k = b.k WHERE a.id <= 60000 AND b.id <= 60000;
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_fb a JOIN gs_fb b ON a.k = b.k
                  WHERE a.id <= 60000 AND b.id <= 60000 ORDER BY a.k');
SELECT * FROM analyze_lines('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_fb a JOIN gs_fb b ON a.k = b.k
                                WHERE a.id <= 60000 AND b.id <= 60000') WHERE analyze_lines ~ 'Join|GpuSort|Engine|Fallback';
RESET enable_hashjoin;
RESET enable_nestloop;

-- a nested loop rescans a spilled sort without parameters: as the plan
-- may rewind it, its runs are merged onto a tape that it reads again, and
-- it sorts once (Sorts does not show)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT gs_check('SELECT o.id, s.k FROM gs_fb o JOIN (SELECT k FROM gs_fb WHERE id <= 50000 ORDER BY k OFFSET 0) s ON s.k = o.k
                  WHERE o.id <= 3 ORDER BY o.id, s.k', 2);
SELECT * FROM analyze_lines('SELECT o.id, s.k FROM gs_fb o JOIN (SELECT k FROM gs_fb WHERE id <= 50000 ORDER BY k OFFSET 0) s ON s.k = o.k
                                WHERE o.id <= 3') WHERE analyze_lines ~ 'Loop|GpuSort|Engine|Fallback|Sorts';
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- a correlated subquery sorts again, spilling, for every outer row
SELECT gs_check('SELECT o.id, (SELECT count(*) FROM (SELECT k FROM gs_fb i WHERE i.id <= 50000 + o.id ORDER BY k) s) AS n
                   FROM gs_fb o WHERE o.id <= 3 ORDER BY o.id');

-- a SCROLL cursor over a spilled sort (its merged result read both ways)
SELECT cursor_log('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id',
                  ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH ABSOLUTE 25000',
                         'MOVE RELATIVE -10', 'FETCH 2', 'FETCH ABSOLUTE 1', 'FETCH PRIOR', 'FETCH NEXT',
                         'MOVE LAST', 'FETCH NEXT', 'FETCH PRIOR']) AS gpusort_spilled;

-- a sort's runs share one temporary file, as Sort's tapes share one: the
-- tens of runs of this cursor's sort (counted below, by spill_stats) are one
-- file as its final merge begins and three quarters through it
BEGIN;
DECLARE gs_part NO SCROLL CURSOR FOR SELECT id, s FROM gs_fb ORDER BY id;
FETCH 1 FROM gs_part;
SELECT count(*) AS files_at_first_row FROM pg_ls_tmpdir() \gset
MOVE 150000 IN gs_part;
SELECT count(*) AS files_later FROM pg_ls_tmpdir() \gset
SELECT :files_at_first_row = 1 AS runs_in_one_file, :files_later = 1 AS still_one_file;
FETCH 1 FROM gs_part;
COMMIT;

-- the final merge in the pool threads (two, whatever the machine): where
-- the keys alone decide the order, each window of records that no record
-- still unread can precede is cut into ranges that the threads merge, and
-- EXPLAIN shows Merge Threads.  Same rows as Sort with ties across runs,
-- NULLs and DESC, a key column the table gained after some of its rows,
-- and through a SCROLL cursor, which reads the merged result from a tape
-- of its own.
SET gpusort.max_memory = '8MB';
SET gpusort.threads = 2;
SELECT * FROM analyze_lines('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC', 'Runs Written:|Merge');
SELECT gs_check('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC', 2);
SELECT gs_check('SELECT k, id FROM gs_fb ORDER BY k');
SELECT gs_check('SELECT CASE WHEN id % 7 = 0 THEN NULL ELSE f END AS f, k, id FROM gs_fb
                  ORDER BY 1 DESC NULLS LAST, k', 2);
CREATE TABLE gs_wm AS SELECT g::int8 AS id, hashint4(g)::int8 AS k FROM generate_series(1, 100000) g;
ALTER TABLE gs_wm ADD COLUMN z int8 DEFAULT 5;
INSERT INTO gs_wm SELECT g, hashint4(g), g % 10 FROM generate_series(100001, 200000) g;
SELECT * FROM analyze_lines('SELECT * FROM gs_wm ORDER BY z, k', 'Merge Threads');
SELECT gs_check('SELECT z, k, id FROM (SELECT * FROM gs_wm ORDER BY z, k OFFSET 0) s', 2);
DROP TABLE gs_wm;
-- eight runs at 1MB, one more than a merge of 1MB's merge memory takes
-- beside the batch in memory: a pass merges two of them, no more, into a
-- run of many extents of the space they gave back, which the final merge
-- reads across, extent after extent
SET gpusort.max_memory = '1MB';
SET gpusort.write_behind = off;
SELECT * FROM analyze_lines('SELECT k, id, s FROM gs_fb WHERE id <= 85000 ORDER BY k, id',
                            'Runs Written:|Merge');
SELECT gs_check('SELECT k, id, s FROM gs_fb WHERE id <= 85000 ORDER BY k, id', 2);
RESET gpusort.write_behind;
SET gpusort.max_memory = '8MB';
SELECT cursor_log('SELECT k, id FROM gs_fb ORDER BY k, id',
                  ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH ABSOLUTE 150000',
                         'MOVE RELATIVE -10', 'FETCH 2', 'FETCH ABSOLUTE 1', 'FETCH PRIOR', 'FETCH NEXT']) AS window_merged;
RESET gpusort.threads;
SET gpusort.max_memory = '1MB';
-- what each GpuSort of a query did, from EXPLAIN (ANALYZE, FORMAT JSON)
CREATE FUNCTION gs.spill_stats(q text)
RETURNS TABLE (runs int, passes int, disk_kb bigint, memory_kb bigint, budget_kb bigint, engine text, fallback text,
               behind int)
LANGUAGE plpgsql AS $$
DECLARE
  j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF) ' || q INTO j;
  RETURN QUERY
    SELECT (n ->> 'Runs Written')::int, (n ->> 'Merge Passes')::int, (n ->> 'Disk Used')::bigint,
           (n ->> 'Memory Used')::bigint, (n ->> 'Memory Budget')::bigint,
           n ->> 'Sort Engine', n ->> 'Fallback', coalesce((n ->> 'Runs Written Behind')::int, 0)
      FROM jsonb_path_query(j, 'strict $.**? (@."Custom Plan Provider" == "GpuSort")') n;
END $$;

-- the runs of the cursor's sort above, which lay in one file
SELECT runs > 10 AS many_runs FROM spill_stats('SELECT id, s FROM gs_fb ORDER BY id');

-- tens of runs, merged in several passes, on every engine, which all
-- leave the keys at 1MB
SELECT runs > 10 AS many_runs, passes > 1 AS several_passes, disk_kb > 0 AS disk_used,
       fallback ~ 'keys do not fit' AS without_keys
  FROM spill_stats('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC');

-- a small budget holds runs as long as Sort's: where the keys' own memory
-- (the engine's chunk of keys, a text key's chunk of datums: about 6.5 MB)
-- would take more than half the budget, the batches go without
-- keys and hold a tuple and 16 bytes a row, where Sort holds a tuple and
-- 48 bytes; so at 1MB 100k rows of (md5 text, int4), some 60 bytes of
-- tuple a row, make no more runs than Sort's 11 (nine, and the last batch
-- in memory), not 1,563 runs of 64 rows, and what the batch held stays
-- within the budget
SELECT runs BETWEEN 2 AND 12 AS runs_as_long_as_sorts, memory_kb <= budget_kb AS within_budget,
       fallback ~ 'keys do not fit' AS without_keys
  FROM spill_stats('SELECT s, id FROM gs_fb WHERE id <= 100000 ORDER BY s');

-- the last batch, merged from memory, is a full one: where the planner
-- knows the input's size the second run is cut short instead, and less is
-- written than where it does not.  Two functions over the same rows, which
-- the planner takes for 200000 rows and for 10, so that the estimate does
-- not depend on the table's statistics.  The backend writes the runs
-- itself here: a batch loaded while its predecessor is written behind may
-- grow once that write ends, so that the batches' sizes, and the disk,
-- would depend on how busy the machine is
CREATE FUNCTION gs.fb_rows() RETURNS SETOF gs.gs_fb LANGUAGE sql ROWS 10
  AS 'SELECT * FROM gs.gs_fb';
CREATE FUNCTION gs.fb_rows_known() RETURNS SETOF gs.gs_fb LANGUAGE sql ROWS 200000
  AS 'SELECT * FROM gs.gs_fb';
SET gpusort.engine = cpu;
SET gpusort.max_memory = '10MB';
SET gpusort.write_behind = off;
SELECT a.runs > 1 AS spilled, a.disk_kb < b.disk_kb AS less_written
  FROM spill_stats('SELECT k, id, f FROM fb_rows_known() ORDER BY k, id') a,
       spill_stats('SELECT k, id, f FROM fb_rows() ORDER BY k, id') b;
SELECT gs_check('SELECT k, id FROM fb_rows_known() ORDER BY k, id', 2);
SELECT gs_check('SELECT k, id FROM fb_rows() ORDER BY k, id', 2);
RESET gpusort.write_behind;
SET gpusort.max_memory = '1MB';
RESET gpusort.engine;

-- a NULL first seen in a late run widens the key: runs of the old layout
-- and of the new one are merged by comparators where they meet.  At 8MB,
-- where the batches have keys.  The NULLs come after the first run is
-- written on every engine, which may hold the rows in two batches (one run
-- written) or three
SET gpusort.max_memory = '8MB';
CREATE TABLE gs_late_null AS
SELECT g AS id, CASE WHEN g > 150000 AND g % 7 = 0 THEN NULL ELSE hashint4(g) % 1000 END AS k
  FROM generate_series(1, 200000) g;
SELECT gs_check('SELECT k, id FROM gs_late_null ORDER BY k NULLS FIRST, id', 2);
SELECT gs_check('SELECT k, id FROM gs_late_null ORDER BY k DESC, id', 2);
SELECT runs >= 1 AS spilled, fallback IS NULL AS with_keys
  FROM spill_stats('SELECT k, id FROM gs_late_null ORDER BY k NULLS FIRST, id');
-- where k and id fill the key (key_width 8), the NULL byte leaves id a
-- prefix: equal keys of runs written before it go to the comparators, not
-- by run (ids descending, so that the runs' order would be wrong)
SET gpusort.key_width = 8;
SELECT gs_check('SELECT k, 200001 - id AS id FROM gs_late_null ORDER BY 1 NULLS FIRST, 2', 2);
RESET gpusort.key_width;
SET gpusort.max_memory = '1MB';

-- keys of every kind through runs: C bytes, the database's libc collation
-- (its keys are not compared in the merge), ICU, numeric, a float and text
SELECT gs_check('SELECT s COLLATE "C" AS s, id FROM gs_fb ORDER BY 1');
SELECT gs_check('SELECT s, id FROM gs_fb WHERE id <= 100000 ORDER BY s DESC');
SELECT gs_check('SELECT s COLLATE "und-x-icu" AS s, id FROM gs_fb WHERE id <= 100000 ORDER BY 1');
SELECT gs_check('SELECT (k::numeric / 7) AS n, id FROM gs_fb ORDER BY 1, 2', 2);
SELECT gs_check('SELECT f, s COLLATE "C" AS s, id FROM gs_fb ORDER BY 1 DESC, 2', 2);

-- a batch that is one tie range (an array has no key), ordered by the
-- comparators on four columns: the comparator pass's scratch is the batch's
-- memory, within its budget, on every engine
SELECT gs_check('SELECT ARRAY[k % 10] AS a, f, s COLLATE "C" AS s, id FROM gs_fb WHERE id <= 100000 ORDER BY 1, 2 DESC, 3, 4', 4);
SELECT runs > 1 AS spilled, memory_kb <= budget_kb AS within_budget
  FROM spill_stats('SELECT ARRAY[k % 10] AS a, f, s COLLATE "C" AS s, id FROM gs_fb WHERE id <= 100000 ORDER BY 1, 2 DESC, 3, 4');

-- an error while a run is written, and while runs are merged: the
-- temporary files go with the query
SET gpusort.inject_fault = 'error:spill';
SELECT count(*) FROM (SELECT k FROM gs_fb ORDER BY k) x;
SET gpusort.inject_fault = 'error:merge';
SELECT count(*) FROM (SELECT k FROM gs_fb ORDER BY k) x;
RESET gpusort.inject_fault;
SELECT count(*) AS temp_files_left FROM pg_ls_tmpdir();

-- temp_file_limit holds the runs as it holds Sort's: PostgreSQL's error
-- (its message without the quotes that 18 puts around the setting's
-- name), and no file left
CREATE FUNCTION gs.temp_limit_error(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || q || ') x';
  RETURN 'the sort ended within temp_file_limit';
EXCEPTION WHEN configuration_limit_exceeded THEN
  RETURN replace(SQLERRM, '"', '');
END $$;
SET temp_file_limit = '1MB';
SELECT temp_limit_error('SELECT k, s FROM gs_fb ORDER BY k');
RESET temp_file_limit;
SELECT count(*) AS temp_files_left FROM pg_ls_tmpdir();

-- one budget for the backend's sorts together: under a Merge Join the
-- first sort takes what it needs, and the second gets what is left and
-- spills, or gives its keys up to sort in memory within it, where each
-- alone would sort in memory with its keys (each one's peak, the CPU
-- engine's workspace included, stays within the budget; the first one's
-- workspace is gone before the second sorts, so their peaks may add up to
-- more).  On the CPU engine, whose records take the most memory: on the
-- GPU's, both may fit the budget together
SET gpusort.engine = cpu;
SET gpusort.max_memory = '24MB';
SELECT runs AS runs_alone FROM spill_stats('SELECT k, id FROM gs_fb ORDER BY k');
SET enable_hashjoin = off;
SET enable_nestloop = off;
SELECT count(*) AS sorts, max(memory_kb) <= 26 * 1024 AS within_budget,
       bool_or(runs > 0 OR coalesce(fallback, '') ~ 'keys do not fit') AS one_limited,
       min(runs) = 0 AS one_in_memory
  FROM spill_stats('SELECT a.k FROM gs_fb a JOIN gs_fb b ON a.k = b.k');
RESET enable_hashjoin;
RESET enable_nestloop;
RESET gpusort.engine;
SET gpusort.max_memory = '1MB';

-- comparators order a batch whose keys the CPU engine could not hold
-- (cpu_alloc: its third key chunk fails while the pool threads encode);
-- its run has no keys, and merges with keyed ones.  The CPU engine's: the
-- GPU engine encodes as the rows load, so that its batch gives its keys up
-- early, and then holds all the rows without them.  Through a function
-- that the planner takes for 1000 rows: past the estimate, a batch keeps
-- its keys where it could hold the rows without them
SET gpusort.engine = cpu;
SET gpusort.max_memory = '48MB';
CREATE TABLE gs_spill_big AS SELECT g AS id, hashint4(g) % 100000 AS k FROM generate_series(1, 700000) g;
ANALYZE gs_spill_big;
CREATE FUNCTION gs.spill_big_rows() RETURNS SETOF gs.gs_spill_big LANGUAGE sql ROWS 1000
  AS 'SELECT * FROM gs.gs_spill_big';
SET gpusort.inject_fault = 'cpu_alloc';
SELECT gs_check('SELECT k, id FROM spill_big_rows() ORDER BY k');
SELECT runs > 0 AS spilled,
       fallback ~ 'out of memory for the keys' AS comparators_took_over
  FROM spill_stats('SELECT k, id FROM spill_big_rows() ORDER BY k');
RESET gpusort.inject_fault;
RESET gpusort.engine;
-- runs of more than 128K records are written by the pool threads (two,
-- whatever the machine), slice by slice: fixed and generic keys
SET gpusort.max_memory = '24MB';
SET gpusort.threads = 2;
SELECT gs_check('SELECT k, id FROM gs_spill_big ORDER BY k DESC, id', 2);
SELECT gs_check('SELECT md5(id::text) COLLATE "C" AS s, id FROM gs_spill_big ORDER BY 1');
SELECT runs > 1 AS spilled FROM spill_stats('SELECT md5(id::text) COLLATE "C" AS s, id FROM gs_spill_big ORDER BY 1');
-- such runs are written behind the load (gpusort.write_behind): a pool
-- thread writes run i while the backend loads run i+1, which waits for it
-- only when it has filled the room left beside it, as in the sorts above;
-- the same order with the runs written by the backend
SELECT runs > 1 AS spilled, behind > 0 AS written_behind, behind <= runs AS counted
  FROM spill_stats('SELECT k, id FROM gs_spill_big ORDER BY k DESC, id');
SELECT md5(string_agg(k || ':' || id, ',')) AS behind_md5 FROM (SELECT k, id FROM gs_spill_big ORDER BY k, id) x \gset
SET gpusort.write_behind = off;
SELECT behind = 0 AS none_behind FROM spill_stats('SELECT k, id FROM gs_spill_big ORDER BY k DESC, id');
SELECT md5(string_agg(k || ':' || id, ',')) = :'behind_md5' AS same_order
  FROM (SELECT k, id FROM gs_spill_big ORDER BY k, id) x;
RESET gpusort.write_behind;
-- an error in the input while a run is written behind, and
-- temp_file_limit reached by the extent reserved for a run written
-- behind: PostgreSQL's errors, and no temporary file left
SELECT count(*) FROM (SELECT k FROM gs_spill_big ORDER BY k, 1 / (id - 650000)) x;
SET temp_file_limit = '2MB';
SELECT temp_limit_error('SELECT k, id FROM gs_spill_big ORDER BY k');
RESET temp_file_limit;
SELECT count(*) AS temp_files_left FROM pg_ls_tmpdir();
RESET gpusort.threads;
DROP TABLE gs_spill_big, gs_late_null;
SET gpusort.max_memory = '1MB';

SET gpusort.enabled = off;
SELECT cursor_log('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id',
                  ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH ABSOLUTE 25000',
                         'MOVE RELATIVE -10', 'FETCH 2', 'FETCH ABSOLUTE 1', 'FETCH PRIOR', 'FETCH NEXT',
                         'MOVE LAST', 'FETCH NEXT', 'FETCH PRIOR']) AS native;
RESET gpusort.enabled;
RESET gpusort.max_memory;
SHOW gpusort.max_memory;
-- -1, the default: an eighth of the server's budget (the limit that
-- gpusort_stat reports) in whole megabytes, never under 64MB; where there
-- is no server budget (not preloaded), a sixteenth of the machine's
-- memory, which SQL cannot see
SET gpusort.max_memory = -1;
SELECT CASE WHEN l.value > 0 THEN s.budget_kb = greatest(l.value / 8 / 1048576, 64) * 1024
            ELSE s.budget_kb >= 64 * 1024 END AS derived_budget
  FROM spill_stats('SELECT k, id FROM gs_fb WHERE id <= 1000 ORDER BY k') s
  LEFT JOIN (SELECT value FROM gpusort_stat WHERE detail = 'sort memory limit') l ON true;
SET gpusort.max_memory = '32kB';
RESET gpusort.max_memory;

-- superuser-only settings
SELECT name, boot_val, unit, context FROM pg_settings
 WHERE name IN ('gpusort.max_memory', 'gpusort.server_memory', 'gpusort.gpu_memory')
 ORDER BY name;
CREATE ROLE regress_gs_user;
GRANT USAGE ON SCHEMA gs TO regress_gs_user;
GRANT SELECT ON gs_fb TO regress_gs_user;
DROP TABLE pg_temp.gs_native, pg_temp.gs_gpusort;  -- gs_check's, owned by the superuser
SET ROLE regress_gs_user;
SET gpusort.max_memory = '1GB';
SET gpusort.gpu_memory = '1GB';
SET gpusort.service_gpu_memory_percent = 90;
SET gpusort.server_memory = '1GB';
SELECT set_config('gpusort.max_memory', '4MB', false);
SHOW gpusort.max_memory;
-- what an ordinary role may set
SET gpusort.enabled = on;
SET gpusort.key_width = 16;
SET gpusort.min_rows = 10;
SET gpusort.engine = cpu;
SET gpusort.gpu_algorithm = radix;
SET gpusort.gpu_min_rows = 0;
SELECT gs_check('SELECT k, id FROM gs_fb WHERE id <= 20000 ORDER BY k DESC');
SELECT current_user;
RESET ROLE;
RESET gpusort.key_width;
RESET gpusort.min_rows;
RESET gpusort.engine;
RESET gpusort.gpu_algorithm;
RESET gpusort.gpu_min_rows;
DROP TABLE pg_temp.gs_native, pg_temp.gs_gpusort;
REVOKE ALL ON gs_fb FROM regress_gs_user;
REVOKE ALL ON SCHEMA gs FROM regress_gs_user;
DROP ROLE regress_gs_user;

--
-- 080_fallback: sorts that pass gpusort.max_memory go to PostgreSQL's
-- tuplesort, and still return the right rows.
--
-- * gpusort.max_memory = 1MB: over the limit found at the end of the input
--   (50k rows) and in the middle of it (200k rows, at a 128K-record chunk);
--   EXPLAIN ANALYZE (engine cpu) shows Sort Engine: PostgreSQL tuplesort
--   and the Fallback reason; with work_mem = 64kB the tuplesort spills
--   (external merge, Disk);
-- * in fallback: results of plain sorts, text sorts, a Merge Join (mark and
--   restore on the tuplesort), a nested loop that rescans the sort, a
--   correlated subquery, and a SCROLL cursor, all compared with
--   PostgreSQL's Sort;
-- * gpusort.max_memory, gpu_memory and gpu_device are superuser settings:
--   an ordinary role cannot set them but can set the others.
--
SET search_path = gs, public;

CREATE TABLE gs_fb AS
SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s, (hashint4(g + 1) % 1000)::float8 / 3 AS f
  FROM generate_series(1, 200000) g;
ANALYZE gs_fb;

SET gpusort.max_memory = '1MB';
SHOW gpusort.max_memory;

-- over the limit at the end of a 50k-row input
SELECT * FROM analyze_lines('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k');
SELECT gs_check('SELECT s, id FROM gs_fb WHERE id <= 50000 ORDER BY s DESC');
-- in the middle of a 200k-row input
SELECT * FROM analyze_lines('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC');
SELECT gs_check('SELECT k, f, id FROM gs_fb ORDER BY k, f DESC', 2);
-- a small sort stays within the limit
SELECT * FROM analyze_lines('SELECT k FROM gs_fb WHERE id <= 1000 ORDER BY k');

-- the tuplesort spills to disk
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

-- Merge Join over two fallen-back sorts: the inner one is marked and
-- restored in the tuplesort
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

-- a nested loop rescans a fallen-back sort; without random access the
-- tuplesort cannot rewind, so it sorts again (Sorts: 3)
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

-- a correlated subquery sorts again, in fallback, for every outer row
SELECT gs_check('SELECT o.id, (SELECT count(*) FROM (SELECT k FROM gs_fb i WHERE i.id <= 50000 + o.id ORDER BY k) s) AS n
                   FROM gs_fb o WHERE o.id <= 3 ORDER BY o.id');

-- a SCROLL cursor over a fallen-back sort (a random-access tuplesort)
SELECT cursor_log('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id',
                  ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH ABSOLUTE 25000',
                         'MOVE RELATIVE -10', 'FETCH 2', 'FETCH ABSOLUTE 1', 'FETCH PRIOR', 'FETCH NEXT',
                         'MOVE LAST', 'FETCH NEXT', 'FETCH PRIOR']) AS gpusort_fallback;
SET gpusort.enabled = off;
SELECT cursor_log('SELECT k, id FROM gs_fb WHERE id <= 50000 ORDER BY k, id',
                  ARRAY['FETCH 3', 'FETCH BACKWARD 2', 'FETCH LAST', 'FETCH BACKWARD 3', 'FETCH ABSOLUTE 25000',
                         'MOVE RELATIVE -10', 'FETCH 2', 'FETCH ABSOLUTE 1', 'FETCH PRIOR', 'FETCH NEXT',
                         'MOVE LAST', 'FETCH NEXT', 'FETCH PRIOR']) AS native;
RESET gpusort.enabled;
RESET gpusort.max_memory;
SHOW gpusort.max_memory;

-- superuser-only settings
CREATE ROLE regress_gs_user;
GRANT USAGE ON SCHEMA gs TO regress_gs_user;
GRANT SELECT ON gs_fb TO regress_gs_user;
DROP TABLE pg_temp.gs_native, pg_temp.gs_gpusort;  -- gs_check's, owned by the superuser
SET ROLE regress_gs_user;
SET gpusort.max_memory = '1GB';
SET gpusort.gpu_memory = '1GB';
SET gpusort.gpu_device = 1;
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

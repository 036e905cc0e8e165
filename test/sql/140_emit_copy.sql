--
-- 140_emit_copy: a result held in memory, copied in order by the pool
-- threads ahead of the rows returned (batch_emit.c).
--
-- The copy is a faster way to the same tuples, taken only for a forward
-- scan of a result of at least four of its blocks: every query here is
-- compared with PostgreSQL's Sort (gs_check), with the copy on and off,
-- and EXPLAIN ANALYZE VERBOSE shows whether rows were copied (Emit Copied).
-- Rows too large for their share of a block are returned in place, a
-- cursor may stop part way, and a SCROLL cursor never copies.
--
SET search_path = gs, public;
SET gpusort.threads = 2;
-- in memory even in the suite's pass where every sort spills: the copy is
-- of a result held in memory
SET gpusort.max_memory = '1GB';

CREATE TABLE gs_emit AS
SELECT g AS id, (hashint8(g) & 1048575)::int8 AS k, md5(g::text) AS pad,
       CASE WHEN g % 97 = 0 THEN repeat(md5(g::text), 40) END AS wide
  FROM generate_series(1, 300000) g;
ANALYZE gs_emit;

-- whether a query's GpuSort copied rows ahead, and if so whether all of them
CREATE FUNCTION gs.emit_copied(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  copied bigint;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ 'Emit Copied:' THEN
      copied := substring(line from 'Emit Copied: (\d+)')::bigint;
    END IF;
  END LOOP;
  RETURN CASE WHEN copied IS NULL THEN 'none'
              WHEN copied = 300000 THEN 'every row'
              ELSE 'some rows' END;
END $$;

-- rows of one size: every one copied
SELECT emit_copied('SELECT id, k, pad FROM gs_emit ORDER BY k, id');
SELECT gs_check('SELECT id, k, pad FROM gs_emit ORDER BY k, id', 2);
SELECT gs_check('SELECT * FROM gs_emit ORDER BY pad COLLATE "C"');
SELECT gs_check('SELECT * FROM gs_emit ORDER BY k DESC, id', 2);
-- the wide rows (one in 97) all first: more than the first blocks' shares,
-- so that some go out from the arena in place
SELECT emit_copied('SELECT * FROM gs_emit ORDER BY wide DESC NULLS LAST, id');
SELECT gs_check('SELECT * FROM gs_emit ORDER BY wide DESC NULLS LAST, id', 2);

-- off: the arena in place, the same rows
SET gpusort.emit_copy = off;
SELECT emit_copied('SELECT id, k, pad FROM gs_emit ORDER BY k, id');
SELECT gs_check('SELECT id, k, pad FROM gs_emit ORDER BY k, id', 2);
RESET gpusort.emit_copy;

-- too few rows for the copy to pay
SELECT emit_copied('SELECT id, k, pad FROM gs_emit WHERE id <= 1000 ORDER BY k, id');

-- a cursor that stops part way, and one read to the end in steps
BEGIN;
DECLARE c CURSOR FOR SELECT id, k FROM gs_emit ORDER BY k, id;
FETCH 3 FROM c;
MOVE FORWARD 150000 IN c;
FETCH 2 FROM c;
CLOSE c;
DECLARE d CURSOR FOR SELECT id, k FROM gs_emit ORDER BY k, id;
MOVE FORWARD 299998 IN d;
FETCH ALL FROM d;
FETCH NEXT FROM d;
COMMIT;
SET gpusort.enabled = off;
SELECT id, k FROM gs_emit ORDER BY k, id OFFSET 150003 LIMIT 2;
SELECT id, k FROM gs_emit ORDER BY k, id OFFSET 299998;
RESET gpusort.enabled;

-- a SCROLL cursor reads the arena in place, backward too
BEGIN;
DECLARE s SCROLL CURSOR FOR SELECT id, k FROM gs_emit ORDER BY k, id;
MOVE FORWARD 200000 IN s;
FETCH BACKWARD 2 FROM s;
FETCH LAST FROM s;
COMMIT;
SET gpusort.enabled = off;
SELECT id, k FROM gs_emit ORDER BY k, id OFFSET 199997 LIMIT 2;
RESET gpusort.enabled;

-- under a Limit, which stops reading early
SELECT count(*), sum(id) FROM (SELECT id FROM gs_emit ORDER BY k, id LIMIT 250000) s;
SET gpusort.enabled = off;
SELECT count(*), sum(id) FROM (SELECT id FROM gs_emit ORDER BY k, id LIMIT 250000) s;
RESET gpusort.enabled;

DROP TABLE gs_emit;
DROP FUNCTION gs.emit_copied(text);
RESET gpusort.threads;
RESET gpusort.max_memory;

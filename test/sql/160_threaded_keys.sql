--
-- 160_threaded_keys: keys that the pool threads encode from the tuples
-- themselves, without the backend.
--
-- * Fixed layouts of inputs larger than two chunks (262144 records): the
--   records after the first two chunks are encoded once the input has
--   ended, in the pool threads; a NULL that shows up there in a column whose
--   key had no NULL byte places the layout again, and tuples stored before
--   a key column was added (their value is the default in the catalog) are
--   encoded by the backend.
-- * Generic layouts without collation keys (C text, numeric): the threads
--   take the key column datums from the tuples; values stored compressed or
--   out of line, and rows missing an added column, are left to the backend.
--
-- * An ERROR raised while the threads still work leaves the session able
--   to sort (error:threads).
--
-- Every result is compared with PostgreSQL's own Sort (gs_check), with the
-- pool threads and without them; "Threads" in EXPLAIN ANALYZE VERBOSE
-- shows that the threads ran.
--
SET search_path = gs, public;
-- the spill variant's budget, 64kB, would leave these sorts' batches
-- without keys (the keys' chunks do not fit it), and no threads would
-- build keys: 32MB there, where the keys fit and the sorts still spill
DO $$
BEGIN
  IF current_setting('gpusort.max_memory') = '64kB' THEN
    PERFORM set_config('gpusort.max_memory', '32MB', false);
  END IF;
END $$;
SET gpusort.threads = 2;

CREATE TABLE gs_thr AS
SELECT g AS id,
       CASE WHEN g % 7 = 0 THEN repeat('x', g % 50) ELSE md5(g::text) END AS s,
       (hashint4(g) % 1000)::float8 / 7 AS f,
       hashint8(g) AS k,
       (hashint4(g) % 100000)::numeric / 100 AS n
  FROM generate_series(1, 300000) g;
-- NULLs among the last rows read: past the first two chunks
UPDATE gs_thr SET k = NULL, f = NULL WHERE id IN (17, 123456);
-- rows stored before these columns existed lack them
ALTER TABLE gs_thr ADD COLUMN a int8 DEFAULT 42;
ALTER TABLE gs_thr ADD COLUMN t text DEFAULT 'zz';
INSERT INTO gs_thr (id, s, f, k, n, a, t)
SELECT g, md5(g::text), g, hashint8(g), g, g % 3, 'a' || g
  FROM generate_series(300001, 300100) g;
-- long values: compressed in line, and out of line
INSERT INTO gs_thr (id, s, f, k, n, a, t)
SELECT g, repeat(md5(g::text), 100), g, g, g, g,
       (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 300) i)
  FROM generate_series(300101, 300150) g;
ANALYZE gs_thr;

SELECT count(*) AS compressed_or_toasted
  FROM gs_thr WHERE pg_column_size(t) < octet_length(t) OR pg_column_size(s) < octet_length(s);

-- what EXPLAIN ANALYZE VERBOSE says of the pool threads and the layout
CREATE FUNCTION pg_temp.threads_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  result text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ '^ *(Threads|Key Kind):' THEN
      result := result || btrim(line) || '; ';
    END IF;
  END LOOP;
  RETURN result;
END $$;

-- fixed layouts: in place (id), after a text column (f, k), with a late
-- NULL (k), with an added column (a)
SELECT q, gs_check(q, k) AS result, pg_temp.threads_of(q) AS threads FROM (VALUES
  ('SELECT id, s FROM gs_thr ORDER BY id DESC', 1),
  ('SELECT f, k, id FROM gs_thr ORDER BY f, k', 2),
  ('SELECT k, id FROM gs_thr ORDER BY k NULLS FIRST', 1),
  ('SELECT a, id FROM gs_thr ORDER BY a, id', 2),
  ('SELECT a, f, id FROM gs_thr ORDER BY a DESC, f', 2)
) v(q, k);

-- generic layouts: C text (with long values), numeric, an added text column
SELECT q, gs_check(q, k) AS result, pg_temp.threads_of(q) AS threads FROM (VALUES
  ('SELECT s COLLATE "C" AS s, id FROM gs_thr ORDER BY 1', 1),
  ('SELECT n, s COLLATE "C" AS s, id FROM gs_thr ORDER BY n DESC, 2', 2),
  ('SELECT t COLLATE "C" AS t, id FROM gs_thr ORDER BY 1, 2', 2),
  ('SELECT a, t COLLATE "C" AS t, id FROM gs_thr ORDER BY 1, 2 DESC', 2)
) v(q, k);

-- the same without pool threads: the backend encodes and deforms
SET gpusort.threads = 0;
SELECT q, gs_check(q, k) AS result FROM (VALUES
  ('SELECT f, k, id FROM gs_thr ORDER BY f, k', 2),
  ('SELECT a, id FROM gs_thr ORDER BY a, id', 2),
  ('SELECT t COLLATE "C" AS t, id FROM gs_thr ORDER BY 1, 2', 2)
) v(q, k);
RESET gpusort.threads;

-- an ERROR while the pool threads still work (error:threads, where the
-- backend would wait for them): their tasks touch only the sort's memory,
-- never the backend's unwound stack, and are told to stop as the sort's
-- memory goes; the same session then sorts correctly.  Fixed keys encoded
-- at the end, C text keys built at the end, libc keys built while loading.
-- (A budget they fit: batches of a few rows start no threads.)
SET gpusort.max_memory = '1GB';
SET gpusort.inject_fault = 'error:threads';
SELECT count(*) FROM (SELECT f, k, id FROM gs_thr ORDER BY f, k) x;
SELECT count(*) FROM (SELECT s COLLATE "C" AS s, id FROM gs_thr ORDER BY 1) x;
SELECT count(*) FROM (SELECT s, id FROM gs_thr ORDER BY s) x;
RESET gpusort.inject_fault;
RESET gpusort.max_memory;
SELECT gs_check('SELECT f, k, id FROM gs_thr ORDER BY f, k', 2);
SELECT gs_check('SELECT s, id FROM gs_thr ORDER BY s');

DROP TABLE gs_thr;

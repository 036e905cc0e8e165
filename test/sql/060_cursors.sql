--
-- 060_cursors: SCROLL cursors over GpuSort (backward scan and rewinds).
--
-- A fixed sequence of FETCH / MOVE commands (forward, BACKWARD, LAST,
-- FIRST, PRIOR, ABSOLUTE, RELATIVE, ALL, past either end and back) is run
-- on SCROLL cursors whose plan is GpuSort, printed once, and compared by
-- gs.cursor_log() with the same sequence on PostgreSQL's Sort for several
-- queries (exact keys, text keys, DESC, NULLs, empty and one-row results).
-- A WITH HOLD cursor is rewound and run to completion at COMMIT.
--
SET search_path = gs, public;

CREATE TABLE gs_cur AS
SELECT g AS id, (g * 7919) % 1000 AS k, md5(g::text) AS t,
       CASE WHEN g % 7 = 0 THEN NULL ELSE (g * 31) % 97 END AS n
  FROM generate_series(1, 30) g;

-- the sequence, printed
EXPLAIN (COSTS OFF) SELECT k, id FROM gs_cur ORDER BY k;
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT k, id FROM gs_cur ORDER BY k;
FETCH 5 FROM c;
FETCH BACKWARD 3 FROM c;
FETCH LAST FROM c;
FETCH BACKWARD 2 FROM c;
FETCH ABSOLUTE 1 FROM c;
MOVE FORWARD 10 IN c;
FETCH NEXT FROM c;
FETCH RELATIVE -4 FROM c;
MOVE LAST IN c;
FETCH NEXT FROM c;
FETCH NEXT FROM c;
FETCH PRIOR FROM c;
FETCH ABSOLUTE -3 FROM c;
MOVE BACKWARD ALL IN c;
FETCH PRIOR FROM c;
FETCH NEXT FROM c;
FETCH FIRST FROM c;
FETCH ABSOLUTE 30 FROM c;
FETCH ABSOLUTE 31 FROM c;
FETCH BACKWARD 1 FROM c;
MOVE ABSOLUTE 0 IN c;
FETCH 2 FROM c;
COMMIT;

-- the same on PostgreSQL's Sort, compared for several queries; first what
-- cursor_log records
SELECT cursor_log('SELECT k, id FROM gs_cur ORDER BY k', ARRAY['FETCH 2', 'FETCH LAST', 'MOVE BACKWARD 3', 'FETCH PRIOR']);
SELECT q, cursor_check(q, ARRAY['FETCH 5', 'FETCH BACKWARD 3', 'FETCH LAST', 'FETCH BACKWARD 2', 'FETCH ABSOLUTE 1',
                                'MOVE FORWARD 10', 'FETCH NEXT', 'FETCH RELATIVE -4', 'MOVE LAST', 'FETCH NEXT',
                                'FETCH NEXT', 'FETCH PRIOR', 'FETCH ABSOLUTE -3', 'MOVE BACKWARD ALL', 'FETCH PRIOR',
                                'FETCH NEXT', 'FETCH FIRST', 'FETCH ABSOLUTE 30', 'FETCH ABSOLUTE 31',
                                'FETCH BACKWARD 1', 'MOVE ABSOLUTE 0', 'FETCH 2', 'FETCH ALL', 'FETCH BACKWARD ALL',
                                'FETCH FORWARD ALL', 'MOVE BACKWARD 5', 'FETCH BACKWARD 10', 'FETCH RELATIVE 0',
                                'FETCH RELATIVE 7', 'FETCH ABSOLUTE 2', 'FETCH BACKWARD 5', 'FETCH 3']) AS result
  FROM (VALUES ('SELECT k, id FROM gs_cur ORDER BY k'),
               ('SELECT k, id FROM gs_cur ORDER BY k DESC'),
               ('SELECT t, id FROM gs_cur ORDER BY t'),
               ('SELECT t, id FROM gs_cur ORDER BY t COLLATE "C" DESC'),
               ('SELECT n, id FROM gs_cur ORDER BY n NULLS FIRST, id DESC'),
               ('SELECT n, t FROM gs_cur ORDER BY n DESC, t'),
               ('SELECT k, id FROM gs_cur WHERE id < 0 ORDER BY k'),
               ('SELECT k, id FROM gs_cur WHERE id BETWEEN 4 AND 4 ORDER BY k')) v(q);

-- a WITH HOLD cursor: at COMMIT the query is rewound and run to completion
BEGIN;
DECLARE h SCROLL CURSOR WITH HOLD FOR SELECT k, id FROM gs_cur ORDER BY k DESC;
FETCH 3 FROM h;
COMMIT;
FETCH NEXT FROM h;
FETCH BACKWARD 2 FROM h;
FETCH LAST FROM h;
CLOSE h;

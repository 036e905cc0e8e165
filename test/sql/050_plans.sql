--
-- 050_plans: GpuSort wherever a Sort stands in a plan.
--
-- * Merge Join (the inner side's mark/restore; inner, left, full joins,
--   duplicate keys on both sides, NULL keys, text keys, DESC);
-- * GroupAggregate, grouping sets (the Agg's chained sorts are left alone),
--   WindowAgg with several window orders, DISTINCT / DISTINCT ON (Unique),
--   UNION / INTERSECT / EXCEPT (SetOp) with hash aggregation off;
-- * rescans: a Sort in a correlated subquery (re-sorted for each outer
--   row), uncorrelated sorted subqueries on the inner side of nested loops
--   (rewound, also after being read only in part by a semi join), LATERAL,
--   InitPlans, CTEs;
-- * a parallel plan: GpuSort over Gather over GpuSortLoad (180_parallel);
-- * LIMIT: a small constant bound and a run-time bound leave the Sort to
--   PostgreSQL; a bound of at least half the input, OFFSET alone, and a
--   LIMIT that does not reach the Sort give GpuSort; WITH TIES;
-- * gpusort.min_rows above the estimate and gpusort.enabled = off leave the
--   Sort alone; Incremental Sort is never replaced.
-- Results are compared with PostgreSQL's own plan by gs_check (which also
-- checks that the plan has GpuSort), and the plan shapes are shown.
--
SET search_path = gs, public;

CREATE TABLE gs_pa AS
SELECT g AS id, CASE WHEN g % 101 = 0 THEN NULL ELSE abs(hashint4(g)) % 500 END AS k,
       (ARRAY['alpha', 'Beta', 'gamma', 'delta', 'Epsilon'])[1 + abs(hashint4(g + 1)) % 5] AS s,
       hashint4(g + 2) % 1000 AS x
  FROM generate_series(1, 20000) g;
CREATE TABLE gs_pb AS
SELECT g AS id, CASE WHEN g % 97 = 0 THEN NULL ELSE abs(hashint4(g + 3)) % 700 END AS k,
       (ARRAY['alpha', 'beta', 'Gamma', 'delta', 'zeta'])[1 + abs(hashint4(g + 4)) % 5] AS s,
       hashint4(g + 5) % 100 AS y
  FROM generate_series(1, 5000) g;
ANALYZE gs_pa, gs_pb;

-- Merge Join: both inputs sorted by GpuSort, the inner one marked and
-- restored over runs of duplicate keys
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT a.k, a.id, b.id FROM gs_pa a JOIN gs_pb b ON a.k = b.k ORDER BY a.k;
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_pa a JOIN gs_pb b ON a.k = b.k ORDER BY a.k');
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid, b.y FROM gs_pa a LEFT JOIN gs_pb b ON a.k = b.k ORDER BY a.k');
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_pa a FULL JOIN gs_pb b ON a.k = b.k ORDER BY a.k');
SELECT gs_check('SELECT a.k, a.s, a.id AS aid, b.id AS bid FROM gs_pa a JOIN gs_pb b ON a.k = b.k AND a.s = b.s ORDER BY a.k, a.s', 2);
SELECT gs_check('SELECT a.s, a.id AS aid, b.id AS bid FROM gs_pa a JOIN gs_pb b ON a.s = b.s WHERE a.id < 300 ORDER BY a.s');
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_pa a JOIN gs_pb b ON a.k = b.k ORDER BY a.k DESC');
SELECT gs_check('SELECT a.k, a.id AS aid, b.id AS bid FROM gs_pa a JOIN gs_pb b ON a.k = b.k AND a.x > b.y ORDER BY a.k');
-- the same count as PostgreSQL's plan gives, printed
SELECT count(*), sum(a.id::int8 * b.id) FROM gs_pa a JOIN gs_pb b ON a.k = b.k;
SET gpusort.enabled = off;
SELECT count(*), sum(a.id::int8 * b.id) FROM gs_pa a JOIN gs_pb b ON a.k = b.k;
RESET gpusort.enabled;
RESET enable_hashjoin;
RESET enable_nestloop;

-- GroupAggregate, grouping sets, WindowAgg, Unique, SetOp
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
SELECT k, count(*), sum(x) FROM gs_pa GROUP BY k ORDER BY k;
SELECT gs_check('SELECT k, count(*), sum(x) FROM gs_pa GROUP BY k ORDER BY k');
SELECT gs_check('SELECT s, k, count(*), min(x) FROM gs_pa GROUP BY s, k ORDER BY s, k', 2);
SELECT gs_check('SELECT s COLLATE "C" AS s, string_agg(x::text, '','' ORDER BY x, id) FROM gs_pa GROUP BY 1 ORDER BY 1');
EXPLAIN (COSTS OFF)
SELECT s, k, count(*) FROM gs_pa GROUP BY GROUPING SETS ((s), (k), ()) ORDER BY s, k;
SELECT gs_check('SELECT s, k, count(*) AS n FROM gs_pa GROUP BY GROUPING SETS ((s), (k), ()) ORDER BY s, k', 2);
SELECT gs_check('SELECT s, k, sum(x) FROM gs_pa GROUP BY ROLLUP (s, k) ORDER BY s NULLS FIRST, k NULLS FIRST', 2);
SELECT * FROM plan_lines($$
SELECT k, id, row_number() OVER (PARTITION BY k ORDER BY x, id), sum(x) OVER (ORDER BY s, id ROWS 3 PRECEDING)
  FROM gs_pa ORDER BY k, id$$);
SELECT gs_check('SELECT k, id, row_number() OVER (PARTITION BY k ORDER BY x, id) AS rn,
                        sum(x) OVER (ORDER BY s, id ROWS 3 PRECEDING) AS running,
                        rank() OVER (ORDER BY x DESC) AS rk
                   FROM gs_pa ORDER BY k, id', 2);
EXPLAIN (COSTS OFF)
SELECT DISTINCT s, k FROM gs_pa ORDER BY s, k;
SELECT gs_check('SELECT DISTINCT s, k FROM gs_pa ORDER BY s, k', 2);
SELECT gs_check('SELECT DISTINCT ON (k) k, x, id FROM gs_pa ORDER BY k, x DESC, id', 3);
SELECT gs_check('SELECT count(DISTINCT x) AS n, k FROM gs_pa GROUP BY k ORDER BY 1, 2', 2);
-- (15 and 17 sort an Append of both inputs; 18 sorts each input)
SELECT plan_of('SELECT k FROM gs_pa INTERSECT SELECT k FROM gs_pb')
         ~ '^SetOp Intersect\n  ->  Custom Scan \(GpuSort\)\n' AS setop_over_gpusort,
       plan_of('SELECT k FROM gs_pa INTERSECT SELECT k FROM gs_pb') !~ '->  Sort\M' AS no_native_sort;
SELECT gs_check('SELECT k FROM (SELECT k FROM gs_pa INTERSECT SELECT k FROM gs_pb) s ORDER BY k');
SELECT gs_check('SELECT k, s FROM (SELECT k, s FROM gs_pa INTERSECT ALL SELECT k, s FROM gs_pb) s ORDER BY k, s', 2);
SELECT gs_check('SELECT k FROM (SELECT k FROM gs_pa EXCEPT SELECT k FROM gs_pb) s ORDER BY k');
SELECT gs_check('SELECT k, s FROM (SELECT k, s FROM gs_pb EXCEPT ALL SELECT k, s FROM gs_pa) s ORDER BY k, s', 2);
SELECT gs_check('SELECT s FROM (SELECT s FROM gs_pa UNION SELECT s FROM gs_pb) u ORDER BY s');
SELECT count(*) AS intersect_rows FROM (SELECT k, s FROM gs_pa INTERSECT ALL SELECT k, s FROM gs_pb) s;
SELECT count(*) AS except_rows FROM (SELECT k, s FROM gs_pb EXCEPT ALL SELECT k, s FROM gs_pa) s;
SET gpusort.enabled = off;
SELECT count(*) AS intersect_rows FROM (SELECT k, s FROM gs_pa INTERSECT ALL SELECT k, s FROM gs_pb) s;
SELECT count(*) AS except_rows FROM (SELECT k, s FROM gs_pb EXCEPT ALL SELECT k, s FROM gs_pa) s;
RESET gpusort.enabled;
RESET enable_hashagg;

-- a Sort in a correlated subquery: sorted again for every outer row
EXPLAIN (COSTS OFF)
SELECT b.id, (SELECT string_agg(x::text, ',') FROM (SELECT a.x FROM gs_pa a WHERE a.k = b.k ORDER BY a.x DESC, a.id) s)
  FROM gs_pb b WHERE b.id <= 50 ORDER BY b.id;
SELECT gs_check('SELECT b.id, (SELECT string_agg(x::text, '','') FROM (SELECT a.x FROM gs_pa a WHERE a.k = b.k ORDER BY a.x DESC, a.id) s) AS xs
                   FROM gs_pb b WHERE b.id <= 50 ORDER BY b.id');
SELECT gs_check('SELECT b.id, ARRAY(SELECT a.s || a.id FROM gs_pa a WHERE a.k = b.k ORDER BY a.s DESC, a.id) AS xs
                   FROM gs_pb b WHERE b.id <= 50 ORDER BY b.id');
SELECT b.id, (SELECT string_agg(x::text, ',') FROM (SELECT a.x FROM gs_pa a WHERE a.k = b.k ORDER BY a.x DESC, a.id) s) AS xs
  FROM gs_pb b WHERE b.id <= 8 ORDER BY b.id;
-- one sort per outer row (Sorts: 8), each of its own rows
SELECT * FROM analyze_lines('SELECT b.id, (SELECT string_agg(x::text, '','') FROM (SELECT a.x FROM gs_pa a WHERE a.k = b.k ORDER BY a.x DESC, a.id) s) AS xs
  FROM gs_pb b WHERE b.id <= 8 ORDER BY b.id', 'GpuSort|Records|Sorts:');
SET gpusort.enabled = off;
SELECT b.id, (SELECT string_agg(x::text, ',') FROM (SELECT a.x FROM gs_pa a WHERE a.k = b.k ORDER BY a.x DESC, a.id) s) AS xs
  FROM gs_pb b WHERE b.id <= 8 ORDER BY b.id;
RESET gpusort.enabled;

-- LATERAL: a parameterized sorted subquery on the inner side of a nested loop
SELECT gs_check('SELECT b.id, l.x, l.aid FROM gs_pb b,
                   LATERAL (SELECT a.x, a.id AS aid FROM gs_pa a WHERE a.k = b.k ORDER BY a.x OFFSET 0) l
                  WHERE b.id <= 200 ORDER BY b.id, l.x', 2);

-- an uncorrelated sorted subquery on the inner side of a nested loop: the
-- loop rescans it for each outer row and GpuSort rewinds without sorting
-- again; with a semi join each rescan comes after a partial read
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT b.id, s.x FROM gs_pb b JOIN (SELECT k, x FROM gs_pa ORDER BY k, x OFFSET 0) s ON s.k = b.k
 WHERE b.id <= 30 ORDER BY b.id, s.x;
SELECT gs_check('SELECT b.id, s.x FROM gs_pb b JOIN (SELECT k, x FROM gs_pa ORDER BY k, x OFFSET 0) s ON s.k = b.k
                  WHERE b.id <= 30 ORDER BY b.id, s.x', 2);
-- rewound, not sorted again: Records stays at the input's size, no Sorts line
SELECT * FROM analyze_lines('SELECT b.id, s.x FROM gs_pb b JOIN (SELECT k, x FROM gs_pa ORDER BY k, x OFFSET 0) s ON s.k = b.k
                              WHERE b.id <= 30 ORDER BY b.id, s.x', 'GpuSort|Records|Sorts:|Loop');
EXPLAIN (COSTS OFF)
SELECT b.id FROM gs_pb b
 WHERE b.id <= 300 AND NOT EXISTS (SELECT 1 FROM (SELECT x, id FROM gs_pa ORDER BY x DESC, id OFFSET 0) s WHERE s.x = b.y * 17)
 ORDER BY b.id;
SELECT gs_check('SELECT b.id FROM gs_pb b
                  WHERE b.id <= 300 AND NOT EXISTS (SELECT 1 FROM (SELECT x, id FROM gs_pa ORDER BY x DESC, id OFFSET 0) s WHERE s.x = b.y * 17)
                  ORDER BY b.id');
SELECT * FROM analyze_lines('SELECT b.id FROM gs_pb b
                  WHERE b.id <= 300 AND NOT EXISTS (SELECT 1 FROM (SELECT x, id FROM gs_pa ORDER BY x DESC, id OFFSET 0) s WHERE s.x = b.y * 17)
                  ORDER BY b.id', 'GpuSort|Records|Sorts:|Loop');
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- InitPlans and CTEs (the plan as 17 and later write an InitPlan and its
-- value; 15 says "InitPlan 1 (returns $0)" and "$0")
SELECT regexp_replace(regexp_replace(line, ' \(returns \$0\)$', ''), '\$0', '(InitPlan 1).col1') AS "QUERY PLAN"
  FROM plan_lines($$
SELECT count(*) FROM gs_pb WHERE y > (SELECT (array_agg(x))[100] FROM (SELECT x FROM gs_pa ORDER BY x DESC) s)$$) AS line;
SELECT gs_check('SELECT id FROM gs_pb WHERE y > (SELECT (array_agg(x / 10))[10000] FROM (SELECT x FROM gs_pa ORDER BY x DESC) s) ORDER BY id');
SELECT (SELECT (array_agg(x))[100] FROM (SELECT x FROM gs_pa ORDER BY x DESC) s) AS hundredth_largest,
       (SELECT (array_agg(s || id))[1:3] FROM (SELECT s, id FROM gs_pa ORDER BY s DESC, id) s) AS first_three;
SELECT gs_check('WITH sorted AS MATERIALIZED (SELECT k, x FROM gs_pa ORDER BY k, x)
                 SELECT s1.k, s1.x FROM sorted s1 WHERE s1.k < 10 UNION ALL SELECT s2.k, s2.x FROM sorted s2 WHERE s2.k > 490
                 ORDER BY 1, 2', 2);

-- a parallel plan: one GpuSort over a Gather whose workers load its rows
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF)
SELECT k, x, id FROM gs_pa ORDER BY k, x;
SELECT gs_check('SELECT k, x, id FROM gs_pa ORDER BY k, x', 2);
SELECT gs_check('SELECT s, id FROM gs_pa ORDER BY s DESC');
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
SELECT k, count(*) FROM gs_pa GROUP BY k ORDER BY k;
SELECT gs_check('SELECT k, count(*) FROM gs_pa GROUP BY k ORDER BY k');
RESET enable_hashagg;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- LIMIT: a small bound is left to PostgreSQL's top-N heapsort ...
EXPLAIN (COSTS OFF) SELECT x, id FROM gs_pa ORDER BY x, id LIMIT 10;
SELECT x, id FROM gs_pa ORDER BY x, id LIMIT 10;
-- ... also LIMIT + OFFSET below half of the input, and a run-time bound
EXPLAIN (COSTS OFF) SELECT x, id FROM gs_pa ORDER BY x, id LIMIT 10 OFFSET 100;
PREPARE gs_lim(int) AS SELECT x, id FROM gs_pa ORDER BY x DESC, id LIMIT $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE gs_lim(5);
EXECUTE gs_lim(5);
RESET plan_cache_mode;
-- ... a bound of at least half the input is sorted by GpuSort
EXPLAIN (COSTS OFF) SELECT x, id FROM gs_pa ORDER BY x, id LIMIT 10000;
SELECT gs_check('SELECT x, id FROM gs_pa ORDER BY x, id LIMIT 10000', 2);
SELECT gs_check('SELECT x, id FROM gs_pa ORDER BY x DESC, id LIMIT 5 OFFSET 19990', 2);
SELECT gs_check('SELECT x, id FROM gs_pa ORDER BY x, id OFFSET 19995', 2);
SELECT gs_check('SELECT x, id FROM gs_pa ORDER BY x, id LIMIT ALL', 2);
SELECT x, id FROM gs_pa ORDER BY x DESC, id LIMIT 5 OFFSET 19990;
SET gpusort.enabled = off;
SELECT x, id FROM gs_pa ORDER BY x DESC, id LIMIT 5 OFFSET 19990;
RESET gpusort.enabled;
-- ... and so is a Sort that a LIMIT does not bound (under Unique)
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT DISTINCT x FROM gs_pa ORDER BY x LIMIT 5;
SELECT DISTINCT x FROM gs_pa ORDER BY x LIMIT 5;
RESET enable_hashagg;
-- WITH TIES: every row tied with the last one
SELECT x, count(*) FROM (SELECT x FROM gs_pa ORDER BY x FETCH FIRST 10000 ROWS WITH TIES) s GROUP BY x ORDER BY x DESC LIMIT 1;
SELECT count(*) FROM (SELECT x FROM gs_pa ORDER BY x FETCH FIRST 10000 ROWS WITH TIES) s;
SET gpusort.enabled = off;
SELECT count(*) FROM (SELECT x FROM gs_pa ORDER BY x FETCH FIRST 10000 ROWS WITH TIES) s;
RESET gpusort.enabled;

-- gpusort.min_rows: a Sort estimated below it is left alone
SET gpusort.min_rows = 1000000;
EXPLAIN (COSTS OFF) SELECT x FROM gs_pa ORDER BY x;
SET gpusort.min_rows = 20000;
EXPLAIN (COSTS OFF) SELECT x FROM gs_pa ORDER BY x;
SET gpusort.min_rows = 20001;
EXPLAIN (COSTS OFF) SELECT x FROM gs_pa ORDER BY x;
RESET gpusort.min_rows;
SET gpusort.enabled = off;
EXPLAIN (COSTS OFF) SELECT x FROM gs_pa ORDER BY x;
RESET gpusort.enabled;

-- Incremental Sort is never replaced
CREATE INDEX gs_pa_k ON gs_pa (k);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k, x, id FROM gs_pa WHERE k < 50 ORDER BY k, x, id;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX gs_pa_k;

-- a window function over a sort: the row numbered span has the range's
-- largest k
\set lo 1 + random(0, :windows - 1) * :step
SELECT rn AS got_rn, k AS got_k FROM
  (SELECT k, row_number() OVER (ORDER BY k, id) AS rn FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1) w
 WHERE rn = :span \gset
SELECT :got_k = max_k AS ok FROM bench_expect WHERE lo = :lo \gset
\if :ok
\else
SELECT 'wrong result: window'::int;
\endif

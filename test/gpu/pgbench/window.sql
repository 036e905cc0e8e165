-- a window function over a sort: the row numbered span has the largest k
\set lo random(1, :rows - :span + 1)
SELECT rn AS got_rn, k AS got_k FROM
  (SELECT k, row_number() OVER (ORDER BY k, id) AS rn FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1) w
 WHERE rn = :span \gset
SELECT :got_k = max(k) AS ok FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 \gset
\if :ok
\else
SELECT 'wrong result: window'::int;
\endif

-- ORDER BY float, integer (two exact keys); the last row is the largest f
-- and, among those, the largest k
\set lo random(1, :rows - :span + 1)
SELECT f AS got_f, k AS got_k FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY f, k OFFSET :span - 1 \gset
SELECT :got_f = max(f) AND :got_k = max(k) FILTER (WHERE f = :got_f) AS ok
  FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 \gset
\if :ok
\else
SELECT 'wrong result: sort_multi'::int;
\endif

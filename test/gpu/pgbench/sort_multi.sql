-- ORDER BY float, integer (two exact keys); the last row is the largest f
-- and, among those, the largest k
\set lo 1 + random(0, :windows - 1) * :step
SELECT f AS got_f, k AS got_k FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY f, k OFFSET :span - 1 \gset
SELECT :got_f = max_f AND :got_k = max_k_at_max_f AS ok FROM bench_expect WHERE lo = :lo \gset
\if :ok
\else
SELECT 'wrong result: sort_multi'::int;
\endif

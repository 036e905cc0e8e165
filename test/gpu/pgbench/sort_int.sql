-- ORDER BY one integer column (an exact key); the last row of the order is
-- the range's min(k)
\set lo 1 + random(0, :windows - 1) * :step
SELECT k AS got FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY k DESC, id OFFSET :span - 1 \gset
SELECT :got = min_k AS ok FROM bench_expect WHERE lo = :lo \gset
\if :ok
\else
SELECT 'wrong result: sort_int'::int;
\endif

-- ORDER BY one integer column (an exact key); the last row of the order is
-- checked against min(k), which needs no sort
\set lo random(1, :rows - :span + 1)
SELECT k AS got FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY k DESC, id OFFSET :span - 1 \gset
SELECT :got = min(k) AS ok FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 \gset
\if :ok
\else
SELECT 'wrong result: sort_int'::int;
\endif

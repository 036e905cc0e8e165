-- ORDER BY text (the comparator pass, the database's collation); the last
-- row's s is the range's max(s)
\set lo 1 + random(0, :windows - 1) * :step
SELECT id AS got FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY s, id OFFSET :span - 1 \gset
SELECT (SELECT s FROM bench WHERE id = :got) = max_s AS ok FROM bench_expect WHERE lo = :lo \gset
\if :ok
\else
SELECT 'wrong result: sort_text'::int;
\endif

-- ORDER BY text (the comparator pass, the database's collation); the last
-- row is max(s)
\set lo random(1, :rows - :span + 1)
SELECT id AS got FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 ORDER BY s, id OFFSET :span - 1 \gset
SELECT (SELECT s FROM bench WHERE id = :got) = max(s) AS ok FROM bench WHERE id BETWEEN :lo AND :lo + :span - 1 \gset
\if :ok
\else
SELECT 'wrong result: sort_text'::int;
\endif

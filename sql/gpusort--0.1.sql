/* gpusort--0.1.sql: SQL objects of the gpusort extension */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpusort" to load this file. \quit

-- What this build of gpusort is and what it can use: the GPUs of the GPU
-- service, or why it has none.
CREATE FUNCTION gpusort_info(
    OUT version text,
    OUT build text,
    OUT engines text,
    OUT gpus text)
RETURNS record
AS 'MODULE_PATHNAME', 'gpusort_info'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpusort_info() IS
  'gpusort version, build (CUDA or CPU-only), usable engines and the GPUs seen';

CREATE FUNCTION gpusort_backend_memory(
    OUT host_in_use bigint,
    OUT host_cached bigint,
    OUT pinned_in_use bigint,
    OUT pinned_cached bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'gpusort_backend_memory'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpusort_backend_memory() IS
  'bytes of large host blocks this backend''s sorts hold now, and what it keeps for its next sorts (pinned memory: always 0, the GPU service holds it)';

-- The GPUs of the GPU service (empty when it runs without one).
CREATE FUNCTION gpusort_gpus(
    OUT device integer,
    OUT name text,
    OUT memory_total bigint,
    OUT memory_budget bigint,
    OUT memory_in_use bigint,
    OUT running integer,
    OUT served bigint,
    OUT failed bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpusort_gpus'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW gpusort_gpus AS SELECT * FROM gpusort_gpus();

COMMENT ON VIEW gpusort_gpus IS
  'per GPU of the GPU service: its memory, the budget of its sorts and what they reserve now, sorts running, served and failed';

-- Counters since the server started.
CREATE FUNCTION gpusort_stat(
    OUT what text,
    OUT detail text,
    OUT value bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpusort_stat'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW gpusort_stat AS SELECT * FROM gpusort_stat();

COMMENT ON VIEW gpusort_stat IS
  'since server start: sorts and rows by engine, sorts that wanted the GPU and ran on the CPU by reason, bytes moved to and from GPUs, GPU and queue time; now: requests open and staging slots in use';

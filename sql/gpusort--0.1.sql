/* gpusort--0.1.sql: SQL objects of the gpusort extension */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpusort" to load this file. \quit

-- What this build of gpusort is and what it can use.  Calling it starts
-- CUDA in the calling backend (the only way to see the GPUs).
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
  'bytes of large host blocks and pinned memory this backend''s sorts hold now, and what it keeps for its next sorts';

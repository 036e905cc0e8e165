/* gpusort--0.3.sql: SQL objects of the gpusort extension, version 0.3 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpusort" to load this file. \quit

-- 0.3 adds gpusort_info()'s column memory.  An update from an older version
-- (gpusort--0.1--0.2.sql, gpusort--0.2--0.3.sql) ends with the objects and
-- privileges of this script, the extension's own privileges recorded in
-- pg_init_privs as this script records them, and the grants users made
-- kept and dumped by pg_dump (gpusort--0.2--0.3.sql says how).
--
-- Who may see what (from 0.2 on).  One rule, as PostgreSQL's own
-- monitoring has it:
--
-- * What describes the whole server's activity, the work of every session
--   (gpusort_stat: sorts, rows, fallbacks, GPU time, memory held now;
--   gpusort_gpus: each GPU's memory in use, sorts running, served, failed),
--   is for superusers and members of pg_read_all_stats, the role that reads
--   "all pg_stat_* views and ... statistics related extensions"; pg_monitor
--   is one of its members, so granting pg_monitor is enough.  A view and
--   the function behind it always carry the same rule: the function's
--   EXECUTE is revoked from PUBLIC and granted, with SELECT on its view, to
--   pg_read_all_stats.  (A view checks the EXECUTE privilege of the
--   functions it calls as the user who reads it, not as its owner: a grant
--   on the view alone would not do, and a function left to PUBLIC would
--   give anyone what its view withholds, as 0.1 did.)  The functions check
--   nothing themselves, as pg_buffercache's do not: a superuser may GRANT
--   them to other roles, always the function with its view.
--
-- * What describes the build or the caller's own session stays PUBLIC, as
--   version() and a session's own row of pg_stat_activity do:
--   gpusort_info() (gpusort's version, CUDA or CPU-only, whether the GPU
--   engine is usable, and each GPU's device number, model, total memory and
--   the service's budget on it, or why there is none; the memory the
--   default budgets are taken from: all of it fixed at service or server
--   start or derived from settings anyone may SHOW, nothing that moves
--   with other sessions' sorts), so that any user can tell whether the
--   GPU engine is usable.  Its columns gpus and memory describe the host
--   (GPU models, the driver's messages, the machine's memory, the
--   cgroup's path), which tell why EXPLAIN says CPU or why a sort's
--   budget is what it is: the library gives them to superusers and
--   members of pg_read_all_settings (pg_monitor is one), who see
--   PostgreSQL's own settings that name paths on the host, and NULL to
--   other roles (views.c); and
--   gpusort_backend_memory(), two byte counts of the calling
--   backend's own host blocks, what EXPLAIN ANALYZE already shows users of
--   their own sorts (unlike pg_backend_memory_contexts, which is kept from
--   PUBLIC, it names no context and shows no query text).

-- What this build of gpusort is and what it can use: the GPUs of the GPU
-- service, or why it has none, and the memory its default budgets are
-- taken from.  PUBLIC.
CREATE FUNCTION gpusort_info(
    OUT version text,
    OUT build text,
    OUT engines text,
    OUT gpus text,
    OUT memory text)
RETURNS record
AS 'MODULE_PATHNAME', 'gpusort_info'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION gpusort_info() IS
  'gpusort version, build (CUDA or CPU-only), usable engines, the GPUs seen, and the memory the default budgets are taken from';

-- The calling backend's own memory.  PUBLIC.
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
-- pg_read_all_stats.
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

REVOKE ALL ON FUNCTION gpusort_gpus() FROM PUBLIC;
REVOKE ALL ON gpusort_gpus FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpusort_gpus() TO pg_read_all_stats;
GRANT SELECT ON gpusort_gpus TO pg_read_all_stats;

-- Counters since the server started.  pg_read_all_stats.
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

REVOKE ALL ON FUNCTION gpusort_stat() FROM PUBLIC;
REVOKE ALL ON gpusort_stat FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpusort_stat() TO pg_read_all_stats;
GRANT SELECT ON gpusort_stat TO pg_read_all_stats;

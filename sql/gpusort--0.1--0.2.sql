/* gpusort--0.1--0.2.sql: ALTER EXTENSION gpusort UPDATE from 0.1 to 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpusort UPDATE TO '0.2'" to load this file. \quit

-- 0.2 changes no object, only who may use two of them (the rule and its
-- reasons: gpusort--0.2.sql).  In 0.1 the views gpusort_gpus and
-- gpusort_stat were left to their owner, a superuser, while the functions
-- behind them were PUBLIC: anyone got from gpusort_stat() what
-- gpusort_stat denied.  From 0.2 on each view and its function are for
-- superusers and pg_read_all_stats (and so pg_monitor); gpusort_info()
-- and gpusort_backend_memory() stay PUBLIC.  The statements are those of
-- gpusort--0.2.sql, so an updated 0.1 and a fresh 0.2 end with the same
-- privileges.

-- A role that a superuser granted SELECT on a 0.1 view keeps it, but now
-- needs EXECUTE on the function too (or pg_read_all_stats), and a grant of
-- a view to PUBLIC is revoked: say so, rather than let monitoring fail at
-- its next read.
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT c.relname, a.grantee
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.oid IN ('gpusort_gpus'::regclass, 'gpusort_stat'::regclass)
       AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner
       AND CASE WHEN a.grantee = 0 THEN true
                ELSE NOT pg_has_role(a.grantee, 'pg_read_all_stats', 'USAGE') END
     ORDER BY c.relname, a.grantee::regrole::text
  LOOP
    IF r.grantee = 0 THEN
      RAISE WARNING 'gpusort 0.2 revokes the grant of the view % to PUBLIC', r.relname
        USING HINT = 'Grant pg_read_all_stats (or pg_monitor) to the roles that read it.';
    ELSE
      RAISE WARNING 'gpusort 0.2: role % may read the view %, but no longer call the function behind it',
        r.grantee::regrole, r.relname
        USING HINT = format('GRANT pg_read_all_stats TO %s, or GRANT EXECUTE ON FUNCTION %s() TO %s.',
                            r.grantee::regrole, r.relname, r.grantee::regrole);
    END IF;
  END LOOP;
END $$;

REVOKE ALL ON FUNCTION gpusort_gpus() FROM PUBLIC;
REVOKE ALL ON gpusort_gpus FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpusort_gpus() TO pg_read_all_stats;
GRANT SELECT ON gpusort_gpus TO pg_read_all_stats;

REVOKE ALL ON FUNCTION gpusort_stat() FROM PUBLIC;
REVOKE ALL ON gpusort_stat FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpusort_stat() TO pg_read_all_stats;
GRANT SELECT ON gpusort_stat TO pg_read_all_stats;

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
-- privileges; the last step below records them as a fresh 0.2 does, and
-- keeps the grants users made for pg_dump to dump.

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

-- The extension's own privileges, recorded as a fresh install records
-- them.  PostgreSQL records every GRANT and REVOKE of an update script in
-- pg_init_privs, with the whole ACL the object has then: grants that users
-- made before the update with it.  pg_dump takes pg_init_privs for the
-- extension's own privileges and dumps only what differs from it, so a
-- dump left out those grants (a role granted SELECT on gpusort_stat could
-- no longer read it after a restore).  So, for each function and view of
-- the extension, its ACL as the update leaves it (users' grants included)
-- is put aside; from no ACL, it is given the extension's own privileges by
-- the statements of a fresh install (gpusort--0.2.sql), which PostgreSQL records as it does
-- there (an object with none is dropped from the extension and added back
-- with no ACL, which records none); and the ACL put aside is written back
-- to the catalog, where the roles it names are already recorded as
-- depending on it (PostgreSQL's GRANTs recorded them, and the statements
-- here change no role's but the extension's own).
DO $$
DECLARE
  m record;
  acl aclitem[];
BEGIN
  FOR m IN
    SELECT d.classid, d.objid,
           CASE WHEN d.classid = 'pg_proc'::regclass
                THEN 'FUNCTION ' || d.objid::regprocedure::text
                ELSE 'VIEW ' || d.objid::regclass::text END AS member,
           CASE WHEN d.classid = 'pg_proc'::regclass
                THEN 'FUNCTION ' || d.objid::regprocedure::text
                ELSE d.objid::regclass::text END AS target,
           CASE WHEN d.classid = 'pg_proc'::regclass THEN 'EXECUTE' ELSE 'SELECT' END AS use,
           -- the server-wide views and their functions (gpusort--0.2.sql)
           CASE WHEN d.classid = 'pg_proc'::regclass
                THEN d.objid::regprocedure IN ('gpusort_gpus()'::regprocedure,
                                               'gpusort_stat()'::regprocedure)
                ELSE d.objid::regclass IN ('gpusort_gpus'::regclass, 'gpusort_stat'::regclass)
           END AS server_wide
      FROM pg_catalog.pg_depend d
     WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass
       AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'gpusort')
       AND d.deptype = 'e'
       AND d.classid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_class'::regclass)
     ORDER BY 1, 2
  LOOP
    IF m.classid = 'pg_catalog.pg_proc'::regclass THEN
      SELECT proacl INTO acl FROM pg_catalog.pg_proc WHERE oid = m.objid;
      UPDATE pg_catalog.pg_proc SET proacl = NULL WHERE oid = m.objid;
    ELSE
      SELECT relacl INTO acl FROM pg_catalog.pg_class WHERE oid = m.objid;
      UPDATE pg_catalog.pg_class SET relacl = NULL WHERE oid = m.objid;
    END IF;
    IF m.server_wide THEN
      EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', m.target);
      EXECUTE format('GRANT %s ON %s TO pg_read_all_stats', m.use, m.target);
    ELSE
      EXECUTE format('ALTER EXTENSION gpusort DROP %s', m.member);
      EXECUTE format('ALTER EXTENSION gpusort ADD %s', m.member);
    END IF;
    IF m.classid = 'pg_catalog.pg_proc'::regclass THEN
      UPDATE pg_catalog.pg_proc SET proacl = acl WHERE oid = m.objid;
    ELSE
      UPDATE pg_catalog.pg_class SET relacl = acl WHERE oid = m.objid;
    END IF;
  END LOOP;
END $$;

/* gpusort--0.2--0.3.sql: ALTER EXTENSION gpusort UPDATE from 0.2 to 0.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gpusort UPDATE TO '0.3'" to load this file. \quit

-- 0.3 adds gpusort_info()'s column memory, and records the extension's own
-- privileges as a fresh 0.3 does: an update to 0.2 by the script of 0.2
-- recorded there the grants users had made too, which pg_dump then left
-- out of its dumps.  Who may use what is as in 0.2 (gpusort--0.3.sql).

-- gpusort_info() with its new column is a new function, since a function's
-- result columns cannot change.  It keeps the owner and the ACL of the one
-- it replaces, so that a user's change to who may call it stays: the ACL is
-- copied, with its grantors and grant options, once each role it names has
-- been granted EXECUTE on the new function, which records the roles as
-- depending on it as any GRANT does (a grantor other than the owner holds
-- the grant option, so is among them).
DO $$
DECLARE
  info_owner oid;
  info_acl aclitem[];
  grantee regrole;
BEGIN
  SELECT proowner, proacl INTO info_owner, info_acl
    FROM pg_catalog.pg_proc WHERE oid = 'gpusort_info()'::regprocedure;
  DROP FUNCTION gpusort_info();
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
  EXECUTE format('ALTER FUNCTION gpusort_info() OWNER TO %s', info_owner::regrole);
  IF info_acl IS NOT NULL THEN
    FOR grantee IN
      SELECT DISTINCT a.grantee::regrole FROM pg_catalog.aclexplode(info_acl) a
       WHERE a.grantee <> 0 AND a.grantee <> info_owner
    LOOP
      EXECUTE format('GRANT EXECUTE ON FUNCTION gpusort_info() TO %s', grantee);
    END LOOP;
    UPDATE pg_catalog.pg_proc SET proacl = info_acl WHERE oid = 'gpusort_info()'::regprocedure;
  END IF;
END $$;

-- The extension's own privileges, recorded as a fresh install records
-- them.  PostgreSQL records every GRANT and REVOKE of an update script in
-- pg_init_privs, with the whole ACL the object has then: grants that users
-- made before the update with it.  pg_dump takes pg_init_privs for the
-- extension's own privileges and dumps only what differs from it, so a
-- dump left out those grants (a role granted SELECT on gpusort_stat could
-- no longer read it after a restore).  So, for each function and view of
-- the extension, its ACL as the update leaves it (users' grants included)
-- is put aside; from no ACL, it is given the extension's own privileges by
-- the statements of a fresh install (gpusort--0.3.sql), which PostgreSQL records as it does
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
           -- the server-wide views and their functions (gpusort--0.3.sql)
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

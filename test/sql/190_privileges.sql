--
-- 190_privileges: who may read gpusort's views and call its functions, as
-- a role that has LOGIN and nothing else, and the update from 0.1.
--
-- The rule (gpusort--0.3.sql says why): the server-wide views gpusort_gpus
-- and gpusort_stat and the functions behind them are for superusers and
-- members of pg_read_all_stats (pg_monitor is one); gpusort_info() and
-- gpusort_backend_memory() are PUBLIC.  A view and its function always
-- agree.  Then ALTER EXTENSION gpusort UPDATE from 0.1 (whose views were
-- denied and whose functions were PUBLIC) ends with the privileges of a
-- fresh install, and warns of grants it leaves half-working (TAP
-- 015_update_privileges follows users' grants through every update path,
-- pg_dump and pg_restore).  Roles are cluster-wide: regress_gpusort_*,
-- dropped at the end; the database keeps gpusort, at its default version.
--
-- an empty gpusort_gpus says why in a NOTICE: not here, where the GPU
-- host and a machine without GPU share the output
SET client_min_messages = warning;
CREATE ROLE regress_gpusort_login LOGIN;

-- every function and view of the extension, by kind and name (from 17 on
-- the views' row types are members too, with no privileges of their own)
CREATE TEMP VIEW gpusort_objects AS
SELECT CASE WHEN d.classid = 'pg_proc'::regclass THEN 'function' ELSE 'view' END AS kind,
       CASE WHEN d.classid = 'pg_proc'::regclass THEN d.objid::regprocedure::text
            ELSE d.objid::regclass::text END AS name,
       d.classid, d.objid
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'gpusort'
   AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass);

-- whether a role may use an object: SELECT a view, EXECUTE a function
CREATE FUNCTION pg_temp.may_use(role name, kind text, obj oid) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT CASE kind WHEN 'function' THEN has_function_privilege(role, obj, 'EXECUTE')
                   ELSE has_table_privilege(role, obj, 'SELECT') END
$$;

-- the rule, from the catalog: PUBLIC (a LOGIN-only role), pg_monitor,
-- pg_read_all_stats
CREATE TEMP VIEW gpusort_rule AS
SELECT name, kind,
       pg_temp.may_use('regress_gpusort_login', kind, objid) AS login_only,
       pg_temp.may_use('pg_monitor', kind, objid) AS pg_monitor,
       pg_temp.may_use('pg_read_all_stats', kind, objid) AS pg_read_all_stats
  FROM gpusort_objects;

SELECT extversion FROM pg_extension WHERE extname = 'gpusort';
SELECT * FROM gpusort_rule ORDER BY name, kind;

-- a view and the function behind it: the same for every role
SELECT v.name AS view, f.name AS function,
       v.login_only = f.login_only AND v.pg_monitor = f.pg_monitor
       AND v.pg_read_all_stats = f.pg_read_all_stats AS same_rule
  FROM gpusort_rule v JOIN gpusort_rule f ON f.kind = 'function' AND f.name = v.name || '()'
 WHERE v.kind = 'view'
 ORDER BY 1;

--
-- as the LOGIN-only role: the views and their functions are denied alike;
-- its own session's and the build's facts are not
--
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT session_user, current_user;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus();
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
SELECT version, build IN ('CUDA', 'CPU-only') AS known_build FROM gpusort_info();
SELECT host_in_use >= 0 AND host_cached >= 0 AS own_figures FROM gpusort_backend_memory();
RESET SESSION AUTHORIZATION;

-- granted pg_monitor, the same role reads both, and both alike
GRANT pg_monitor TO regress_gpusort_login;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus();
SELECT (SELECT count(*) FROM gpusort_gpus) = (SELECT count(*) FROM gpusort_gpus()) AS same_rows;
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
SELECT (SELECT array_agg(what || ': ' || detail ORDER BY what, detail) FROM gpusort_stat)
     = (SELECT array_agg(what || ': ' || detail ORDER BY what, detail) FROM gpusort_stat())
       AS same_rows;
RESET SESSION AUTHORIZATION;
REVOKE pg_monitor FROM regress_gpusort_login;

-- and so with pg_read_all_stats alone
GRANT pg_read_all_stats TO regress_gpusort_login;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus();
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
RESET SESSION AUTHORIZATION;
REVOKE pg_read_all_stats FROM regress_gpusort_login;

-- and denied again once revoked
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
RESET SESSION AUTHORIZATION;

--
-- ALTER EXTENSION gpusort UPDATE from 0.1
--
-- the privileges of this fresh install (by pg_regress), by object
-- name, and what the extension recorded as its own (pg_init_privs, which
-- pg_dump compares with)
CREATE TEMP VIEW gpusort_acl AS
SELECT o.kind, o.name,
       coalesce(p.proacl, c.relacl)::text AS acl,
       i.initprivs::text AS initprivs
  FROM gpusort_objects o
  LEFT JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND p.oid = o.objid
  LEFT JOIN pg_class c ON o.classid = 'pg_class'::regclass AND c.oid = o.objid
  LEFT JOIN pg_init_privs i ON i.classoid = o.classid AND i.objoid = o.objid AND i.objsubid = 0;
CREATE TEMP TABLE fresh_acl AS SELECT * FROM gpusort_acl;
SELECT count(*) AS objects, count(acl) AS with_acl, count(initprivs) AS with_initprivs FROM fresh_acl;

-- 0.1 as it was: the view denied, its function PUBLIC
DROP EXTENSION gpusort;
CREATE EXTENSION gpusort VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'gpusort';
SELECT * FROM gpusort_rule ORDER BY name, kind;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
RESET SESSION AUTHORIZATION;

-- grants a DBA may have made to get around it: the update warns of each
-- one it leaves half-working (the view's grant to PUBLIC it revokes)
GRANT SELECT ON gpusort_stat TO regress_gpusort_login;
GRANT SELECT ON gpusort_gpus TO PUBLIC;
ALTER EXTENSION gpusort UPDATE TO '0.2';
SELECT extversion FROM pg_extension WHERE extname = 'gpusort';
SELECT * FROM gpusort_rule ORDER BY name, kind;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
RESET SESSION AUTHORIZATION;

-- a plain update, with no such grants: the privileges, and what the
-- extension recorded as its own, are those of a fresh install
DROP EXTENSION gpusort;
CREATE EXTENSION gpusort VERSION '0.1';
ALTER EXTENSION gpusort UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'gpusort';
SELECT 'fresh only' AS side, * FROM (TABLE fresh_acl EXCEPT TABLE gpusort_acl) f
UNION ALL
SELECT 'updated only', * FROM (TABLE gpusort_acl EXCEPT TABLE fresh_acl) u
ORDER BY 1, 2, 3;
SELECT * FROM gpusort_rule ORDER BY name, kind;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus();
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
SELECT version FROM gpusort_info();
RESET SESSION AUTHORIZATION;
GRANT pg_monitor TO regress_gpusort_login;
SET SESSION AUTHORIZATION regress_gpusort_login;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus;
SELECT count(*) >= 0 AS readable FROM gpusort_gpus();
SELECT count(*) > 0 AS readable FROM gpusort_stat;
SELECT count(*) > 0 AS readable FROM gpusort_stat();
RESET SESSION AUTHORIZATION;

DROP VIEW gpusort_acl, gpusort_rule, gpusort_objects;
DROP TABLE fresh_acl;
DROP ROLE regress_gpusort_login;
SELECT count(*) AS roles_left FROM pg_roles WHERE rolname LIKE 'regress_gpusort%';
SELECT extversion FROM pg_extension WHERE extname = 'gpusort';

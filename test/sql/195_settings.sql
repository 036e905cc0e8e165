--
-- 195_settings: what gpusort's settings take and show, and what
-- gpusort_info() shows to whom.
--
-- * gpusort.gpu_devices takes all, none, the empty string or a
--   comma-separated list of distinct device numbers from 0 to 15; its
--   check refuses anything else, with the reason, in ALTER SYSTEM as in
--   postgresql.conf (SET is refused anyway: the setting is read at server
--   start).  Values accepted go to postgresql.auto.conf and are reset at
--   once, so the server's next start is not changed;
-- * EXPLAIN (SETTINGS) shows the gpusort settings that decide the plan,
--   the engine, the keys and the memory (gpusort.enabled, min_rows,
--   engine, gpu_min_rows, key_width, max_memory) where they differ from
--   their defaults.  The suite's servers set some of these and of
--   PostgreSQL's own (regress.conf, test/run.sh's variants), so each is
--   first set to its default here, and the Settings line is shown with
--   the gpusort settings alone;
-- * gpusort_info()'s gpus and memory, which describe the host (the GPUs'
--   models or the driver's message, the machine's memory and cgroup
--   path), are NULL but for superusers and members of
--   pg_read_all_settings (pg_monitor is one); a member of
--   pg_read_all_stats alone does not see them.  Checked as booleans:
--   the values differ from machine to machine.
--
SET search_path = gs, public;

--
-- gpusort.gpu_devices
--
-- not in a session: it is read at server start
SET gpusort.gpu_devices = '0';
-- refused, each with its reason
ALTER SYSTEM SET gpusort.gpu_devices = 'abc';
ALTER SYSTEM SET gpusort.gpu_devices = '-1';
ALTER SYSTEM SET gpusort.gpu_devices = '999';
ALTER SYSTEM SET gpusort.gpu_devices = '16';
ALTER SYSTEM SET gpusort.gpu_devices = '0,1,0';
ALTER SYSTEM SET gpusort.gpu_devices = '0,,1';
ALTER SYSTEM SET gpusort.gpu_devices = '0,';
ALTER SYSTEM SET gpusort.gpu_devices = '0 1';
ALTER SYSTEM SET gpusort.gpu_devices = '+1';
ALTER SYSTEM SET gpusort.gpu_devices = '0x1';
ALTER SYSTEM SET gpusort.gpu_devices = 'all,0';
-- nothing of them reached the file
SELECT count(*) AS in_auto_conf FROM pg_file_settings
 WHERE name = 'gpusort.gpu_devices' AND sourcefile LIKE '%postgresql.auto.conf';
-- taken: what ALTER SYSTEM writes is what it was given, as PostgreSQL's
-- own settings are written (the server reads it as '0,2' at its start)
ALTER SYSTEM SET gpusort.gpu_devices = ' 0 , 2 ';
SELECT setting FROM pg_file_settings
 WHERE name = 'gpusort.gpu_devices' AND sourcefile LIKE '%postgresql.auto.conf';
ALTER SYSTEM SET gpusort.gpu_devices = '15';
ALTER SYSTEM SET gpusort.gpu_devices = '3,1,0';
ALTER SYSTEM SET gpusort.gpu_devices = 'ALL';
ALTER SYSTEM SET gpusort.gpu_devices = 'none';
ALTER SYSTEM SET gpusort.gpu_devices = '';
ALTER SYSTEM RESET gpusort.gpu_devices;
SELECT count(*) AS in_auto_conf FROM pg_file_settings
 WHERE name = 'gpusort.gpu_devices' AND sourcefile LIKE '%postgresql.auto.conf';

--
-- EXPLAIN (SETTINGS)
--
-- EXPLAIN (SETTINGS, COSTS OFF) of q, its Settings line with the gpusort
-- settings alone (none: an empty line), and the flagged settings' names
-- in the JSON format
CREATE FUNCTION pg_temp.explain_settings(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  shown text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (SETTINGS, COSTS OFF) ' || q LOOP
    IF line ~ '^Settings: ' THEN
      line := 'Settings: ' || coalesce((SELECT string_agg(m[1], ', ' ORDER BY m[1])
                                          FROM regexp_matches(line, '(gpusort\.\w+ = ''[^'']*'')', 'g') m), '');
    END IF;
    RETURN NEXT gs.explain_common(line);
  END LOOP;
  EXECUTE 'EXPLAIN (SETTINGS, COSTS OFF, FORMAT JSON) ' || q INTO line;
  SELECT string_agg(k, ', ' ORDER BY k) INTO shown
    FROM jsonb_object_keys(coalesce(line::jsonb -> 0 -> 'Settings', '{}')) k
   WHERE k LIKE 'gpusort.%';
  RETURN NEXT 'JSON: ' || coalesce(shown, '');
END $$;

-- every flagged setting at its default (the suite's servers set some)
SET gpusort.enabled = on;
SET gpusort.min_rows = 100000;
SET gpusort.keyless_sorts = off;
SET gpusort.engine = auto;
SET gpusort.gpu_min_rows = 1000000;
SET gpusort.key_width = 32;
SET gpusort.max_memory = -1;
-- none is shown, and ten rows are left to PostgreSQL's Sort
SELECT * FROM pg_temp.explain_settings('SELECT g FROM generate_series(1, 10) g ORDER BY g');
-- gpusort.min_rows changed: shown, and GpuSort takes the sort
SET gpusort.min_rows = 0;
SELECT * FROM pg_temp.explain_settings('SELECT g FROM generate_series(1, 10) g ORDER BY g');
-- the others that decide the engine, the keys and the memory
SET gpusort.engine = cpu;
SET gpusort.gpu_min_rows = 0;
SET gpusort.key_width = 16;
SET gpusort.max_memory = '64MB';
SELECT * FROM pg_temp.explain_settings('SELECT g FROM generate_series(1, 10) g ORDER BY g');
-- and gpusort.enabled, the plan's PostgreSQL's Sort again
SET gpusort.enabled = off;
SELECT * FROM pg_temp.explain_settings('SELECT g FROM generate_series(1, 10) g ORDER BY g');
-- a setting that changes neither the plan nor what sorts it is not shown
SET gpusort.enabled = on;
SET gpusort.min_rows = 100000;
SET gpusort.engine = auto;
SET gpusort.gpu_min_rows = 1000000;
SET gpusort.key_width = 32;
SET gpusort.max_memory = -1;
SET gpusort.emit_copy = off;
SELECT * FROM pg_temp.explain_settings('SELECT g FROM generate_series(1, 10) g ORDER BY g');
RESET gpusort.emit_copy;
RESET gpusort.enabled;
RESET gpusort.min_rows;
RESET gpusort.engine;
RESET gpusort.gpu_min_rows;
RESET gpusort.key_width;
RESET gpusort.max_memory;

--
-- gpusort_info(): the host's details, by role
--
SET client_min_messages = warning;
CREATE ROLE regress_gpusort_settings LOGIN;
RESET client_min_messages;
-- whether the calling role sees each column, and what memory says
CREATE VIEW pg_temp.info_seen AS
SELECT version IS NOT NULL AS version, build IS NOT NULL AS build,
       engines IS NOT NULL AS engines, gpus IS NOT NULL AS gpus, memory IS NOT NULL AS memory,
       coalesce(memory ~ '(physical memory|cgroup)', false) AS memory_described
  FROM gpusort_info();
GRANT SELECT ON pg_temp.info_seen TO regress_gpusort_settings;

-- a superuser sees everything
SELECT * FROM pg_temp.info_seen;
-- a role with LOGIN alone: the build and its engines, not the host
SET SESSION AUTHORIZATION regress_gpusort_settings;
SELECT * FROM pg_temp.info_seen;
SELECT engines IN ('cpu', 'gpu, cpu') AS known_engines FROM gpusort_info();
RESET SESSION AUTHORIZATION;
-- pg_read_all_settings: the host too
GRANT pg_read_all_settings TO regress_gpusort_settings;
SET SESSION AUTHORIZATION regress_gpusort_settings;
SELECT * FROM pg_temp.info_seen;
RESET SESSION AUTHORIZATION;
REVOKE pg_read_all_settings FROM regress_gpusort_settings;
-- pg_monitor, one of its members: the host too
GRANT pg_monitor TO regress_gpusort_settings;
SET SESSION AUTHORIZATION regress_gpusort_settings;
SELECT * FROM pg_temp.info_seen;
RESET SESSION AUTHORIZATION;
REVOKE pg_monitor FROM regress_gpusort_settings;
-- pg_read_all_stats alone (it reads gpusort_gpus): not the host
GRANT pg_read_all_stats TO regress_gpusort_settings;
SET SESSION AUTHORIZATION regress_gpusort_settings;
SELECT * FROM pg_temp.info_seen;
RESET SESSION AUTHORIZATION;
REVOKE pg_read_all_stats FROM regress_gpusort_settings;

DROP VIEW pg_temp.info_seen;
DROP ROLE regress_gpusort_settings;
SELECT count(*) AS roles_left FROM pg_roles WHERE rolname LIKE 'regress_gpusort%';

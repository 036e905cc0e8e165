--
-- 195_settings: what gpusort's settings take and show.
--
-- * gpusort.gpu_devices takes all, none, the empty string or a
--   comma-separated list of distinct device numbers from 0 to 15; its
--   check refuses anything else, with the reason, in ALTER SYSTEM as in
--   postgresql.conf (SET is refused anyway: the setting is read at server
--   start).  Values accepted go to postgresql.auto.conf and are reset at
--   once, so the server's next start is not changed.
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

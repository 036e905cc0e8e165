# 011_resident.pl: the GPU service as a good resident of the server.
#
# The GPU service is a process with a PGPROC, so PostgreSQL counts on it as
# on its own processes: DROP DATABASE, DROP TABLESPACE and ALTER DATABASE
# ... SET TABLESPACE emit a ProcSignal barrier (PROCSIGNAL_BARRIER_
# SMGRRELEASE) and wait until every process has absorbed it, so a service
# that never does makes them hang forever; a reload (SIGHUP) must reach its
# settings.  Checked, with gpusort preloaded:
#  1. the idle service shows a wait event in pg_stat_activity (Extension;
#     from 17 on, its own GpuSortServiceMain); ALTER SYSTEM SET
#     gpusort.service_gpu_memory_percent = 40 and pg_reload_conf(): the
#     service logs (DEBUG1) that it reloaded with the value 40, keeps its
#     PID (reloaded, not restarted), and again with the default after
#     ALTER SYSTEM RESET;
#  2. DROP DATABASE of one database while a GpuSort in another is held in
#     its sort phase (gpusort.inject_fault = 'delay:sort:10000'): the DROP
#     returns at once, while the sort is still held, the database and its
#     directory are gone, and the held sort then returns the rows of
#     PostgreSQL's own Sort;
#  3. ALTER DATABASE ... SET TABLESPACE (to an in-place tablespace and back)
#     and DROP TABLESPACE (with a dropped table's file still in it, so that
#     the DROP takes its barrier path) return at once, and a GpuSort in the
#     moved database is right (EXPLAIN shows GpuSort; same rows as with
#     gpusort.enabled = off);
#  4. pg_dump -Fc of a database with the extension and a table, pg_restore
#     into a new one: no error or warning, the extension at the same version
#     with as many member objects, and the table's rows sorted by GpuSort
#     are the source's sorted by PostgreSQL;
#  5. the service kept its PID throughout, and the log shows no crash.
# A build without CUDA has no GPU service (1 and the PID are left out; no
# gpusort process runs instead), and the rest holds all the same.
# A statement that has not returned after 60 s has hung: it fails its
# test, and the test then terminates the GPU service (a new process has
# nothing pending) so that the statement ends and the rest still runs;
# "at once" is within 20 s.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $hang = 60;      # seconds after which a statement has hung
my $at_once = 20;   # seconds within which it returned at once

my $node = gpusort_node('resident',
	conf => "allow_in_place_tablespaces = on\nlog_min_messages = debug1\n");
my $named_waits = $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
my $service_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpusort GPU service'};
$node->safe_psql('postgres', 'CREATE EXTENSION gpusort');
my $cuda = $node->safe_psql('postgres', q{SELECT build FROM gpusort_info()}) eq 'CUDA';
my $no_gpusort_process =
  q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type ~* 'gpusort'};

# the rows of big in a total order, as a digest
my $check = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*)
  FROM (SELECT k, id FROM big ORDER BY k DESC, s, id) x};

sub native
{
	my ($db) = @_;
	return $node->safe_psql($db, "SET gpusort.enabled = off; $check");
}

# a GpuSort in db: in the plan, and with PostgreSQL's Sort's rows (or want's)
sub gpusort_right
{
	my ($db, $what, $want) = @_;
	like($node->safe_psql($db, "EXPLAIN (COSTS OFF) $check"), qr/Custom Scan \(GpuSort\)/,
		"$what: the sort is a GpuSort");
	$want //= native($db);
	like($want, qr/^[0-9a-f]{32}\|\d+$/, "$what: PostgreSQL's Sort gave a digest");
	is($node->safe_psql($db, $check), $want, "$what: GpuSort's rows are PostgreSQL's Sort's");
	return;
}

# when a statement hangs: the GPU service holds its barrier up; a new
# service has nothing pending, so terminating it lets the statement end
my $released = 0;
sub release
{
	note 'the statement hangs: terminating the GPU service so that it ends' unless $released++;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend(pid, 10000) FROM ($service_q) s");
	return;
}

# after a release: the postmaster starts a new service a second later; what
# follows must meet it, not a server without one
sub service_back
{
	return unless $cuda;
	local $PostgreSQL::Test::Utils::timeout_default = $hang;
	$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($service_q) s")
	  or diag('no GPU service came back');
	return;
}

# runs sql (in db) that must not hang, and returns at once
sub returns_at_once
{
	my ($db, $sql, $what) = @_;
	my ($took, $in_time, $ok, $out, $err) = timed_psql($node, $db, $sql, $hang, \&release);
	service_back() unless $in_time;
	ok($in_time, sprintf('%s: returned (%.2f s)', $what, $took));
	cmp_ok($took, '<', $at_once, "$what: returned at once");
	ok($ok, "$what: succeeded") or diag($err);
	return;
}

sub oid_of
{
	my ($catalog, $namecol, $name) = @_;
	return $node->safe_psql('postgres', "SELECT oid FROM $catalog WHERE $namecol = '$name'");
}

# 1. the idle service's wait event; a reload
my $pid = $node->safe_psql('postgres', $service_q);
# waits for the service's line about a reload to the value; true if it came
sub reloaded_with
{
	my ($value, $offset) = @_;
	local $PostgreSQL::Test::Utils::timeout_default = $hang;
	return eval {
		$node->wait_for_log(
			qr/\[$pid\] .*gpusort GPU service: reloaded its configuration: service_gpu_memory_percent = $value\b/,
			$offset);
		1;
	};
}

my $offset;
SKIP:
{
	skip 'a build without CUDA has no GPU service', 9 unless $cuda;
	like($pid, qr/^\d+$/, 'the GPU service runs');
	my $service_wait = $named_waits ? 'GpuSortServiceMain' : 'Extension';
	{
		local $PostgreSQL::Test::Utils::timeout_default = $hang;
		ok( $node->poll_query_until('postgres', qq{
			SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity
			 WHERE backend_type = 'gpusort GPU service'}, "Extension:$service_wait"),
			"the idle GPU service waits on Extension:$service_wait");
	}

	my $boot = $node->safe_psql('postgres',
		q{SELECT boot_val FROM pg_settings WHERE name = 'gpusort.service_gpu_memory_percent'});
	like($boot, qr/^\d+$/, "gpusort.service_gpu_memory_percent's default: $boot");
	isnt($boot, '40', 'the default is not the value set here');
	$offset = -s $node->logfile;
	$node->safe_psql('postgres', q{ALTER SYSTEM SET gpusort.service_gpu_memory_percent = 40;
SELECT pg_reload_conf();});
	ok(reloaded_with(40, $offset), 'after pg_reload_conf() the service logs its new value, 40');
	is($node->safe_psql('postgres', $service_q), $pid, 'the service reloaded, it did not restart');
	is($node->safe_psql('postgres', 'SHOW gpusort.service_gpu_memory_percent'), '40',
		'a new session sees 40');
	$offset = -s $node->logfile;
	$node->safe_psql('postgres', q{ALTER SYSTEM RESET gpusort.service_gpu_memory_percent;
SELECT pg_reload_conf();});
	ok(reloaded_with($boot, $offset), "after ALTER SYSTEM RESET the service logs the default, $boot");
	is($node->safe_psql('postgres', $service_q), $pid, 'the service reloaded again, same PID');
}

# 2. DROP DATABASE while a GpuSort in another database is held mid-way
$node->safe_psql('postgres', "CREATE DATABASE gs_a;\nCREATE DATABASE gs_b;");
big_table($node, 30000, 'gs_a');
big_table($node, 20000, 'gs_b');
my $native_a = native('gs_a');
gpusort_right('gs_a', 'database gs_a', $native_a);
my $b_oid = oid_of('pg_database', 'datname', 'gs_b');
ok(-d $node->data_dir . "/base/$b_oid", 'gs_b has its directory');

my $session = GpuSortSession->new($node, 'gs_a');
$offset = -s $node->logfile;
my $m = $session->send("SET gpusort.inject_fault = 'delay:sort:10000';\n$check;\nRESET gpusort.inject_fault;");
my $held = eval {
	local $PostgreSQL::Test::Utils::timeout_default = $hang;
	$node->wait_for_log(qr/injected delay of 10000 ms in the sort phase/, $offset);
	1;
};
ok($held, 'a GpuSort in gs_a is held in its sort phase');
returns_at_once('postgres', 'DROP DATABASE gs_b;', 'DROP DATABASE gs_b beside a held GpuSort');
ok(!$session->ran($m), 'the sort in gs_a was still held when DROP DATABASE returned');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'gs_b'}), '0',
	'gs_b is gone');
ok(!-e $node->data_dir . "/base/$b_oid", "gs_b's directory is gone");
my ($result, $err) = $session->wait($m);
is($result, "$native_a\n", "the held sort then returned PostgreSQL's Sort's rows");
is($err, '', 'and no error');
$session->finish;

# 3. ALTER DATABASE ... SET TABLESPACE, DROP TABLESPACE
$node->safe_psql('postgres', "CREATE TABLESPACE gs_ts LOCATION '';\nCREATE DATABASE gs_m;");
big_table($node, 30000, 'gs_m');
my $native_m = native('gs_m');
my $ts_oid = oid_of('pg_tablespace', 'spcname', 'gs_ts');
my $m_oid = oid_of('pg_database', 'datname', 'gs_m');
my $db_space = q{SELECT t.spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace
  WHERE d.datname = 'gs_m'};

returns_at_once('postgres', 'ALTER DATABASE gs_m SET TABLESPACE gs_ts;',
	'ALTER DATABASE gs_m SET TABLESPACE gs_ts');
is($node->safe_psql('postgres', $db_space), 'gs_ts', 'gs_m is in gs_ts');
ok(!-e $node->data_dir . "/base/$m_oid", "gs_m's old directory is gone");
gpusort_right('gs_m', 'in gs_ts', $native_m);
is(native('gs_m'), $native_m, "in gs_ts, PostgreSQL's Sort's rows are as before the move");

returns_at_once('postgres', 'ALTER DATABASE gs_m SET TABLESPACE pg_default;',
	'ALTER DATABASE gs_m SET TABLESPACE pg_default');
is($node->safe_psql('postgres', $db_space), 'pg_default', 'gs_m is back in pg_default');
gpusort_right('gs_m', 'back in pg_default', $native_m);

# a dropped table's first segment stays until the next checkpoint, so that
# DROP TABLESPACE finds the directory not empty and takes its barrier path
$node->safe_psql('postgres', q{CREATE TABLE gs_ts_left (a int) TABLESPACE gs_ts;
INSERT INTO gs_ts_left SELECT generate_series(1, 1000);
DROP TABLE gs_ts_left;});
returns_at_once('postgres', 'DROP TABLESPACE gs_ts;', 'DROP TABLESPACE gs_ts');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_tablespace WHERE spcname = 'gs_ts'}), '0',
	'gs_ts is gone');
ok(!-e $node->data_dir . "/pg_tblspc/$ts_oid", "gs_ts's directory is gone");
returns_at_once('postgres', 'DROP DATABASE gs_m;', 'DROP DATABASE gs_m');

# 4. pg_dump and pg_restore of a database with the extension
$node->safe_psql('postgres', "CREATE DATABASE gs_dump;\nCREATE DATABASE gs_restored;");
$node->safe_psql('gs_dump', 'CREATE EXTENSION gpusort;');
big_table($node, 30000, 'gs_dump');
my $native_dump = native('gs_dump');
my $dump = PostgreSQL::Test::Utils::tempdir() . '/gs_dump.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('gs_dump') ],
	'pg_dump -Fc of a database with the extension');
$node->command_checks_all(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('gs_restored'), $dump ],
	0, [qr/^$/], [qr/^$/], 'pg_restore into a new database: no error, no warning');
my $ext = q{SELECT e.extversion || ' ' || (SELECT count(*) FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e')
  FROM pg_extension e WHERE e.extname = 'gpusort'};
my $ext_dump = $node->safe_psql('gs_dump', $ext);
like($ext_dump, qr/^\S+ [1-9]\d*$/, "the source's extension: version and members ($ext_dump)");
is($node->safe_psql('gs_restored', $ext), $ext_dump,
	'the restored extension: same version, as many member objects');
is($node->safe_psql('gs_restored', 'SELECT engines FROM gpusort_info()'),
	$node->safe_psql('gs_dump', 'SELECT engines FROM gpusort_info()'),
	"the restored extension's functions work");
gpusort_right('gs_restored', 'the restored table', $native_dump);

# 5. the same service all along; no crash
if ($cuda)
{
	is($node->safe_psql('postgres', $service_q), $pid,
		'the GPU service kept its PID throughout (nothing had to be released)');
}
else
{
	is($node->safe_psql('postgres', $no_gpusort_process), 't',
		'a build without CUDA ran no gpusort process');
}
$node->stop;
unlike(slurp_file($node->logfile), qr/terminated by signal|was terminated by|PANIC|reinitializ/,
	'no crash in the server log');

done_testing();

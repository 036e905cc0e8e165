# 012_standby.pl: a hot standby with gpusort preloaded replays DROP
# DATABASE and the like while it sorts.
#
# On a standby the startup process replays DROP DATABASE, DROP TABLESPACE
# and ALTER DATABASE ... SET TABLESPACE (and CREATE DATABASE ... STRATEGY
# FILE_COPY) by emitting a ProcSignal barrier (PROCSIGNAL_BARRIER_
# SMGRRELEASE) and waiting until every process has absorbed it, the GPU
# service among them: a service that never does stalls replay for good.
# A primary and a streaming hot standby, both with gpusort preloaded; a
# psql session on the standby sorts big again and again (a GpuSort) while
# the primary creates databases (one by FILE_COPY, one with a table) and an
# in-place tablespace, moves a database into it (ALTER DATABASE ... SET
# TABLESPACE), drops the databases and the tablespace.  Checked:
#  1. the standby's sorts are GpuSorts with the rows of PostgreSQL's own
#     Sort on the standby, before, during (every sort of the loop, which
#     runs before and after the DDL) and after, in the new databases too;
#  2. the primary's DDL returns at once, and replay keeps up: the primary
#     sees the standby's replay pass its LSN (wait_for_catchup), and
#     pg_last_wal_replay_lsn() on the standby is past it, within 20 s;
#  3. on the standby the moved database is in the tablespace (catalog and
#     directories), and the dropped databases and tablespace are gone
#     (catalog and directories);
#  4. neither GPU service changed its PID, and neither log shows a crash;
#  5. a btree index built through gpusort on the primary is replayed on
#     the standby to the pages of its twin built by PostgreSQL.
# A build without CUDA has no GPU service: instead, neither server runs a
# gpusort process, and the rest holds all the same.
# What has not returned (or replayed) after 60 s has hung: its test fails,
# and the test terminates that server's GPU service (a new one has nothing
# pending) so that it ends and the rest still runs.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $hang = 60;      # seconds after which DDL or its replay has hung
my $at_once = 20;   # seconds within which it returned at once

my $primary = gpusort_node('primary', init => { allows_streaming => 1 },
	conf => "allow_in_place_tablespaces = on\nshared_buffers = 16MB\nmax_connections = 20\n");
big_table($primary, 30000);
$primary->safe_psql('postgres', 'CREATE TABLE sort_stop (stop int)');
$primary->safe_psql('postgres', 'CREATE EXTENSION gpusort');
my $cuda = $primary->safe_psql('postgres', q{SELECT build FROM gpusort_info()}) eq 'CUDA';
my $no_gpusort_process =
  q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type ~* 'gpusort'};
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my $service_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpusort GPU service'};
my $check = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*)
  FROM (SELECT k, id FROM big ORDER BY k DESC, s, id) x};

sub native
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, "SET gpusort.enabled = off; $check");
}

# a GpuSort on the standby, in db: in the plan, with PostgreSQL's Sort's rows
sub standby_sorts_right
{
	my ($db, $what) = @_;
	like($standby->safe_psql($db, "EXPLAIN (COSTS OFF) $check"), qr/Custom Scan \(GpuSort\)/,
		"$what: the standby's sort is a GpuSort");
	my $want = native($standby, $db);
	like($want, qr/^[0-9a-f]{32}\|\d+$/, "$what: PostgreSQL's Sort on the standby gave a digest");
	is($standby->safe_psql($db, $check), $want,
		"$what: the standby's GpuSort gives PostgreSQL's Sort's rows");
	return;
}

# when DDL or replay hangs: the node's GPU service holds a barrier up
my %released;
sub release
{
	my ($node) = @_;
	note 'hung on ' . $node->name . ': terminating its GPU service so that it goes on'
	  unless $released{ $node->name }++;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend(pid, 10000) FROM ($service_q) s");
	return;
}

# after a release: the postmaster starts a new service a second later; what
# follows must meet it, not a server without one
sub service_back
{
	my ($node) = @_;
	return unless $cuda;
	local $PostgreSQL::Test::Utils::timeout_default = $hang;
	$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($service_q) s")
	  or diag('no GPU service came back on ' . $node->name);
	return;
}

# a psql script on the primary that must return at once
sub primary_ddl
{
	my ($sql, $what) = @_;
	my ($took, $in_time, $ok, $out, $err) =
	  timed_psql($primary, 'postgres', $sql, $hang, sub { release($primary) });
	service_back($primary) unless $in_time;
	ok($in_time, sprintf('%s: returned on the primary (%.2f s)', $what, $took));
	cmp_ok($took, '<', $at_once, "$what: returned at once on the primary");
	ok($ok, "$what: succeeded") or diag($err);
	return;
}

# the standby replays what the primary has written, at once
sub replay_keeps_up
{
	my ($what) = @_;
	my $lsn = $primary->lsn('insert');
	my $t0 = time();
	# (wait_for_catchup's timeout counts tries, each 100 ms and a psql:
	# about 100 s of a hang on a two-CPU machine)
	my $caught = eval {
		local $PostgreSQL::Test::Utils::timeout_default = $hang;
		$primary->wait_for_catchup($standby, 'replay', $lsn);
		1;
	};
	my $took = time() - $t0;
	ok($caught, sprintf('%s: the standby replayed up to %s (%.2f s)', $what, $lsn, $took));
	if (!$caught)
	{
		my $deadline = time() + $hang;
		while (time() < $deadline
			&& $standby->safe_psql('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'") ne 't')
		{
			release($standby);
			usleep(500_000);
		}
		service_back($standby);
	}
	cmp_ok($took, '<', $at_once, "$what: replay kept up");
	is($standby->safe_psql('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"), 't',
		"$what: pg_last_wal_replay_lsn() on the standby has passed $lsn");
	return;
}

sub oid_of
{
	my ($catalog, $namecol, $name) = @_;
	return $primary->safe_psql('postgres', "SELECT oid FROM $catalog WHERE $namecol = '$name'");
}

sub standby_count
{
	my ($sql) = @_;
	return $standby->safe_psql('postgres', $sql);
}

# the standby: in recovery, with its GPU service and GpuSort
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
my ($primary_pid, $standby_pid);
if ($cuda)
{
	{
		local $PostgreSQL::Test::Utils::timeout_default = $hang;
		ok($standby->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($service_q) s"),
			'the standby runs a GPU service');
	}
	$primary_pid = $primary->safe_psql('postgres', $service_q);
	$standby_pid = $standby->safe_psql('postgres', $service_q);
	like($primary_pid, qr/^\d+$/, 'the primary runs a GPU service');
	like($standby_pid, qr/^\d+$/, "the standby's GPU service has a PID");
}
my $native = native($standby, 'postgres');
is($native, native($primary, 'postgres'), "PostgreSQL's Sort gives the same rows on both");
standby_sorts_right('postgres', 'before the DDL');

# the loop on the standby: the sort, then a look at sort_stop (replicated
# from the primary) to end; its output goes to files, so that it runs on
# while this script waits for the primary and the standby
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $loop = "$check;\nSELECT count(*) > 0 AS stop FROM sort_stop \\gset\n\\if :stop\n\\q\n\\endif\n";
append_to_file("$tmp/loop.sql", $loop x 5000);
my $loop_h = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $standby->connstr('postgres'), '-f', "$tmp/loop.sql" ],
	'<', '/dev/null', '>', "$tmp/loop.out", '2>', "$tmp/loop.err");

sub loop_sorts
{
	my $out = -e "$tmp/loop.out" ? slurp_file("$tmp/loop.out") : '';
	return scalar(() = $out =~ /\n/g);
}

my $deadline = time() + $hang;
usleep(50_000) while loop_sorts() < 1 && time() < $deadline;
my $sorts_before = loop_sorts();
cmp_ok($sorts_before, '>=', 1, 'the standby sorts in a loop');

# 1. new databases, one by FILE_COPY and one with a table, and a tablespace
primary_ddl(qq{CREATE DATABASE gs_empty;
CREATE DATABASE gs_table STRATEGY FILE_COPY;
\\c gs_table
CREATE TABLE big AS SELECT g AS id, hashint4(g) % 1000 AS k, md5(g::text) AS s
  FROM generate_series(1, 20000) g;
\\c postgres
CREATE DATABASE gs_moved;
CREATE TABLESPACE gs_ts LOCATION '';}, 'CREATE DATABASE, CREATE TABLESPACE');
big_table($primary, 30000, 'gs_moved');
my $empty_oid = oid_of('pg_database', 'datname', 'gs_empty');
my $table_oid = oid_of('pg_database', 'datname', 'gs_table');
my $moved_oid = oid_of('pg_database', 'datname', 'gs_moved');
my $ts_oid = oid_of('pg_tablespace', 'spcname', 'gs_ts');
replay_keeps_up('the creations');
is(standby_count(q{SELECT count(*) FROM pg_database WHERE datname IN ('gs_empty', 'gs_table', 'gs_moved')}),
	'3', 'the standby has the new databases');
my $sdir = $standby->data_dir;
ok(-d "$sdir/base/$table_oid", "the standby has gs_table's directory");
ok(-d "$sdir/pg_tblspc/$ts_oid", "the standby has gs_ts's directory");
standby_sorts_right('gs_table', 'in gs_table (FILE_COPY)');
standby_sorts_right('gs_moved', 'in gs_moved');

# 2. a database moved into the tablespace, two dropped
primary_ddl(q{ALTER DATABASE gs_moved SET TABLESPACE gs_ts;
DROP DATABASE gs_empty;
DROP DATABASE gs_table;}, 'ALTER DATABASE SET TABLESPACE, DROP DATABASE');
replay_keeps_up('the move and the drops');
is(standby_count(q{SELECT count(*) FROM pg_database WHERE datname IN ('gs_empty', 'gs_table')}), '0',
	'on the standby the dropped databases are gone');
ok(!-e "$sdir/base/$empty_oid" && !-e "$sdir/base/$table_oid",
	"on the standby their directories are gone");
is(standby_count(q{SELECT t.spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace
  WHERE d.datname = 'gs_moved'}), 'gs_ts', 'on the standby gs_moved is in gs_ts');
ok(!-e "$sdir/base/$moved_oid", "on the standby gs_moved's old directory is gone");
my @moved = glob("$sdir/pg_tblspc/$ts_oid/PG_*/$moved_oid");
is(scalar(@moved), 1, "on the standby gs_moved's directory is in gs_ts");
standby_sorts_right('gs_moved', 'in gs_moved, moved');

# 3. the moved database and the tablespace dropped
primary_ddl(q{DROP DATABASE gs_moved;
DROP TABLESPACE gs_ts;}, 'DROP DATABASE in a tablespace, DROP TABLESPACE');
replay_keeps_up('the last drops');
is(standby_count(q{SELECT count(*) FROM pg_database WHERE datname = 'gs_moved'}), '0',
	'on the standby gs_moved is gone');
is(standby_count(q{SELECT count(*) FROM pg_tablespace WHERE spcname = 'gs_ts'}), '0',
	'on the standby gs_ts is gone');
ok(!-e "$sdir/pg_tblspc/$ts_oid", "on the standby gs_ts's directory is gone");

# the loop ran through the DDL, and every one of its sorts was right
my $sorts_after = loop_sorts();
cmp_ok($sorts_after, '>', $sorts_before,
	"the standby's loop sorted on through the DDL ($sorts_before sorts before it, $sorts_after after)");
$primary->safe_psql('postgres', 'INSERT INTO sort_stop VALUES (1)');
replay_keeps_up('the end of the loop');
$deadline = time() + $hang;
usleep(50_000) while $loop_h->pumpable && time() < $deadline;
my $loop_ended = !$loop_h->pumpable;
ok($loop_ended, 'the loop saw sort_stop and ended');
$loop_h->kill_kill unless $loop_ended;
$loop_h->finish;
my @results = split /\n/, slurp_file("$tmp/loop.out");
my @wrong = grep { $_ ne $native } @results;
is(scalar(@wrong), 0, scalar(@results) . " sorts in the standby's loop, all with PostgreSQL's Sort's rows")
  or diag("first wrong: $wrong[0]");
is(slurp_file("$tmp/loop.err"), '', 'the loop met no error');
standby_sorts_right('postgres', 'after the DDL');

# 5. an index built through gpusort on the primary and its twin built by
# PostgreSQL: the standby replays them to the same pages (past the page
# headers' LSN and checksum; the pages' holes, which the WAL leaves out,
# are zeros there), and amcheck passes there
{
	my ($out, $err) = ('', '');
	$primary->psql('postgres', q{CREATE EXTENSION pageinspect;
CREATE EXTENSION amcheck;
SET client_min_messages = debug1;
SET gpusort.index_builds = on;
CREATE INDEX big_s_k ON big (s, k);
SET gpusort.enabled = off;
CREATE INDEX big_s_k_native ON big (s, k);}, stdout => \$out, stderr => \$err);
	like($err, qr/index "big_s_k" built through gpusort/, 'the primary built big_s_k through gpusort');
	unlike($err, qr/index "big_s_k_native" built through gpusort/, 'and big_s_k_native by PostgreSQL');
	replay_keeps_up('the index builds');
	my $pages = q{SELECT md5(string_agg(substr(get_raw_page('%s', b::int), 11)::text, '' ORDER BY b))
  FROM generate_series(0, pg_relation_size('%s') / 8192 - 1) b};
	is($standby->safe_psql('postgres', sprintf($pages, 'big_s_k', 'big_s_k')),
		$standby->safe_psql('postgres', sprintf($pages, 'big_s_k_native', 'big_s_k_native')),
		"on the standby big_s_k is PostgreSQL's big_s_k_native, page for page");
	my ($ret, $o, $e) = $standby->psql('postgres', q{SELECT bt_index_check('big_s_k', true)});
	is($ret, 0, 'on the standby bt_index_check passes on big_s_k') or diag($e);
}

# 4. the same services all along; no crash
if ($cuda)
{
	is($primary->safe_psql('postgres', $service_q), $primary_pid,
		"the primary's GPU service kept its PID (nothing had to be released)");
	is($standby->safe_psql('postgres', $service_q), $standby_pid,
		"the standby's GPU service kept its PID (nothing had to be released)");
}
else
{
	is($primary->safe_psql('postgres', $no_gpusort_process), 't',
		'a build without CUDA: the primary ran no gpusort process');
	is($standby->safe_psql('postgres', $no_gpusort_process), 't',
		'nor did the standby');
}
$standby->stop;
$primary->stop;
for my $node ($primary, $standby)
{
	unlike(slurp_file($node->logfile), qr/terminated by signal|was terminated by|PANIC|reinitializ/,
		$node->name . ': no crash in the server log');
}

done_testing();

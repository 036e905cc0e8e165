# 009_parallel.pl: a parallel GpuSort whose worker fails mid-load.
#
# The plan is GpuSort over Gather over GpuSortLoad over Parallel Seq Scan
# (forced: parallel costs 0), with the leader out of the scan
# (parallel_leader_participation = off) so that every row is a worker's.
# Checked:
#  1. a worker that raises an ERROR mid-load (a parallel-safe function that
#     fails for one row, in a worker only): the query fails with that
#     error, as with PostgreSQL's own parallel sort, and the same session
#     then sorts correctly (compared with PostgreSQL's Sort);
#  2. a worker terminated mid-load (pg_terminate_backend of the parallel
#     worker while a slow function holds it): the query fails with the
#     usual message, the server does not restart, the session sorts
#     correctly again, twice;
#  3. nothing is left behind: no temporary files, no parallel worker left
#     running, and no leak WARNING in the log (a dynamic shared memory
#     segment or a DSA area that outlived its query would be reported as a
#     leak at the end of the transaction).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('parallel',
	conf => "max_worker_processes = 16\nmax_parallel_workers = 8\n");
big_table($node, 200000);
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

my $parallel = q{SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET parallel_leader_participation = off;};

# fails for one row, in a parallel worker only; sleeps for rows of a
# range when asked to, so that a worker can be caught mid-load
$node->safe_psql('postgres', q{
CREATE FUNCTION boom(id int, leader int, fail_at int, sleep_from int) RETURNS int
LANGUAGE plpgsql PARALLEL SAFE AS $$
BEGIN
  IF pg_backend_pid() <> leader AND id = fail_at THEN
    RAISE EXCEPTION 'boom at row %', id;
  END IF;
  IF id >= sleep_from AND id < sleep_from + 3 THEN
    PERFORM pg_sleep(60);
  END IF;
  RETURN id;
END $$;
});

my $check = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM (SELECT k, id FROM big ORDER BY k DESC, id) x};
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $check");
like($node->safe_psql('postgres', "$parallel EXPLAIN (COSTS OFF) $check"),
	qr/GpuSort.*Gather.*Parallel Custom Scan \(GpuSortLoad\)/s, 'the sort is a parallel GpuSort');
is($node->safe_psql('postgres', "$parallel $check"), $native, 'it sorts correctly');

my $log_offset = -s $node->logfile;

# the session the workers fail under
my $session = GpuSortSession->new($node);
sub session_send { return $session->send(@_) }
sub session_wait { return $session->wait(@_) }

my ($pid) = session_wait(session_send("$parallel SELECT pg_backend_pid();"));
chomp $pid;
like($pid, qr/^\d+$/, 'session started');
my $query = "SELECT count(*), sum(k) FROM (SELECT k, boom(id, $pid, %d, %d) FROM big ORDER BY k) x";

# 1. a worker raises an ERROR mid-load
my ($o, $e) = session_wait(session_send(sprintf($query, 150000, -10) . ';'), 1);
like($e, qr/boom at row 150000/, 'a worker error fails the query with its message');
like($e, qr/parallel worker/, 'the error came from a parallel worker');
unlike($o, qr/\d/, 'no result');
my $native_e = $node->psql('postgres',
	"$parallel SET gpusort.enabled = off; " . sprintf($query, 150000, -10), stderr => \my $nerr);
like($nerr, qr/boom at row 150000/, 'PostgreSQL\'s own parallel sort fails the same way');
($o) = session_wait(session_send("$check;"));
is($o, "$native\n", 'after the error the same session sorts correctly');

# 2. a worker terminated mid-load, twice
for my $round (1 .. 2)
{
	my $m = session_send(sprintf($query, 0, 100000) . ';');
	my $worker = '';
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while ($worker eq '' && time() < $deadline)
	{
		$session->pump_nb;
		$worker = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE leader_pid = $pid AND backend_type = 'parallel worker' "
			  . "AND wait_event = 'PgSleep' LIMIT 1");
		usleep(50_000) if $worker eq '';
	}
	like($worker, qr/^\d+$/, "round $round: a worker is held mid-load");
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($worker)"), 't',
		"round $round: pg_terminate_backend of the worker");
	($o, $e) = session_wait($m, 1);
	like($e, qr/terminating (connection|background worker "parallel worker") due to administrator command/,
		"round $round: the query fails with the usual message");
	unlike($o, qr/\d/, "round $round: no result");
	($o) = session_wait(session_send("$check;"));
	is($o, "$native\n", "round $round: the same session then sorts correctly");
}

# 3. nothing left behind
$session->finish;
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'the server did not restart');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'"),
	'0', 'no parallel worker left');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_ls_tmpdir()'), '0',
	'no temporary files left');
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/leak|WARNING:.*resource|server process .* was terminated by signal/,
	'no leak, resource warning or crash in the log');

$node->stop;
done_testing();

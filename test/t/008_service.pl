# 008_service.pl: the GPU service as a process of the server.
#
#  1. in a build with CUDA, the postmaster starts the worker (a backend of
#     its own kind in pg_stat_activity), and gpusort_gpus lists a GPU
#     exactly when gpusort_info() says the GPU engine is usable; in a build
#     without CUDA there is no worker (no gpusort process in
#     pg_stat_activity or the log, before or after the sorts below, so no
#     process whose death restarts the server), and gpusort_info(),
#     gpusort_gpus and EXPLAIN of a sort forced to the GPU say why there
#     is no GPU;
#  2. pg_terminate_backend() of the worker: it exits, the postmaster starts
#     a new one, and sorts go on (right) meanwhile and afterwards;
#  3. SIGKILL of the worker: the postmaster restarts the server (as for any
#     process attached to shared memory) and the worker comes back;
#  (2 and 3 only in a build with CUDA)
#  4. a backend terminated while its sort holds a request (an injected
#     delay just before the engine's sort): afterwards no GPU keeps a sort
#     running or memory reserved, and new sessions sort right; while it is
#     held, pg_stat_activity shows what it and the idle worker wait for
#     (from 17 on, wait events of gpusort's own, listed in pg_wait_events;
#     before, "Extension");
#  5. 100 sessions sorting at once (pgbench, each transaction checking
#     its own order): no failure, every sort counted by gpusort_stat, and
#     nothing left running or reserved on any GPU;
#  6. pool threads by default are shared among the sorts that are loading
#     or sorting at once: beside a sort that returns its rows (a cursor,
#     fetched from once) a sort gets as many threads as alone; while
#     another session's sort is held after its keys are built (an injected
#     delay), it gets fewer; and as many again once that session is
#     terminated (its sort no longer counted).
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu; gpu in the
# GPU suite, where the requests really reach the service).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

# the test cluster turns restart_after_crash off; a server restarts by default
my $node = gpusort_node('service',
	conf => "max_connections = 130\ngpusort.gpu_min_rows = 0\nrestart_after_crash = on\n");
big_table($node, 200000);
$node->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS gpusort');
my $check = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM (SELECT k, id FROM big ORDER BY k, id) x};
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $check");

my $service_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpusort GPU service'};

sub service_pid
{
	return $node->safe_psql('postgres', $service_q);
}

sub wait_for_new_service
{
	my ($old) = @_;
	return $node->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity
		    WHERE backend_type = 'gpusort GPU service' AND pid <> $old});
}

sub nothing_reserved
{
	my ($what) = @_;
	# (without a GPU, nothing to ask gpusort_gpus, whose NOTICE saying so
	# would be stderr, which poll_query_until does not take)
	ok( $node->poll_query_until('postgres',
			q{SELECT CASE WHEN (SELECT engines FROM gpusort_info()) = 'cpu' THEN true
			              ELSE (SELECT count(*) = 0 FROM gpusort_gpus
			                     WHERE running <> 0 OR memory_in_use <> 0) END}),
		"$what: no GPU keeps a sort running or memory reserved");
	ok( $node->poll_query_until('postgres',
			q{SELECT sum(value) = 0 FROM gpusort_stat
			   WHERE what = 'now' AND detail IN ('requests open', 'staging slots in use')}),
		"$what: no request open, no staging slot in use");
}

my $cuda = $node->safe_psql('postgres', q{SELECT build FROM gpusort_info()}) eq 'CUDA';
# any process of gpusort's own, whatever it is called
my $any_gpusort_process = q{SELECT count(*) FROM pg_stat_activity WHERE backend_type ~* 'gpusort'};

# 1. without CUDA, no worker; with CUDA, the one the postmaster started
if (!$cuda)
{
	is($node->safe_psql('postgres', q{SELECT build FROM gpusort_info()}), 'CPU-only',
		'a build without CUDA');
	# a worker would start once the server is consistent, before its first
	# connections: two seconds more leave it time to show
	sleep 2;
	is($node->safe_psql('postgres', $any_gpusort_process), '0',
		'a build without CUDA runs no gpusort process');
	unlike(slurp_file($node->logfile), qr/gpusort GPU service|background worker "gpusort/,
		'the log shows no gpusort worker');
	is($node->safe_psql('postgres', q{SELECT engines || ' | ' || gpus FROM gpusort_info()}),
		'cpu | no usable GPU: gpusort was built without CUDA',
		'gpusort_info() says why there is no GPU');
	my ($ret, $gpus, $notice) = $node->psql('postgres', q{SELECT count(*) FROM gpusort_gpus});
	is($gpus, '0', 'gpusort_gpus is empty');
	like($notice, qr/NOTICE:  no usable GPU: gpusort was built without CUDA\nHINT:  gpusort sorts on its CPU engine/,
		'gpusort_gpus says why');
	like($node->safe_psql('postgres', q{SET gpusort.engine = gpu; SET gpusort.gpu_min_rows = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT k FROM big ORDER BY k}),
		qr/Fallback: no usable GPU: gpusort was built without CUDA/,
		'EXPLAIN ANALYZE of a sort forced to the GPU says why it is not there');
	is($node->safe_psql('postgres', q{SELECT value > 0 FROM gpusort_stat
		WHERE what = 'fallbacks' AND detail = 'no usable GPU'}), 't',
		'and gpusort_stat counted it as a fallback for want of a GPU');
	is($node->safe_psql('postgres', q{SELECT value FROM gpusort_stat
		WHERE what = 'now' AND detail = 'staging slots'}), '0', 'no staging slots');
	is($node->safe_psql('postgres', $check), $native, 'a sort is right');
}
SKIP:
{
	skip 'a build without CUDA has no GPU service', 12 unless $cuda;
	my $pid1 = service_pid();
	like($pid1, qr/^\d+$/, 'the GPU service runs');
	# (the view's NOTICE, without a GPU, taken here: checked below)
	my ($gpus_ret, $gpus_agree) = $node->psql('postgres',
		q{SELECT ((SELECT count(*) FROM gpusort_gpus) > 0) = (engines = 'gpu, cpu') FROM gpusort_info()});
	is($gpus_agree, 't', 'gpusort_gpus agrees with gpusort_info');
	# without a GPU the view is empty, and says why
	{
		my ($ret, $gpus, $notice) = $node->psql('postgres', q{SELECT count(*) FROM gpusort_gpus});
		if ($gpus eq '0')
		{
			like($notice, qr/NOTICE:  (no usable GPU|the GPU service is not running): \S.*\nHINT:  gpusort sorts on its CPU engine/,
				'an empty gpusort_gpus says why');
		}
		else
		{
			is($notice, '', 'gpusort_gpus with GPUs says nothing more');
		}
	}
	is($node->safe_psql('postgres', $check), $native, 'a sort is right');

	# 2. pg_terminate_backend of the worker
	my $log_offset = -s $node->logfile;
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid1)"), 't',
		'the worker can be terminated');
	is($node->safe_psql('postgres', $check), $native, 'a sort while the worker restarts is right');
	ok(wait_for_new_service($pid1), 'the postmaster starts a new worker');
	like(slurp_file($node->logfile, $log_offset),
		qr/background worker "gpusort GPU service" \(PID $pid1\) exited with exit code 1/,
		'the worker exited, to be restarted');
	is($node->safe_psql('postgres', $check), $native, 'a sort after the restart is right');

	# 3. SIGKILL of the worker: a crash restart of the server
	my $pid2 = service_pid();
	$log_offset = -s $node->logfile;
	kill 'KILL', $pid2;
	ok(wait_for_new_service($pid2), 'after SIGKILL, the worker comes back');
	like(slurp_file($node->logfile, $log_offset),
		qr/terminated by signal 9/, 'the postmaster saw the worker killed');
	is($node->safe_psql('postgres', $check), $native, 'a sort after the crash restart is right');
}

# 4. a backend terminated while its sort holds a request
my $tmp = PostgreSQL::Test::Utils::tempdir();
append_to_file("$tmp/held.sql", qq{SET gpusort.inject_fault = 'delay:sort:30000';
SET gpusort.engine = '@{[gpusort_engine()]}';
SELECT /* held_request */ count(*) FROM (SELECT k FROM big ORDER BY k OFFSET 0) x;
});
my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-f', "$tmp/held.sql" ],
	'>', "$tmp/held.out", '2>', "$tmp/held.err");
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query LIKE '%held_request%' AND pid <> pg_backend_pid() AND state = 'active'
	   AND backend_type = 'client backend' AND now() - query_start > interval '1 s'})
  or die 'the held sort did not start';
# the session's own backend, not its parallel workers (which show its query)
my $held = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity
	 WHERE query LIKE '%held_request%' AND pid <> pg_backend_pid() AND state = 'active'
	   AND backend_type = 'client backend'});
my $named_waits = $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
my $delay_wait = $named_waits ? 'GpuSortInjectedDelay' : 'Extension';
my $service_wait = $named_waits ? 'GpuSortServiceMain' : 'Extension';
ok($node->poll_query_until('postgres', qq{
	SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = $held},
	"Extension:$delay_wait"), "the held sort waits on Extension:$delay_wait");
SKIP:
{
	skip 'a build without CUDA has no GPU service', 1 unless $cuda;
	ok($node->poll_query_until('postgres', qq{
		SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity
		 WHERE backend_type = 'gpusort GPU service'}, "Extension:$service_wait"),
		"the idle GPU service waits on Extension:$service_wait");
}
SKIP:
{
	skip 'pg_wait_events and named extension wait events come with 17', 1 unless $named_waits;
	# the service's own wait event is named by the service, which a build
	# without CUDA does not start
	is($node->safe_psql('postgres', q{
		SELECT string_agg(name, ',' ORDER BY name) FROM pg_wait_events
		 WHERE type = 'Extension' AND name IN ('GpuSortInjectedDelay', 'GpuSortServiceMain')}),
		$cuda ? 'GpuSortInjectedDelay,GpuSortServiceMain' : 'GpuSortInjectedDelay',
		'pg_wait_events lists them');
}
$node->safe_psql('postgres', "SELECT pg_terminate_backend($held)");
$h->finish;
like(slurp_file("$tmp/held.err"), qr/terminating connection due to administrator command/,
	'the backend was terminated in its sort');
nothing_reserved('after the terminated backend');
is($node->safe_psql('postgres', $check), $native, 'a sort after it is right');

# 5. 100 sessions at once
append_to_file("$tmp/sorts.sql", q{\set lo random(1, 150000)
SELECT CASE WHEN count(*) = 20000 AND bool_and(prev IS NULL OR prev <= k) THEN 1 ELSE 1 / (0 * count(*))::int END
  FROM (SELECT k, lag(k) OVER () AS prev
          FROM (SELECT k FROM big WHERE id BETWEEN :lo AND :lo + 19999 ORDER BY k OFFSET 0) s) t;
});
my $before = $node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'sorts'});
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[ 'pgbench', '-n', '-c', '100', '-j', '4', '-t', '3', '-f', "$tmp/sorts.sql",
	  '-d', $node->connstr('postgres') ],
	'>', \$out, '2>', \$err);
ok($ok, '100 sessions sorting at once: pgbench succeeds') or diag($err);
like($out, qr/number of transactions actually processed: 300\b/, 'every transaction ran');
unlike($out, qr/number of failed transactions: [1-9]/, 'none failed');
my $after = $node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'sorts'});
cmp_ok($after - $before, '>=', 300, 'gpusort_stat counted every sort');
nothing_reserved('after 100 sessions');
is($node->safe_psql('postgres', $any_gpusort_process),
	$cuda ? '1' : '0', $cuda ? 'one worker throughout' : 'no gpusort process throughout');

# 6. pool threads shared among the sorts that are loading or sorting; the
# sorts here are serial and within the budget whatever the server's
# configuration (test/run.sh may force parallel plans or tiny budgets)
$node->safe_psql('postgres',
	q{CREATE TABLE kt AS SELECT hashint4(g) AS k FROM generate_series(1, 300000) g});
my $kt_settings = q{SET gpusort.threads = -1; SET gpusort.max_memory = '1GB';
SET max_parallel_workers_per_gather = 0;};
my $kt_sort = q{SELECT k FROM kt ORDER BY k};

sub pool_threads
{
	my $plan = $node->safe_psql('postgres',
		"$kt_settings EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $kt_sort");
	die "not a GpuSort:\n$plan" unless $plan =~ /Custom Scan \(GpuSort\)/;
	return $plan =~ /Threads: (\d+)/ ? $1 : 0;
}
my $alone = pool_threads();
SKIP:
{
	skip 'one CPU: no pool threads to share', 5 if $alone == 0;

	# a sort returning its rows through a cursor keeps its threads asleep
	my $reader = GpuSortSession->new($node);
	$reader->wait($reader->send(qq{$kt_settings
BEGIN;
DECLARE held CURSOR FOR $kt_sort;
FETCH 1 FROM held;}));
	is(pool_threads(), $alone,
		'a sort beside one that returns its rows gets as many pool threads as alone');
	$reader->finish;

	# a sort held once its keys are built, before the engine sorts them
	my $offset = -s $node->logfile;
	my $holder = GpuSortSession->new($node);
	$holder->send(qq{$kt_settings
SET gpusort.inject_fault = 'delay:sort:600000';
SELECT count(*) FROM ($kt_sort) x;});
	$node->wait_for_log(qr/injected delay of 600000 ms in the sort phase/, $offset);
	my ($holder_pid) = slurp_file($node->logfile, $offset)
	  =~ /\[(\d+)\] .*injected delay of 600000 ms in the sort phase/;
	ok(defined $holder_pid, 'a sort is held in its sort phase');
	my $shared = pool_threads();
	cmp_ok($shared, '<', $alone,
		"a sort beside one that is sorting gets fewer pool threads ($shared) than alone ($alone)");
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($holder_pid)");
	$holder->lost;
	ok($node->poll_query_until('postgres',
			"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $holder_pid)"),
		'the holding session is gone');
	is(pool_threads(), $alone, 'once it is gone, a sort gets as many pool threads as alone');
}

$node->stop;
done_testing();

# 010_server_memory.pl: gpusort.server_memory bounds the host memory the
# GpuSorts of all backends hold together.
#
# gpusort.max_memory is one backend's budget; gpusort.server_memory (a
# server setting, preloaded gpusort only) is the server's, counted in shared
# memory as each sort's memory grows and shrinks.  Each backend here has a
# budget of 1 GB, far more than the sorts need, and the server the least
# budget that keeps one sort in memory.  Checked:
#  1. one sort alone stays in memory; gpusort_stat shows what it holds
#     while a cursor keeps it open, and nothing once it is closed;
#  2. a second session's sort, while the first still holds its memory,
#     gets what the server has left: it writes runs, EXPLAIN ANALYZE says
#     "Server Memory Limited: true", gpusort_stat counts runs written for
#     gpusort.server_memory, and its rows are PostgreSQL's Sort's;
#  3. once the first session closes its cursor, the second sorts in memory
#     again;
#  4. a backend holding sort memory that is terminated, and one whose
#     client goes away in the middle of a transaction, leave nothing
#     counted;
#  5. gpusort.server_memory = 0 takes the server's limit away, and a
#     session cannot set it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('server_memory',
	conf => "gpusort.max_memory = '1GB'\nmax_parallel_workers_per_gather = 0\n");
big_table($node, 300000);
$node->safe_psql('postgres', 'CREATE EXTENSION gpusort');

my $sort = 'SELECT k, s, id FROM big ORDER BY k, s';
my $digest = "SELECT md5(string_agg(k || ':' || s || ':' || id, ',')), count(*) FROM ($sort) x";
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $digest");

sub held
{
	return $node->safe_psql('postgres',
		"SELECT value FROM gpusort_stat WHERE what = 'now' AND detail = 'sort memory held'");
}

sub stat_value
{
	my ($what, $detail) = @_;
	return $node->safe_psql('postgres',
		"SELECT value FROM gpusort_stat WHERE what = '$what' AND detail = '$detail'");
}

# EXPLAIN ANALYZE of the sort in a new session, after settings: (runs
# written, server memory limited, memory used in kB)
sub explain_sort
{
	my ($settings) = @_;
	my $plan = $node->safe_psql('postgres',
		($settings // '') . "EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) $sort");
	my ($runs) = $plan =~ /"Runs Written": (\d+)/;
	my ($limited) = $plan =~ /"Server Memory Limited": (true|false)/;
	my ($used) = $plan =~ /"Memory Used": (\d+)/;
	return ($runs // -1, $limited // 'missing', $used // 0);
}

# set gpusort.server_memory and wait until new sessions see it
sub set_server_memory
{
	my ($value) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET gpusort.server_memory = '$value'");
	$node->reload;
	my $want = $node->safe_psql('postgres',
		"SELECT setting FROM pg_settings WHERE name = 'gpusort.server_memory'");
	for (my $i = 0; $i < 500; $i++)
	{
		my $now = $node->safe_psql('postgres', 'SHOW gpusort.server_memory');
		return if $now eq $value || $now eq $want;
		usleep(20_000);
	}
	return;
}

# 1. one sort alone, with no server limit yet: what it holds
set_server_memory('0');
is($node->safe_psql('postgres', 'SHOW gpusort.server_memory'), '0', 'server_memory set to 0');
my ($runs, $limited, $used) = explain_sort();
is($runs, 0, 'with no server limit the sort stays in memory');
is($limited, 'false', 'and is not limited by the server');
cmp_ok($used, '>', 8 * 1024, "it holds more than 8 MB ($used kB)");
is(held(), '0', 'nothing is held between sorts');

# the server's budget: the least of a few multiples of the sort's peak
# that keeps it in memory as a backend's budget.  A batch's limit also
# counts the sorted copy of its keys that a merge would need, so a sort
# needs somewhat more budget than its peak; and one holding its memory
# leaves less than the next smaller multiple, which did not do.
my $budget_kb;
for my $times (1.25, 1.5, 2, 2.5, 3, 4, 6)
{
	my $kb = int($used * $times);
	my ($r) = explain_sort("SET gpusort.max_memory = '${kb}kB';");
	if ($r == 0)
	{
		$budget_kb = $kb;
		last;
	}
}
ok(defined $budget_kb, 'a budget of a few times its peak keeps the sort in memory ('
	  . ($budget_kb // 'none') . ' kB)');
$budget_kb //= int($used * 6);
set_server_memory("${budget_kb}kB");
is(stat_value('now', 'sort memory limit'), $budget_kb * 1024, "gpusort_stat shows the limit (${budget_kb} kB)");
($runs, $limited) = explain_sort();
is($runs, 0, 'alone under the server budget the sort stays in memory');
is($limited, 'false', 'and is not limited');

# a session that holds its sort's memory: a cursor over it, partly read
my $holder = GpuSortSession->new($node);
my ($out) = $holder->wait($holder->send(
	"BEGIN;\nDECLARE c CURSOR FOR $sort;\nFETCH 1 FROM c;\nSELECT pg_backend_pid();"));
my ($holder_pid) = $out =~ /(\d+)\s*$/;
ok($holder_pid, 'a session holds an open sort');
my $held = held();
cmp_ok($held, '>=', $used * 1024 / 2, "gpusort_stat counts what it holds ($held bytes)");
cmp_ok($held, '<=', $budget_kb * 1024 + 4 * 1024 * 1024, 'no more than the server budget');

# 2. a second sort meanwhile gets what is left: it spills
my $server_runs = stat_value('runs written', 'for gpusort.server_memory');
($runs, $limited) = explain_sort();
cmp_ok($runs, '>', 0, "a second session's sort writes runs meanwhile ($runs)");
is($limited, 'true', 'EXPLAIN ANALYZE says the server budget limited it');
cmp_ok(stat_value('runs written', 'for gpusort.server_memory'), '>=', $server_runs + $runs,
	'gpusort_stat counts the runs written for gpusort.server_memory');
is($node->safe_psql('postgres', $digest), $native, 'its rows are those of Sort');
like($node->safe_psql('postgres', "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $sort"),
	qr/Server Memory Limited: true/, 'EXPLAIN ANALYZE in text says it too');
is(held(), $held, 'the spilled sorts gave back what they held');

# 3. the cursor closed: the memory is back
$holder->wait($holder->send("CLOSE c;"));
is(held(), '0', 'closing the cursor gives its memory back');
($runs, $limited) = explain_sort();
is($runs, 0, 'the sort stays in memory again');
is($limited, 'false', 'and is not limited');

# 4. a backend terminated while it holds sort memory
$holder->wait($holder->send("DECLARE c2 CURSOR FOR $sort;\nFETCH 1 FROM c2;"));
cmp_ok(held(), '>', 0, 'a second cursor holds memory');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($holder_pid, 10000)"), 't',
	'the holding backend is terminated');
$holder->lost;
is(held(), '0', 'a terminated backend leaves nothing counted');

# a client that goes away in the middle of a transaction
$holder = GpuSortSession->new($node);
$holder->wait($holder->send("BEGIN;\nDECLARE c CURSOR FOR $sort;\nFETCH 1 FROM c;"));
cmp_ok(held(), '>', 0, 'a new session holds memory');
$holder->{h}->kill_kill;
my $gone = 0;
for (my $i = 0; $i < 500 && !$gone; $i++)
{
	$gone = held() eq '0';
	usleep(20_000) unless $gone;
}
ok($gone, 'a backend whose client went away leaves nothing counted');

# 5. no server limit; and a session cannot set one
set_server_memory('0');
$holder = GpuSortSession->new($node);
$holder->wait($holder->send("BEGIN;\nDECLARE c CURSOR FOR $sort;\nFETCH 1 FROM c;"));
($runs, $limited) = explain_sort();
is($runs, 0, 'with server_memory = 0, a second sort stays in memory beside the first');
is($limited, 'false', 'and is not limited');
$holder->finish;
my ($ret, $stdout, $stderr) = $node->psql('postgres', "SET gpusort.server_memory = '1GB'");
like($stderr, qr/parameter "gpusort.server_memory" cannot be changed now/,
	'a session cannot change the server budget');

my $log = slurp_file($node->logfile);
unlike($log, qr/leaked|TRAP|PANIC|terminated by signal/, 'no leak, assertion or crash in the log');

$node->stop;
done_testing();

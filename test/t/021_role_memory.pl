# 021_role_memory.pl: gpusort.role_memory bounds what one role's sessions
# hold of gpusort.server_memory, so that a role with nothing but SELECT
# cannot take the server's sort memory from the others with idle cursors.
#
# A role's sessions each open a cursor over a sort and leave it idle in
# its transaction, as a client that went to lunch would; together they
# would hold more than the server's budget.  Checked:
#  1. what they hold together stays within the role's bound (a quarter of
#     the server's budget by default), each cursor's sort past it spilling
#     instead, with PostgreSQL's Sort's rows;
#  2. a superuser's sort meanwhile is not limited by them: it stays in
#     memory as it does alone, and EXPLAIN ANALYZE says no budget cut it;
#  3. gpusort.role_memory = 0 lifts the role's bound (the server's alone
#     then limits its sessions), and a session cannot set it;
#  4. once the cursors close, nothing is held.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('role_memory',
	conf => "gpusort.max_memory = '1GB'\nmax_parallel_workers_per_gather = 0\n");
big_table($node, 300000);
$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE ROLE reader LOGIN;
GRANT SELECT ON big TO reader;
});

my $sort = 'SELECT k, s, id FROM big ORDER BY k, s';
my $digest = "SELECT md5(string_agg(k || ':' || s || ':' || id, ',')), count(*) FROM ($sort) x";
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $digest");

sub held
{
	return $node->safe_psql('postgres',
		"SELECT value FROM gpusort_stat WHERE what = 'now' AND detail = 'sort memory held'");
}

# EXPLAIN ANALYZE of the sort in a new session of user (default: the
# superuser): (runs written, server memory limited, memory used in kB)
sub explain_sort
{
	my ($user) = @_;
	my $plan = $node->safe_psql('postgres',
		"EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) $sort",
		extra_params => [ '-U', $user // $node->safe_psql('postgres', 'SELECT current_user') ]);
	my ($runs) = $plan =~ /"Runs Written": (\d+)/;
	my ($limited) = $plan =~ /"Server Memory Limited": (true|false)/;
	my ($used) = $plan =~ /"Memory Used": (\d+)/;
	return ($runs // -1, $limited // 'missing', $used // 0);
}

# set a server setting and wait until new sessions see it
sub set_conf
{
	my ($name, $value) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET $name = '$value'");
	$node->reload;
	my $want = $node->safe_psql('postgres', "SELECT setting FROM pg_settings WHERE name = '$name'");
	for (my $i = 0; $i < 500; $i++)
	{
		my $now = $node->safe_psql('postgres', "SHOW $name");
		return if $now eq $value || $now eq $want;
		usleep(20_000);
	}
	return;
}

# the sort alone, without a server budget: what it holds
set_conf('gpusort.server_memory', '0');
my ($runs, $limited, $used) = explain_sort();
is($runs, 0, 'alone the sort stays in memory');
cmp_ok($used, '>', 8 * 1024, "it holds more than 8 MB ($used kB)");

# a server budget of four such sorts: the role's default bound, a quarter
# of it, is about one sort, and five of the role's cursors would hold more
# than the whole budget without it
my $server_kb = 4 * $used;
set_conf('gpusort.server_memory', "${server_kb}kB");
is($node->safe_psql('postgres', 'SHOW gpusort.role_memory'), '-1', 'gpusort.role_memory is -1 by default');
($runs, $limited) = explain_sort();
is($runs, 0, "under the server's budget alone the sort stays in memory");
is($limited, 'false', 'and is not limited');

# 1. the role's idle cursors
my @holders;
for my $i (1 .. 5)
{
	my $s = GpuSortSession->new($node, 'postgres', 'reader');
	my ($out) = $s->wait($s->send("BEGIN;\nDECLARE c CURSOR FOR $sort;\nFETCH 1 FROM c;"));
	like($out, qr/\d/, "the role's session $i holds an open sort");
	push @holders, $s;
}
my $held = held();
my $role_bound = $server_kb * 1024 / 4;
# each sort may always hold its minimum (1 MB), past every bound
cmp_ok($held, '<=', $role_bound + 5 * 1024 * 1024,
	"the role's five sorts hold $held bytes together, within its bound ($role_bound) and their minimums");
cmp_ok($held, '>', 0, 'they hold something');
my ($role_runs, $role_limited) = explain_sort('reader');
cmp_ok($role_runs, '>', 0, "a further sort of the role writes runs meanwhile ($role_runs)");
is($role_limited, 'true', "and EXPLAIN ANALYZE says a budget limited it");
my $role_digest = $node->safe_psql('postgres', $digest, extra_params => [ '-U', 'reader' ]);
is($role_digest, $native, "the role's sort beside its cursors has the rows of PostgreSQL's Sort");

# 2. a superuser's sort beside them
($runs, $limited) = explain_sort();
is($runs, 0, "a superuser's sort beside the role's cursors stays in memory");
is($limited, 'false', 'and no budget limited it');
is($node->safe_psql('postgres', $digest), $native, "its rows are PostgreSQL's Sort's");

# 3. the role's bound lifted: a new cursor of the role takes what the
# server's budget leaves, more than the role's bound allowed
my ($ret, $stdout, $stderr) = $node->psql('postgres', "SET gpusort.role_memory = 0");
like($stderr, qr/parameter "gpusort.role_memory" cannot be changed now/,
	'a session cannot set gpusort.role_memory');
set_conf('gpusort.role_memory', '0');
my $extra = GpuSortSession->new($node, 'postgres', 'reader');
$extra->wait($extra->send("BEGIN;\nDECLARE c CURSOR FOR $sort;\nFETCH 1 FROM c;"));
cmp_ok(held(), '>', $held + 4 * 1024 * 1024,
	'with gpusort.role_memory = 0 a further cursor of the role holds more than its minimum');
$extra->wait($extra->send("COMMIT;"));
$extra->finish;
set_conf('gpusort.role_memory', '-1');

# 4. the cursors closed
for my $s (@holders)
{
	$s->wait($s->send("COMMIT;"));
	$s->finish;
}
for (my $i = 0; $i < 200 && held() ne '0'; $i++)
{
	usleep(50_000);
}
is(held(), '0', 'once the cursors close nothing is held');
my $log = slurp_file($node->logfile);
unlike($log, qr/leaked|TRAP|PANIC|terminated by signal/, 'no leak, assertion or crash in the log');

$node->stop;
done_testing();

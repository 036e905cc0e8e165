# 020_server_memory_sessions.pl: gpusort.server_memory holds under many
# sessions that sort at once, with parallel plans.
#
# Sixteen sessions each run a parallel GpuSort (two workers each, their
# blocks counted in the leader's budget) of rows that need more than the
# server's budget leaves each of them (a sixteenth), so that they grow,
# spill and grow again against each other.  Sorts reserve before they grow
# (sort_memory.c), in one compare-and-swap on the server's total, and the
# server keeps a reserve for sorts below their minimum; so:
#  1. the server's count of sort memory, sampled while they run, and its
#     peak since the server started (gpusort_stat's peak, kept by every
#     change to the count) never pass gpusort.server_memory;
#  2. the budget did limit them: runs were written for
#     gpusort.server_memory, and every plan was a parallel GpuSort;
#  3. every session's rows are PostgreSQL's Sort's, and once they end
#     nothing is held.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $sessions = 16;
my $limit_mb = 256;
# gpusort.max_memory at its default whatever GPUSORT_TAP_CONF says (the
# spilling pass's 64kB would leave the server's budget nothing to limit)
my $node = gpusort_node('server_memory_sessions', conf => qq{
gpusort.max_memory = -1
gpusort.server_memory = '${limit_mb}MB'
max_connections = 40
max_worker_processes = 40
max_parallel_workers = 40
});
$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE TABLE t AS
  SELECT g AS id, md5(g::text) AS s, hashint4(g) AS k FROM generate_series(1, 400000) g;
ANALYZE t;
});
my $settings = q{SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
};
my $query = 'SELECT s, k, id FROM t ORDER BY s, k';
my $digest = "SELECT md5(string_agg(s || ':' || id, ',')), count(*) FROM ($query) x";
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $digest");
my $limit = $limit_mb * 1024 * 1024;

sub stat_value
{
	my ($what, $detail) = @_;
	return $node->safe_psql('postgres',
		"SELECT value FROM gpusort_stat WHERE what = '$what' AND detail = '$detail'");
}

like($node->safe_psql('postgres', "${settings}EXPLAIN (COSTS OFF) $query"),
	qr/Custom Scan \(GpuSort\).*Gather.*GpuSortLoad/s, 'the sort is a parallel GpuSort');
is(stat_value('now', 'sort memory limit'), $limit, "the server budget is $limit_mb MB");

# what one sort holds alone: together, sixteen need well past the budget
my $alone = $node->safe_psql('postgres',
	"${settings}EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) $query");
my ($used_kb) = $alone =~ /"Memory Used": (\d+)/;
cmp_ok(($used_kb // 0) * 1024 * $sessions, '>', $limit,
	'sixteen such sorts need more than the server budget (' . ($used_kb // 0) . ' kB each)');

my $server_runs = stat_value('runs written', 'for gpusort.server_memory');
my @s = map { GpuSortSession->new($node) } 1 .. $sessions;
my @m = map { $_->send("$settings$digest;") } @s;

# sample the count until every session is done
my ($peak_sampled, $samples) = (0, 0);
my $running = $sessions;
while ($running > 0)
{
	my $held = stat_value('now', 'sort memory held');
	$peak_sampled = $held if $held > $peak_sampled;
	$samples++;
	usleep(5_000);
	$running = grep { !$s[$_]->ran($m[$_]) } 0 .. $#s;
}
my $mismatch = 0;
for my $i (0 .. $#s)
{
	my ($out, $err) = $s[$i]->wait($m[$i]);
	$s[$i]->finish;
	$mismatch++ unless $out eq "$native\n";
	diag("session $i: $err") if $err ne '';
}
is($mismatch, 0, "all $sessions sessions returned the rows of PostgreSQL's Sort");
cmp_ok($peak_sampled, '>', $limit / 2,
	"the sessions held much of the budget at once ($peak_sampled bytes, $samples samples)");
cmp_ok($peak_sampled, '<=', $limit, 'the count sampled never passed gpusort.server_memory');
my $peak = stat_value('peak', 'sort memory held');
cmp_ok($peak, '>=', $peak_sampled, "the count's peak since the start ($peak bytes) is at least any sample");
cmp_ok($peak, '<=', $limit, "and never passed gpusort.server_memory ($limit bytes)");
cmp_ok(stat_value('runs written', 'for gpusort.server_memory'), '>', $server_runs,
	'runs were written for gpusort.server_memory');
ok($node->poll_query_until('postgres',
		"SELECT value = 0 FROM gpusort_stat WHERE what = 'now' AND detail = 'sort memory held'"),
	'once they end, nothing is held');

my $log = slurp_file($node->logfile);
unlike($log, qr/leaked|TRAP|PANIC|terminated by signal/, 'no leak, assertion or crash in the log');
$node->stop;
done_testing();

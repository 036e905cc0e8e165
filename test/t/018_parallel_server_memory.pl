# 018_parallel_server_memory.pl: the shared memory of a parallel GpuSort's
# workers counts in gpusort.server_memory before they use it.
#
# The workers of a parallel GpuSort copy rows into blocks of the query's
# shared memory, which the leader moves into its sort (nodeGpuSortLoad.c).
# The leader is held at the start of its load (an injected delay), so that
# for seconds the workers fill blocks while it moves none:
#  1. meanwhile the server's count of sort memory (gpusort_stat) stays
#     within gpusort.server_memory;
#  2. afterwards the leader's DEBUG1 line of the load says the blocks held
#     memory, and that at no move had they taken more than one block (4 MB
#     at most; a worker that races another for the last room may hold one
#     for a moment) beyond what the budget already counted for them, where
#     counted only once taken they were the whole of it;
#  3. the sort's rows are PostgreSQL's Sort's, and once it ends it holds
#     nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('parallel_server_memory', conf => "gpusort.server_memory = '512MB'\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE TABLE t AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, 1000000) g;
ANALYZE t;
});
my $settings = q{SET gpusort.max_memory = -1;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET log_min_messages = debug1;
};
my $query = 'SELECT s, id FROM t ORDER BY s, id';
my $digest = "SELECT md5(string_agg(s || ':' || id, ',')), count(*) FROM ($query) x";
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $digest");
like($node->safe_psql('postgres', "${settings}EXPLAIN (COSTS OFF) $query"),
	qr/Custom Scan \(GpuSort\).*Gather.*GpuSortLoad/s, 'a parallel GpuSort');
my $held_now = q{SELECT value FROM gpusort_stat WHERE what = 'now' AND detail = 'sort memory held'};
my $limit = $node->safe_psql('postgres',
	q{SELECT value FROM gpusort_stat WHERE detail = 'sort memory limit'});
is($limit, 512 * 1024 * 1024, 'the server budget is 512 MB');

# the leader held for 4 s at the start of its load
my $offset = -s $node->logfile;
my $session = GpuSortSession->new($node);
my $m = $session->send("${settings}SET gpusort.inject_fault = 'delay:load:4000';\n$digest;");
$node->wait_for_log(qr/injected delay of 4000 ms in the load phase/, $offset);
my $peak = 0;
for (1 .. 30)
{
	my $held = $node->safe_psql('postgres', $held_now);
	$peak = $held if $held > $peak;
	usleep(100_000);
}
my ($out, $err) = $session->wait($m);
$session->finish;
cmp_ok($peak, '>', 0, "while the leader is held, sort memory is counted ($peak bytes)");
cmp_ok($peak, '<=', $limit, 'and stays within gpusort.server_memory');

# the leader's account of the blocks
my $log = slurp_file($node->logfile, $offset);
my ($blocks_kb) = $log =~ /parallel load: .*blocks held at most (\d+) kB/;
ok(defined $blocks_kb, 'the leader says what the blocks held');
cmp_ok($blocks_kb // 0, '>', 0, "the workers filled blocks ($blocks_kb kB at most)");

is($out, "$native\n", "the rows of PostgreSQL's Sort");
ok($node->poll_query_until('postgres', "SELECT ($held_now) = 0"), 'once it ends, nothing is held');

$node->stop;
done_testing();

# 017_work_mem_budget.pl: a sort's default budget is never below what
# PostgreSQL's Sort would have for the same plan: work_mem for each process
# that sorts, within gpusort.server_memory.
#
# With gpusort.server_memory = 1GB, the machine's share of the backend's
# budget is 128 MB (an eighth), less than a sort of 3M rows holds in memory
# (about 240 MB).  With gpusort.max_memory = -1, the default:
#  1. at the default work_mem the GpuSort writes runs (EXPLAIN ANALYZE:
#     Memory Budget 128 MB, Runs Written);
#  2. with work_mem = 512MB PostgreSQL's Sort sorts in memory (quicksort),
#     and so does the GpuSort: a budget of 512 MB, no run written, and the
#     rows of PostgreSQL's Sort;
#     with work_mem = 300MB a sort beside another that holds most of it
#     (a cursor's) still writes no run: each sort may hold work_mem, as
#     each Sort node may;
#  3. with work_mem = 128MB a serial GpuSort writes runs (one process:
#     128 MB), but a parallel one with two workers does not: PostgreSQL's
#     parallel Sort has work_mem in the leader and in each worker, and the
#     GpuSort's budget is three times work_mem (384 MB); the rows are
#     PostgreSQL's;
#  4. the server's budget still bounds it: with gpusort.server_memory =
#     128MB (a reload), work_mem = 512MB gives a budget of 512 MB, but the
#     sort holds what the server's budget allows, and writes runs (Server
#     Memory Limited);
#  5. a gpusort.max_memory set to a size is the budget, whatever work_mem.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('work_mem_budget', conf => "gpusort.server_memory = '1GB'\n");
$node->safe_psql('postgres', q{
CREATE TABLE t AS SELECT g AS id, hashint4(g) AS k FROM generate_series(1, 3000000) g;
ANALYZE t;
});

my $serial = q{SET gpusort.max_memory = -1;
SET max_parallel_workers_per_gather = 0;
};
my $parallel = q{SET gpusort.max_memory = -1;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = on;
};
my $query = 'SELECT k, id FROM t ORDER BY k, id';
my $digest = "SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM ($query) x";
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $serial$digest");

sub explain_plan
{
	my ($settings) = @_;
	return $node->safe_psql('postgres',
		"${settings}EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query");
}

sub budget_kb
{
	my ($plan) = @_;
	return $plan =~ /Memory Budget: (\d+) kB/ ? $1 : 'none';
}

# 1. the default work_mem
my $plan = explain_plan($serial);
like($plan, qr/Custom Scan \(GpuSort\)/, 'a GpuSort');
is(budget_kb($plan), 128 * 1024, 'default work_mem: the machine share, 128 MB');
like($plan, qr/Runs Written: [1-9]/, 'default work_mem: it writes runs');

# 2. work_mem = 512MB
my $wm = "SET work_mem = '512MB';\n";
like($node->safe_psql('postgres',
		"SET gpusort.enabled = off; $serial${wm}EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query"),
	qr/Sort Method: quicksort/, "work_mem = 512MB: PostgreSQL's Sort sorts in memory");
$plan = explain_plan("$serial$wm");
is(budget_kb($plan), 512 * 1024, 'work_mem = 512MB: the budget is work_mem');
unlike($plan, qr/Runs Written/, 'work_mem = 512MB: no run written');
is($node->safe_psql('postgres', "$serial$wm$digest"), $native, "and the rows of PostgreSQL's Sort");

# 2b. each sort has work_mem, whatever the backend's other sorts hold: a
# cursor's sort holds its rows (about 240 MB of the 300 MB) while another
# sort of the same session runs
$wm = "SET work_mem = '300MB';\n";
$plan = $node->safe_psql('postgres', qq{$serial$wm
BEGIN;
DECLARE held CURSOR FOR $query;
FETCH 1 FROM held;
SELECT '--plan--';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query;
COMMIT;});
$plan =~ s/.*--plan--\n//s;
like($plan, qr/Custom Scan \(GpuSort\)/, 'beside a cursor holding a sort: a GpuSort');
unlike($plan, qr/Runs Written/, 'beside a cursor holding a sort: still no run written');

# 3. work_mem = 128MB, serial and parallel
$wm = "SET work_mem = '128MB';\n";
$plan = explain_plan("$serial$wm");
is(budget_kb($plan), 128 * 1024, 'work_mem = 128MB, serial: 128 MB');
like($plan, qr/Runs Written: [1-9]/, 'work_mem = 128MB, serial: it writes runs');
my $native_parallel = $node->safe_psql('postgres',
	"SET gpusort.enabled = off; $parallel${wm}EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query");
like($native_parallel, qr/Gather Merge.*Workers Launched: 2.*Sort Method: quicksort/s,
	"work_mem = 128MB: PostgreSQL's parallel Sort, two workers and the leader, sorts in memory");
unlike($native_parallel, qr/external/, 'in each of them');
$plan = explain_plan("$parallel$wm");
like($plan, qr/Custom Scan \(GpuSort\).*Gather.*Workers Planned: 2.*GpuSortLoad/s,
	'work_mem = 128MB, parallel: a parallel GpuSort with two workers');
is(budget_kb($plan), 3 * 128 * 1024, 'its budget is work_mem for each of the three processes');
unlike($plan, qr/Runs Written/, 'no run written');
is($node->safe_psql('postgres', "$parallel$wm$digest"), $native, "and the rows of PostgreSQL's Sort");

# 4. within the server's budget
$node->safe_psql('postgres', q{ALTER SYSTEM SET gpusort.server_memory = '128MB'; SELECT pg_reload_conf();});
$node->poll_query_until('postgres', q{SELECT current_setting('gpusort.server_memory') = '128MB'})
  or die 'gpusort.server_memory not reloaded';
$wm = "SET work_mem = '512MB';\n";
$plan = explain_plan("$serial$wm");
is(budget_kb($plan), 512 * 1024, 'server budget 128 MB, work_mem = 512MB: a budget of 512 MB');
like($plan, qr/Server Memory Limited: true/, 'but the server budget limits the sort');
like($plan, qr/Runs Written: [1-9]/, 'which writes runs');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET gpusort.server_memory; SELECT pg_reload_conf();});

# 5. a size set for gpusort.max_memory
$plan = explain_plan("SET max_parallel_workers_per_gather = 0;\nSET gpusort.max_memory = '64MB';\n$wm");
is(budget_kb($plan), 64 * 1024, 'gpusort.max_memory = 64MB: the budget, whatever work_mem');
like($plan, qr/Runs Written: [1-9]/, 'and it writes runs');

$node->stop;
done_testing();

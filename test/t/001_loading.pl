# 001_loading.pl: the ways gpusort gets loaded, on one server.
#
#  1. no preload: a new session plans a plain Sort; after LOAD 'gpusort' the
#     same session plans Custom Scan (GpuSort), and another session still
#     does not;
#  2. session_preload_libraries = 'gpusort' (reload): every new session
#     plans GpuSort without LOAD;
#  3. shared_preload_libraries = 'gpusort' (restart): every new session, in
#     any database, plans GpuSort without LOAD or CREATE EXTENSION;
#  4. CREATE EXTENSION gpusort works and gpusort_info() returns one row
#     describing the build, in the no-preload and the preloaded server;
#  5. in each mode a big ORDER BY returns the same rows, in the same order,
#     as PostgreSQL's own Sort.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $engine = gpusort_engine();

my $node = gpusort_node('loading', preload => 0);
big_table($node, 200000);

my $order_by = 'SELECT k, id, s FROM big ORDER BY k DESC, s, id';
my $explain = "EXPLAIN (COSTS OFF) $order_by";
# a digest of the whole ordered result, and the row count
my $digest = "SELECT md5(string_agg(k || ':' || id || ':' || s, ',')), count(*) FROM ($order_by) x";

# the native result, with the library not even loaded
my $native = $node->safe_psql('postgres', $digest);
like($native, qr/^[0-9a-f]{32}\|200000$/, 'native digest of 200000 rows');

# checks, in a fresh session, that the ORDER BY is (or is not) a GpuSort and
# that its result is the native one
sub check_session
{
	my ($name, $dbname, $want_gpusort, $prelude) = @_;
	$prelude = defined $prelude ? "$prelude;\n" : '';
	my $out = $node->safe_psql($dbname, qq{$prelude$explain;
SELECT '--result--';
$digest;
});
	my ($plan, $result) = split /--result--\n/, $out;
	if ($want_gpusort)
	{
		like($plan, qr/(^|->  )Custom Scan \(GpuSort\)/m, "$name: GpuSort in the plan");
		like($plan, qr/Sort Key: k DESC, s, id/, "$name: sort key");
	}
	else
	{
		like($plan, qr/(^|->  )Sort\n/m, "$name: plain Sort in the plan");
		unlike($plan, qr/GpuSort/, "$name: no GpuSort in the plan");
	}
	is($result, $native, "$name: same rows in the same order as the native Sort");
}

# 1. nothing preloaded
check_session('no preload', 'postgres', 0);
check_session('no preload, after LOAD', 'postgres', 1, "LOAD 'gpusort'");
check_session('no preload, new session without LOAD', 'postgres', 0);
# the settings exist once loaded, and disable it again
check_session('no preload, LOAD then disabled', 'postgres', 0,
	"LOAD 'gpusort'; SET gpusort.enabled = off");
# parallel workers of a session that LOADed gpusort load it too, and run
# the parallel GpuSort's load node (GpuSortLoad, read from the plan they
# are sent)
my $parallel = q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0};
check_session('no preload, after LOAD, parallel', 'postgres', 1, "LOAD 'gpusort'; $parallel");
my $pplan = $node->safe_psql('postgres', "LOAD 'gpusort'; $parallel;
	EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) $order_by");
like($pplan, qr/Custom Scan \(GpuSort\).*Gather.*Workers Launched: [12]\n\s+->  Parallel Custom Scan \(GpuSortLoad\)/s,
	'no preload, after LOAD: workers ran the GpuSort\'s load');
# every row loaded into shared memory or, past the budget, passed up
my ($loaded, $passed) = $pplan =~ /Rows Loaded: (\d+)\n\s+Rows Passed Up: (\d+)/;
is(($loaded // 0) + ($passed // 0), 200000, 'no preload, after LOAD: every row went through the load');
is($node->safe_psql('postgres', "LOAD 'gpusort'; SHOW gpusort.engine"),
	$engine, 'the engine from postgresql.conf applies once loaded');

# 4. CREATE EXTENSION without preloading
$node->safe_psql('postgres', 'CREATE EXTENSION gpusort');
my $info = $node->safe_psql('postgres',
	q{SELECT version, build IN ('CUDA', 'CPU-only'), engines LIKE '%cpu%', count(*) OVER () FROM gpusort_info()});
is($info, '0.3|t|t|1', 'gpusort_info() returns one row (no preload)');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'gpusort'}),
	'0.3', 'extension installed');

# 2. session_preload_libraries
$node->safe_psql('postgres', q{ALTER SYSTEM SET session_preload_libraries = 'gpusort'});
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('session_preload_libraries') = 'gpusort'})
  or die 'session_preload_libraries not applied';
check_session('session_preload_libraries', 'postgres', 1);
check_session('session_preload_libraries, disabled', 'postgres', 0, 'SET gpusort.enabled = off');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET session_preload_libraries});

# 3. shared_preload_libraries
$node->append_conf('postgresql.conf', qq{shared_preload_libraries = 'gpusort'});
$node->restart;
is($node->safe_psql('postgres', q{SHOW shared_preload_libraries}), 'gpusort', 'preloaded');
is($node->safe_psql('postgres', q{SHOW session_preload_libraries}), '', 'not session-preloaded');
check_session('shared_preload_libraries', 'postgres', 1);

# a database without the extension: the planner hook works all the same
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
CREATE TABLE big AS
  SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s
    FROM generate_series(1, 200000) g;
ANALYZE big;
});
is($node->safe_psql('other', q{SELECT count(*) FROM pg_extension WHERE extname = 'gpusort'}),
	'0', 'no extension in the other database');
check_session('shared_preload_libraries, database without the extension', 'other', 1);

# 4. and the extension in the preloaded server
$info = $node->safe_psql('postgres',
	q{SELECT version, build IN ('CUDA', 'CPU-only'), engines LIKE '%cpu%' FROM gpusort_info()});
is($info, '0.3|t|t', 'gpusort_info() returns a row (shared_preload_libraries)');
$node->safe_psql('other', 'CREATE EXTENSION gpusort');
is($node->safe_psql('other', q{SELECT count(*) FROM gpusort_info()}), '1',
	'CREATE EXTENSION in another database');
$node->safe_psql('other', 'DROP EXTENSION gpusort');
check_session('after DROP EXTENSION', 'other', 1);

# the server log has no crash
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC|was terminated/, 'no backend crashed');

done_testing();

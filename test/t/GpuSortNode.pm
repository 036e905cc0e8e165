# GpuSortNode.pm: the server every gpusort TAP test starts.
#
# gpusort_node(NAME, preload => 0|1, conf => 'more lines') initializes and
# starts a PostgreSQL::Test::Cluster with gpusort preloaded (unless
# preload => 0), GpuSort for every sort (gpusort.min_rows = 0) on the engine
# given in $ENV{GPUSORT_ENGINE} (default cpu), serial plans and no JIT,
# and the lines of $ENV{GPUSORT_TAP_CONF} (test/run.sh's GPUSORT_SPILL).
# big_table(NODE, ROWS) creates the table big(id, k, s, f) the tests sort.
package GpuSortNode;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(gpusort_engine gpusort_node big_table);

sub gpusort_engine
{
	return $ENV{GPUSORT_ENGINE} || 'cpu';
}

sub gpusort_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $engine = gpusort_engine();

	$node->init;
	$node->append_conf('postgresql.conf',
		(($opt{preload} // 1) ? "shared_preload_libraries = 'gpusort'\n" : '')
		  . "gpusort.engine = '$engine'\n"
		  . "gpusort.min_rows = 0\n"
		  . "max_parallel_workers_per_gather = 0\n"
		  . "jit = off\n"
		  . ($ENV{GPUSORT_TAP_CONF} // '') . "\n"
		  . ($opt{conf} // ''));
	$node->start;
	return $node;
}

sub big_table
{
	my ($node, $rows) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE big AS
  SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s,
         (hashint4(g + 1) % 1000)::float8 / 7 AS f
    FROM generate_series(1, $rows) g;
ANALYZE big;
});
	return;
}

1;

# 019_temp_space.pl: a GpuSort never needs more temporary space than
# PostgreSQL's Sort for the same rows and the same memory, at any budget.
#
# For each budget from 64 kB to 1 GB, Sort runs with work_mem at that budget
# and EXPLAIN ANALYZE gives its Disk (logtape.c's blocks at their peak: the
# tapes recycle the blocks they have read), or none where it sorts in memory.
# GpuSort then runs with gpusort.max_memory at the same budget under
# temp_file_limit at 1.1 times Sort's Disk (0 where Sort wrote nothing):
# fd.c counts every temporary file the session holds at once, so a sort
# whose runs and merge passes together ever held more fails with
# PostgreSQL's own error.  Each must succeed and return Sort's rows; and the
# sweep must cover a single merge and merges in several passes, as well as
# budgets where both sort in memory.  Two budgets come from Sort itself: the
# memory its in-memory sort reported, the least that keeps it in memory, and
# a tenth more.  There a GpuSort with keys would hold more than Sort (its
# records, and on the CPU the radix sort's workspace, take more than Sort's
# SortTuple) and write a run; it must give its keys up and sort in memory.
#
# A SCROLL cursor needs random access: Sort then merges its tapes onto one
# more tape of the same set, which takes the blocks its inputs have read.
# At budgets where it spills, the server log's temporary files
# (log_temp_files = 0) give Sort's whole disk; a GpuSort under
# temp_file_limit at 1.1 times that must write one file, within it, and
# return the same rows read forward, backward and by position.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('temp_space', conf => "gpusort.gpu_min_rows = 0\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE TABLE space AS
  SELECT g::int4 AS id, hashint8(g) AS k, md5(g::text) AS pad
  FROM generate_series(1, 1000000) g;
ANALYZE space});

my $explain = 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM space ORDER BY k, id';
my $digest = q{SELECT md5(string_agg(id::text, ',')), count(*) FROM (SELECT * FROM space ORDER BY k, id) x};
my $rows = $node->safe_psql('postgres', "SET gpusort.enabled = off; $digest");
my (%single, %passes, %memory);

my ($sort_peak) = $node->safe_psql('postgres',
	"SET gpusort.enabled = off; SET work_mem = '1GB'; $explain") =~ /Memory: (\d+)kB/;
ok($sort_peak, "Sort sorts in memory at 1GB, its peak $sort_peak kB");
my @band = ("${sort_peak}kB", int($sort_peak * 11 / 10) . 'kB');

for my $budget ('64kB', '256kB', '1MB', '4MB', '16MB', '64MB', @band, '256MB', '1GB')
{
	my $native = $node->safe_psql('postgres',
		"SET gpusort.enabled = off; SET work_mem = '$budget'; $explain");
	my ($native_disk) = $native =~ /Disk: (\d+)kB/;
	my $limit = int(($native_disk // 0) * 1.1);
	my $setup = "SET gpusort.max_memory = '$budget'; SET temp_file_limit = '${limit}kB';";
	my ($ret, $plan, $stderr) = $node->psql('postgres', "$setup $explain");
	my ($passes) = $plan =~ /Merge Passes: (\d+)/;
	my ($disk) = $plan =~ /Disk Used: (\d+) kB/;

	like($plan, qr/Custom Scan \(GpuSort\)/, "$budget: the sort is a GpuSort");
	is($ret, 0, "$budget: GpuSort ran within 1.1 times Sort's "
		  . (defined $native_disk ? "$native_disk kB" : 'none (in memory)')
		  . ($ret == 0 ? ' (' . ($disk // 0) . ' kB, merge passes: ' . ($passes // 0) . ')' : ": $stderr"));
	is($node->safe_psql('postgres', "$setup $digest"), $rows,
		"$budget: same rows in the same order as Sort");
	if (!defined $native_disk)
	{
		$memory{$budget} = 1;
	}
	elsif (($passes // 0) == 1)
	{
		$single{$budget} = 1;
	}
	elsif (($passes // 0) > 1)
	{
		$passes{$budget} = 1;
	}
}
note('single merge: ' . join(', ', sort keys %single) . '; in passes: '
	  . join(', ', sort keys %passes) . '; in memory: ' . join(', ', sort keys %memory));
ok(%single, 'the sweep has sorts merged at once');
ok(%passes, 'the sweep has sorts merged in several passes');
ok(%memory, 'the sweep has budgets where Sort needs no temporary file');
ok($memory{$_}, "Sort sorts in memory at $_, just above what it needs")
  for @band;

# the sizes of the temporary files the server logged after log position $from
sub logged_temp_files
{
	my ($from) = @_;
	my $log = substr(slurp_file($node->logfile), $from);
	return $log =~ /temporary file: path "[^"]*", size (\d+)/g;
}

my $scroll = q{BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id, k FROM space ORDER BY k, id;
MOVE FORWARD ALL IN c;
FETCH BACKWARD 3 FROM c;
FETCH ABSOLUTE 500000 FROM c;
FETCH RELATIVE -2 FROM c;
FETCH FIRST FROM c;
FETCH FORWARD 2 FROM c;
MOVE LAST IN c;
FETCH PRIOR FROM c;
COMMIT};
for my $budget ('64kB', '1MB', '16MB')
{
	my $from = -s $node->logfile;
	my $native = $node->safe_psql('postgres',
		"SET gpusort.enabled = off; SET work_mem = '$budget'; SET log_temp_files = 0; $scroll");
	my @native_files = logged_temp_files($from);
	my $native_kb = 0;
	$native_kb += $_ / 1024 for @native_files;
	ok(@native_files, "random access at $budget: Sort spilled, " . int($native_kb)
		  . ' kB in ' . scalar(@native_files) . ' file(s)');

	my $sorts = $node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'sorts'});
	$from = -s $node->logfile;
	my $limit = int($native_kb * 1.1);
	my ($ret, $out, $stderr) = $node->psql('postgres',
		"SET gpusort.max_memory = '$budget'; SET temp_file_limit = '${limit}kB'; SET log_temp_files = 0; $scroll");
	my @files = logged_temp_files($from);
	my $kb = 0;
	$kb += $_ / 1024 for @files;
	is($ret, 0, "random access at $budget: GpuSort ran within 1.1 times Sort's $native_kb kB"
		  . ($ret == 0 ? ' (' . int($kb) . ' kB)' : ": $stderr"));
	cmp_ok($node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'sorts'}),
		'>', $sorts, "random access at $budget: the sort was a GpuSort");
	is(scalar(@files), 1, "random access at $budget: one temporary file, the runs' and the result's");
	is($out, $native, "random access at $budget: the same rows as Sort's, forward, backward and by position");
}

$node->stop;
unlike(slurp_file($node->logfile), qr/leak|WARNING|terminated by signal|PANIC/,
	'no leak, resource warning or crash in the server log');

done_testing();

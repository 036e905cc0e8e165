# 006_spill.pl: a GpuSort that spills sorted runs to temporary files uses
# PostgreSQL's own temporary file machinery, and leaves nothing behind.
#
# With gpusort.max_memory = 1MB a 300k-row sort writes tens of runs.
# Checked:
#  1. the result equals PostgreSQL's Sort, forward and through a SCROLL
#     cursor read backwards;
#  2. log_temp_files logs the runs' one file, and temp_tablespaces puts it
#     in the chosen tablespace;
#  3. temp_file_limit stops the sort with PostgreSQL's own error, and its
#     files are gone afterwards;
#  4. a statement_timeout and a pg_cancel_backend() while a run is being
#     written (delay:spill) and while runs are merged (delay:merge) cancel
#     the query, and no temporary file stays;
#  5. runs written behind the load: the same rows, temp_file_limit's
#     error, and a cancel while the pool threads write a run, with no
#     temporary file left;
#  6. values stored out of line, larger than the budget many times over:
#     the merge reads no more of the TOAST table than Sort does;
#  7. the server log has no leak or resource WARNING and no crash.
# (The temporary space a sort takes against Sort's, budget by budget, is
# 019_temp_space.pl's.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use File::Spec;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('spill',
	conf => "gpusort.max_memory = '1MB'\nlog_temp_files = 0\ngpusort.gpu_min_rows = 0\n");
big_table($node, 300000);
my $tmpdir = $node->data_dir . '/base/pgsql_tmp';
# an absolute path: 17's tempdir() may return one relative to the test's directory
my $tblspc_dir = File::Spec->rel2abs(PostgreSQL::Test::Utils::tempdir());
$node->safe_psql('postgres', "CREATE TABLESPACE gs_temp LOCATION '$tblspc_dir'");

# temporary files of the default tablespace and of gs_temp
sub temp_files
{
	my @files;
	for my $dir ($tmpdir, glob("$tblspc_dir/PG_*/pgsql_tmp"))
	{
		next unless -d $dir;
		opendir(my $dh, $dir) or die "opendir $dir: $!";
		push @files, grep { !/^\.\.?$/ } readdir($dh);
		closedir($dh);
	}
	return scalar @files;
}

# pg_cancel_backend from another session, once its sort is held in $phase
# (after $setup); no temporary file may stay, and the session then sorts
# right.  With $files_meanwhile, the held sort must hold temporary files.
sub cancel_held
{
	my ($phase, $setup, $query, $native, $what, $files_meanwhile) = @_;
	my $offset = -s $node->logfile;
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	$bg->query_until(qr/started/,
		"$setup SET gpusort.inject_fault = 'delay:$phase:60000';\n\\echo started\n$query;\n");
	my $held = 0;
	for (my $i = 0; $i < 1000 && !$held; $i++)
	{
		$held = slurp_file($node->logfile, $offset) =~ /injected delay of 60000 ms in the $phase phase/;
		usleep(20_000) unless $held;
	}
	ok($held, "$phase: the sort is held $what");
	cmp_ok(temp_files(), '>', 0, "$phase: it holds temporary files meanwhile")
	  if $files_meanwhile;
	is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', "$phase: pg_cancel_backend");
	my $gone = 0;
	for (my $i = 0; $i < 1000 && !$gone; $i++)
	{
		$gone = $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND state = 'active'") eq '0';
		usleep(20_000) unless $gone;
	}
	ok($gone, "$phase: the query ended");

	# the cancel's error, taken from the session's stderr here, so that the
	# report of the next query shows only that query's output
	my $cancelled = 0;
	for (my $i = 0; $i < 1000 && !$cancelled; $i++)
	{
		$bg->{run}->pump_nb;
		$cancelled = $bg->{stderr} =~ /canceling statement due to user request/;
		usleep(20_000) unless $cancelled;
	}
	ok($cancelled, "$phase: the sort was cancelled");
	$bg->{stderr} = '';
	is(temp_files(), 0, "$phase: no temporary file left after the cancel");
	is($bg->query("RESET gpusort.inject_fault; $query"), $native,
		"$phase: the same session then sorts correctly");
	$bg->quit;
}

my $query = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM (SELECT k, id FROM big ORDER BY k, id) x};
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $query");

# 1. right results, forward and backward
my $plan = $node->safe_psql('postgres', "EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF) SELECT k, id FROM big ORDER BY k, id");
like($plan, qr/Custom Scan \(GpuSort\)/, 'the sort is a GpuSort');
my ($runs) = $plan =~ /Runs Written: (\d+)/;
cmp_ok($runs // 0, '>', 10, "it writes tens of runs (" . ($runs // 0) . ")");
like($plan, qr/Merge Passes: [2-9]/, 'and merges them in several passes');
is($node->safe_psql('postgres', $query), $native, 'spilled sort: same rows in the same order as Sort');
my $cursor = q{BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT k, id FROM big ORDER BY k, id;
MOVE LAST IN c;
FETCH BACKWARD 5 IN c;
FETCH ABSOLUTE 150000 IN c;
FETCH RELATIVE -3 IN c;
COMMIT;};
is($node->safe_psql('postgres', $cursor),
	$node->safe_psql('postgres', "SET gpusort.enabled = off; $cursor"),
	'SCROLL cursor over the spilled sort: same rows as Sort, backwards too');

# 2. log_temp_files and temp_tablespaces
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "SET temp_tablespaces = gs_temp; $query");
my $log = slurp_file($node->logfile, $offset);
my $logged = () = $log =~ /temporary file: path "pg_tblspc\/\d+\/[^"]*pgsql_tmp/g;
my $all_logged = () = $log =~ /temporary file: path/g;
is($logged, 1, "log_temp_files logged the runs' file, in the temp tablespace");
is($all_logged, 1, 'the tens of runs were one temporary file, as Sort\'s tapes are');
is(temp_files(), 0, 'no temporary file after the sort');

# 3. temp_file_limit
my ($ret, $stdout, $stderr) = $node->psql('postgres', "SET temp_file_limit = '1MB'; $query");
isnt($ret, 0, 'temp_file_limit: the query failed');
# (18 quotes the setting's name)
like($stderr, qr/temporary file size exceeds "?temp_file_limit"? \(1024kB\)/,
	'temp_file_limit: with PostgreSQL\'s own error');
is(temp_files(), 0, 'temp_file_limit: no temporary file left');
is($node->safe_psql('postgres', $query), $native, 'temp_file_limit: the next sort is right');

# 4. cancels while writing a run and while merging
for my $phase ('spill', 'merge')
{
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET gpusort.inject_fault = 'delay:$phase:60000'; SET statement_timeout = '2s'; $query");
	like($stderr, qr/canceling statement due to statement timeout/,
		"$phase: statement_timeout cancelled the sort");
	is(temp_files(), 0, "$phase: no temporary file left after statement_timeout");

	cancel_held($phase, '', $query, $native,
		$phase eq 'spill' ? 'writing a run' : 'merging', $phase eq 'merge');
}

# 5. runs written behind the load (gpusort.write_behind): 700k rows under
# 24 MB with two pool threads write runs of more than 128k records, which
# the threads write while the backend loads on
$node->safe_psql('postgres',
	'CREATE TABLE wb AS SELECT g AS id, hashint4(g) % 100000 AS k FROM generate_series(1, 700000) g; ANALYZE wb');
my $wb_setup = "SET gpusort.max_memory = '24MB'; SET gpusort.threads = 2;";
my $wb_query = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM (SELECT k, id FROM wb ORDER BY k, id) x};
my $wb_native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $wb_query");
$plan = $node->safe_psql('postgres',
	"$wb_setup EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF) SELECT k, id FROM wb ORDER BY k, id");
my ($behind) = $plan =~ /Runs Written Behind: (\d+)/;
cmp_ok($behind // 0, '>', 0, "write behind: runs written behind the load (" . ($behind // 0) . ")");
is($node->safe_psql('postgres', "$wb_setup $wb_query"), $wb_native,
	'write behind: same rows in the same order as Sort');
($ret, $stdout, $stderr) = $node->psql('postgres', "$wb_setup SET temp_file_limit = '2MB'; $wb_query");
like($stderr, qr/temporary file size exceeds "?temp_file_limit"? \(2048kB\)/,
	'write behind: temp_file_limit, with PostgreSQL\'s own error');
is(temp_files(), 0, 'write behind: temp_file_limit: no temporary file left');
cancel_held('spill', $wb_setup, $wb_query, $wb_native, 'while the pool threads write a run', 1);

# 6. values stored out of line, far larger than the budget: a merge
# detoasts each for its comparisons once, not twice at every comparison,
# so it reads no more of the TOAST table than PostgreSQL's Sort does (its
# shared buffers, in EXPLAIN (BUFFERS)).  The text is in a libc collation
# where the operating system has one, whose keys never decide a merge.
my $libc = $node->safe_psql('postgres', q{
SELECT quote_ident(collname) FROM pg_collation
 WHERE collprovider = 'c' AND collcollate ~* '^en_US\.utf-?8$' LIMIT 1});
diag('no en_US.UTF-8 locale: huge values are sorted in the default collation') if $libc eq '';
my $huge_collate = $libc eq '' ? '' : "COLLATE $libc";
$node->safe_psql('postgres', qq{
CREATE TABLE huge (id int, v text $huge_collate);
INSERT INTO huge SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
INSERT INTO huge SELECT 100000 + i, repeat(md5(i::text), (2 + i) * 1024 * 1024 / 32)
  FROM generate_series(1, 3) i;
ANALYZE huge});
my $huge_query = q{SELECT md5(string_agg(id::text || ':' || length(v), ',')) FROM (SELECT * FROM huge ORDER BY v, id) x};
my %huge_plan;
for my $setting ("SET gpusort.enabled = off; SET work_mem = '64kB';",
	"SET gpusort.max_memory = '64kB'; SET gpusort.min_rows = 0;")
{
	my $which = $setting =~ /enabled = off/ ? 'native' : 'gpusort';
	$huge_plan{$which} = $node->safe_psql('postgres',
		"$setting EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM huge ORDER BY v, id");
	$huge_plan{"$which rows"} = $node->safe_psql('postgres', "$setting $huge_query");
}
like($huge_plan{gpusort}, qr/GpuSort.*Merge Passes: [1-9]/s, 'huge values: GpuSort merged runs');
is($huge_plan{'gpusort rows'}, $huge_plan{'native rows'}, 'huge values: same rows in the same order as Sort');
my %huge_pages;
for my $which ('native', 'gpusort')
{
	# the sort node's first Buffers line: its own reads and its scan's
	my ($hit, $read) = $huge_plan{$which} =~ /(?:Sort|GpuSort)\b.*?Buffers: shared hit=(\d+)(?: read=(\d+))?/s;
	$huge_pages{$which} = ($hit // 0) + ($read // 0);
}
# At this budget a batch goes without keys, as Sort: it may read each of
# the three out-of-line values once more than Sort does (3 pages), where
# reading them at every comparison of the merge would read hundreds.
cmp_ok($huge_pages{gpusort}, '<=', $huge_pages{native} + 3,
	"huge values: GpuSort read $huge_pages{gpusort} shared pages, Sort $huge_pages{native}");

# 7. the log
$node->stop;
$log = slurp_file($node->logfile);
unlike($log, qr/leak|WARNING/, 'no leak or resource warning in the server log');
unlike($log, qr/terminated by signal|was terminated by|PANIC/, 'no backend crashed');

done_testing();

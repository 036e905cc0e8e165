# 014_temp_file_errors.pl: the errors of gpusort's temporary files name the
# file, as PostgreSQL's Sort's do.
#
# A file size limit (RLIMIT_FSIZE) is a real way to make a temporary file's
# write fail without a small file system: the postmaster ignores SIGXFSZ,
# so a write past the limit fails with EFBIG ("File too large") in every
# backend it starts.  The test lowers the postmaster's soft limit with
# prlimit(1) (the server and the test run as one user) to 4 MB, above
# the 1 MB WAL segments of this cluster, so that only the sorts' temporary
# files reach it, and sorts rows made on the fly (no table file grows):
#  1. PostgreSQL's Sort (gpusort.enabled = off): the error names its file;
#  2. GpuSort writing its runs in the backend (gpusort.write_behind = off;
#     a few times, the pool threads serializing the run's next slice as the
#     write fails) and behind it, in its pool threads (where the backend
#     reserves the run's extent, and the error is raised there): the same
#     error as Sort's, SQLSTATE and words, but for the file's number;
#  3. the same in a temporary tablespace (temp_tablespaces): the path is
#     the tablespace's, as Sort's is;
# then, without the limit:
#  4. a GpuSort held before its merge (an injected delay) whose runs' one
#     file is cut to nothing meanwhile: the merge's read fails, naming that
#     file;
#  5. after each error a new sort is right, no temporary file is left,
#     and no process crashed.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

plan skip_all => 'prlimit(1) is needed to set the server\'s file size limit'
  if system('prlimit --version >/dev/null 2>&1') != 0;

my $limit = 4 * 1024 * 1024;
my $node = gpusort_node('temp_files',
	init => { extra => [ '--wal-segsize=1' ] },
	conf => "allow_in_place_tablespaces = on\nmax_parallel_workers_per_gather = 0\n");
$node->safe_psql('postgres', "CREATE TABLESPACE gs_tmp LOCATION ''");
my $ts_oid = $node->safe_psql('postgres', q{SELECT oid FROM pg_tablespace WHERE spcname = 'gs_tmp'});

# 600000 rows of about 50 bytes: far more than the limit, in any sort's file
my $rows = q{SELECT g, md5(g::text) AS s FROM (SELECT generate_series(1, 600000) AS g) x};
my $sort = "SELECT count(*), md5(string_agg(s, ',')) FROM ($rows ORDER BY s) y";
# 1 MB for Sort; for GpuSort, a budget whose runs pass the limit, and hold
# more than the 128K records from which pool threads write them behind,
# but well below what Sort would need to sort the rows in memory (where
# GpuSort would sort them in memory too, without keys)
my $settings = q{\set VERBOSITY verbose
SET work_mem = '1MB';
SET gpusort.max_memory = '32MB';
SET gpusort.threads = 2;
};

# the first line of a verbose error (SQLSTATE and message), and the same
# with the file's number left out
sub error_of
{
	my ($what, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "$settings$sql");
	isnt($ret, 0, "$what: the sort fails");
	my ($line) = $err =~ /^(?:psql:\S+ )?(ERROR:  .*)$/m;
	$line //= $err;
	(my $shape = $line) =~ s/pgsql_tmp\d+\.\d+/pgsql_tmpPID.N/g;
	return ($line, $shape);
}

sub temp_files_left
{
	my @left;
	for my $dir ($node->data_dir . '/base/pgsql_tmp',
		glob($node->data_dir . "/pg_tblspc/$ts_oid/*/pgsql_tmp"))
	{
		push @left, glob("$dir/*") if -d $dir;
	}
	return scalar @left;
}

my $native_rows = $node->safe_psql('postgres', "SET gpusort.enabled = off; $sort");
like($native_rows, qr/^600000\|[0-9a-f]{32}$/, "PostgreSQL's Sort of the rows");
is($node->safe_psql('postgres', "$settings$sort"), $native_rows,
	'GpuSort gives the same, without the limit');
like($node->safe_psql('postgres', "$settings
SET gpusort.write_behind = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $rows ORDER BY s"),
	qr/Custom Scan \(GpuSort\).*Runs Written: [1-9]/s,
	'GpuSort writes runs at this budget');
like($node->safe_psql('postgres', "$settings
SET gpusort.write_behind = on;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $rows ORDER BY s"),
	qr/Runs Written Behind: [1-9]/, 'and writes them behind where asked');

# the postmaster's soft file size limit, inherited by the backends it
# starts from now on
my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
is(system('prlimit', '--pid', $postmaster, "--fsize=$limit:"), 0,
	"the postmaster's file size limit is lowered to $limit bytes");
like(`prlimit --pid $postmaster --fsize --output SOFT --noheadings`, qr/^\s*$limit\s*$/,
	'and it is in place');

# 1. PostgreSQL's Sort
my ($native, $native_shape) = error_of('Sort', "SET gpusort.enabled = off;\n$sort;");
like($native, qr{^ERROR:  \w{5}: could not write to file "base/pgsql_tmp/pgsql_tmp\d+\.\d+": File too large$},
	"Sort's error names its file: $native");

# 2. GpuSort, the backend writing its runs (while the pool threads
# serialize the next slice of the run: a few times, since the error must
# not leave them reading a stack or buffers it unwound), then its threads
my ($gpu, $gpu_shape);
for my $try (1 .. 4)
{
	($gpu, $gpu_shape) = error_of("GpuSort writing in the backend ($try)",
		"SET gpusort.write_behind = off;\n$sort;");
	is($gpu_shape, $native_shape, "GpuSort's error is Sort's, but for the file ($try): $gpu");
}
($gpu, $gpu_shape) = error_of('GpuSort writing behind', "SET gpusort.write_behind = on;\n$sort;");
is($gpu_shape, $native_shape, "GpuSort's error writing behind is Sort's too: $gpu");

# 3. in a temporary tablespace
my ($native_ts, $native_ts_shape) = error_of('Sort in gs_tmp',
	"SET temp_tablespaces = gs_tmp;\nSET gpusort.enabled = off;\n$sort;");
like($native_ts, qr{could not write to file "pg_tblspc/$ts_oid/PG_[^/]+/pgsql_tmp/pgsql_tmp\d+\.\d+": File too large$},
	"in gs_tmp, Sort's error names its file there: $native_ts");
my ($gpu_ts, $gpu_ts_shape) = error_of('GpuSort in gs_tmp',
	"SET temp_tablespaces = gs_tmp;\nSET gpusort.write_behind = off;\n$sort;");
is($gpu_ts_shape, $native_ts_shape, "in gs_tmp, GpuSort's error is Sort's: $gpu_ts");

is(system('prlimit', '--pid', $postmaster, '--fsize=unlimited:'), 0,
	"the postmaster's file size limit is lifted");
is($node->safe_psql('postgres', "$settings$sort"), $native_rows,
	'after the errors, a GpuSort is right');
is(temp_files_left(), 0, 'no temporary file is left');

# 4. a read that finds its run file cut short
my $offset = -s $node->logfile;
my $session = GpuSortSession->new($node);
my ($pid) = $session->wait($session->send('SELECT pg_backend_pid();'));
chomp $pid;
my $m = $session->send("$settings
SET gpusort.inject_fault = 'delay:merge:5000';
$sort;");
$node->wait_for_log(qr/injected delay of 5000 ms in the merge phase/, $offset);
my @runs = glob($node->data_dir . "/base/pgsql_tmp/pgsql_tmp$pid.*");
is(scalar @runs, 1, 'the held sort wrote its runs, all in one file');
truncate($_, 0) or die "could not truncate $_: $!" for @runs;
my ($out, $err) = $session->wait($m, 1);
my %cut = map { (m{(base/pgsql_tmp/[^/]+)$})[0] => 1 } @runs;
my ($read_error, $named) = $err =~ /^(ERROR:  \w{5}: could not read from file "([^"]+)": .*)$/m;
like($read_error // $err,
	qr{^ERROR:  XX001: could not read from file "base/pgsql_tmp/pgsql_tmp$pid\.\d+": unexpected end of file$},
	'the merge says which file ended early');
ok(defined $named && $cut{$named},
	'and that file is the one cut short (' . ($named // 'none') . ')');
$session->finish;

# 5. right afterwards, nothing left behind
is($node->safe_psql('postgres', "$settings$sort"), $native_rows, 'then a GpuSort is right');
is(temp_files_left(), 0, 'no temporary file is left');

$node->stop;
unlike(slurp_file($node->logfile), qr/terminated by signal|PANIC/, 'no process crashed');
done_testing();

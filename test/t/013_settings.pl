# 013_settings.pl: docs/settings.md against the server's own pg_settings.
#
# docs/settings.md has one table of every gpusort.* setting,
#
#   | Name | Default | Unit | Range | Context | Who may set it |
#
# Name the setting in backticks; Default its boot_val; Unit its unit (empty
# for none); Range "min..max" (or "min–max") for an integer, the enum
# values joined by ", " for an enum, empty for a bool or a string; Context
# its context.  A cell may be wrapped in backticks, which are not part of
# its value.  With gpusort preloaded (so that the GPU service's server-start
# settings exist too), every row must match pg_settings, field by field, and
# every gpusort.* setting in pg_settings must have a row: a setting added,
# removed or changed in src/ without the page fails here.
#
# Then gpusort.gpu_devices' check, on values from postgresql.conf.
#
# test/run.sh copies docs/ beside test/ in its work directory; TESTDIR is
# that copy's test/ (without it, the script's own test/).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $testdir = $ENV{TESTDIR} // "$FindBin::RealBin/..";
my $page = "$testdir/../docs/settings.md";
my @columns = ('Name', 'Default', 'Unit', 'Range', 'Context', 'Who may set it');

# a cell's value: trimmed, without the backticks around it
sub cell
{
	my ($text) = @_;
	$text =~ s/^\s+|\s+$//g;
	$text =~ s/^`(.*)`$/$1/;
	return $text;
}

# --- the page's table ---------------------------------------------------------
ok(-f $page, "docs/settings.md is there ($page)")
  or BAIL_OUT("no $page");
open(my $fh, '<:encoding(UTF-8)', $page) or die "$page: $!";
my @lines = <$fh>;
close $fh;
chomp @lines;

my $header = join(' | ', @columns);
my @at = grep { $lines[$_] =~ /^\|\s*Name\s*\|/ } 0 .. $#lines;
is(scalar @at, 1, 'one settings table on the page');
my $start = $at[0] // $#lines + 1;
my @head = map { cell($_) } split /\|/, ($lines[$start] // '') =~ s/^\s*\||\|\s*$//gr;
is(join(' | ', @head), $header, 'its columns, in order');
like($lines[ $start + 1 ] // '', qr/^\|(\s*:?-+:?\s*\|){6}\s*$/, 'the separator row under them');

my %doc;
my $rows = 0;
for (my $i = $start + 2; $i <= $#lines && $lines[$i] =~ /^\s*\|/; $i++)
{
	my $line = $lines[$i];
	my @cells = map { cell($_) } split /\|/, $line =~ s/^\s*\||\|\s*$//gr, -1;
	$rows++;
	is(scalar @cells, scalar @columns, "row $rows has six cells: $line")
	  or next;
	my %row;
	@row{@columns} = @cells;
	my $name = $row{Name};
	like($lines[$i], qr/^\|\s*`\Q$name\E`\s*\|/, "$name: named in backticks");
	ok(!exists $doc{$name}, "$name: one row");
	$doc{$name} = \%row;
}
cmp_ok($rows, '>=', 1, "the table has rows ($rows)");

# --- the server's settings ----------------------------------------------------
my $node = gpusort_node('settings');
my $json = $node->safe_psql('postgres', q{
SELECT json_agg(s ORDER BY name) FROM (
  SELECT name, boot_val, unit, min_val, max_val, enumvals, context
    FROM pg_settings WHERE name LIKE 'gpusort.%') s});
my %server = map { $_->{name} => $_ } @{ decode_json($json) };
cmp_ok(scalar keys %server, '>=', 1,
	'pg_settings has gpusort.* settings (' . scalar(keys %server) . ')');

# --- each side against the other ---------------------------------------------
for my $name (sort keys %server)
{
	ok(exists $doc{$name}, "$name: in pg_settings and on the page");
}
for my $name (sort keys %doc)
{
	ok(exists $server{$name}, "$name: on the page and in pg_settings");
}

for my $name (sort grep { exists $server{$_} } keys %doc)
{
	my $s = $server{$name};
	my $d = $doc{$name};

	is($d->{Default}, $s->{boot_val} // '', "$name: Default");
	is($d->{Unit}, $s->{unit} // '', "$name: Unit");
	is($d->{Context}, $s->{context}, "$name: Context");

	# Range: min..max for a number, the values for an enum, else nothing
	my $range = $d->{Range};
	if (defined $s->{enumvals})
	{
		is($range, join(', ', @{ $s->{enumvals} }), "$name: Range (enum values)");
	}
	elsif (defined $s->{min_val} || defined $s->{max_val})
	{
		my ($min, $max) = $range =~ /^(\S+?)\s*(?:\.\.|\x{2013})\s*(\S+)$/;
		is($min, $s->{min_val}, "$name: Range, least value");
		is($max, $s->{max_val}, "$name: Range, greatest value");
	}
	else
	{
		is($range, '', "$name: Range (none)");
	}
	isnt($d->{'Who may set it'}, '', "$name: who may set it");
}

# --- gpusort.gpu_devices from postgresql.conf --------------------------------
# Its check runs as the library loads (sql/195_settings.sql tries it with
# ALTER SYSTEM): a list is kept in one spelling, which the GPU service
# reads; a bad value is refused at a reload, the running one kept, and at
# a start draws a WARNING, the default applying.
$node->append_conf('postgresql.conf', "gpusort.gpu_devices = ' 0 , 2 '");
$node->restart;
is($node->safe_psql('postgres', 'SHOW gpusort.gpu_devices'),
	'0,2', 'gpu_devices: a list from postgresql.conf, in one spelling');
$node->append_conf('postgresql.conf', "gpusort.gpu_devices = 'abc'");
my $log_at = -s $node->logfile;
$node->reload;
$node->wait_for_log(qr/invalid value for parameter "gpusort.gpu_devices": "abc"/, $log_at);
is($node->safe_psql('postgres', 'SHOW gpusort.gpu_devices'),
	'0,2', 'gpu_devices: a bad value at a reload is refused');
$log_at = -s $node->logfile;
$node->restart;
is($node->safe_psql('postgres', 'SHOW gpusort.gpu_devices'),
	'all', 'gpu_devices: a bad value at a start leaves the default');
my $log = substr(slurp_file($node->logfile), $log_at);
like($log, qr/WARNING:  invalid value for parameter "gpusort.gpu_devices": "abc"/,
	'gpu_devices: the start warns of the bad value');
like($log, qr/DETAIL:  "abc" is not a device number/, 'gpu_devices: and says why');

$node->stop;
done_testing();

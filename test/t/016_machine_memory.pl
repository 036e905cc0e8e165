# 016_machine_memory.pl: the memory the default budgets are taken from is
# the machine's physical memory or, where the server's cgroup has a lower
# limit, that limit; gpusort_info() says which, and why.
#
# A test cannot put the server in a cgroup of its own without privileges,
# so how the limit is found in /proc/self/cgroup, /proc/self/mountinfo and
# the limit files is checked on files of its own by test/cgroup; here the
# server, as it runs on this machine:
#  1. gpusort_info()'s memory names physical memory, or a cgroup limit
#     below it, with figures that are the machine's: physical memory as
#     /proc/meminfo gives it, a limit as the file it names holds it (a
#     cgroup v2 memory.max or v1 memory.limit_in_bytes, of the server's
#     own cgroup or an ancestor: /proc/PID/cgroup of the postmaster); a
#     file named where there is no limit holds none ("max", or v1's
#     unlimited);
#  2. gpusort.server_memory = -1 is half of that memory, to the byte
#     (gpusort_stat's sort memory limit).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

plan skip_all => 'Linux only (/proc/meminfo)' unless -r '/proc/meminfo';

my $node = gpusort_node('machine_memory', conf => "gpusort.server_memory = -1\n");
$node->safe_psql('postgres', 'CREATE EXTENSION gpusort');
my $memory = $node->safe_psql('postgres', 'SELECT memory FROM gpusort_info()');
note "gpusort_info() memory: $memory";

my ($mem_total_kb) = slurp_file('/proc/meminfo') =~ /^MemTotal:\s+(\d+) kB/m;
my $physical = $mem_total_kb * 1024;
my $gb = sub { sprintf('%.1f', $_[0] / 1024**3) };

# the postmaster's cgroup paths (v1 memory hierarchy, v2)
my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
my $proc_cgroup = -r "/proc/$postmaster/cgroup" ? slurp_file("/proc/$postmaster/cgroup") : '';
my ($v1_path) = $proc_cgroup =~ /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/m;
my ($v2_path) = $proc_cgroup =~ /^0::(.*)$/m;

# a limit file's bytes; 0 for none
sub limit_of
{
	my ($file) = @_;
	my $text = slurp_file($file);
	chomp $text;
	return 0 if $text eq 'max' || ($text =~ /^\d+$/ && $text >= 2**62);
	return $text;
}

# the file is a limit file of the version, of the server's cgroup or of an
# ancestor: its directory ends with the cgroup's path or a leading part of
# it, or is where that hierarchy is mounted
sub names_own_cgroup
{
	my ($version, $file) = @_;
	my ($dir, $base) = $file =~ m{^(.*)/([^/]+)$};
	my $path = $version == 1 ? $v1_path : $v2_path;
	return 0 unless defined $path && -r $file;
	return 0 unless $base eq ($version == 1 ? 'memory.limit_in_bytes' : 'memory.max');
	my @parts = grep { $_ ne '' } split m{/}, $path;
	for my $n (reverse 1 .. scalar @parts)
	{
		my $tail = '/' . join('/', @parts[ 0 .. $n - 1 ]);
		return 1 if $dir =~ m{\Q$tail\E$};
	}
	my $mountinfo = slurp_file("/proc/$postmaster/mountinfo");
	for my $line (split /\n/, $mountinfo)
	{
		my @f = split / /, $line;
		my ($type, $super) = $line =~ / - (\S+) \S+ (\S+)$/;
		next unless defined $type;
		return 1 if $f[4] eq $dir
		  && ($version == 2 ? $type eq 'cgroup2' : $type eq 'cgroup' && $super =~ /(^|,)memory(,|$)/);
	}
	return 0;
}

my $base;
if ($memory =~ /^cgroup v([12]) limit ([\d.]+) GB \((\S+)\), below physical memory ([\d.]+) GB$/)
{
	my ($version, $limit_gb, $file, $physical_gb) = ($1, $2, $3, $4);
	ok(names_own_cgroup($version, $file), "the limit's file is of the server's cgroup: $file");
	$base = limit_of($file);
	cmp_ok($base, '>', 0, "it holds a limit ($base bytes)");
	cmp_ok($base, '<', $physical, 'below physical memory');
	is($limit_gb, $gb->($base), 'the limit as the file holds it');
	is($physical_gb, $gb->($physical), 'physical memory as /proc/meminfo gives it');
}
elsif ($memory =~ /^physical memory ([\d.]+) GB(.*)$/)
{
	my ($physical_gb, $rest) = ($1, $2);
	$base = $physical;
	is($physical_gb, $gb->($physical), 'physical memory as /proc/meminfo gives it');
	if ($rest =~ /^, below the cgroup v([12]) limit ([\d.]+) GB \((\S+)\)$/)
	{
		my ($version, $limit_gb, $file) = ($1, $2, $3);
		ok(names_own_cgroup($version, $file), "the limit's file is of the server's cgroup: $file");
		cmp_ok(limit_of($file), '>=', $physical, 'its limit is above physical memory');
		is($limit_gb, $gb->(limit_of($file)), 'the limit as the file holds it');
	}
	elsif ($rest =~ /^; no cgroup v([12]) limit \((\S+)\)$/)
	{
		my ($version, $file) = ($1, $2);
		ok(names_own_cgroup($version, $file), "the file is of the server's cgroup: $file");
		is(limit_of($file), 0, 'and sets no limit');
	}
	else
	{
		like($rest, qr/^; no cgroup (v[12] memory limit|memory controller found)$/,
			'or no cgroup limit is found, and it says so');
	}
}
else
{
	fail("gpusort_info()'s memory says what it is: $memory");
}

SKIP:
{
	skip 'the memory is unknown', 1 unless defined $base;
	is($node->safe_psql('postgres',
			q{SELECT value FROM gpusort_stat WHERE detail = 'sort memory limit'}),
		int($base / 2), 'gpusort.server_memory = -1 is half of it');
}

$node->stop;
done_testing();

# GpuSortNode.pm: the server every gpusort TAP test starts.
#
# gpusort_node(NAME, preload => 0|1, conf => 'more lines') initializes and
# starts a PostgreSQL::Test::Cluster with gpusort preloaded (unless
# preload => 0), GpuSort for every sort (gpusort.min_rows = 0) on the engine
# given in $ENV{GPUSORT_ENGINE} (default cpu), serial plans and no JIT,
# and the lines of $ENV{GPUSORT_TAP_CONF} (test/run.sh's GPUSORT_SPILL).
# big_table(NODE, ROWS) creates the table big(id, k, s, f) the tests sort.
# GpuSortSession->new(NODE) is a psql session kept open, for the tests that
# interrupt what it runs: send(SQL) returns a marker, wait(MARKER,
# WANT_ERR) its output and errors once it has run that far.
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

package GpuSortSession;

use IPC::Run;
use PostgreSQL::Test::Utils;

sub new
{
	my ($class, $node) = @_;
	my $self = bless { in => '', out => '', err => '', mark => 0 }, $class;
	$self->{timer} = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
	$self->{h} = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres') ],
		'<', \$self->{in}, '>', \$self->{out}, '2>', \$self->{err}, $self->{timer});
	return $self;
}

# send sql to the session; returns the marker that follows it
sub send
{
	my ($self, $sql) = @_;
	my $m = ++$self->{mark};
	($self->{out}, $self->{err}) = ('', '');
	$self->{in} .= "$sql\n\\echo MARK$m\n";
	$self->{h}->pump_nb while length $self->{in};
	return $m;
}

# wait for the session to have run up to the marker (and, if want_err, to
# have written an error); returns its output and errors
sub wait
{
	my ($self, $m, $want_err) = @_;
	$self->{timer}->start($PostgreSQL::Test::Utils::timeout_default);
	$self->{h}->pump
	  until $self->{out} =~ /MARK$m\n/ && (!$want_err || $self->{err} =~ /\n/);
	(my $o = $self->{out}) =~ s/MARK$m\n//;
	return ($o, $self->{err});
}

sub pump_nb
{
	my ($self) = @_;
	$self->{h}->pump_nb;
	return;
}

sub finish
{
	my ($self) = @_;
	$self->{in} .= "\\q\n";
	$self->{h}->finish;
	return;
}

# wait for the session's psql to exit once its backend has been terminated
# in a query: psql sees the connection gone and exits on its own, perhaps
# before anything more could be written to it
sub lost
{
	my ($self) = @_;
	$self->{in} = '';
	eval { $self->{h}->finish; };
	return;
}

1;

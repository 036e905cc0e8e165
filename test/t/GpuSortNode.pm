# GpuSortNode.pm: the server every gpusort TAP test starts.
#
# gpusort_node(NAME, preload => 0|1, conf => 'more lines', init => {...})
# initializes and starts a PostgreSQL::Test::Cluster with gpusort preloaded
# (unless preload => 0), GpuSort for every sort (gpusort.min_rows = 0) on the
# engine given in $ENV{GPUSORT_ENGINE} (default cpu), serial plans and no
# JIT, and the lines of $ENV{GPUSORT_TAP_CONF} (test/run.sh's GPUSORT_SPILL);
# init's pairs go to the cluster's init (allows_streaming => 1 for a primary).
# big_table(NODE, ROWS[, DB]) creates the table big(id, k, s, f) the tests
# sort, in DB (default postgres).
# timed_psql(NODE, DB, SQL, SECS, LATE) runs SQL in a psql of its own and
# times it: for what must not hang, with a way to go on when it does.
# GpuSortSession->new(NODE[, DB[, USER]]) is a psql session kept open, for the tests
# that interrupt what it runs: send(SQL) returns a marker, wait(MARKER,
# WANT_ERR) its output and errors once it has run that far, ran(MARKER)
# whether it has, without waiting.
package GpuSortNode;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();
use Time::HiRes qw(usleep time);

our @EXPORT = qw(gpusort_engine gpusort_node big_table timed_psql);

sub gpusort_engine
{
	return $ENV{GPUSORT_ENGINE} || 'cpu';
}

sub gpusort_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $engine = gpusort_engine();

	$node->init(%{ $opt{init} // {} });
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
	my ($node, $rows, $db) = @_;
	$node->safe_psql($db // 'postgres', qq{
CREATE TABLE big AS
  SELECT g AS id, hashint4(g) % 100000 AS k, md5(g::text) AS s,
         (hashint4(g + 1) % 1000)::float8 / 7 AS f
    FROM generate_series(1, $rows) g;
ANALYZE big;
});
	return;
}

# timed_psql(NODE, DB, SQL, SECS, LATE): runs SQL (a psql script, which
# stops at its first error) in a psql of its own, connected to DB.  If it
# has not ended after SECS seconds, LATE->() (if given) is called about once
# a second until it does, for at most SECS seconds more: a test can release
# there what held it up, so that it fails for the hang but still goes on
# (psql is killed if it is still running then).  Returns the seconds it
# took (SECS when it took longer), whether it ended within SECS, and whether
# psql succeeded, its output and its errors.
sub timed_psql
{
	my ($node, $db, $sql, $secs, $late) = @_;
	my ($out, $err) = ('', '');
	my $script = PostgreSQL::Test::Utils::tempdir() . '/timed.sql';
	PostgreSQL::Test::Utils::append_to_file($script, "$sql\n");
	my $t0 = time();
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-f', $script ],
		'<', '/dev/null', '>', \$out, '2>', \$err);
	my $ended = sub {
		$h->pump_nb if $h->pumpable;
		return !$h->pumpable;
	};
	until ($ended->() || time() - $t0 > $secs)
	{
		usleep(20_000);
	}
	my $took = time() - $t0;
	my $in_time = $took <= $secs;
	$took = $secs unless $in_time;
	if (!$in_time)
	{
		my $next_late = 0;
		until ($ended->() || time() - $t0 > 2 * $secs)
		{
			if ($late && time() >= $next_late)
			{
				$late->();
				$next_late = time() + 1;
			}
			usleep(50_000);
		}
		$h->kill_kill unless $ended->();
	}
	my $ok = eval { $h->finish } ? 1 : 0;
	return ($took, $in_time, $ok, $out, $err);
}

package GpuSortSession;

use IPC::Run;
use PostgreSQL::Test::Utils;

sub new
{
	my ($class, $node, $db, $user) = @_;
	my $self = bless { in => '', out => '', err => '', mark => 0 }, $class;
	my $connstr = $node->connstr($db // 'postgres') . (defined $user ? " user=$user" : '');
	$self->{timer} = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
	$self->{h} = IPC::Run::start([ 'psql', '-XAtq', '-d', $connstr ],
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

# whether the session has run up to the marker, without waiting for it
sub ran
{
	my ($self, $m) = @_;
	$self->{h}->pump_nb;
	return $self->{out} =~ /MARK$m\n/ ? 1 : 0;
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

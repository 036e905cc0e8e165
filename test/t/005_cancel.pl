# 005_cancel.pl: cancelling and terminating a GpuSort in each of its phases.
#
# gpusort.inject_fault = 'delay:PHASE:60000' holds a sort for a minute as it
# enters PHASE (load, encode, sort, resolve, emit) and logs "injected delay
# ... in the PHASE phase", so that an interrupt lands in that phase, not
# just somewhere in the query.  Checked:
#  1. in one session, for every phase, twice: statement_timeout (at least
#     2 s, and three times what the whole query takes undelayed here plus a
#     second, so that the sort reaches the phase even on a busy machine with
#     every sort spilling; where it still fired before the phase, it is
#     tried again, twice as long, up to 48 s) and pg_cancel_backend() end
#     the query at once with the usual error, in that phase (the log line
#     of the session's pid), and the same session then sorts correctly
#     (compared with PostgreSQL's Sort) -- 20 cancels in all;
#  2. for every phase, pg_terminate_backend() of another session caught in
#     its delay: its client is told, the server does not restart, and the
#     first session still sorts correctly -- 5 terminations;
#  3. the server log has no leak or resource WARNING and no crash;
#  4. on a GPU (gpusort.engine = gpu and nvidia-smi present) the GPU's used
#     memory comes back to what it was before (within 64 MiB); skipped
#     elsewhere.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $engine = gpusort_engine();
my $node = gpusort_node('cancel', conf => "gpusort.gpu_min_rows = 0\n");
big_table($node, 300000);
my $check = q{SELECT md5(string_agg(k || ':' || id, ',')), count(*) FROM (SELECT k, id FROM big ORDER BY k DESC, id) x};
my $native = $node->safe_psql('postgres', "SET gpusort.enabled = off; $check");
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $query = q{SELECT count(*), sum(k) FROM (SELECT k, s FROM big ORDER BY k) x};
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) $query"), qr/Custom Scan \(GpuSort\)/,
	'the query is a GpuSort');
my @phases = qw(load encode sort resolve emit);

# GPU memory in use (MiB), where there is a GPU to look at; else undef
sub gpu_used_mib
{
	return undef if $engine ne 'gpu';
	my $smi = `nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null`;
	return ($? == 0 && $smi =~ /^\s*(\d+)/) ? $1 : undef;
}

# GPU memory in use once it has settled at most $limit MiB: a process that
# exits gives its CUDA context back to the driver a moment later, so poll
sub gpu_used_settled_mib
{
	my ($limit) = @_;
	my $used = gpu_used_mib();
	for (my $i = 0; $i < 100 && defined $used && $used > $limit; $i++)
	{
		usleep(200_000);
		$used = gpu_used_mib();
	}
	return $used;
}

# wait until the server log, from offset on, matches re
sub wait_for_log
{
	my ($re, $offset, $pump) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		$pump->() if $pump;
		return 1 if slurp_file($node->logfile, $offset) =~ $re;
		usleep(20_000);
	}
	return 0;
}

# the session that is cancelled again and again
my $session = GpuSortSession->new($node);
sub session_send { return $session->send(@_) }
sub session_wait { return $session->wait(@_) }

my ($pid) = session_wait(session_send('SELECT pg_backend_pid();'));
chomp $pid;
like($pid, qr/^\d+$/, 'session started');
my ($result) = session_wait(session_send("$check;"));
is($result, "$native\n", 'the session sorts correctly');

# statement_timeout must outlast the way to the last phase, which with every
# sort spilling and a busy machine can take more than the 2 s that suffice
# elsewhere; and must stay well under the 20 s allowed for "at once"
my $undelayed = 0;
for (1 .. 2)
{
	my $t0 = time();
	session_wait(session_send("$query;"));
	my $secs = time() - $t0;
	$undelayed = $secs if $secs > $undelayed;
}
my $timeout_ms = int(1000 * (3 * $undelayed + 1));
$timeout_ms = 2000 if $timeout_ms < 2000;
$timeout_ms = 12000 if $timeout_ms > 12000;
note sprintf("the query takes %.2f s undelayed; statement_timeout = %d ms", $undelayed, $timeout_ms);
my $gpu_baseline = gpu_used_mib();
note "GPU memory used after the first sort: $gpu_baseline MiB" if defined $gpu_baseline;

# 1. statement_timeout and pg_cancel_backend in every phase, twice
my $cancels = 0;
for my $round (1 .. 2)
{
	for my $phase (@phases)
	{
		for my $how ('statement_timeout', 'pg_cancel_backend')
		{
			my $held = qr/\[$pid\] .*injected delay of 60000 ms in the $phase phase/;
			my ($offset, $t0, $o, $e);
			# at once: before the delay would have ended, and for
			# statement_timeout within 8 s of its firing
			my $at_once = 20;
			if ($how eq 'statement_timeout')
			{
				# a timeout that fired before the sort reached the phase (a
				# load spike past what the undelayed runs measured) proves
				# nothing: it is tried again, twice as long, up to 48 s
				for (my $t_ms = $timeout_ms;; $t_ms *= 2)
				{
					$t_ms = 48000 if $t_ms > 48000;
					$offset = -s $node->logfile;
					$t0 = time();
					($o, $e) = session_wait(session_send(
						"SET gpusort.inject_fault = 'delay:$phase:60000';\n"
						  . "SET statement_timeout = '${t_ms}ms';\n$query;\n"
						  . "RESET statement_timeout;\nRESET gpusort.inject_fault;"), 1);
					$at_once = $t_ms / 1000 + 8;
					last if $t_ms >= 48000 || slurp_file($node->logfile, $offset) =~ $held;
					note "$phase, round $round: statement_timeout of $t_ms ms fired before the $phase phase";
				}
				like($e, qr/canceling statement due to statement timeout/,
					"$phase, round $round: statement_timeout cancelled the sort");
			}
			else
			{
				$offset = -s $node->logfile;
				$t0 = time();
				my $m = session_send("SET gpusort.inject_fault = 'delay:$phase:60000';\n"
					  . "$query;\nRESET gpusort.inject_fault;");
				ok(wait_for_log($held, $offset, sub { $session->pump_nb }),
					"$phase, round $round: the sort is held in its $phase phase");
				is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't',
					"$phase, round $round: pg_cancel_backend");
				($o, $e) = session_wait($m, 1);
				like($e, qr/canceling statement due to user request/,
					"$phase, round $round: the sort was cancelled");
			}
			my $secs = time() - $t0;
			cmp_ok($secs, '<', $at_once, "$phase, round $round: $how took effect at once ($secs s)");
			like(slurp_file($node->logfile, $offset), $held,
				"$phase, round $round: $how landed in the $phase phase");
			unlike($o, qr/\d/, "$phase, round $round: no result");
			($result) = session_wait(session_send("$check;"));
			is($result, "$native\n", "$phase, round $round: after $how the same session sorts correctly");
			$cancels++;
		}
	}
}
note "$cancels cancels";
SKIP:
{
	skip 'no GPU memory to look at (engine is not gpu, or no nvidia-smi)', 1
	  unless defined $gpu_baseline;
	my $used = gpu_used_mib();
	cmp_ok($used, '<=', $gpu_baseline + 64,
		"GPU memory after $cancels cancels: $used MiB (was $gpu_baseline MiB)");
}

# 2. pg_terminate_backend of a session held in each phase
my $terminations = 0;
for my $phase (@phases)
{
	my $offset = -s $node->logfile;
	my ($tin, $tout, $terr) =
	  ("SET gpusort.inject_fault = 'delay:$phase:60000';\n$query;\n", '', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres') . " application_name=gs_terminate" ],
		'<', \$tin, '>', \$tout, '2>', \$terr);
	my $tpid;
	ok(wait_for_log(qr/\[(\d+)\] gs_terminate .*injected delay of 60000 ms in the $phase phase/,
			$offset, sub { $h->pump_nb }),
		"terminate, $phase: the other session's sort is held in its $phase phase");
	($tpid) = slurp_file($node->logfile, $offset)
	  =~ /\[(\d+)\] gs_terminate .*injected delay of 60000 ms in the $phase phase/;
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($tpid, 10000)"), 't',
		"terminate, $phase: pg_terminate_backend");
	$h->finish;
	like($terr, qr/terminating connection due to administrator command/,
		"terminate, $phase: the client was told why");
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $tpid"), '0',
		"terminate, $phase: the backend is gone");
	($result) = session_wait(session_send("$check;"));
	is($result, "$native\n", "terminate, $phase: the first session still sorts correctly");
	$terminations++;
}
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
	'the server never restarted');
is($node->safe_psql('postgres', $check), $native, 'a new session sorts correctly');
SKIP:
{
	skip 'no GPU memory to look at (engine is not gpu, or no nvidia-smi)', 1
	  unless defined $gpu_baseline;
	my $used = gpu_used_settled_mib($gpu_baseline + 64);
	cmp_ok($used, '<=', $gpu_baseline + 64,
		"GPU memory after $terminations terminations: $used MiB (was $gpu_baseline MiB)");
}

$session->finish;

# 3. the log: every delay, no leak, no crash
$node->stop;
my $log = slurp_file($node->logfile);
my $delays = () = $log =~ /injected delay of 60000 ms/g;
is($delays, $cancels + $terminations, "$delays interrupted delays logged");
unlike($log, qr/leak|WARNING/, 'no leak or resource warning in the server log');
unlike($log, qr/terminated by signal|was terminated by|PANIC|reinitializ/, 'no backend crashed');

done_testing();

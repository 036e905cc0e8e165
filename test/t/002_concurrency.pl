# 002_concurrency.pl: several sessions sorting with GpuSort at once.
#
# Six psql sessions are started together, each running a mix of big
# ORDER BYs (int keys, text keys with comparators, DESC, a merge join, a
# sort spilling runs past gpusort.max_memory) several times; every
# result must be the native one (digests of the whole ordered output,
# computed beforehand with gpusort.enabled = off).  Then pgbench runs the
# same kind of query from 4 clients, each run checked inside the server by
# a function that raises an error on a wrong order.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('concurrency', conf => "max_connections = 30\n");
big_table($node, 200000);

# the queries, each reduced to a digest of its ordered output
my @queries = (
	q{SELECT md5(string_agg(k || ':' || id, ',')) FROM (SELECT k, id FROM big ORDER BY k, id) x},
	q{SELECT md5(string_agg(s, ',')) FROM (SELECT s FROM big ORDER BY s DESC) x},
	q{SELECT md5(string_agg(f || ':' || k || ':' || id, ',')) FROM (SELECT f, k, id FROM big ORDER BY f, k DESC, id) x},
	q{SELECT md5(string_agg(left(s, 2) || ':' || id, ',')) FROM (SELECT s, id FROM big ORDER BY left(s, 2) COLLATE "C", id DESC) x},
	q{SET enable_hashjoin = off; SET enable_nestloop = off;
	  SELECT md5(string_agg(a.k || ':' || a.id || ':' || b.id, ',' ORDER BY a.k, a.id, b.id))
	    FROM (SELECT * FROM big WHERE id <= 30000) a JOIN (SELECT * FROM big WHERE id > 170000) b ON a.k = b.k;
	  RESET enable_hashjoin; RESET enable_nestloop},
	q{SET gpusort.max_memory = '1MB';
	  SELECT md5(string_agg(k || ':' || id, ',')) FROM (SELECT k, id FROM big WHERE id % 2 = 0 ORDER BY k DESC, id) x;
	  RESET gpusort.max_memory},
);

# native digests
my @expected;
for my $q (@queries)
{
	my $d = $node->safe_psql('postgres', "SET gpusort.enabled = off; $q");
	like($d, qr/^[0-9a-f]{32}$/, 'native digest');
	push @expected, $d;
}

# and each query does use GpuSort
for my $i (0 .. $#queries)
{
	(my $q = $queries[$i]) =~ s/(SELECT md5)/EXPLAIN (COSTS OFF) $1/;
	my $plan = $node->safe_psql('postgres', $q);
	like($plan, qr/Custom Scan \(GpuSort\)/, "query $i is planned with GpuSort");
}

# six sessions at once, each running every query three times in its own order
my $nsessions = 6;
my $rounds = 3;
my @runs;
my $connstr = $node->connstr('postgres');
my $tmp = PostgreSQL::Test::Utils::tempdir();
for my $s (0 .. $nsessions - 1)
{
	my @order;
	for my $r (0 .. $rounds - 1)
	{
		push @order, map { ($_ + $s + $r) % @queries } 0 .. $#queries;
	}
	my $script = join('', map { "\\echo q$_\n$queries[$_];\n" } @order);
	# files, not pipes: every psql runs on its own, without being pumped
	append_to_file("$tmp/session$s.sql", $script);
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $connstr, '-f', "$tmp/session$s.sql" ],
		'>', "$tmp/session$s.out", '2>', "$tmp/session$s.err");
	push @runs, { h => $h, out => "$tmp/session$s.out", err => "$tmp/session$s.err", order => \@order };
}
# they do run at once: at least three seen sorting together
ok($node->poll_query_until('postgres',
		qq{SELECT count(*) >= 3 FROM pg_stat_activity
		    WHERE query LIKE '%md5(string_agg%' AND state = 'active' AND pid <> pg_backend_pid()}),
	'several sessions sort at the same time');
for my $s (0 .. $#runs)
{
	my $run = $runs[$s];
	ok($run->{h}->finish, "session $s finished without error") or diag slurp_file($run->{err});
	is(slurp_file($run->{err}), '', "session $s: no error output");
	my @lines = split /\n/, slurp_file($run->{out});
	my ($good, $bad) = (0, 0);
	while (@lines)
	{
		my $label = shift @lines;
		my $digest = shift @lines;
		my ($qi) = $label =~ /^q(\d+)$/;
		if (defined $qi && defined $digest && $digest eq $expected[$qi]) { $good++ }
		else { $bad++; diag "session $s: $label gave " . ($digest // 'nothing'); }
	}
	is($good, scalar @{ $run->{order} }, "session $s: every result equals the native one");
	is($bad, 0, "session $s: no wrong result");
}

# pgbench: 4 clients, each transaction checked by the server itself
$node->safe_psql('postgres', q{
CREATE FUNCTION check_sorted(lo int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  prev_k int;
  prev_id int;
  n int := 0;
  r record;
BEGIN
  FOR r IN SELECT k, id FROM big WHERE id >= lo ORDER BY k DESC, id LOOP
    IF prev_k IS NOT NULL AND (r.k > prev_k OR (r.k = prev_k AND r.id <= prev_id)) THEN
      RAISE EXCEPTION 'out of order at row %: (%, %) after (%, %)', n, r.k, r.id, prev_k, prev_id;
    END IF;
    prev_k := r.k;
    prev_id := r.id;
    n := n + 1;
  END LOOP;
  IF n <> 200001 - lo THEN
    RAISE EXCEPTION '% rows, expected %', n, 200001 - lo;
  END IF;
END $$;
});
like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT k, id FROM big WHERE id >= 5 ORDER BY k DESC, id}),
	qr/Custom Scan \(GpuSort\)/, 'the checked query is a GpuSort');
$node->pgbench(
	'--no-vacuum --client=4 --jobs=4 --transactions=5',
	0,
	[ qr{processed: 20/20} ],
	[ qr{^$} ],
	'pgbench: 4 clients sorting at once',
	{
		'002_check_sorted' => q{
\set lo random(1, 100000)
SELECT check_sorted(:lo);
}
	});

# the server is fine afterwards
is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT k FROM big ORDER BY k) x'),
	'200000', 'server still sorts');
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|PANIC/, 'no backend crashed');

done_testing();

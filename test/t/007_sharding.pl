# 007_sharding.pl: a table sharded over servers with postgres_fdw, each
# shard sorting its own part with GpuSort.
#
# A coordinator and three shard servers, all with gpusort preloaded; on the
# coordinator, the table t is partitioned by range of id into three
# postgres_fdw foreign tables, one a shard.  The shards also preload
# auto_explain, which logs the plan of every statement they run, with its
# row counts.  For ORDER BY queries over t on int8, float8, numeric,
# timestamptz, text COLLATE "C" and text under linguistic collations (libc
# en_US.UTF-8 and ICU, where the servers have them), with NULLs,
# duplicates, DESC, NULLS FIRST/LAST and several keys, checked:
#  1. the coordinator's plan (EXPLAIN VERBOSE) is a Merge Append over one
#     Foreign Scan a shard, whose Remote SQL ends in the query's ORDER BY,
#     and sorts nothing itself;
#  2. every shard ran that remote query with a GpuSort of all its rows
#     (auto_explain in the shard's log);
#  3. the result is, row for row, that of PostgreSQL's own Sort
#     (gpusort.enabled = off) of the same rows in one local table.
# First with postgres_fdw's default options, then with use_remote_estimate,
# where queries with a small LIMIT need fdw_tuple_cost raised to be sent
# to the shards.  Last, an ORDER BY under a collation other than the
# column's own (an explicit COLLATE) is not sent to the shards, as
# postgres_fdw cannot know that the remote server has it: the coordinator
# sorts, with GpuSort, and the result is still PostgreSQL's.
# gpusort.engine comes from $ENV{GPUSORT_ENGINE} (default cpu).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $nshards = 3;
my $rows_per_shard = 20000;
my $rows = $nshards * $rows_per_shard;

# The shards log each statement's plan with its actual rows (timing off:
# what is checked is which node sorted how many rows, not how fast).
my $auto_explain = q{shared_preload_libraries = 'gpusort, auto_explain'
auto_explain.log_min_duration = 0
auto_explain.log_analyze = on
auto_explain.log_timing = off
auto_explain.log_verbose = on
};
my @shards = map { gpusort_node("shard$_", conf => $auto_explain) } 1 .. $nshards;
my $coord = gpusort_node('coordinator');

# One UTF8 database on every server, whatever locale the test
# environment gave initdb; its default collation is C, and the linguistic
# collations are named ones, the same on every server.
for my $node ($coord, @shards)
{
	$node->safe_psql('postgres',
		q{CREATE DATABASE sh TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'});
}

# Linguistic collations: libc en_US.UTF-8 where the operating system has
# it (test/install-deps.sh installs it), ICU where PostgreSQL has it.
my %collations;
my $libc = $coord->safe_psql('sh', q{
SELECT collcollate FROM pg_collation
 WHERE collprovider = 'c' AND collcollate ~* '^en_US\.utf-?8$' LIMIT 1});
$collations{gs_libc_en} = "provider = libc, locale = '$libc'" if $libc ne '';
$collations{gs_icu_en} = "provider = icu, locale = 'en'"
  if $coord->safe_psql('sh', q{SELECT count(*) FROM pg_collation WHERE collprovider = 'i'}) > 0;
diag('no en_US.UTF-8 locale: the libc collation is not tested') if $libc eq '';
diag('no ICU: the ICU collation is not tested') unless $collations{gs_icu_en};
my $collation_ddl = join '',
  map { "CREATE COLLATION $_ ($collations{$_});\n" } sort keys %collations;

# The table's columns, the same on the shards, the coordinator's
# partitioned table and its local copy.  Text columns without a collation
# of their own take the database's, C.
my $columns = join ",\n  ", 'id int NOT NULL', 'k int8', 'f float8', 'n numeric',
  'ts timestamptz', 'tc text COLLATE "C"', 'td text',
  map { "t_$_ text COLLATE $_" } sort keys %collations;

# Rows lo..hi, each a function of its id: duplicate and extreme keys,
# NULLs, NaN, infinities, -0, numerics of several scales, and words whose
# order differs between C and linguistic collations (case, accents,
# punctuation, digits).
sub rows_sql
{
	my ($table, $lo, $hi) = @_;
	my $word = q{(ARRAY['apple', 'Apple', 'Äpfel', 'apfel', 'banana', 'Banana', 'bänk',
  'café', 'cafe', 'Cafe', 'co-op', 'coop', 'Co op', 'zebra', 'Zebra', 'éclair', 'eclair',
  'Ölig', 'ølen', 'straße', 'strasse', '10', '9', 'a b', 'ab', '', 'Ωmega', 'émile',
  'Emil', 'x-ray', 'xray'])[1 + (hashint4(g + %d) & 2147483647) %% 31]
  || CASE WHEN g %% 3 = 0 THEN ' ' || ((hashint4(g * 7 + %d) & 2147483647) %% 500)::text ELSE '' END};
	my @text = map { sprintf $word, $_, $_ } 11 .. 12 + keys %collations;
	my $texts = join ",\n         ",
	  map { "CASE WHEN g % " . (89 + 2 * $_) . " = 0 THEN NULL ELSE $text[$_] END" } 0 .. $#text;
	return qq{
INSERT INTO $table
  SELECT g,
         CASE WHEN g % 101 = 0 THEN NULL
              WHEN g % 1009 = 0 THEN 9223372036854775807
              WHEN g % 1013 = 0 THEN -9223372036854775808
              ELSE hashint4(g) % 5000 END,
         CASE WHEN g % 103 = 0 THEN NULL
              WHEN g % 997 = 0 THEN 'NaN'
              WHEN g % 991 = 0 THEN 'Infinity'
              WHEN g % 983 = 0 THEN '-Infinity'
              WHEN g % 977 = 0 THEN '-0'
              ELSE (hashint4(g + 1) % 2000)::float8 / 7 END,
         CASE WHEN g % 107 = 0 THEN NULL
              WHEN g % 971 = 0 THEN 'NaN'
              WHEN g % 967 = 0 THEN 1e40
              ELSE round((hashint4(g + 2) % 100000)::numeric / 1000, g % 4) END,
         CASE WHEN g % 109 = 0 THEN NULL
              WHEN g % 953 = 0 THEN 'infinity'
              WHEN g % 947 = 0 THEN '-infinity'
              ELSE timestamptz '2000-01-01 00:00:00+00'
                   + (hashint4(g + 3) % 1000000) * interval '1 minute' END,
         $texts
    FROM generate_series($lo, $hi) g;
};
}

# the shards: each the table part with its range of ids
for my $i (0 .. $#shards)
{
	my ($lo, $hi) = ($i * $rows_per_shard + 1, ($i + 1) * $rows_per_shard);
	$shards[$i]->safe_psql('sh', qq{$collation_ddl
CREATE TABLE part (
  $columns);
} . rows_sql('part', $lo, $hi) . q{
VACUUM ANALYZE part;
});
}

# The coordinator: t partitioned by range of id, one foreign partition a
# shard, and whole, a local table of the same rows to check against.
# fetch_size: postgres_fdw fetches 100 rows at a time by default, a round
# trip each.
my $setup = qq{$collation_ddl
CREATE EXTENSION postgres_fdw;
CREATE TABLE t (
  $columns) PARTITION BY RANGE (id);
CREATE TABLE whole (
  $columns);
};
for my $i (0 .. $#shards)
{
	my ($lo, $hi) = ($i * $rows_per_shard + 1, ($i + 1) * $rows_per_shard + 1);
	my $s = $i + 1;
	$setup .= sprintf(q{
CREATE SERVER shard%d FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '%s', port '%d', dbname 'sh', fetch_size '10000');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard%d;
CREATE FOREIGN TABLE t_shard%d PARTITION OF t FOR VALUES FROM (%d) TO (%d)
  SERVER shard%d OPTIONS (table_name 'part');
}, $s, $shards[$i]->host, $shards[$i]->port, $s, $s, $lo, $hi, $s);
}
$coord->safe_psql('sh', $setup . rows_sql('whole', 1, $rows) . q{
VACUUM ANALYZE whole;
ANALYZE t;
});
is($coord->safe_psql('sh', 'SELECT count(*) FROM t'), $rows, "t has $rows rows over $nshards shards");

# The queries: what the coordinator runs, and the ORDER BY it must send
# to each shard.
my @queries = (
	[ 'SELECT k FROM t ORDER BY k', 'k ASC NULLS LAST' ],
	[ 'SELECT k FROM t ORDER BY k DESC', 'k DESC NULLS FIRST' ],
	[ 'SELECT f, id FROM t ORDER BY f DESC NULLS LAST, id', 'f DESC NULLS LAST, id ASC NULLS LAST' ],
	[ 'SELECT n, id FROM t ORDER BY n NULLS FIRST, id DESC', 'n ASC NULLS FIRST, id DESC NULLS FIRST' ],
	[ 'SELECT ts FROM t ORDER BY ts DESC', 'ts DESC NULLS FIRST' ],
	[ 'SELECT tc FROM t ORDER BY tc', 'tc ASC NULLS LAST' ],
	[ 'SELECT td FROM t ORDER BY td DESC', 'td DESC NULLS FIRST' ],
	[ 'SELECT k, tc, id FROM t ORDER BY k DESC, tc, id', 'k DESC NULLS FIRST, tc ASC NULLS LAST, id ASC NULLS LAST' ],
	[ 'SELECT tc, f, n, id FROM t ORDER BY tc DESC NULLS LAST, f, n DESC, id',
	  'tc DESC NULLS LAST, f ASC NULLS LAST, n DESC NULLS FIRST, id ASC NULLS LAST' ],
);
for my $c (sort keys %collations)
{
	push @queries, [ "SELECT t_$c FROM t ORDER BY t_$c", "t_$c ASC NULLS LAST" ],
	  [ "SELECT t_$c FROM t ORDER BY t_$c DESC NULLS LAST", "t_$c DESC NULLS LAST" ],
	  [ "SELECT * FROM t ORDER BY t_$c DESC, ts, id", "t_$c DESC NULLS FIRST, ts ASC NULLS LAST, id ASC NULLS LAST" ];
}

# The linguistic collations order the words otherwise than C does, or
# their queries would check nothing that tc's do not.
for my $c (sort keys %collations)
{
	isnt($coord->safe_psql('sh', "SELECT string_agg(w, ',' ORDER BY w) FROM (SELECT DISTINCT t_$c AS w FROM whole) s"),
		$coord->safe_psql('sh', "SELECT string_agg(w, ',' ORDER BY w COLLATE \"C\") FROM (SELECT DISTINCT t_$c AS w FROM whole) s"),
		"$c orders the words otherwise than C");
}

# the first line where two results differ, for the test's diagnostics
sub first_difference
{
	my ($got, $want) = @_;
	my @g = split /\n/, $got, -1;
	my @w = split /\n/, $want, -1;
	for my $i (0 .. ($#g > $#w ? $#g : $#w))
	{
		return sprintf("line %d: got '%s', expected '%s'", $i + 1, $g[$i] // '(none)', $w[$i] // '(none)')
		  if ($g[$i] // "\0") ne ($w[$i] // "\0");
	}
	return undef;
}

# Checks that query runs as a Merge Append of the shards' sorted streams,
# each shard sending its rows sorted by order_by with a GpuSort of all its
# rows, and that its result is PostgreSQL's Sort's.
sub check_pushed
{
	my ($query, $order_by) = @_;
	my $plan = $coord->safe_psql('sh', "EXPLAIN (VERBOSE, COSTS OFF) $query");

	# 1. Merge Append (under a Limit, for one) over the shards' sorted
	# Foreign Scans
	like($plan, qr/\A(?:Limit\n(?:\s.*\n)*?\s*->  )?Merge Append\n/, "$query: the coordinator merges")
	  or diag($plan);
	unlike($plan, qr/(?:^|->  )(?:Sort|Incremental Sort|Custom Scan \(GpuSort\))\n/m,
		"$query: the coordinator sorts nothing itself");
	my @remote = $plan =~ /^\s*Remote SQL: (.*)$/mg;
	my $pushed = grep { /FROM public\.part(?: WHERE .*)? ORDER BY \Q$order_by\E$/ } @remote;
	is($pushed, $nshards, "$query: ORDER BY $order_by sent to every shard")
	  or diag($plan);

	# 2. and 3. the shards' GpuSorts, and the result
	my @offsets = map { -s $_->logfile } @shards;
	my $got = $coord->safe_psql('sh', $query);
	my $want = $coord->safe_psql('sh',
		"SET gpusort.enabled = off; " . ($query =~ s/\bt\b/whole/r));
	for my $i (0 .. $#shards)
	{
		my $log = slurp_file($shards[$i]->logfile, $offsets[$i]);
		# the remote query's entry: from its Query Text to the next log line
		my ($entry) = $log =~ /(Query Text: DECLARE \S+ CURSOR FOR\s+SELECT .*? ORDER BY \Q$order_by\E\n.*?)(?=^\S|\z)/ms;
		ok(defined $entry, "$query: shard " . ($i + 1) . " logged the remote query")
		  or diag($log);
		# Records: what the sort read, all of the shard's rows that pass
		# the WHERE clause, whatever a LIMIT took of its output (18 writes
		# actual rows with two decimals)
		my $records = $shards[$i]->safe_psql('sh',
			'SELECT count(*) FROM part' . ($query =~ /( WHERE [^(]*?) ORDER BY/ ? $1 : ''));
		like($entry // '',
			qr/^\s*Custom Scan \(GpuSort\)  \(cost=[^)]*\) \(actual rows=\d+(?:\.\d+)? loops=1\)\n(?:\s{3,}.*\n)*?\s*Records: $records\n/m,
			"$query: shard " . ($i + 1) . " sorted its $records rows with GpuSort");
	}
	my $diff = first_difference($got, $want);
	ok(!defined $diff, "$query: the rows of PostgreSQL's Sort, in its order")
	  or diag($diff);
	return;
}

# With postgres_fdw's defaults, every ORDER BY on the table's own columns
# reaches the shards.
check_pushed(@$_) for @queries;

# use_remote_estimate asks the shards for their plans' costs, the cost of a
# full sort included; a query with a small LIMIT then looks cheaper
# fetching every row and keeping the first ones on the coordinator (a
# top-N heapsort), unless fdw_tuple_cost says what shipping a row costs:
# 0.1, ten times the default, ten times cpu_tuple_cost.
for my $s (1 .. $nshards)
{
	$coord->safe_psql('sh',
		"ALTER SERVER shard$s OPTIONS (ADD use_remote_estimate 'true', ADD fdw_tuple_cost '0.1')");
}
check_pushed('SELECT k, id FROM t ORDER BY k, id LIMIT 10', 'k ASC NULLS LAST, id ASC NULLS LAST');
check_pushed('SELECT * FROM t WHERE k < 0 ORDER BY tc DESC, id LIMIT 100',
	'tc DESC NULLS FIRST, id ASC NULLS LAST');
check_pushed('SELECT ts, id FROM t ORDER BY ts, id', 'ts ASC NULLS LAST, id ASC NULLS LAST');

# An explicit COLLATE other than the column's own: postgres_fdw sends no
# such ORDER BY (the remote server might not have the collation, or name
# it otherwise), so the coordinator sorts what the shards send.
my $coll = (sort keys %collations)[0] // 'ucs_basic';
my $query = "SELECT tc, id FROM t ORDER BY tc COLLATE $coll DESC, id";
my $plan = $coord->safe_psql('sh', "EXPLAIN (VERBOSE, COSTS OFF) $query");
like($plan, qr/(?:^|->  )Custom Scan \(GpuSort\)\n/m, "$query: the coordinator sorts, with GpuSort")
  or diag($plan);
unlike($plan, qr/Remote SQL: .*ORDER BY/, "$query: no ORDER BY sent to the shards");
my $diff = first_difference($coord->safe_psql('sh', $query),
	$coord->safe_psql('sh', "SET gpusort.enabled = off; " . ($query =~ s/\bt\b/whole/r)));
ok(!defined $diff, "$query: the rows of PostgreSQL's Sort, in its order") or diag($diff);

done_testing();

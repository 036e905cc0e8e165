# 022_index_build.pl: btree index builds through gpusort give, page for
# page, the index PostgreSQL's own build gives.
#
# Each kind of index is built twice on the same rows: through gpusort
# (gpusort.index_builds = on; its DEBUG1 line says gpusort sorted it) and
# with gpusort.enabled = off (PostgreSQL's build).  Checked for each:
#  1. every page of the two is the same but for the page header's LSN
#     and checksum (pageinspect's get_raw_page, its first 10 bytes left
#     out), and so is reltuples;
#  2. amcheck's bt_index_parent_check(index, true, true) passes;
# for int8, two columns, "C" text, en_US.UTF-8 text with NULLs (where the
# system has the locale), DESC NULLS LAST, INCLUDE, partial, expression,
# fillfactor 50, deduplicate_items = off, posting lists, UNIQUE, UNIQUE
# over recently dead duplicates (kept apart by btbuild's second spool),
# NULLS NOT DISTINCT, PRIMARY KEY, an unlogged and a temporary table, a
# partitioned table's partitions, REINDEX INDEX and TABLE, CLUSTER and VACUUM FULL;
#  3. a unique violation, and one of NULLS NOT DISTINCT, raise
#     PostgreSQL's own error, word for word, and leave no index and no
#     temporary file behind; so does a statement_timeout while gpusort
#     sorts;
#  4. CREATE INDEX CONCURRENTLY stays PostgreSQL's build; builds below
#     gpusort.min_rows and with gpusort.index_builds = off do too (at
#     DEBUG2: a session at DEBUG1 sees nothing of gpusort there), and with
#     gpusort.index_builds = auto an int8 build and one PostgreSQL gives
#     maintenance workers too, and
#     gpusort_stat counts the builds gpusort took and those it left, by
#     why.
# About 20 s on two CPUs that other work shares, most of it psql starting.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('index_build',
	conf => "gpusort.index_builds = on\nmax_parallel_maintenance_workers = 0\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE EXTENSION pageinspect;
CREATE EXTENSION amcheck;
-- pages of a and b that differ past their headers' LSN and checksum; -1
-- where their sizes differ
CREATE FUNCTION pages_differ(a regclass, b regclass) RETURNS int
LANGUAGE sql AS $$
  SELECT CASE WHEN pg_relation_size(a) <> pg_relation_size(b) THEN -1 ELSE
    (SELECT count(*)::int
       FROM generate_series(0, pg_relation_size(a) / 8192 - 1) blk
      WHERE substr(get_raw_page(a::text, blk::int), 11) <>
            substr(get_raw_page(b::text, blk::int), 11)) END $$;
-- rows in an order that is no index's: k has duplicates, sn NULLs
CREATE TABLE base AS
  SELECT g AS id, (hashint4(g) % 5000)::int8 AS k, md5(g::text) AS s,
         CASE WHEN g % 10 = 0 THEN NULL ELSE md5((g % 3000)::text) END AS sn
    FROM generate_series(1, 20000) g;
CREATE TABLE a AS SELECT * FROM base;
});

my $libc = $node->safe_psql('postgres', q{
SELECT collname FROM pg_collation
 WHERE collprovider = 'c' AND collcollate ~* '^en_US\.utf-?8$' LIMIT 1});
diag('no en_US.UTF-8 locale: the libc collation is not tested') if $libc eq '';

# the builds through_gpusort saw gpusort take
my $taken = 0;

# run sql at DEBUG1 (or $level); returns (ok, stdout, stderr)
sub run_debug
{
	my ($sql, $settings, $level) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres',
		"SET client_min_messages = " . ($level // 'debug1') . ";\n" . ($settings // '') . "\n$sql",
		stdout => \$out, stderr => \$err);
	return ($ret == 0, $out, $err);
}

# $sql builds the indexes named in @$indexes through gpusort
sub through_gpusort
{
	my ($what, $sql, $indexes) = @_;
	my ($ok, $out, $err) = run_debug($sql);
	ok($ok, "$what: runs") or diag($err);
	for my $idx (@$indexes)
	{
		$taken++;
		like($err, qr/index "$idx" built through gpusort: \d+ rows sorted by/,
			"$what: gpusort sorted $idx");
	}
	return;
}

# $sql builds them with PostgreSQL's build
sub natively
{
	my ($what, $sql) = @_;
	my ($ok, $out, $err) = run_debug($sql, 'SET gpusort.enabled = off;');
	ok($ok, "$what: runs natively") or diag($err);
	unlike($err, qr/built through gpusort/, "$what: natively, PostgreSQL's build");
	return;
}

# SQL that prints 0|t|t where the gpusort index $g is PostgreSQL's $n,
# page for page, with the same reltuples, and more than four pages; then
# amcheck's check of $g, which prints nothing or fails
sub check_sql
{
	my ($g, $n) = @_;
	return qq{
SELECT pages_differ('$g', '$n'),
       (SELECT reltuples FROM pg_class WHERE oid = '$g'::regclass) =
       (SELECT reltuples FROM pg_class WHERE oid = '$n'::regclass),
       pg_relation_size('$g') > 8192 * 4;
SELECT bt_index_parent_check('$g', true, true);
};
}

# the gpusort index $g against PostgreSQL's $n, and amcheck
sub same_index
{
	my ($what, $g, $n) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres', check_sql($g, $n), stdout => \$out, stderr => \$err);
	is($ret, 0, "$what: bt_index_parent_check passes") or diag($err);
	like($out, qr/^0\|t\|t\n/, "$what: every page as PostgreSQL's");
	return;
}

# CREATE INDEX g_<name> through gpusort and n_<name> by PostgreSQL ON $on,
# and compare them, in one session
sub twins
{
	my ($name, $on, $unique) = @_;
	my $u = $unique ? 'UNIQUE ' : '';
	my ($ok, $out, $err) = run_debug(qq{
CREATE ${u}INDEX g_$name ON $on;
SET gpusort.enabled = off;
CREATE ${u}INDEX n_$name ON $on;
RESET gpusort.enabled;
} . check_sql("g_$name", "n_$name"));
	ok($ok, "$name: builds, and bt_index_parent_check passes") or diag($err);
	like($err, qr/index "g_$name" built through gpusort: \d+ rows sorted by/,
		"$name: gpusort sorted g_$name");
	unlike($err, qr/index "n_$name" built through gpusort/,
		"$name: n_$name is PostgreSQL's build");
	like($out, qr/^0\|t\|t\n/, "$name: every page as PostgreSQL's");
	$taken++;
	return;
}

# 1, 2: each kind
twins('int8', 'a (k)');
twins('two_columns', 'a (k, s)');
twins('c_text', 'a (s COLLATE "C")');
twins('libc_text_nulls', qq{a (sn COLLATE "$libc")}) if $libc ne '';
twins('default_text_nulls', 'a (sn)');
twins('desc_nulls_last', 'a (sn DESC NULLS LAST, k)');
twins('include', 'a (k) INCLUDE (s, id)');
twins('partial', 'a (s) WHERE k % 3 = 0');
twins('expression', 'a (lower(sn), (k * 2))');
twins('fillfactor', 'a (s) WITH (fillfactor = 50)');
twins('no_dedup', 'a (k) WITH (deduplicate_items = off)');
twins('posting_lists', 'a ((k % 100))');
twins('unique', 'a (id)', 1);
twins('nulls_not_distinct', 'a ((CASE WHEN id = 5 THEN NULL ELSE s END)) NULLS NOT DISTINCT', 1);

# UNIQUE over recently dead duplicates: a snapshot held elsewhere keeps
# the deleted rows recently dead; their keys come back in new rows
$node->safe_psql('postgres', 'CREATE TABLE d AS SELECT * FROM base');
my $holder = GpuSortSession->new($node);
$holder->wait($holder->send('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM d;'));
$node->safe_psql('postgres', q{
DELETE FROM d WHERE id % 4 = 0;
INSERT INTO d SELECT id, k, s, sn FROM base WHERE id % 8 = 0;
});
twins('unique_dead', 'd (id)', 1);
$holder->wait($holder->send('COMMIT;'));
$holder->finish;

# PRIMARY KEY, an unlogged table, a partitioned table's partitions.
# Twin tables are filled by serial plans, so that their rows lie alike
# (a Gather's order is not fixed: GPUSORT_PARALLEL forces parallel plans)
my $serial = 'SET max_parallel_workers_per_gather = 0;';
$node->safe_psql('postgres', $serial . q{
CREATE TABLE pk_g AS SELECT * FROM base;
CREATE TABLE pk_n AS SELECT * FROM base;
CREATE UNLOGGED TABLE ul AS SELECT * FROM base;
CREATE TABLE part_g (LIKE base) PARTITION BY RANGE (id);
CREATE TABLE part_g1 PARTITION OF part_g FOR VALUES FROM (MINVALUE) TO (10001);
CREATE TABLE part_g2 PARTITION OF part_g FOR VALUES FROM (10001) TO (MAXVALUE);
CREATE TABLE part_n (LIKE base) PARTITION BY RANGE (id);
CREATE TABLE part_n1 PARTITION OF part_n FOR VALUES FROM (MINVALUE) TO (10001);
CREATE TABLE part_n2 PARTITION OF part_n FOR VALUES FROM (10001) TO (MAXVALUE);
INSERT INTO part_g SELECT * FROM base;
INSERT INTO part_n SELECT * FROM base;
});
through_gpusort('primary key', 'ALTER TABLE pk_g ADD PRIMARY KEY (id)', ['pk_g_pkey']);
natively('primary key', 'ALTER TABLE pk_n ADD PRIMARY KEY (id)');
same_index('primary key', 'pk_g_pkey', 'pk_n_pkey');
twins('unlogged', 'ul (s)');
# a temporary table's, in one session
my ($tok, $tout, $terr) = run_debug(q{
CREATE TEMP TABLE tt AS SELECT * FROM base;
CREATE INDEX g_temp ON tt (s, k);
SET gpusort.enabled = off;
CREATE INDEX n_temp ON tt (s, k);
SELECT pages_differ('g_temp', 'n_temp'), pg_relation_size('g_temp') > 8192 * 4;
SELECT bt_index_parent_check('g_temp', true, true);
});
ok($tok, 'temporary table: runs') or diag($terr);
like($terr, qr/index "g_temp" built through gpusort/, 'temporary table: gpusort sorted g_temp');
like($tout, qr/^0\|t\n/, "temporary table: every page as PostgreSQL's");
through_gpusort('partitions', 'CREATE INDEX part_g_s ON part_g (s)',
	[ 'part_g1_s_idx', 'part_g2_s_idx' ]);
natively('partitions', 'CREATE INDEX part_n_s ON part_n (s)');
same_index('partition 1', 'part_g1_s_idx', 'part_n1_s_idx');
same_index('partition 2', 'part_g2_s_idx', 'part_n2_s_idx');

# REINDEX of indexes PostgreSQL built: against native twins never rebuilt
$node->safe_psql('postgres', $serial . q{
CREATE TABLE rt_g AS SELECT * FROM base;
CREATE TABLE rt_n AS SELECT * FROM base;
});
natively('reindex setup', q{
CREATE INDEX r_s ON a (s); CREATE INDEX rn_s ON a (s);
CREATE INDEX rt_g_k ON rt_g (k, id); CREATE INDEX rt_g_s ON rt_g (s);
CREATE INDEX rt_n_k ON rt_n (k, id); CREATE INDEX rt_n_s ON rt_n (s);
});
through_gpusort('REINDEX INDEX', 'REINDEX INDEX r_s', ['r_s']);
same_index('REINDEX INDEX', 'r_s', 'rn_s');
through_gpusort('REINDEX TABLE', 'REINDEX TABLE rt_g', [ 'rt_g_k', 'rt_g_s' ]);
same_index('REINDEX TABLE', 'rt_g_k', 'rt_n_k');
same_index('REINDEX TABLE (second index)', 'rt_g_s', 'rt_n_s');

# CLUSTER and VACUUM FULL: twin tables, each rewritten and its indexes
# rebuilt, one through gpusort, one by PostgreSQL
$node->safe_psql('postgres', $serial . q{
SET gpusort.enabled = off;
CREATE TABLE cl_g AS SELECT * FROM base;
CREATE TABLE cl_n AS SELECT * FROM base;
CREATE INDEX cl_g_k ON cl_g (k, id); CREATE INDEX cl_g_s ON cl_g (s);
CREATE INDEX cl_n_k ON cl_n (k, id); CREATE INDEX cl_n_s ON cl_n (s);
CREATE TABLE vf_g AS SELECT * FROM base;
CREATE TABLE vf_n AS SELECT * FROM base;
CREATE INDEX vf_g_s ON vf_g (s);
CREATE INDEX vf_n_s ON vf_n (s);
DELETE FROM vf_g WHERE id % 3 = 0;
DELETE FROM vf_n WHERE id % 3 = 0;
});
through_gpusort('CLUSTER', 'CLUSTER cl_g USING cl_g_k', [ 'cl_g_k', 'cl_g_s' ]);
natively('CLUSTER', 'CLUSTER cl_n USING cl_n_k');
same_index('CLUSTER', 'cl_g_k', 'cl_n_k');
same_index('CLUSTER (second index)', 'cl_g_s', 'cl_n_s');
through_gpusort('VACUUM FULL', 'VACUUM FULL vf_g', ['vf_g_s']);
natively('VACUUM FULL', 'VACUUM FULL vf_n');
same_index('VACUUM FULL', 'vf_g_s', 'vf_n_s');

# 3: unique violations, PostgreSQL's error word for word, nothing left:
# one duplicate each, so that any sort meets the same one
$node->safe_psql('postgres', q{
CREATE TABLE dup AS SELECT * FROM base;
INSERT INTO dup SELECT * FROM base WHERE id = 777;
CREATE TABLE dupn AS SELECT * FROM base;
UPDATE dupn SET s = NULL WHERE id IN (20, 30);
});
my $tmp = $node->data_dir . '/base/pgsql_tmp';
for my $case ([ 'unique violation', 'dup (id)' ],
	[ 'NULLS NOT DISTINCT violation', 'dupn (s) NULLS NOT DISTINCT' ])
{
	my ($what, $on) = @$case;
	my %err;
	for my $how ('gpusort', 'native')
	{
		my ($out, $err) = ('', '');
		my $ret = $node->psql('postgres',
			($how eq 'native' ? 'SET gpusort.enabled = off; ' : '')
			  . "SET client_min_messages = debug1; CREATE UNIQUE INDEX dup_idx ON $on",
			stdout => \$out, stderr => \$err);
		isnt($ret, 0, "$what: $how fails");
		like($err, qr/built through gpusort/, "$what: gpusort sorted it")
		  if $how eq 'gpusort';
		$err{$how} = join("\n", grep { /(ERROR|DETAIL):/ } split /\n/, $err);
	}
	like($err{native}, qr/could not create unique index "dup_idx"/, "$what: native error");
	is($err{gpusort}, $err{native}, "$what: the same error");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'dup_idx'}),
		'0', "$what: no index left");
	my @left = -d $tmp ? glob("$tmp/*") : ();
	is(scalar @left, 0, "$what: no temporary file left");
}

# a build cancelled while gpusort sorts (statement_timeout during a delay
# in the sort phase) ends as PostgreSQL's would: the error, no index, no
# temporary file; the same build then goes through
{
	my ($ret, $out, $err) = (0, '', '');
	$ret = $node->psql('postgres', q{
SET gpusort.inject_fault = 'delay:sort:60000';
SET statement_timeout = '300ms';
CREATE INDEX cancelled ON a (s);},
		stdout => \$out, stderr => \$err);
	like($err, qr/canceling statement due to statement timeout/, 'cancel while sorting: the error');
	like(slurp_file($node->logfile), qr/injected delay of 60000 ms in the sort phase/,
		'cancel while sorting: it came in the sort phase');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'cancelled'}),
		'0', 'cancel while sorting: no index left');
	my @left = -d $tmp ? glob("$tmp/*") : ();
	is(scalar @left, 0, 'cancel while sorting: no temporary file left');
}

# 4: builds left to PostgreSQL, and the counts
my ($ok, $out, $err) = run_debug('CREATE INDEX CONCURRENTLY cc ON a (s)');
ok($ok, 'CONCURRENTLY: runs') or diag($err);
unlike($err, qr/built through gpusort/, "CONCURRENTLY: PostgreSQL's build");
same_index('CONCURRENTLY', 'cc', 'rn_s');
($ok, $out, $err) = run_debug('CREATE INDEX small ON a (s)', 'SET gpusort.min_rows = 100000;', 'debug2');
like($err, qr/index "small" left to PostgreSQL's build: below gpusort.min_rows/,
	'below gpusort.min_rows: left to PostgreSQL');
($ok, $out, $err) = run_debug('CREATE INDEX off ON a (s)', 'SET gpusort.index_builds = off;', 'debug2');
like($err, qr/index "off" left to PostgreSQL's build: gpusort.index_builds is off/,
	'gpusort.index_builds = off: left to PostgreSQL');
($ok, $out, $err) = run_debug('CREATE INDEX auto_int8 ON a (k)', 'SET gpusort.index_builds = auto;');
like($err, qr/index "auto_int8" left to PostgreSQL's build: comparisons too cheap/,
	'auto: an int8 build left to PostgreSQL');
if ($libc ne '')
{
	($ok, $out, $err) = run_debug(qq{CREATE INDEX auto_libc ON a (s COLLATE "$libc")},
		'SET gpusort.index_builds = auto;');
	like($err, qr/index "auto_libc" built through gpusort/, 'auto: a libc text build through gpusort');
	($ok, $out, $err) = run_debug(qq{CREATE INDEX auto_workers ON a (s COLLATE "$libc")},
		'SET gpusort.index_builds = auto; SET max_parallel_maintenance_workers = 2; '
		  . 'SET min_parallel_table_scan_size = 0;');
	like($err, qr/index "auto_workers" left to PostgreSQL's build: PostgreSQL's build has maintenance workers/,
		'auto: a build PostgreSQL gives maintenance workers left to PostgreSQL');
}
like($node->safe_psql('postgres', q{
SELECT string_agg(detail || '=' || (value > 0), ',' ORDER BY detail)
  FROM gpusort_stat
 WHERE what = 'index builds left'
   AND detail IN ('gpusort.enabled is off', 'below gpusort.min_rows', 'gpusort.index_builds is off')}),
	qr/^below gpusort.min_rows=true,gpusort.enabled is off=true,gpusort.index_builds is off=true$/,
	'gpusort_stat counts the builds left, by why');
cmp_ok($node->safe_psql('postgres', q{
SELECT sum(value) FROM gpusort_stat WHERE what = 'index builds'}),
	'>=', $taken, 'gpusort_stat counts the builds gpusort sorted');

unlike(slurp_file($node->logfile), qr/leaked|WARNING:|TRAP:|terminated by signal/,
	'no leak, warning or crash in the server log');
$node->stop;
done_testing();

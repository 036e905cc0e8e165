# 023_index_build_paths.pl: the paths of a btree index build through
# gpusort that 022 leaves out.
#
#  1. the fallback: an error in gpusort's scan or sort ('error:load',
#     'error:sort', and, spilling at gpusort.max_memory = 64kB,
#     'error:spill' and 'error:merge') does not fail the CREATE INDEX:
#     btbuild builds it, page for page as PostgreSQL's twin, it passes
#     bt_index_parent_check, gpusort_stat counts the fallback, and the
#     sort's temporary file is gone before the transaction ends; a unique
#     violation under a fallback is still PostgreSQL's error, and an error
#     in the replay into btbuild ('error:replay') fails the build;
#  2. a cancel (statement_timeout against 'delay:PHASE:60000') in the
#     scan (load), the sort and the replay: PostgreSQL's error, no index,
#     no temporary file, and the next build of the session goes through;
#  3. pg_stat_progress_create_index while gpusort scans and sorts: the
#     command and btbuild's own phases;
#  4. REINDEX DATABASE through gpusort, each index as before, page for page;
#  5. pg_restore -j 2 of a table with several indexes, through gpusort and
#     with gpusort.index_builds = off, page for page the same;
#  6. wal_level = minimal: builds in the transaction that creates the table
#     (no WAL) and after it, a fallback among them, equal to native twins,
#     and still after an immediate restart.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $conf = "gpusort.index_builds = on\nmax_parallel_maintenance_workers = 0\n";
my $node = gpusort_node('index_paths', conf => $conf);

# pages_differ(a, b): pages of a and b that differ past their headers' LSN
# and checksum, -1 where their sizes differ; page_sums(a): every page's md5
my $functions = q{
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE FUNCTION pages_differ(a regclass, b regclass) RETURNS int
LANGUAGE sql AS $$
  SELECT CASE WHEN pg_relation_size(a) <> pg_relation_size(b) THEN -1 ELSE
    (SELECT count(*)::int
       FROM generate_series(0, pg_relation_size(a) / 8192 - 1) blk
      WHERE substr(get_raw_page(a::text, blk::int), 11) <>
            substr(get_raw_page(b::text, blk::int), 11)) END $$;
CREATE FUNCTION page_sums(a regclass) RETURNS text
LANGUAGE sql AS $$
  SELECT (SELECT reltuples FROM pg_class WHERE oid = a) || ':' ||
         string_agg(md5(substr(get_raw_page(a::text, blk::int), 11)), ',' ORDER BY blk)
    FROM generate_series(0, pg_relation_size(a) / 8192 - 1) blk $$;
};
$node->safe_psql('postgres', "CREATE EXTENSION gpusort;\n" . $functions . q{
CREATE TABLE a AS
  SELECT g AS id, (hashint4(g) % 5000)::int8 AS k, md5(g::text) AS s
    FROM generate_series(1, 20000) g;
CREATE TABLE dup AS SELECT * FROM a;
INSERT INTO dup SELECT * FROM a WHERE id = 777;
});
my $libc = $node->safe_psql('postgres', q{
SELECT collname FROM pg_collation
 WHERE collprovider = 'c' AND collcollate ~* '^en_US\.utf-?8$' LIMIT 1});
my $tmp = $node->data_dir . '/base/pgsql_tmp';
sub temp_files { return -d $tmp ? scalar(my @f = glob("$tmp/*")) : 0; }

sub fallbacks
{
	my ($n) = @_;
	return ($n // $node)->safe_psql('postgres', q{
SELECT value FROM gpusort_stat
 WHERE what = 'index builds left' AND detail LIKE 'fallback:%'});
}

# 1: the fallback, for each fault; in one transaction, so that the temporary
# files counted before COMMIT are those the failed sort would still hold
for my $case ([ 'load', '' ], [ 'sort', '' ],
	[ 'spill', "SET gpusort.max_memory = '64kB';" ],
	[ 'merge', "SET gpusort.max_memory = '64kB';" ])
{
	my ($phase, $set) = @$case;
	my $before = fallbacks();
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres', qq{
SET client_min_messages = debug1;
BEGIN;
$set
SET gpusort.inject_fault = 'error:$phase';
CREATE INDEX f_$phase ON a (s, k);
SELECT count(*) FROM pg_ls_tmpdir();
RESET gpusort.inject_fault;
SET gpusort.enabled = off;
CREATE INDEX n_$phase ON a (s, k);
COMMIT;
SELECT pages_differ('f_$phase', 'n_$phase'), pg_relation_size('f_$phase') > 8192 * 4;
SELECT bt_index_parent_check('f_$phase', true, true);
}, stdout => \$out, stderr => \$err, on_error_stop => 1);
	is($ret, 0, "error:$phase: the build succeeds, and bt_index_parent_check passes")
	  or diag($err);
	like($err, qr/index "f_$phase" left to PostgreSQL's build: fallback: an error in gpusort's scan or sort\n.*DETAIL:  gpusort: injected error in the $phase phase/s,
		"error:$phase: the fallback is logged with its error");
	unlike($err, qr/index "f_$phase" built through gpusort/, "error:$phase: btbuild built it");
	like($out, qr/^0\n0\|t\n/, "error:$phase: no temporary file left, every page as PostgreSQL's");
	is(fallbacks(), $before + 1, "error:$phase: gpusort_stat counts the fallback");
}

# a unique violation under a fallback is PostgreSQL's own error
{
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres', q{
SET gpusort.inject_fault = 'error:sort';
CREATE UNIQUE INDEX dup_idx ON dup (id);}, stdout => \$out, stderr => \$err);
	isnt($ret, 0, 'unique violation under a fallback: the build fails');
	like($err, qr/could not create unique index "dup_idx"\nDETAIL:  Key \(id\)=\(777\) is duplicated/,
		"unique violation under a fallback: PostgreSQL's error");
	# an error in the replay into btbuild is no fallback
	$ret = $node->psql('postgres', q{
SET gpusort.inject_fault = 'error:replay';
CREATE INDEX replayed ON a (s);}, stdout => \$out, stderr => \$err);
	isnt($ret, 0, 'error:replay: the build fails');
	like($err, qr/injected error in the replay phase/, 'error:replay: its error');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname IN ('dup_idx', 'replayed')}),
		'0', 'unique violation, error:replay: no index left');
}

# 2: a cancel in each phase, and the next build of the session
for my $phase ('load', 'sort', 'replay')
{
	my ($out, $err) = ('', '');
	$node->psql('postgres', qq{
SET gpusort.max_memory = '64kB';
SET gpusort.inject_fault = 'delay:$phase:60000';
SET statement_timeout = '500ms';
CREATE INDEX c_$phase ON a (s);
RESET statement_timeout;
RESET gpusort.inject_fault;
SELECT count(*) FROM pg_class WHERE relname = 'c_$phase';
SELECT count(*) FROM pg_ls_tmpdir();
SET client_min_messages = debug1;
CREATE INDEX c2_$phase ON a (s);}, stdout => \$out, stderr => \$err, on_error_stop => 0);
	like($err, qr/canceling statement due to statement timeout/, "cancel in $phase: the error");
	like(slurp_file($node->logfile), qr/injected delay of 60000 ms in the $phase phase/,
		"cancel in $phase: it came in that phase");
	like($out, qr/^0\n0$/, "cancel in $phase: no index, no temporary file left");
	like($err, qr/index "c2_$phase" built through gpusort/, "cancel in $phase: the next build goes through gpusort");
	is(temp_files(), 0, "cancel in $phase: no temporary file after the session");
}

# 3: pg_stat_progress_create_index while a delay holds gpusort's scan, then its sort
for my $case ([ 'load', 'building index: scanning table' ],
	[ 'sort', 'building index: sorting live tuples' ])
{
	my ($phase, $want) = @$case;
	my $s = GpuSortSession->new($node);
	my ($pid) = $s->wait($s->send(q{SELECT pg_backend_pid();}));
	chomp $pid;
	my $m = $s->send("SET gpusort.inject_fault = 'delay:$phase:60000'; CREATE INDEX p_$phase ON a (s);");
	my $seen = '';
	for (1 .. 500)
	{
		$seen = $node->safe_psql('postgres', qq{
SELECT command || '|' || phase || '|' || (blocks_total > 0)
  FROM pg_stat_progress_create_index WHERE pid = $pid});
		last if $seen =~ /\Q$want\E/;
		usleep(20_000);
	}
	is($seen, "CREATE INDEX|$want|true", "progress while gpusort's $phase is held");
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	$s->wait($m, 1);
	$s->finish;
}

# 4: REINDEX DATABASE: each user index as its native build, page for page
$node->safe_psql('postgres', 'CREATE DATABASE rdb');
$node->safe_psql('rdb', $functions . q{
CREATE TABLE r1 AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, 20000) g;
CREATE TABLE r2 AS SELECT g AS id, (g % 700)::int8 AS k, md5((g % 3000)::text) AS s FROM generate_series(1, 20000) g;
SET gpusort.enabled = off;
CREATE INDEX r1_s ON r1 (s);
CREATE UNIQUE INDEX r1_id ON r1 (id);
CREATE INDEX r2_ks ON r2 (k, s);
});
my $sums_sql = q{SELECT string_agg(page_sums(c::regclass), ';' ORDER BY c) FROM unnest(ARRAY['r1_s', 'r1_id', 'r2_ks']) c};
my $native = $node->safe_psql('rdb', $sums_sql);
{
	my ($out, $err) = ('', '');
	my $ret = $node->psql('rdb', 'SET client_min_messages = debug1; REINDEX DATABASE rdb;',
		stdout => \$out, stderr => \$err);
	is($ret, 0, 'REINDEX DATABASE: runs') or diag($err);
	like($err, qr/index "$_" built through gpusort/, "REINDEX DATABASE: gpusort sorted $_")
	  for ('r1_s', 'r1_id', 'r2_ks');
	is($node->safe_psql('rdb', $sums_sql), $native, 'REINDEX DATABASE: every page as before');
	is($node->psql('rdb', q{SELECT bt_index_parent_check('r2_ks', true, true)}), 0,
		'REINDEX DATABASE: bt_index_parent_check passes');
}

# 5: pg_restore -j 2 through gpusort and without, page for page the same
my $coll = $libc ne '' ? qq{ COLLATE "$libc"} : '';
$node->safe_psql('postgres', qq{
CREATE TABLE rs (id int8 PRIMARY KEY, t text$coll, u text UNIQUE, n int8);
INSERT INTO rs SELECT g, md5((g % 4000)::text), md5(g::text), g % 97 FROM generate_series(1, 20000) g;
CREATE INDEX rs_t ON rs (t);
CREATE INDEX rs_tn ON rs (t, n);
});
my $dump = PostgreSQL::Test::Utils::tempdir() . '/rs.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-t', 'rs', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump -Fc');
my @rs = ('rs_pkey', 'rs_u_key', 'rs_t', 'rs_tn');
my %sums;
for my $how ('gpusort', 'native')
{
	my $db = "restore_$how";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my $built = $node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'index builds'});
	local $ENV{PGOPTIONS} = $how eq 'native' ? '-c gpusort.index_builds=off' : '';
	$node->command_ok([ 'pg_restore', '-j', '2', '-d', $node->connstr($db), $dump ],
		"pg_restore -j 2 ($how)");
	my $after = $node->safe_psql('postgres', q{SELECT sum(value) FROM gpusort_stat WHERE what = 'index builds'});
	is($after - $built, $how eq 'gpusort' ? scalar @rs : 0,
		"pg_restore ($how): gpusort_stat counts the builds through gpusort");
	$node->safe_psql($db, $functions);
	$sums{$how} = join(';', map { $node->safe_psql($db, "SELECT page_sums('$_')") } @rs);
	is($node->psql($db, join('', map { "SELECT bt_index_parent_check('$_', true, true);" } @rs)), 0,
		"pg_restore ($how): bt_index_parent_check passes");
}
is($sums{gpusort}, $sums{native}, 'pg_restore: every index page for page as restored by PostgreSQL');

unlike(slurp_file($node->logfile), qr/leaked|leak:|WARNING:|TRAP:|terminated by signal/,
	'no leak, warning or crash in the server log');
$node->stop;

# 6: wal_level = minimal
my $min = gpusort_node('index_minimal',
	conf => $conf . "wal_level = minimal\nmax_wal_senders = 0\n");
$min->safe_psql('postgres', "CREATE EXTENSION gpusort;\n" . $functions);
{
	my $before = fallbacks($min);
	my ($out, $err) = ('', '');
	my $ret = $min->psql('postgres', q{
SET client_min_messages = debug1;
SET max_parallel_workers_per_gather = 0;
BEGIN;
CREATE TABLE w_g AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, 20000) g;
CREATE INDEX w_g_new ON w_g (s);
SET gpusort.inject_fault = 'error:load';
CREATE INDEX w_g_fb ON w_g (s, id);
RESET gpusort.inject_fault;
COMMIT;
BEGIN;
SET LOCAL gpusort.enabled = off;
CREATE TABLE w_n AS SELECT g AS id, md5(g::text) AS s FROM generate_series(1, 20000) g;
CREATE INDEX w_n_new ON w_n (s);
CREATE INDEX w_n_fb ON w_n (s, id);
COMMIT;
CREATE INDEX w_g_after ON w_g (id, s);
SET gpusort.enabled = off;
CREATE INDEX w_n_after ON w_n (id, s);
}, stdout => \$out, stderr => \$err, on_error_stop => 1);
	is($ret, 0, 'wal_level = minimal: the builds run') or diag($err);
	like($err, qr/index "w_g_new" built through gpusort/, 'wal_level = minimal: the new table\'s build through gpusort');
	like($err, qr/index "w_g_after" built through gpusort/, 'wal_level = minimal: the later build through gpusort');
	like($err, qr/index "w_g_fb" left to PostgreSQL's build: fallback/, 'wal_level = minimal: the fallback in the new table\'s transaction');
	is(fallbacks($min), $before + 1, 'wal_level = minimal: the fallback counted');
	my $cmp = q{SELECT string_agg(pages_differ('w_g_' || c, 'w_n_' || c)::text, ',' ORDER BY c)
  FROM unnest(ARRAY['new', 'fb', 'after']) c};
	is($min->safe_psql('postgres', $cmp), '0,0,0', 'wal_level = minimal: every page as PostgreSQL\'s');
	$min->stop('immediate');
	$min->start;
	is($min->safe_psql('postgres', $cmp), '0,0,0', 'wal_level = minimal: the same after an immediate restart');
	is($min->psql('postgres', join('', map { "SELECT bt_index_parent_check('w_g_$_', true, true);" } ('new', 'fb', 'after'))),
		0, 'wal_level = minimal: bt_index_parent_check passes');
}
unlike(slurp_file($min->logfile), qr/leaked|leak:|WARNING:|TRAP:|terminated by signal/,
	'wal_level = minimal: no leak, warning or crash in the server log');
$min->stop;
done_testing();

# 015_update_privileges.pl: every update path of the extension ends as a
# fresh install of its target version, and the grants users made survive
# pg_dump and pg_restore.
#
# PostgreSQL records each GRANT and REVOKE an extension's script runs in
# pg_init_privs, with the object's whole ACL at that moment, and pg_dump
# takes pg_init_privs for the extension's own privileges: what a user
# granted before an update whose script grants or revokes was recorded
# with it, left out of dumps, and lost by a restore.  For every update path
# (0.1 to 0.2, 0.1 to 0.3 through 0.2, 0.2 to 0.3), in a database of its
# own:
#  1. the version is installed; a user grants SELECT on gpusort_stat to a
#     role (viewer), and takes gpusort_info() from PUBLIC and grants it to
#     viewer alone; the extension is updated; the user then grants EXECUTE
#     on gpusort_stat() to viewer;
#  2. compared with a fresh install of the target version in another
#     database, given the same grants afterwards: the extension's objects
#     (pg_describe_object of its members, their definitions and comments),
#     their ACLs, pg_init_privs of its members, and the roles recorded as
#     depending on them (pg_shdepend) are the same;
#  3. pg_dump -Fc of the database, pg_restore into a new one (the
#     extension is created there at the default version): no error; viewer
#     reads gpusort_stat and calls gpusort_info() there, a role with LOGIN
#     alone does neither; and the restored database's ACLs, pg_init_privs
#     and roles' dependencies are those of a fresh install of the default
#     version with the same grants.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('update_privileges');
$node->safe_psql('postgres', q{CREATE ROLE viewer LOGIN; CREATE ROLE nobody LOGIN;});

my $default = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'gpusort'});
my @versions = split /\n/, $node->safe_psql('postgres',
	q{SELECT version FROM pg_available_extension_versions WHERE name = 'gpusort'
	   ORDER BY string_to_array(version, '.')::int[]});
is($versions[-1], $default, "the default version ($default) is the newest");
ok(scalar(@versions) >= 3, 'versions to update from: ' . join(', ', @versions[0 .. $#versions - 1]));

# what a user grants before the update, and after it
my $before = q{GRANT SELECT ON gpusort_stat TO viewer;
REVOKE EXECUTE ON FUNCTION gpusort_info() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpusort_info() TO viewer;};
my $after = q{GRANT EXECUTE ON FUNCTION gpusort_stat() TO viewer;};

# the extension's members, with the definitions, comments, ACLs and
# initial privileges of the functions and views, one line each, sorted
my $members = q{
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT pg_describe_object(d.classid, d.objid, 0)
         || ' | ' || coalesce(CASE WHEN d.classid = 'pg_proc'::regclass
                                   THEN pg_get_functiondef(d.objid)
                                   WHEN d.classid = 'pg_class'::regclass
                                   THEN pg_get_viewdef(d.objid) END, '')
         || ' | ' || coalesce(obj_description(d.objid, d.classid::regclass::name), '')
         AS line
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND e.extname = 'gpusort') m};
my $acls = q{
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT pg_describe_object(d.classid, d.objid, 0) || ' | '
         || coalesce(a.grantee::regrole::text, 'PUBLIC') || ' | '
         || a.grantor::regrole || ' | ' || a.privilege_type || ' | ' || a.is_grantable AS line
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
    LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid,
         LATERAL aclexplode(coalesce(p.proacl, c.relacl,
                                     acldefault(CASE WHEN p.oid IS NOT NULL THEN 'f' ELSE 'r' END::"char",
                                                coalesce(p.proowner, c.relowner)))) a
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND e.extname = 'gpusort' AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass)) x};
my $init_privs = q{
SELECT coalesce(string_agg(line, E'\n' ORDER BY line), 'none') FROM (
  SELECT pg_describe_object(i.classoid, i.objoid, i.objsubid) || ' | ' || i.privtype::text || ' | '
         || coalesce(a.grantee::regrole::text, 'PUBLIC') || ' | ' || a.grantor::regrole
         || ' | ' || a.privilege_type || ' | ' || a.is_grantable AS line
    FROM pg_init_privs i, aclexplode(i.initprivs) a
   WHERE (i.classoid, i.objoid) IN
         (SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
           WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
             AND e.extname = 'gpusort')) x};

# the roles the members depend on (pg_shdepend: ACL entries, and from 17
# on initial privileges), as PostgreSQL recorded them
my $role_deps = q{
SELECT coalesce(string_agg(line, E'\n' ORDER BY line), 'none') FROM (
  SELECT pg_describe_object(s.classid, s.objid, s.objsubid) || ' | ' || s.refobjid::regrole
         || ' | ' || s.deptype::text AS line
    FROM pg_shdepend s
   WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND s.refclassid = 'pg_authid'::regclass
     AND (s.classid, s.objid) IN
         (SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
           WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
             AND e.extname = 'gpusort')) x};

sub state_of
{
	my ($db) = @_;
	return (
		$node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'gpusort'}),
		$node->safe_psql($db, $members),
		$node->safe_psql($db, $acls),
		$node->safe_psql($db, $init_privs),
		$node->safe_psql($db, $role_deps));
}

# whether role may do it in db
sub may
{
	my ($db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql,
		connstr => $node->connstr($db) . " user=$role");
	return $ret == 0 ? 'yes' : ($err =~ /permission denied/ ? 'denied' : "error: $err");
}

# a fresh install of each version, with the user's grants
my %fresh;
for my $v (@versions)
{
	(my $db = "fresh_$v") =~ tr/./_/;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION gpusort VERSION '$v';\n$before\n$after");
	$fresh{$v} = [ state_of($db) ];
	is($fresh{$v}[0], $v, "fresh $v installed");
	unlike($fresh{$v}[3], qr/viewer/, "fresh $v: no grant of the user's in pg_init_privs");
}

my $dumpdir = PostgreSQL::Test::Utils::tempdir();
for my $i (0 .. $#versions - 1)
{
	for my $j ($i + 1 .. $#versions)
	{
		my ($from, $to) = @versions[ $i, $j ];
		my $path = "$from to $to";
		(my $db = "update_${from}_$to") =~ tr/./_/;

		# 1. the user's grants around the update
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		$node->safe_psql($db, "CREATE EXTENSION gpusort VERSION '$from';\n$before");
		my ($ret, $out, $err) = $node->psql($db, "ALTER EXTENSION gpusort UPDATE TO '$to'");
		is($ret, 0, "$path: the update succeeds") or diag($err);
		$node->safe_psql($db, $after);

		# 2. as a fresh install of the target, with the same grants
		my @state = state_of($db);
		is($state[0], $to, "$path: the extension is at $to");
		is($state[1], $fresh{$to}[1], "$path: the same objects as a fresh $to");
		is($state[2], $fresh{$to}[2], "$path: the same ACLs as a fresh $to with the same grants");
		is($state[3], $fresh{$to}[3], "$path: the same pg_init_privs as a fresh $to");
		is($state[4], $fresh{$to}[4],
			"$path: the same roles recorded as depending on them as in a fresh $to");

		# 3. through pg_dump and pg_restore
		my $dump = "$dumpdir/$db.dump";
		$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr($db) ],
			"$path: pg_dump");
		$node->safe_psql('postgres', "CREATE DATABASE restored_$db");
		$node->command_checks_all(
			[ 'pg_restore', '--exit-on-error', '-d', $node->connstr("restored_$db"), $dump ],
			0, [qr/^$/], [qr/^$/], "$path: pg_restore, no error or warning");
		my @restored = state_of("restored_$db");
		is($restored[2], $fresh{$default}[2],
			"$path: restored, the ACLs of a fresh $default with the same grants");
		is($restored[3], $fresh{$default}[3], "$path: restored, the pg_init_privs of a fresh $default");
		is($restored[4], $fresh{$default}[4],
			"$path: restored, the roles' dependencies of a fresh $default");
		is(may("restored_$db", 'viewer', 'SELECT count(*) FROM gpusort_stat'), 'yes',
			"$path: restored, viewer reads gpusort_stat");
		is(may("restored_$db", 'viewer', 'SELECT version FROM gpusort_info()'), 'yes',
			"$path: restored, viewer calls gpusort_info()");
		is(may("restored_$db", 'nobody', 'SELECT count(*) FROM gpusort_stat'), 'denied',
			"$path: restored, a role with LOGIN alone may not read gpusort_stat");
		is(may("restored_$db", 'nobody', 'SELECT version FROM gpusort_info()'), 'denied',
			"$path: restored, nor call gpusort_info(), taken from PUBLIC");
	}
}

$node->stop;
done_testing();

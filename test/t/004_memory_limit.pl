# 004_memory_limit.pl: how much memory a GpuSort holds while it loads.
#
# gpusort.max_memory is the host memory all GpuSorts of a backend may hold
# together; a sort whose input outgrows it writes sorted runs to temporary
# files.  A probe function in the sort's input samples, every 500 rows, the
# size of the sort's memory contexts ("GpuSort" and its "GpuSort ..."
# children, pg_backend_memory_contexts) plus the large blocks gpusort maps
# itself (gpusort_backend_memory().host_in_use) while the node is loading,
# and keeps the peak in a custom setting.  Checked:
#  * the probe sees the contexts grow on an ordinary sort (control);
#  * with gpusort.max_memory = 1MB, narrow rows (200k x ~40 bytes): the sort
#    spills runs and its memory stays near the limit (a batch's key chunk,
#    128k keys, is allocated whole: a few MB at most);
#  * with gpusort.max_memory = 1MB, wide rows (100k x ~4 kB, 400 MB in
#    all): same (the limit is checked as the arena takes each block).
# Results are compared with PostgreSQL's Sort in every case.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use GpuSortNode;

my $node = gpusort_node('memory');

$node->safe_psql('postgres', q{
CREATE EXTENSION gpusort;
CREATE FUNCTION probe(g int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  m bigint;
BEGIN
  IF g % 500 = 0 THEN
    SELECT coalesce(sum(total_bytes), 0) + (SELECT host_in_use FROM gpusort_backend_memory())
      INTO m FROM pg_backend_memory_contexts WHERE name LIKE 'GpuSort%';
    IF m > coalesce(nullif(current_setting('probe.peak', true), '')::bigint, 0) THEN
      PERFORM set_config('probe.peak', m::text, false);
    END IF;
  END IF;
  RETURN g;
END $$;
});

# runs q (whose input calls probe()) with the settings, with GpuSort and
# natively; returns GpuSort's result, the native result, the peak size of
# the GpuSort context in kB, and the plan
sub probe_sort
{
	my ($settings, $q) = @_;
	my $out = $node->safe_psql('postgres', qq{$settings;
SELECT set_config('probe.peak', '0', false);
$q;
SELECT (current_setting('probe.peak')::bigint + 1023) / 1024;
SET gpusort.enabled = off;
$q;
});
	my ($ignore, $result, $peak_kb, $native) = split /\n/, $out;
	my $plan = $node->safe_psql('postgres', "$settings; EXPLAIN (COSTS OFF) $q");
	return ($result, $native, $peak_kb, $plan);
}

my $narrow = q{SELECT md5(string_agg(g::text, ',')) FROM
  (SELECT probe(g) AS g FROM generate_series(1, 200000) g ORDER BY hashint4(g), g) s};
my $wide = q{SELECT sum(length(pad)), md5(string_agg(g::text, ',')) FROM
  (SELECT probe(g) AS g, repeat(md5(g::text), 120) AS pad FROM generate_series(1, 100000) g ORDER BY hashint4(g), g) s};

# control: without a tight limit the context grows with the input
my ($result, $native, $peak_kb, $plan) = probe_sort(q{SET gpusort.enabled = on; SET gpusort.max_memory = '2GB'}, $narrow);
like($plan, qr/Custom Scan \(GpuSort\)/, 'narrow rows: GpuSort');
is($result, $native, 'narrow rows: native result');
cmp_ok($peak_kb, '>', 4096, "narrow rows, default limit: the probe saw the context grow ($peak_kb kB)");

# 1MB limit, narrow rows
($result, $native, $peak_kb) = probe_sort(q{SET gpusort.max_memory = '1MB'}, $narrow);
is($result, $native, 'narrow rows, 1MB: native result');
cmp_ok($peak_kb, '<', 16384, "narrow rows, 1MB: the GpuSort context peaked at $peak_kb kB");

# 1MB limit, wide rows
($result, $native, $peak_kb, $plan) = probe_sort(q{SET gpusort.max_memory = '1MB'}, $wide);
like($plan, qr/Custom Scan \(GpuSort\)/, 'wide rows: GpuSort');
is($result, $native, 'wide rows, 1MB: native result');
cmp_ok($peak_kb, '<', 16384, "wide rows, 1MB: the GpuSort context peaked at $peak_kb kB");

$node->stop;
done_testing();

# Loaded into each test script of PostgreSQL's TAP suites through PERL5OPT=-MDdlSyncEverywhere
# (ddl-e2e's subscription_suite.rs): after a node's first successful start, unless it is a
# standby, CREATE EXTENSION ddl_sync in its databases postgres and template1 (so the databases
# a test creates have it too). shared_preload_libraries comes from TEMP_CONFIG, which
# PostgreSQL::Test::Cluster appends to every node's postgresql.conf.
package DdlSyncEverywhere;

use strict;
use warnings;

# PERL5OPT reaches every perl, prove's own process too, which must not load the test modules
# (they take over its output): only a test script wraps the cluster's start.
if ($0 =~ m{(?:^|/)t/[^/]+\.pl$})
{
	require PostgreSQL::Test::Cluster;
	my $start = \&PostgreSQL::Test::Cluster::start;
	no warnings 'redefine';
	*PostgreSQL::Test::Cluster::start = sub {
		my $started = $start->(@_);
		create_extension($_[0]) if $started;
		return $started;
	};
}

sub create_extension
{
	my ($node) = @_;
	return if $node->{ddl_sync_created};
	my $pgdata = $node->data_dir;
	# A standby gets the extension from its primary (one with hot_standby = off would not
	# even answer the query below).
	return if -e "$pgdata/standby.signal" || -e "$pgdata/recovery.signal";
	return if $node->safe_psql('postgres', 'SELECT pg_is_in_recovery()') ne 'f';
	$node->safe_psql($_, 'CREATE EXTENSION IF NOT EXISTS ddl_sync')
	  for ('postgres', 'template1');
	$node->{ddl_sync_created} = 1;
	print "### DdlSyncEverywhere: ddl_sync created on node \"" . $node->name . "\"\n";
	return;
}

1;

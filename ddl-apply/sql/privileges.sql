-- Who may do what, in one place (runs last).

-- Everyone may look up and call the functions; they check the publication's ownership.
GRANT USAGE ON SCHEMA ddl_sync TO PUBLIC;

-- The configuration is as public as pg_publication and pg_publication_rel: readable by all,
-- written only through the functions.
REVOKE ALL ON TABLE ddl_sync.publication_sync FROM PUBLIC;
GRANT SELECT ON TABLE ddl_sync.publication_sync TO PUBLIC;
REVOKE ALL ON SEQUENCE ddl_sync.publication_sync_oid_seq FROM PUBLIC;
GRANT SELECT ON TABLE ddl_sync.publication_ddl_config TO PUBLIC;

-- Statement texts and apply errors are for whom the administrator grants them (like the query
-- texts of pg_stat_activity): a replication role that is not superuser needs
-- GRANT SELECT ON ddl_sync.events TO that_role for the initial table sync.
REVOKE ALL ON TABLE ddl_sync.events FROM PUBLIC;

-- Which SQL adapter replays which dialect is readable by all; register_adapter and
-- unregister_adapter check that the caller may change it.
REVOKE ALL ON TABLE ddl_sync.adapter FROM PUBLIC;
GRANT SELECT ON TABLE ddl_sync.adapter TO PUBLIC;

-- Statistics: the publishers' counts are as public as pg_stat_replication's; the subscribers'
-- carry error messages (statement texts), like ddl_sync.events. Resets are for the owner
-- (grant EXECUTE to monitoring roles as wanted).
GRANT SELECT ON TABLE ddl_sync.publication_stats, ddl_sync.publication_rule_stats TO PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.reset_publication_stats(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.reset_publication_counters(oid) FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.reset_subscription_stats(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.subscription_errors() FROM PUBLIC;
-- The events subscriptions are stuck on hold statement texts too; deciding about them is for
-- superusers (the function checks) and whoever they grant it to.
REVOKE ALL ON FUNCTION ddl_sync.failing_event_list() FROM PUBLIC;
REVOKE ALL ON TABLE ddl_sync.failing_events FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.resolve_event(text, text, text, text) FROM PUBLIC;
-- ddl_sync.refresh_event_triggers() keeps PostgreSQL's default EXECUTE for PUBLIC: it only sets
-- the extension's event triggers to what its own tables say (the capture calls it as the
-- user whose DROP removed the last DDL publication).
-- What copy_schema did is as public as pg_subscription's columns other than the connection
-- string; its progress shows what pg_stat_activity shows the caller.
REVOKE ALL ON TABLE ddl_sync.schema_copies FROM PUBLIC;
GRANT SELECT ON TABLE ddl_sync.schema_copies, ddl_sync.schema_copy_progress TO PUBLIC;
-- Moving sequences (it reads the subscription's connection string) is for superusers and
-- whoever they grant it to.
REVOKE ALL ON FUNCTION ddl_sync.sync_sequences(text) FROM PUBLIC;
-- So is comparing a subscription's relations with the publisher's. Describing one relation
-- keeps PostgreSQL's default EXECUTE for PUBLIC, like pg_get_indexdef and the other pg_get_*
-- functions it is made of: the publisher's side of compare_subscription runs it as the
-- subscription's replication role.
REVOKE ALL ON FUNCTION ddl_sync.compare_subscription(text) FROM PUBLIC;

-- The replay runs only from the apply trigger (as the table's owner), and the "extension's own
-- change" flag only from the extension's functions: neither is for other callers, in
-- particular not for code a replayed statement runs in the apply worker.
REVOKE ALL ON FUNCTION ddl_sync.replay(ddl_sync.events) FROM PUBLIC;
REVOKE ALL ON FUNCTION ddl_sync.set_local_change(boolean) FROM PUBLIC;

//! The extension's catalog as installed: its tables, keys, privileges, event triggers and
//! functions, checked in a real server by `cargo pgrx test` (schema `tests`), and the helpers
//! the other test modules share.

use pgrx::prelude::*;

#[pg_schema]
pub(crate) mod tests {
    use pgrx::prelude::*;

    /// Creates `pg_temp.error_of(statement text)`: NULL when the statement succeeds, else
    /// `SQLSTATE: message` (the statement runs in a subtransaction, so the test goes on). Call it
    /// before any `SET ROLE`.
    pub fn install_error_of() {
        Spi::run(
            "CREATE OR REPLACE FUNCTION pg_temp.error_of(statement text) RETURNS text
             LANGUAGE plpgsql AS $$
             BEGIN
                 EXECUTE statement;
                 RETURN NULL;
             EXCEPTION WHEN OTHERS THEN
                 RETURN SQLSTATE || ': ' || SQLERRM;
             END
             $$",
        )
        .expect("helper created");
    }

    /// The error a statement raises, as `SQLSTATE: message`; `None` when it succeeds.
    pub fn error_of(statement: &str) -> Option<String> {
        Spi::get_one_with_args::<String>("SELECT pg_temp.error_of($1)", &[statement.into()])
            .expect("helper ran")
    }

    /// The rows of a query, each as its columns' text (NULL as `None`).
    pub fn rows(query: &str) -> Vec<Vec<Option<String>>> {
        Spi::connect(|client| {
            let table = client.select(query, None, &[]).expect("query ran");
            let width = table.columns().expect("columns");
            table
                .map(|row| {
                    (1..=width)
                        .map(|i| row.get::<String>(i).expect("text column"))
                        .collect()
                })
                .collect()
        })
    }

    fn one<T: FromDatum + IntoDatum>(sql: &str) -> Option<T> {
        Spi::get_one::<T>(sql).expect("query ran")
    }

    #[pg_test]
    fn extension_lives_in_its_schema_and_reports_its_version() {
        let version = Spi::get_one::<String>("SELECT ddl_sync.library_version()")
            .expect("query ran")
            .expect("not null");
        let installed = Spi::get_one::<String>(
            "SELECT extversion FROM pg_extension WHERE extname = 'ddl_sync'",
        )
        .expect("query ran")
        .expect("extension installed");
        assert_eq!(version, installed);
    }

    #[pg_test]
    fn publication_sync_is_a_user_catalog_table_and_events_is_not() {
        assert_eq!(
            one::<bool>(
                "SELECT 'user_catalog_table=true' = ANY (reloptions) FROM pg_class
                 WHERE oid = 'ddl_sync.publication_sync'::regclass"
            ),
            Some(true)
        );
        assert_eq!(
            one::<bool>(
                "SELECT reloptions IS NULL FROM pg_class WHERE oid = 'ddl_sync.events'::regclass"
            ),
            Some(true)
        );
    }

    #[pg_test]
    fn publication_sync_has_its_columns_key_and_checks() {
        let columns = rows(
            "SELECT attname::text, format_type(atttypid, atttypmod), attnotnull::text,
                    pg_get_expr(d.adbin, d.adrelid)
             FROM pg_attribute a LEFT JOIN pg_attrdef d ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)
             WHERE attrelid = 'ddl_sync.publication_sync'::regclass AND attnum > 0
             ORDER BY attnum",
        );
        let expected: Vec<Vec<Option<String>>> = [
            (
                "oid",
                "oid",
                "true",
                Some("(nextval('ddl_sync.publication_sync_oid_seq'::regclass))::oid"),
            ),
            ("pfsyncpubid", "oid", "true", None),
            ("pfsynckind", "\"char\"", "true", None),
            ("pfsyncnspid", "oid", "true", Some("0")),
            ("pfsyncrelid", "oid", "true", Some("0")),
            ("pfsyncobjid", "oid", "true", Some("0")),
            ("pfsyncsubid", "oid", "true", Some("0")),
            ("pfsyncenabled", "boolean", "true", Some("true")),
            ("pfsyncddl", "integer", "true", None),
            ("pfsyncextra", "text", "false", None),
        ]
        .iter()
        .map(|(name, ty, not_null, default)| {
            vec![
                Some(name.to_string()),
                Some(ty.to_string()),
                Some(not_null.to_string()),
                default.map(str::to_owned),
            ]
        })
        .collect();
        assert_eq!(columns, expected);

        let indexes = rows(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index
             WHERE indrelid = 'ddl_sync.publication_sync'::regclass ORDER BY indexrelid",
        );
        assert_eq!(
            indexes.concat(),
            [
                "CREATE UNIQUE INDEX publication_sync_pkey ON ddl_sync.publication_sync USING btree (oid)",
                "CREATE UNIQUE INDEX publication_sync_key ON ddl_sync.publication_sync USING btree (pfsyncpubid, pfsynckind, pfsyncnspid, pfsyncrelid, pfsyncobjid, pfsyncsubid)",
                "CREATE INDEX publication_sync_pubid_index ON ddl_sync.publication_sync USING btree (pfsyncpubid)",
            ]
            .map(|s| Some(s.to_owned()))
        );

        // The checks, as the superuser (who alone can write the table directly).
        install_error_of();
        let insert = |values: &str| {
            error_of(&format!(
                "INSERT INTO ddl_sync.publication_sync
                     (pfsyncpubid, pfsynckind, pfsyncnspid, pfsyncrelid, pfsyncobjid, pfsyncddl)
                 VALUES {values}"
            ))
        };
        let violates = |constraint: &str| {
            Some(format!(
                "23514: new row for relation \"publication_sync\" violates check constraint \"{constraint}\""
            ))
        };
        assert_eq!(insert("(1, 'p', 0, 0, 0, 3)"), None);
        assert_eq!(insert("(1, 'n', 2200, 0, 0, 4095)"), None);
        assert_eq!(insert("(1, 'r', 0, 1259, 0, 0)"), None);
        assert_eq!(insert("(1, 'o', 0, 1255, 1242, 1)"), None);
        assert_eq!(
            insert("(1, 'p', 0, 0, 0, 1)"),
            Some(
                "23505: duplicate key value violates unique constraint \"publication_sync_key\""
                    .into()
            )
        );
        assert_eq!(
            insert("(1, 'x', 0, 0, 0, 1)"),
            violates("publication_sync_kind_check")
        );
        assert_eq!(
            insert("(0, 'p', 0, 0, 0, 1)"),
            violates("publication_sync_pubid_check")
        );
        assert_eq!(
            insert("(2, 'p', 0, 0, 0, 4096)"),
            violates("publication_sync_ddl_check")
        );
        assert_eq!(
            insert("(2, 'p', 0, 0, 0, -1)"),
            violates("publication_sync_ddl_check")
        );
        for bad in [
            "(2, 'p', 2200, 0, 0, 1)",
            "(2, 'n', 0, 0, 0, 1)",
            "(2, 'n', 2200, 1259, 0, 1)",
            "(2, 'r', 0, 0, 0, 1)",
            "(2, 'r', 2200, 1259, 0, 1)",
            "(2, 'r', 0, 1259, 5, 1)",
            "(2, 'o', 0, 1255, 0, 1)",
            "(2, 'o', 0, 0, 1242, 1)",
        ] {
            assert_eq!(
                insert(bad),
                violates("publication_sync_target_check"),
                "{bad}"
            );
        }
        assert_eq!(
            error_of(
                "INSERT INTO ddl_sync.publication_sync (pfsyncpubid, pfsynckind, pfsyncddl, pfsyncextra)
                 VALUES (3, 'p', 1, '')"
            ),
            violates("publication_sync_extra_check")
        );
    }

    /// What the subscriber side adds after the event columns that may not be NULL.
    const APPLY_COLUMNS: [(&str, &str); 6] = [
        ("apply_status", "text"),
        ("apply_detail", "text"),
        ("apply_adapter", "text"),
        ("applied_at", "timestamp with time zone"),
        ("apply_duration", "interval"),
        ("subid", "oid"),
    ];

    /// The subscriber's columns added since, after the event columns of their version.
    const LATER_APPLY_COLUMNS: [(&str, &str); 1] = [("apply_verified", "boolean")];

    /// The columns of ddl-wire's event schema that may (`true`) or may not be NULL.
    fn event_columns(nullable: bool) -> impl Iterator<Item = (&'static str, &'static str)> {
        ddl_wire::EVENT_COLUMNS
            .iter()
            .filter(move |c| c.nullable == nullable)
            .map(|c| (c.name, c.ty.sql_name()))
    }

    #[pg_test]
    fn events_columns_are_the_event_schema_and_the_apply_status() {
        let columns = rows(
            "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
             WHERE attrelid = 'ddl_sync.events'::regclass AND attnum > 0 AND NOT attisdropped
             ORDER BY attnum",
        );
        // The event columns every version had, the apply status, then the event and apply
        // columns added since (ALTER TABLE ADD COLUMN puts them last).
        let expected: Vec<Vec<Option<String>>> = event_columns(false)
            .chain(APPLY_COLUMNS)
            .chain(event_columns(true))
            .chain(LATER_APPLY_COLUMNS)
            .map(|(name, ty)| vec![Some(name.to_owned()), Some(ty.to_owned())])
            .collect();
        assert_eq!(columns, expected);

        // The event columns every version had are never NULL (consumers refuse a NULL); the
        // apply status may be, and the later event columns (an older ddl_pgoutput does not
        // fill them).
        let nullable = rows(
            "SELECT attname::text FROM pg_attribute
             WHERE attrelid = 'ddl_sync.events'::regclass AND attnum > 0 AND NOT attnotnull
             ORDER BY attnum",
        );
        let expected: Vec<Vec<Option<String>>> = APPLY_COLUMNS
            .into_iter()
            .chain(event_columns(true))
            .chain(LATER_APPLY_COLUMNS)
            .map(|(name, _)| vec![Some(name.to_string())])
            .collect();
        assert_eq!(nullable, expected);
    }

    #[pg_test]
    fn events_are_keyed_by_origin_and_lsn() {
        assert_eq!(
            one::<String>(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint
                 WHERE conrelid = 'ddl_sync.events'::regclass AND contype = 'p'"
            )
            .as_deref(),
            Some("PRIMARY KEY (origin_sysid, origin_lsn)")
        );
        install_error_of();
        // The table's own constraints, without the replay trigger (which sets the status).
        Spi::run("ALTER TABLE ddl_sync.events DISABLE TRIGGER apply_event").expect("disable");
        let insert = |origin_lsn: &str, status: &str| {
            error_of(&format!(
                "INSERT INTO ddl_sync.events VALUES ('0/10', 7, '{origin_lsn}', 700, true, false,
                     'table', 'postgres', 'CREATE TABLE', 'public', 'public.t',
                     'CREATE TABLE t ()', '\"$user\", public', 'alice', 'alice', 'db',
                     {status}, NULL, NULL, NULL, NULL)"
            ))
        };
        assert_eq!(insert("0/10", "NULL"), None);
        assert_eq!(insert("0/20", "'applied'"), None);
        assert_eq!(
            insert("0/10", "'skipped'"),
            Some("23505: duplicate key value violates unique constraint \"events_pkey\"".into())
        );
        // No CHECK: the trigger is the status's only writer (see catalog.sql).
        assert_eq!(
            one::<i64>(
                "SELECT count(*) FROM pg_constraint
                 WHERE conrelid = 'ddl_sync.events'::regclass AND contype = 'c'"
            ),
            Some(0)
        );
    }

    #[pg_test]
    fn ordinary_users_read_the_configuration_but_write_nothing() {
        install_error_of();
        Spi::run("CREATE ROLE ddl_sync_t_reader").expect("role");
        Spi::run("SET ROLE ddl_sync_t_reader").expect("set role");
        let denied = |table: &str| Some(format!("42501: permission denied for table {table}"));
        assert_eq!(
            error_of(
                "INSERT INTO ddl_sync.publication_sync (pfsyncpubid, pfsynckind, pfsyncddl)
                 VALUES (1, 'p', 1)"
            ),
            denied("publication_sync")
        );
        assert_eq!(
            error_of("UPDATE ddl_sync.publication_sync SET pfsyncenabled = false"),
            denied("publication_sync")
        );
        assert_eq!(
            error_of("DELETE FROM ddl_sync.publication_sync"),
            denied("publication_sync")
        );
        assert_eq!(
            error_of("SELECT nextval('ddl_sync.publication_sync_oid_seq')"),
            Some("42501: permission denied for sequence publication_sync_oid_seq".into())
        );
        assert_eq!(error_of("SELECT * FROM ddl_sync.events"), denied("events"));
        assert_eq!(
            error_of("INSERT INTO ddl_sync.events (origin_sysid) VALUES (1)"),
            denied("events")
        );
        assert_eq!(error_of("SELECT * FROM ddl_sync.publication_sync"), None);
        assert_eq!(
            error_of("SELECT * FROM ddl_sync.publication_ddl_config"),
            None
        );
        Spi::run("RESET ROLE").expect("reset role");
    }

    #[pg_test(error = "permission denied for table publication_sync")]
    fn direct_insert_by_a_non_superuser_is_refused() {
        Spi::run("CREATE ROLE ddl_sync_t_intruder").expect("role");
        Spi::run("SET ROLE ddl_sync_t_intruder").expect("set role");
        Spi::run(
            "INSERT INTO ddl_sync.publication_sync (pfsyncpubid, pfsynckind, pfsyncddl)
             VALUES (1, 'p', 2047)",
        )
        .expect("refused");
    }

    /// Each of the extension's event triggers, its event, state and function, and the extension
    /// it belongs to.
    fn event_triggers() -> Vec<Vec<Option<String>>> {
        rows(
            "SELECT e.evtevent::text, e.evtenabled::text, e.evtfoid::regprocedure::text,
                    (SELECT x.extname::text FROM pg_depend d JOIN pg_extension x ON x.oid = d.refobjid
                     WHERE d.classid = 'pg_event_trigger'::regclass AND d.objid = e.oid
                       AND d.deptype = 'e')
             FROM pg_event_trigger e WHERE e.evtname LIKE 'ddl\\_sync\\_%' ORDER BY e.evtname",
        )
    }

    #[pg_test]
    fn the_event_triggers_belong_to_the_extension_and_fire_only_where_needed() {
        let row = |event: &str, state: &str, function: &str| {
            [event, state, function, "ddl_sync"]
                .map(|s| Some(s.to_owned()))
                .to_vec()
        };
        let states = |capture: &str, peers: &str| {
            vec![
                row(
                    "ddl_command_end",
                    capture,
                    "ddl_sync.capture_ddl_command_end()",
                ),
                row("sql_drop", capture, "ddl_sync.capture_sql_drop()"),
                row("ddl_command_end", peers, "ddl_sync.register_peer_tables()"),
            ]
        };
        // No publication with DDL, no subscription: nothing fires.
        assert_eq!(event_triggers(), states("D", "D"));
        // A publication with DDL: the capture fires, always (apply workers run in replica mode).
        Spi::run(
            "CREATE PUBLICATION ddl_sync_t_et;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_t_et', 'table')",
        )
        .expect("publication");
        assert_eq!(event_triggers(), states("A", "D"));
        // A subscription with DDL (a row of its configuration stands for it here).
        Spi::run("INSERT INTO ddl_sync.subscription_ddl (subid, ddl) VALUES (1, 1)")
            .expect("subscription row");
        assert_eq!(event_triggers(), states("A", "A"));
        Spi::run("DELETE FROM ddl_sync.subscription_ddl WHERE subid = 1").expect("deleted");
        assert_eq!(event_triggers(), states("A", "D"));
    }

    #[pg_test]
    fn rows_follow_dropped_publications_schemas_relations_and_objects() {
        Spi::run(
            "CREATE SCHEMA ddl_sync_t_app;
             CREATE TABLE ddl_sync_t_app.orders (id int, note text);
             CREATE TABLE ddl_sync_t_app.items (id int);
             CREATE TABLE public.ddl_sync_t_kept (id int, gone int CHECK (gone > 0));
             CREATE TABLE public.ddl_sync_t_dropped (id int);
             CREATE FUNCTION public.ddl_sync_t_f() RETURNS int LANGUAGE sql AS 'SELECT 1';
             CREATE PUBLICATION ddl_sync_t_p1;
             CREATE PUBLICATION ddl_sync_t_p2;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_t_p1', 'all');
             SELECT ddl_sync.set_publication_ddl('ddl_sync_t_p2', 'table');
             SELECT ddl_sync.add_schema_rule('ddl_sync_t_p1', 'ddl_sync_t_app');
             SELECT ddl_sync.add_relation_rule('ddl_sync_t_p1', 'ddl_sync_t_app.orders');
             SELECT ddl_sync.add_relation_rule('ddl_sync_t_p1', 'public.ddl_sync_t_kept');
             SELECT ddl_sync.add_relation_rule('ddl_sync_t_p1', 'public.ddl_sync_t_dropped');
             SELECT ddl_sync.add_relation_rule('ddl_sync_t_p2', 'public.ddl_sync_t_dropped');
             SELECT ddl_sync.add_object_rule('ddl_sync_t_p1', 'pg_proc',
                                             'public.ddl_sync_t_f()'::regprocedure);
             SELECT ddl_sync.add_object_rule('ddl_sync_t_p1', 'pg_constraint',
                 (SELECT oid FROM pg_constraint WHERE conname = 'ddl_sync_t_kept_gone_check'));",
        )
        .expect("set up");
        let count = |publication: &str| {
            one::<i64>(&format!(
                "SELECT count(*) FROM ddl_sync.publication_sync
                 WHERE pfsyncpubid = (SELECT oid FROM pg_publication WHERE pubname = '{publication}')"
            ))
            .unwrap_or_default()
        };
        let targets = || {
            rows(
                "SELECT level || ' ' || coalesce(target, publication) FROM ddl_sync.publication_ddl_config
                 WHERE publication LIKE 'ddl\\_sync\\_t\\_p_' ORDER BY 1",
            )
            .concat()
        };
        assert_eq!(count("ddl_sync_t_p1"), 7);
        assert_eq!(count("ddl_sync_t_p2"), 2);

        // A column is not its relation; its constraint goes with it.
        Spi::run("ALTER TABLE public.ddl_sync_t_kept DROP COLUMN gone").expect("drop column");
        assert_eq!(count("ddl_sync_t_p1"), 6);

        Spi::run("DROP TABLE public.ddl_sync_t_dropped").expect("drop table");
        assert_eq!(count("ddl_sync_t_p1"), 5);
        assert_eq!(count("ddl_sync_t_p2"), 1);

        Spi::run("DROP FUNCTION public.ddl_sync_t_f()").expect("drop function");
        assert_eq!(count("ddl_sync_t_p1"), 4);

        Spi::run("DROP SCHEMA ddl_sync_t_app CASCADE").expect("drop schema");
        assert_eq!(
            targets(),
            [
                "publication ddl_sync_t_p1",
                "publication ddl_sync_t_p2",
                "relation public.ddl_sync_t_kept",
            ]
            .map(|s| Some(s.to_owned()))
        );

        // Event triggers fire for publications on PostgreSQL 15.
        let p1 =
            one::<pg_sys::Oid>("SELECT oid FROM pg_publication WHERE pubname = 'ddl_sync_t_p1'")
                .expect("p1");
        Spi::run("DROP PUBLICATION ddl_sync_t_p1").expect("drop publication");
        assert_eq!(
            one::<i64>(&format!(
                "SELECT count(*) FROM ddl_sync.publication_sync WHERE pfsyncpubid = {p1}"
            )),
            Some(0)
        );
        assert_eq!(count("ddl_sync_t_p2"), 1);
    }

    #[pg_test]
    fn rows_arriving_through_replication_are_skipped() {
        // What a FOR ALL TABLES subscription's apply worker would write: the publisher's rows.
        Spi::run(
            "SET LOCAL session_replication_role = replica;
             INSERT INTO ddl_sync.publication_sync (pfsyncpubid, pfsynckind, pfsyncddl)
             VALUES (424242, 'p', 1);",
        )
        .expect("insert in replica mode");
        assert_eq!(
            one::<i64>("SELECT count(*) FROM ddl_sync.publication_sync WHERE pfsyncpubid = 424242"),
            Some(0)
        );
    }

    #[pg_test]
    fn drops_replayed_by_an_apply_worker_are_followed_too() {
        Spi::run(
            "CREATE PUBLICATION ddl_sync_t_replica;
             SELECT ddl_sync.set_publication_ddl('ddl_sync_t_replica', 'all');
             SET LOCAL session_replication_role = replica;
             DROP PUBLICATION ddl_sync_t_replica;",
        )
        .expect("dropped as a replica");
        assert_eq!(
            one::<i64>(
                "SELECT count(*) FROM ddl_sync.publication_sync s
                 WHERE NOT EXISTS (SELECT FROM pg_publication p WHERE p.oid = s.pfsyncpubid)"
            ),
            Some(0)
        );
    }
}

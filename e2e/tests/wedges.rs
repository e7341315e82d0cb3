//! Statements that once stopped a subscriber for good: a table the subscriber did not get (or
//! got differently), whose first row then failed in the apply worker on every retry. Found by
//! PostgreSQL's regression suite (`cargo xtask regress`, FIDELITY.md); one test per class. Each
//! ends with rows of an ordinary table arriving after the statement: the stream goes on.

use ddl_e2e::{query, subscribed_pair, wait_caught_up};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Inserts a row into `t` on the publisher and waits until the subscriber has it and everything
/// before it.
fn stream_goes_on(publisher: &Cluster, subscriber: &Cluster, id: i32) {
    query(publisher, &format!("INSERT INTO t VALUES ({id})"));
    wait_caught_up(publisher, subscriber, "sub", TIMEOUT);
    assert_eq!(
        query(
            subscriber,
            &format!("SELECT count(*) FROM t WHERE id = {id}")
        ),
        "1"
    );
}

/// `status|detail` of the subscriber's apply log rows about `identity`, in order.
fn log_of(subscriber: &Cluster, identity: &str) -> Vec<String> {
    query(
        subscriber,
        &format!(
            "SELECT status || '|' || coalesce(detail, '') FROM ddl_sync.apply_log
              WHERE object_identity = '{identity}' ORDER BY origin_lsn"
        ),
    )
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn tablespaces_only_the_publisher_has_are_left_out_and_said_so() {
    let (publisher, subscriber) = subscribed_pair("wedge-tablespace", "skip");
    // In-place tablespaces (a directory in pg_tblspc): what PostgreSQL's own tests use.
    for pg in [&publisher, &subscriber] {
        query(
            pg,
            "SET allow_in_place_tablespaces = on; CREATE TABLESPACE both_nodes LOCATION ''",
        );
    }
    query(
        &publisher,
        "SET allow_in_place_tablespaces = on; CREATE TABLESPACE publisher_only LOCATION ''",
    );
    query(
        &publisher,
        "CREATE TABLE placed (a int PRIMARY KEY USING INDEX TABLESPACE publisher_only)
             TABLESPACE publisher_only;
         INSERT INTO placed VALUES (1);
         CREATE INDEX placed_a ON placed (a) TABLESPACE publisher_only;
         CREATE TABLE shared (a int PRIMARY KEY) TABLESPACE both_nodes;
         ALTER TABLE shared SET TABLESPACE publisher_only;
         ALTER TABLE ALL IN TABLESPACE publisher_only SET TABLESPACE pg_default;
         INSERT INTO placed VALUES (2);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM placed"), "2");
    let placed = log_of(&subscriber, "public.placed");
    assert!(
        placed[0].starts_with("applied|TABLESPACE publisher_only not replayed")
            && placed[0].matches("not replayed").count() == 2,
        "{placed:?}"
    );
    // A tablespace this node has too is used as named.
    assert_eq!(
        query(
            &subscriber,
            "SELECT t.spcname FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace
              WHERE c.relname = 'shared'"
        ),
        "both_nodes"
    );
    let shared = log_of(&subscriber, "public.shared");
    assert!(
        shared[0] == "applied|" && shared[1].contains("SET TABLESPACE publisher_only not replayed"),
        "{shared:?}"
    );
    let all_in = query(
        &subscriber,
        "SELECT status || '|' || detail FROM ddl_sync.apply_log WHERE sql LIKE 'ALTER TABLE ALL IN%'",
    );
    assert!(
        all_in.starts_with("applied|ALL IN TABLESPACE ... SET TABLESPACE publisher_only"),
        "{all_in}"
    );
}

#[test]
fn create_table_as_travels_as_the_table_it_made() {
    let (publisher, subscriber) = subscribed_pair("wedge-ctas", "skip");
    query(
        &publisher,
        "PREPARE q AS SELECT 1 AS a, 'x'::varchar(5) AS b, 'y' COLLATE \"C\" AS c, 2.5::numeric(4,1);
         CREATE TABLE from_prepared AS EXECUTE q;
         CREATE UNLOGGED TABLE from_select (n, m) WITH (fillfactor = 70) AS SELECT 1::bigint, now();
         SELECT 'z'::text AS z INTO from_select_into;
         INSERT INTO from_prepared VALUES (3, 'w', 'v', 1.5);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    let sql = query(
        &subscriber,
        "SELECT status || ' ' || command_tag || ': ' || sql FROM ddl_sync.apply_log
          WHERE object_identity LIKE 'public.from_%' ORDER BY origin_lsn",
    );
    assert_eq!(
        sql,
        "applied CREATE TABLE: CREATE TABLE public.from_prepared (a integer, b character varying(5), c pg_catalog.text COLLATE \"C\", \"numeric\" numeric(4,1))\n\
         applied ALTER TABLE: ALTER TABLE public.from_prepared REPLICA IDENTITY FULL\n\
         applied CREATE TABLE: CREATE UNLOGGED TABLE public.from_select (n bigint, m timestamp with time zone) WITH (fillfactor = '70')\n\
         applied CREATE TABLE: CREATE TABLE public.from_select_into (z pg_catalog.text)\n\
         applied ALTER TABLE: ALTER TABLE public.from_select_into REPLICA IDENTITY FULL"
    );
    // The rows came by replication: those of the query, and the one inserted after.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(a || b || c || \"numeric\", ',' ORDER BY a) FROM from_prepared"
        ),
        "1xy2.5,3wv1.5"
    );
    let columns = "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || ' ' || attcollation::regcollation, ', ' ORDER BY attnum)
                     FROM pg_attribute WHERE attrelid = 'from_prepared'::regclass AND attnum > 0";
    assert_eq!(query(&subscriber, columns), query(&publisher, columns));
}

#[test]
fn tables_whose_values_cannot_travel_stay_out_of_the_subscription() {
    let (publisher, subscriber) = subscribed_pair("wedge-node-tree", "skip");
    query(
        &publisher,
        "CREATE TABLE parted (a int) PARTITION BY LIST (a);
         CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
         CREATE TABLE trees AS SELECT relname, relpartbound FROM pg_class WHERE relname = 'parted_1';
         INSERT INTO trees SELECT relname, relpartbound FROM pg_class WHERE relname = 'parted_1';
         CREATE TABLE later (a int);
         ALTER TABLE later ADD COLUMN tree pg_node_tree;
         INSERT INTO later SELECT 1, relpartbound FROM pg_class WHERE relname = 'parted_1';",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    let trees = log_of(&subscriber, "public.trees");
    assert!(
        trees[0].starts_with("applied|rows of public.trees are not applied on this subscriber")
            && trees[0].contains("relpartbound pg_node_tree"),
        "{trees:?}"
    );
    let later = query(
        &subscriber,
        "SELECT detail FROM ddl_sync.apply_log WHERE sql LIKE 'ALTER TABLE later%'",
    );
    assert!(
        later.contains("rows of public.later are not applied"),
        "{later}"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(srrelid::regclass::text, ',' ORDER BY 1) FROM pg_subscription_rel
              WHERE srrelid::regclass::text IN ('trees', 'later', 'parted_1')"
        ),
        "parted_1"
    );
}

#[test]
fn partition_bounds_computed_on_the_publisher_travel_as_values() {
    let (publisher, subscriber) = subscribed_pair("wedge-bound", "skip");
    query(
        &publisher,
        "CREATE TABLE events_by_time (at timestamptz, note text) PARTITION BY RANGE (at);
         CREATE TABLE events_old PARTITION OF events_by_time
             FOR VALUES FROM (MINVALUE) TO (now() - interval '1 second');
         CREATE TABLE events_new (at timestamptz, note text);
         ALTER TABLE events_by_time ATTACH PARTITION events_new
             FOR VALUES FROM (now() - interval '1 second') TO (MAXVALUE);
         CREATE TABLE by_text (k text) PARTITION BY LIST (k);
         CREATE TABLE by_text_1 PARTITION OF by_text FOR VALUES IN ('a', 'b(');
         CREATE TABLE by_len (n int) PARTITION BY LIST (n);
         CREATE TABLE by_len_1 PARTITION OF by_len
             FOR VALUES IN (length(name'\\')) /* ')) WITH (fillfactor = 10) -- */;
         INSERT INTO events_by_time VALUES (now(), 'now');",
    );
    // Later than the publisher's bound: the subscriber would put the row elsewhere, or nowhere,
    // had it computed the bound itself.
    std::thread::sleep(Duration::from_millis(1100));
    stream_goes_on(&publisher, &subscriber, 1);
    let bounds = "SELECT string_agg(relname || ' ' || pg_get_expr(relpartbound, oid), E'\\n' ORDER BY relname)
                    FROM pg_class WHERE relname IN ('events_old', 'events_new', 'by_text_1', 'by_len_1')";
    assert_eq!(query(&subscriber, bounds), query(&publisher, bounds));
    // `name'\'` is a typed literal, not an E'' string, and the bound ends where PostgreSQL's
    // lexer says: the comment after it stays a comment (a scanner of our own cut the bound
    // inside it, and the subscriber ran the rest of the comment as part of the statement).
    let options = "SELECT coalesce(array_to_string(reloptions, ','), 'none') FROM pg_class
                    WHERE relname = 'by_len_1'";
    assert_eq!(query(&subscriber, options), "none");
    assert!(
        query(
            &subscriber,
            "SELECT sql FROM ddl_sync.apply_log
              WHERE object_identity = 'public.by_len_1' AND command_tag = 'CREATE TABLE'"
        )
        .ends_with("FOR VALUES IN (1) /* ')) WITH (fillfactor = 10) -- */"),
        "the comment is carried as a comment"
    );
    assert_eq!(query(&subscriber, "SELECT note FROM events_new"), "now");
    let sql = query(
        &subscriber,
        "SELECT sql FROM ddl_sync.apply_log
          WHERE object_identity = 'public.events_old' AND command_tag = 'CREATE TABLE'",
    );
    assert!(
        sql.starts_with("CREATE TABLE events_old PARTITION OF events_by_time\n             FOR VALUES FROM (MINVALUE) TO ('"),
        "{sql}"
    );
    // Literal bounds keep the client's text.
    assert_eq!(
        query(
            &subscriber,
            "SELECT sql FROM ddl_sync.apply_log
              WHERE object_identity = 'public.by_text_1' AND command_tag = 'CREATE TABLE'"
        ),
        "CREATE TABLE by_text_1 PARTITION OF by_text FOR VALUES IN ('a', 'b(')"
    );
}

#[test]
fn the_extensions_own_tables_are_not_synced_or_applied() {
    let (publisher, subscriber) = subscribed_pair("wedge-own-tables", "skip");
    query(
        &publisher,
        "CREATE SCHEMA audit; SELECT ddl_sync.add_schema_rule('p', 'audit')",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(srrelid::regclass::text || ' ' || srsubstate::text, ',')
               FROM pg_subscription_rel
              WHERE srrelid::regclass::text LIKE 'ddl_sync.%'"
        ),
        "ddl_sync.events r"
    );
    // The publisher's configuration stays the publisher's.
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM ddl_sync.publication_sync"
        ),
        "0"
    );
}

#[test]
fn comments_on_composite_type_columns_replay() {
    let (publisher, subscriber) = subscribed_pair("wedge-comment", "skip");
    query(
        &publisher,
        "CREATE SCHEMA s;
         SET search_path = s;
         CREATE TYPE pair AS (f1 int, f2 int);
         COMMENT ON COLUMN pair.f1 IS 'first';",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(&subscriber, "SELECT col_description('s.pair'::regclass, 1)"),
        "first"
    );
}

#[test]
fn a_hash_partition_detached_concurrently_gets_no_constraint_and_takes_rows() {
    let (publisher, subscriber) = subscribed_pair("wedge-detach-hash", "skip");
    query(
        &publisher,
        "CREATE TABLE by_hash (a varchar) PARTITION BY HASH (a);
         CREATE TABLE by_hash_0 PARTITION OF by_hash FOR VALUES WITH (MODULUS 2, REMAINDER 0);
         CREATE TABLE by_range (a int) PARTITION BY RANGE (a);
         CREATE TABLE by_range_0 PARTITION OF by_range FOR VALUES FROM (0) TO (10);",
    );
    query(
        &publisher,
        "ALTER TABLE by_hash DETACH PARTITION by_hash_0 CONCURRENTLY",
    );
    query(
        &publisher,
        "ALTER TABLE by_range DETACH PARTITION by_range_0 CONCURRENTLY",
    );
    // Any value now: the hash partition keeps no trace of its bound (PostgreSQL adds none, as
    // it would name the partitioned table by OID).
    query(
        &publisher,
        "INSERT INTO by_hash_0 VALUES ('1'), ('2'); INSERT INTO by_range_0 VALUES (5);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    let constraints = "SELECT conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
                        WHERE conrelid IN ('by_hash_0'::regclass, 'by_range_0'::regclass) ORDER BY 1";
    assert_eq!(
        query(&subscriber, constraints),
        query(&publisher, constraints)
    );
    assert_eq!(query(&subscriber, "SELECT count(*) FROM by_hash_0"), "2");
}

/// `CREATE TABLE ... (LIKE <a temporary table>)`: the statement cannot run on the subscriber,
/// whose session has no such table; the table is made there from the definition the event
/// carries (columns and key), so its rows, updates included, still arrive. So is the table of
/// an `EXPLAIN ANALYZE CREATE TABLE AS`, which no event trigger sees.
#[test]
fn a_table_the_statement_could_not_make_here_is_made_from_its_definition() {
    let (publisher, subscriber) = subscribed_pair("wedge-definition", "skip");
    query(
        &publisher,
        "CREATE TEMP TABLE scratch (a int, b text COLLATE \"C\");
         CREATE TABLE liked (LIKE scratch, c int PRIMARY KEY, g int GENERATED ALWAYS AS (c * 2) STORED);
         INSERT INTO liked VALUES (1, 'x', 10);
         UPDATE liked SET b = 'y' WHERE c = 10;
         EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
             CREATE TABLE explained AS SELECT 7 AS n;",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(query(&subscriber, "SELECT a || b || c FROM liked"), "1y10");
    assert_eq!(query(&subscriber, "SELECT n FROM explained"), "7");
    let liked = log_of(&subscriber, "public.liked");
    assert!(
        liked[0].starts_with("failed|relation \"scratch\" does not exist")
            && liked[0].contains(
                "public.liked was made from the publisher's definition, its columns and key \
                 only, owned by postgres"
            ),
        "{liked:?}"
    );
    // The columns a row has (not the generated one, which pgoutput does not send), with their
    // collation, and the key.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod)
                               || ' ' || attcollation::regcollation, ', ' ORDER BY attnum)
                 || ' ' || pg_get_constraintdef((SELECT oid FROM pg_constraint
                                                  WHERE conrelid = 'liked'::regclass AND contype = 'p'))
               FROM pg_attribute WHERE attrelid = 'liked'::regclass AND attnum > 0"
        ),
        "a integer -, b text \"C\", c integer - PRIMARY KEY (c)"
    );
}

/// A subscription that replays tables but not types or indexes: a table using a type it lacks
/// gets the column as `text`, which takes the values as they travel; a column the subscriber
/// could not add is added from the definition, and so is the replica identity key its updates
/// need.
#[test]
fn types_the_subscriber_lacks_become_text_and_missing_columns_are_added() {
    let (publisher, subscriber) = subscribed_pair("wedge-missing-type", "skip");
    query(&subscriber, "ALTER SUBSCRIPTION sub SET (ddl = 'table')");
    query(
        &publisher,
        "CREATE TYPE mood AS ENUM ('sad', 'happy');
         CREATE TABLE moods (id int PRIMARY KEY, m mood);
         INSERT INTO moods VALUES (1, 'happy');
         ALTER TABLE t ADD COLUMN m mood;
         INSERT INTO t VALUES (5, 'sad');
         CREATE TABLE keyless (a int NOT NULL, b text);
         CREATE UNIQUE INDEX keyless_a ON keyless (a);
         ALTER TABLE keyless REPLICA IDENTITY USING INDEX keyless_a;
         INSERT INTO keyless VALUES (1, 'x');
         UPDATE keyless SET b = 'y';",
    );
    stream_goes_on(&publisher, &subscriber, 6);
    assert_eq!(query(&subscriber, "SELECT a || b FROM keyless"), "1y");
    let keyless = log_of(&subscriber, "public.keyless");
    assert!(
        keyless.last().unwrap().starts_with("failed|")
            && keyless.last().unwrap().contains(
                "primary key (a) of public.keyless added from the publisher's definition"
            ),
        "{keyless:?}"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT (SELECT m || ' ' || pg_typeof(m) FROM moods) || ', ' || (SELECT m FROM t WHERE id = 5)"
        ),
        "happy text, sad"
    );
    let t = log_of(&subscriber, "public.t");
    assert!(
        t.last()
            .unwrap()
            .starts_with("failed|type \"mood\" does not exist")
            && t.last().unwrap().contains(
                "column(s) m of public.t added from the publisher's definition (column m is \
                 text: type public.mood does not exist here)"
            ),
        "{t:?}"
    );
}

/// A table made from its definition belongs to the role the statement ran as, as if the
/// statement had made it: that role's later statements about it replay (here its DROP).
#[test]
fn a_table_made_from_its_definition_is_its_roles_to_drop() {
    let (publisher, subscriber) = subscribed_pair("wedge-definition-owner", "skip");
    for pg in [&publisher, &subscriber] {
        query(pg, "CREATE ROLE app");
    }
    query(&publisher, "CREATE SCHEMA s_app AUTHORIZATION app");
    query(
        &publisher,
        "SET ROLE app;
         CREATE TEMP TABLE scratch (a int);
         CREATE TABLE s_app.liked (LIKE scratch);
         INSERT INTO s_app.liked VALUES (1);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(
            &subscriber,
            "SELECT pg_get_userbyid(relowner) || ' ' || (SELECT count(*) FROM s_app.liked)
               FROM pg_class WHERE oid = 's_app.liked'::regclass"
        ),
        "app 1"
    );
    query(&publisher, "SET ROLE app; DROP TABLE s_app.liked");
    stream_goes_on(&publisher, &subscriber, 2);
    assert_eq!(
        query(&subscriber, "SELECT to_regclass('s_app.liked') IS NULL"),
        "t"
    );
    let log = log_of(&subscriber, "s_app.liked");
    assert!(
        log[0].contains("its columns and key only, owned by app") && log[1] == "applied|",
        "{log:?}"
    );

    // A role only the publisher has, replayed as the fallback role: the schema its table
    // needed is made too, and both are the fallback's, so its DROP SCHEMA ... CASCADE replays.
    query(
        &subscriber,
        "CREATE ROLE fb; GRANT fb TO postgres;
         ALTER SUBSCRIPTION sub SET (ddl_fallback_role = 'fb')",
    );
    query(
        &publisher,
        "CREATE ROLE ghost; CREATE SCHEMA g AUTHORIZATION ghost",
    );
    query(
        &publisher,
        "SET ROLE ghost; CREATE TABLE g.t (a int PRIMARY KEY); INSERT INTO g.t VALUES (1);",
    );
    stream_goes_on(&publisher, &subscriber, 3);
    assert_eq!(
        query(
            &subscriber,
            "SELECT n.nspowner::regrole || ' ' || c.relowner::regrole || ' '
                    || (SELECT count(*) FROM g.t)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.oid = 'g.t'::regclass"
        ),
        "fb fb 1"
    );
    query(&publisher, "SET ROLE ghost; DROP SCHEMA g CASCADE");
    stream_goes_on(&publisher, &subscriber, 4);
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'g'"
        ),
        "0"
    );
}

/// A table made from its definition for a role missing here, with no fallback role, is the
/// subscription owner's, and that role's DROP is refused here too. PostgreSQL's rowsecurity
/// test, with its roles on the publisher only: the kept `r1` (keyless, with the old rows) met
/// the new `r1 (a int PRIMARY KEY)`'s first row, a duplicate key on every retry. The replay
/// drops the made table when the publisher drops it.
#[test]
fn a_table_made_for_a_refused_role_goes_when_the_publisher_drops_it() {
    let (publisher, subscriber) = subscribed_pair("wedge-made-refused", "skip");
    query(
        &publisher,
        "CREATE ROLE alice LOGIN; GRANT CREATE ON SCHEMA public TO alice",
    );
    query(
        &publisher,
        "SET ROLE alice; CREATE TABLE r1 (a int); INSERT INTO r1 VALUES (10), (20);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(
            &subscriber,
            "SELECT pg_get_userbyid(relowner) || ' ' || (SELECT count(*) FROM r1)
               FROM pg_class WHERE oid = 'r1'::regclass"
        ),
        "postgres 2"
    );
    query(
        &publisher,
        "SET ROLE alice;
         DROP TABLE r1;
         CREATE TABLE r1 (a int PRIMARY KEY);
         INSERT INTO r1 VALUES (10), (30);
         UPDATE r1 SET a = 11 WHERE a = 10;
         DELETE FROM r1 WHERE a = 30;",
    );
    stream_goes_on(&publisher, &subscriber, 2);
    assert_eq!(
        query(&subscriber, "SELECT string_agg(a::text, ',') FROM r1"),
        "11"
    );
    let log = log_of(&subscriber, "public.r1");
    let drop = log
        .iter()
        .find(|l| l.contains("was dropped as the publisher dropped it"));
    assert!(
        drop.is_some_and(|l| l.starts_with("refused|")
            && l.contains("public.r1, made here from the publisher's definition, was dropped")),
        "{log:?}"
    );
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM ddl_sync.made_tables"),
        "1",
        "the new r1 is remembered, the old one forgotten"
    );
    // A table of the same name that is not the one made here stays: the subscription owner's
    // own, the publisher's role's DROP refused as before.
    query(
        &subscriber,
        "CREATE ROLE keeper; ALTER TABLE r1 OWNER TO keeper",
    );
    query(&publisher, "SET ROLE alice; DROP TABLE r1");
    stream_goes_on(&publisher, &subscriber, 3);
    assert_eq!(
        query(&subscriber, "SELECT to_regclass('r1') IS NOT NULL"),
        "t"
    );
}

/// The session settings that change what a statement means travel with it and hold around it
/// on the subscriber: the default table access method, the date style its literals were
/// written in. Function bodies are not checked on replay, as pg_restore does not: this one
/// names a table that does not exist yet.
#[test]
fn settings_that_change_what_a_statement_means_hold_around_it() {
    let (publisher, subscriber) = subscribed_pair("wedge-settings", "skip");
    query(
        &publisher,
        "CREATE ACCESS METHOD heap2 TYPE TABLE HANDLER heap_tableam_handler;
         SET default_table_access_method = heap2;
         CREATE TABLE am_t (a int);
         SET DateStyle = 'SQL, DMY';
         CREATE TABLE dated (d date DEFAULT '01/02/2020');
         SET check_function_bodies = off;
         CREATE FUNCTION counts() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM not_yet';
         SET transform_null_equals = on;
         CREATE TABLE null_equals (a int CHECK (a = NULL OR a > 0));
         SET array_nulls = off;
         CREATE TABLE arrays (a text[] DEFAULT '{NULL}');
         SET timezone_abbreviations = 'Australia';
         CREATE TABLE abbreviated (t timestamptz DEFAULT '2020-01-01 00:00 EST');",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    // What the parser stored under settings other than the subscriber's own: `a IS NULL`, an
    // array of the string "NULL", Australian Eastern Standard Time.
    let stored = "SELECT (SELECT pg_get_constraintdef(oid) FROM pg_constraint
                          WHERE conrelid = 'null_equals'::regclass)
                     || ' ' || (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
                                 WHERE adrelid = 'arrays'::regclass)
                     || ' ' || (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
                                 WHERE adrelid = 'abbreviated'::regclass)";
    let on_publisher = query(&publisher, stored);
    assert!(
        on_publisher.contains("IS NULL") && on_publisher.contains("{\"NULL\"}"),
        "{on_publisher}"
    );
    assert_eq!(query(&subscriber, stored), on_publisher);
    let shape = "SELECT (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
                          WHERE c.oid = 'am_t'::regclass)
                     || ' ' || (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
                                 WHERE adrelid = 'dated'::regclass)
                     || ' ' || 'counts()'::regprocedure::text";
    assert_eq!(
        query(&subscriber, shape),
        "heap2 '2020-02-01'::date counts()"
    );
    assert_eq!(query(&subscriber, shape), query(&publisher, shape));

    // A setting this server does not accept (the access method is not replicated here) is
    // left at this server's value, and the row says so.
    query(&subscriber, "ALTER SUBSCRIPTION sub SET (ddl = 'table')");
    query(
        &publisher,
        "CREATE ACCESS METHOD heap3 TYPE TABLE HANDLER heap_tableam_handler;
         SET default_table_access_method = heap3;
         CREATE TABLE am_t3 (a int);
         INSERT INTO am_t3 VALUES (1);",
    );
    stream_goes_on(&publisher, &subscriber, 2);
    assert_eq!(query(&subscriber, "SELECT count(*) FROM am_t3"), "1");
    let log = log_of(&subscriber, "public.am_t3");
    assert!(
        log[0].starts_with(
            "applied|default_table_access_method = 'heap3' is not valid here: the statement \
             ran with this server's"
        ),
        "{log:?}"
    );
}

#[test]
fn tables_made_by_any_statement_are_registered_and_get_their_rows() {
    let (publisher, subscriber) = subscribed_pair("wedge-schema-elements", "skip");
    // Tables that no replayed CREATE TABLE makes: a schema's elements (PostgreSQL's apply
    // worker dropped their rows without a word while they were not in pg_subscription_rel).
    query(
        &publisher,
        "CREATE SCHEMA elements CREATE TABLE inside (id int PRIMARY KEY, v text)
                                CREATE TABLE also (id int PRIMARY KEY);
         INSERT INTO elements.inside VALUES (1, 'one');
         INSERT INTO elements.also VALUES (2);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(srrelid::regclass::text || ' ' || srsubstate::text, ','
                               ORDER BY srrelid::regclass::text)
               FROM pg_subscription_rel WHERE srrelid::regclass::text LIKE 'elements.%'"
        ),
        "elements.also r,elements.inside r"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT (SELECT v FROM elements.inside) || (SELECT id FROM elements.also)"
        ),
        "one2"
    );
}

#[test]
fn what_a_cascade_dropped_on_the_publisher_goes_here_too() {
    let (publisher, subscriber) = subscribed_pair("wedge-cascade", "skip");
    // Alice exists on the publisher only, and the subscription names no fallback role: her
    // statements are refused here, her tables made from their definitions, without t3's
    // parent (PostgreSQL's rowsecurity test, the first configuration a user tries).
    query(
        &publisher,
        "CREATE ROLE alice LOGIN;
         GRANT CREATE ON SCHEMA public TO alice;
         SET ROLE alice;
         CREATE TABLE t1 (id int PRIMARY KEY, a int);
         CREATE TABLE t3 (id int PRIMARY KEY, c text, a int);
         ALTER TABLE t3 INHERIT t1;
         CREATE VIEW v3 AS SELECT c FROM t3;
         RESET ROLE;
         INSERT INTO t3 VALUES (1, 'x', 1);",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(&subscriber, "SELECT count(*) FROM pg_inherits"),
        "0",
        "the refused INHERIT made t3 a child here after all"
    );
    // The publisher's CASCADE drops t3 (and v3 with it): so does the subscriber, and the next
    // t3 takes its rows (before, the stale t3 kept the old row 1, and the new row stopped the
    // subscription on every retry).
    query(
        &publisher,
        "DROP TABLE t1 CASCADE;
         CREATE TABLE t3 (id int PRIMARY KEY, b text NOT NULL);
         INSERT INTO t3 VALUES (1, 'y');",
    );
    stream_goes_on(&publisher, &subscriber, 2);
    assert_eq!(query(&subscriber, "SELECT id || ' ' || b FROM t3"), "1 y");
    assert_eq!(query(&subscriber, "SELECT to_regclass('v3') IS NULL"), "t");
    let drop = query(
        &subscriber,
        "SELECT status || '|' || coalesce(verified::text, '-') || '|' || detail
           FROM ddl_sync.apply_log WHERE command_tag = 'DROP TABLE'",
    );
    // (v3, refused here, was never made: only tables are made from their definitions.)
    assert!(
        drop.starts_with("applied|true|")
            && drop.ends_with(
                "dropped here too, as on the publisher, where it depended on what \
                               the statement dropped or changed: public.t3"
            ),
        "{drop}"
    );
    // The description says what went: a CDC consumer learns that t3 and v3 went too.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(o->>'kind' || ' ' || (o->>'identity'), ', ' ORDER BY o->>'identity')
               FROM ddl_sync.events e, jsonb_array_elements(e.description::jsonb -> 'objects') o
              WHERE e.command_tag = 'DROP TABLE'"
        ),
        "table public.t1, table public.t3, view public.v3"
    );
}

#[test]
fn a_cascade_drops_here_only_what_its_role_may_drop() {
    let (publisher, subscriber) = subscribed_pair("wedge-cascade-rights", "skip");
    // Two roles created LOGIN only, on both nodes. On the publisher victim's view depends on
    // mallory's table, and mallory's DROP ... CASCADE takes it (PostgreSQL drops dependents
    // whoever owns them); here victim's view of that name reads another table, so the
    // description's "dropped with it" names victim's view, which mallory may not drop.
    for pg in [&publisher, &subscriber] {
        query(pg, "CREATE ROLE mallory LOGIN; CREATE ROLE victim LOGIN;");
    }
    query(
        &subscriber,
        "CREATE TABLE victims (a int);
         CREATE VIEW v AS SELECT a FROM victims;
         ALTER TABLE victims OWNER TO victim;
         ALTER VIEW v OWNER TO victim;",
    );
    query(
        &publisher,
        "GRANT CREATE ON SCHEMA public TO mallory, victim;
         SET ROLE mallory;
         CREATE TABLE m (a int PRIMARY KEY);
         GRANT SELECT ON m TO victim;
         SET ROLE victim;
         CREATE VIEW v AS SELECT a FROM m;
         SET ROLE mallory;
         DROP TABLE m CASCADE;
         RESET ROLE;",
    );
    stream_goes_on(&publisher, &subscriber, 1);
    assert_eq!(
        query(
            &subscriber,
            "SELECT relowner::regrole FROM pg_class WHERE oid = 'v'::regclass"
        ),
        "victim"
    );
    let drop = query(
        &subscriber,
        "SELECT status || '|' || detail FROM ddl_sync.apply_log WHERE command_tag = 'DROP TABLE'",
    );
    // Kept, and verification says the view is still here.
    assert!(
        drop.starts_with("diverged|")
            && drop.contains("kept here, though the publisher's statement dropped it")
            && drop.contains("public.v")
            && drop.contains("must be owner of view v"),
        "{drop}"
    );
}

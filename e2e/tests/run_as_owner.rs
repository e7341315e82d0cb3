//! PostgreSQL 16 and later apply each row as its table's owner (`run_as_owner = false`, the
//! default): code that a role attaches to its own table through replicated DDL then runs with
//! that role's rights on the subscriber, as on the publisher, and the statement is applied.
//! With `run_as_owner = true` rows are applied as the subscription owner, as always on 15, and
//! the same kind of statement is refused (the attack suite, e2e/src/attacks.rs, covers every
//! kind in that mode).

use ddl_e2e::{
    assert_no_subscription_made, create_subscription, ddl_publisher, ddl_subscriber, psql_verbose,
    query, wait_caught_up,
};
use ddl_testkit::Cluster;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Role `mallory` (no privilege beyond CREATE on `public`) and `who_ran`, where her trigger
/// notes the role it runs as: unlogged, so never published.
const COMMON: &str = "CREATE ROLE mallory LOGIN;
    GRANT CREATE ON SCHEMA public TO mallory;
    CREATE UNLOGGED TABLE who_ran (role name);
    GRANT INSERT ON who_ran TO PUBLIC;";

fn as_mallory(publisher: &Cluster, sql: &str) {
    query(publisher, &format!("SET ROLE mallory; {sql}"));
}

fn apply_log(subscriber: &Cluster) -> String {
    query(
        subscriber,
        "SELECT string_agg(apply_status || ' ' || command_tag || coalesce(': ' || apply_detail, ''),
                           E'\\n' ORDER BY applied_at)
           FROM ddl_sync.events",
    )
}

#[test]
fn code_a_role_attaches_to_its_table_runs_as_that_role_unless_run_as_owner() {
    let publisher = ddl_publisher("owner-pub");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    if version < 160000 {
        println!(
            "run_as_owner: PostgreSQL {version} always applies rows as the subscription owner"
        );
        return;
    }
    query(&publisher, COMMON);
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    );
    let subscriber = ddl_subscriber("owner-sub", &["ddl_sync"]);
    query(&subscriber, COMMON);
    let (ok, said) = create_subscription(&subscriber, "postgres", &publisher, "ddl = 'all'");
    assert!(ok, "{said}");

    as_mallory(
        &publisher,
        "CREATE TABLE m (x int PRIMARY KEY);
         CREATE FUNCTION m_note() RETURNS trigger LANGUAGE plpgsql
             AS $f$ BEGIN INSERT INTO public.who_ran VALUES (current_user); RETURN NEW; END $f$;
         CREATE FUNCTION m_check(v int) RETURNS boolean LANGUAGE plpgsql
             AS $f$ BEGIN INSERT INTO public.who_ran VALUES (current_user); RETURN true; END $f$;
         CREATE TRIGGER m_tg BEFORE INSERT ON m FOR EACH ROW EXECUTE FUNCTION m_note();
         ALTER TABLE m ENABLE ALWAYS TRIGGER m_tg;
         ALTER TABLE m ADD CONSTRAINT m_ck CHECK (m_check(x));",
    );
    query(&publisher, "INSERT INTO m VALUES (1)");
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(
        apply_log(&subscriber),
        "applied CREATE TABLE\napplied CREATE FUNCTION\napplied CREATE FUNCTION\n\
         applied CREATE TRIGGER\napplied ALTER TABLE\napplied ALTER TABLE"
    );
    assert_eq!(query(&subscriber, "SELECT count(*) FROM m"), "1");
    // The superuser's row ran mallory's trigger and CHECK on the subscriber as mallory.
    assert_eq!(
        query(
            &subscriber,
            "SELECT string_agg(DISTINCT role, ',') FROM who_ran"
        ),
        "mallory"
    );

    // Rows as the subscription owner: the same kind of statement is refused.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (run_as_owner = true)",
    );
    as_mallory(
        &publisher,
        "ALTER TABLE m ADD CONSTRAINT m_ck2 CHECK (m_check(x + 1))",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    let log = apply_log(&subscriber);
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("refused ALTER TABLE: ")
            && last.contains("calls public.m_check(integer), owned by mallory")
            && last.contains("it would run as the subscription owner"),
        "{log}"
    );
    assert_eq!(
        query(
            &subscriber,
            "SELECT count(*) FROM pg_constraint WHERE conname = 'm_ck2'"
        ),
        "0"
    );
}

/// A subscription that replicates DDL is a superuser's, on 16+ too, where a role with
/// `pg_create_subscription` may own one: its apply worker could not take a single event (it
/// writes each into the extension owner's `ddl_sync.events` and replays it as the publisher's
/// role). Refused when such a role creates one, when one is given to such a role, and when DDL
/// is turned on for such a role's subscription; a subscription without DDL stays hers.
#[test]
fn a_subscription_that_replicates_ddl_is_owned_by_a_superuser() {
    let publisher = ddl_publisher("plain-owner-pub");
    let version: u32 = query(&publisher, "SHOW server_version_num")
        .parse()
        .unwrap();
    if version < 160000 {
        println!("run_as_owner: on PostgreSQL {version} only superusers own subscriptions");
        return;
    }
    query(
        &publisher,
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    );
    let subscriber = ddl_subscriber("plain-owner-sub", &["ddl_sync"]);
    query(
        &subscriber,
        "CREATE ROLE carol LOGIN;
         GRANT pg_create_subscription TO carol;
         GRANT CREATE ON DATABASE postgres TO carol;",
    );
    let refused = |said: &str| {
        said.contains(
            "42501: ddl_sync: subscription \"sub\" replicates DDL, so its owner must be a superuser",
        ) && said.contains("Role \"carol\" is not a superuser.")
    };
    let owner = || {
        query(
            &subscriber,
            "SELECT string_agg(pg_get_userbyid(subowner), ',') FROM pg_subscription",
        )
    };

    // Her own, with DDL: refused before anything is made. (PostgreSQL asks a role that is
    // not a superuser for a password in the connection string, which trust ignores.)
    let connstr = format!("{} password=unused", publisher.connstr("postgres"));
    let (ok, said) = psql_verbose(
        &subscriber,
        "postgres",
        &format!(
            "SET ROLE carol;
             CREATE SUBSCRIPTION sub CONNECTION '{connstr}' PUBLICATION p
                 WITH (ddl = 'all', connect = false);"
        ),
    );
    assert!(!ok && refused(&said), "{said}");
    assert_no_subscription_made(&subscriber, &publisher);

    // A superuser's, given to her: refused, and the superuser keeps it.
    let (ok, said) = create_subscription(&subscriber, "postgres", &publisher, "ddl = 'all'");
    assert!(ok, "{said}");
    let (ok, said) = psql_verbose(
        &subscriber,
        "postgres",
        "ALTER SUBSCRIPTION sub OWNER TO carol;",
    );
    assert!(!ok && refused(&said), "{said}");
    assert_eq!(owner(), "postgres");

    // Hers without DDL (native replication, as PostgreSQL allows): DDL cannot be turned on,
    // by the option or by the function, by a superuser or by her.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub SET (ddl = 'none'); ALTER SUBSCRIPTION sub OWNER TO carol",
    );
    assert_eq!(owner(), "carol");
    for turn_on in [
        "ALTER SUBSCRIPTION sub SET (ddl = 'all');",
        "SELECT ddl_sync.set_subscription_ddl('sub', 'all');",
        "SET ROLE carol; ALTER SUBSCRIPTION sub SET (ddl = 'all');",
        "SET ROLE carol; SELECT ddl_sync.set_subscription_ddl('sub', 'all');",
    ] {
        let (ok, said) = psql_verbose(&subscriber, "postgres", turn_on);
        assert!(!ok && refused(&said), "{turn_on}: {said}");
    }
    assert_eq!(
        query(
            &subscriber,
            "SELECT ddl FROM ddl_sync.subscription_ddl s JOIN pg_subscription p ON p.oid = s.subid"
        ),
        "0"
    );
    // Back to a superuser, DDL replication works.
    query(
        &subscriber,
        "ALTER SUBSCRIPTION sub OWNER TO postgres; ALTER SUBSCRIPTION sub SET (ddl = 'all')",
    );
    query(
        &publisher,
        "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)",
    );
    wait_caught_up(&publisher, &subscriber, "sub", TIMEOUT);
    assert_eq!(apply_log(&subscriber), "applied CREATE TABLE");
    assert_eq!(query(&subscriber, "SELECT count(*) FROM t"), "1");
}

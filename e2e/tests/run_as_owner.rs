//! PostgreSQL 16 and later apply each row as its table's owner (`run_as_owner = false`, the
//! default): code that a role attaches to its own table through replicated DDL then runs with
//! that role's rights on the subscriber, as on the publisher, and the statement is applied.
//! With `run_as_owner = true` rows are applied as the subscription owner, as always on 15, and
//! the same kind of statement is refused (the attack suite, e2e/src/attacks.rs, covers every
//! kind in that mode).

use ddl_e2e::{create_subscription, ddl_publisher, ddl_subscriber, query, wait_caught_up};
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

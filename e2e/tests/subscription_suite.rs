//! PostgreSQL's own logical replication suite (`src/test/subscription`) passes with ddl_sync's
//! libraries preloaded and the extension created on every node, as it passes without them
//! (`ddl_e2e::subscription_suite`). Where the server has no source here (16, 17 and 19 come
//! from binary builds), it says so and checks nothing.

use ddl_e2e::{regress, subscription_suite};
use std::path::PathBuf;

/// Test files run at once: they mostly wait for replication, so three keep two CPUs busy.
const JOBS: usize = 3;

#[test]
fn postgresqls_subscription_suite_passes_with_the_extension_on_every_node() {
    if let Some(why) = regress::unavailable() {
        eprintln!("subscription suite: not run: {why}");
        return;
    }
    let pg_config = std::env::var("DDL_PG_CONFIG")
        .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/regress");
    let outcome = subscription_suite::run(&pg_config, &cache, JOBS)
        .unwrap_or_else(|e| panic!("subscription suite: {e}"));
    eprintln!(
        "subscription suite ({}): {} test files passed in {:.0} s",
        outcome.package,
        outcome.passed.len(),
        outcome.seconds
    );
    let failed: Vec<String> = outcome
        .failed
        .iter()
        .map(|(name, log)| format!("{name}:\n{log}"))
        .collect();
    assert!(
        failed.is_empty(),
        "tests of the subscription suite fail with the extension on every node:\n{}",
        failed.join("\n\n")
    );
    // A suite that ran nothing proves nothing: 15 has 31 files, later majors more.
    assert!(outcome.passed.len() >= 30, "{:?}", outcome.passed);
}

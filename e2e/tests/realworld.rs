//! The short version of `cargo xtask realworld`: one real application's history, procrastinate's
//! 38 migrations (PyPI), replayed on a publisher with our libraries and on a stock one, with a
//! native subscriber: nothing beyond the stock run's errors, every event applied and verified
//! or not described, the same schema and rows on both nodes.

use ddl_e2e::realworld;
use std::path::Path;

#[test]
fn procrastinates_migrations_replicate_as_they_run_on_a_stock_publisher() {
    let app = realworld::app("procrastinate").expect("procrastinate is an application");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/realworld");
    let mut reports = realworld::run(&[app], &cache, &|step| println!("{step}"));
    let (_, report) = reports.pop().expect("one report");
    let r = report.unwrap_or_else(|e| panic!("procrastinate did not run: {e}"));
    println!(
        "{} scripts; errors {:?}; events {:?}; {} verified; {:.2} s stock, {:.2} s ours",
        r.scripts, r.errors, r.events, r.verification.verified, r.seconds.0, r.seconds.1
    );
    assert!(r.scripts >= 30, "{} scripts", r.scripts);
    assert_eq!(
        r.beyond,
        Vec::<String>::new(),
        "errors beyond the stock run's"
    );
    assert!(r.caught_up.is_ok(), "{:?}", r.caught_up);
    let applied = r
        .events
        .iter()
        .find(|(status, _)| status == "applied")
        .map_or(0, |(_, n)| *n);
    assert!(applied >= 100, "{:?}", r.events);
    assert_eq!(r.events.len(), 1, "events not applied: {:?}", r.events);
    assert!(
        r.verification.verified > applied / 2,
        "{} verified",
        r.verification.verified
    );
    assert_eq!(r.schema_diff, Vec::<String>::new(), "schema diff lines");
    assert_eq!(r.rows.differing, Vec::<(String, String)>::new(), "rows");
}

//! The first groups of PostgreSQL's own regression suite through DDL replication: the short
//! version of `cargo xtask regress` (which runs the whole schedule into FIDELITY.md). They hold
//! several statement classes that once stopped subscribers (tablespaces only the publisher has,
//! CREATE TABLE AS EXECUTE, tables of catalog types, partition bounds computed when they run).
//!
//! The suite comes from Debian's source package of the installed server, fetched once into
//! `target/regress/` (apt with deb-src entries derived from the machine's own sources).

use ddl_e2e::regress::{self, Cause};
use std::path::PathBuf;

/// Through `create_index` and `create_view`: the schedule's first eight groups.
const GROUPS: usize = 8;

#[test]
fn the_first_groups_of_the_suite_print_the_same_and_replicate_to_the_end() {
    if let Some(why) = regress::unavailable() {
        eprintln!("regress: not run: {why}");
        return;
    }
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/regress");
    let report = regress::run(&cache, Some(GROUPS), &|step| eprintln!("regress: {step}"))
        .unwrap_or_else(|e| panic!("regress: {e}"));

    let unexplained: Vec<String> = report
        .changed
        .iter()
        .filter(|t| t.cause == Cause::Unexplained)
        .map(|t| format!("{}:\n{}", t.name, t.sample.join("\n")))
        .collect();
    assert!(
        unexplained.is_empty(),
        "tests print something else with our libraries, for no documented reason:\n{}",
        unexplained.join("\n\n")
    );
    for f in &report.followers {
        if let Err(e) = &f.followed {
            panic!("the subscriber with {} stopped: {e}", f.configuration());
        }
        // No transaction had to be skipped; under `error`, the statements that fail (GRANTs to
        // the suite's roles, which exist on the publisher only) were each skipped with
        // resolve_event, and nothing else. Under `skip` nothing was needed, without a fallback
        // role too (every statement of the suite's roles refused there).
        let steps: Vec<String> = f
            .interventions
            .iter()
            .map(|i| format!("{} {}: {}", i.action, i.lsn, i.error))
            .collect();
        match f.conflict {
            "skip" => assert!(
                steps.is_empty(),
                "{} needed steps: {steps:#?}",
                f.configuration()
            ),
            _ => assert!(
                f.interventions
                    .iter()
                    .all(|i| i.action == "resolve_event skip"),
                "{} needed other steps: {steps:#?}",
                f.configuration()
            ),
        }
        assert!(f.rows.tables > 50, "only {} tables", f.rows.tables);
        assert!(
            f.rows.differing.is_empty(),
            "{}: tables whose rows differ: {:?}",
            f.configuration(),
            f.rows.differing
        );
    }
}

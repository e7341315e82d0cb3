//! Hostile and unusual inputs on both sides (see `ddl_e2e::hostile`): every case ends as it
//! must, and afterwards both sides are the same. `cargo xtask reliability` runs the same cases
//! and writes them into RELIABILITY.md.

#[test]
fn hostile_inputs_are_refused_with_reasons_and_nothing_is_lost() {
    let outcomes = ddl_e2e::hostile::run();
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(|o| {
            format!(
                "{}\n  expected: {}\n  observed: {}",
                o.name, o.expected, o.observed
            )
        })
        .collect();
    assert!(outcomes.len() > 20, "{outcomes:#?}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

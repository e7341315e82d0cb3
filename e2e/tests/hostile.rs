//! Hostile and unusual inputs on both sides (see `ddl_e2e::hostile`): every case ends as it
//! must, and afterwards both sides are the same. `cargo xtask reliability` runs the same cases
//! and writes them into RELIABILITY.md.

#[test]
fn hostile_inputs_are_refused_with_reasons_and_nothing_is_lost() {
    ddl_e2e::hostile::assert_all_passed(&ddl_e2e::hostile::run(), 20);
}

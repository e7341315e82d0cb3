//! Attacks on DDL replication by an ordinary role (see `ddl_e2e::attacks`): every attack
//! fails, says why (publisher WARNING and `rejected` counter, apply log row, or the attacker's
//! error), and replication goes on; no planted code ever runs as a superuser. `cargo xtask
//! reliability` runs the same cases and writes them into RELIABILITY.md.

#[test]
fn attacks_by_an_ordinary_role_fail_visibly_and_replication_goes_on() {
    ddl_e2e::hostile::assert_all_passed(&ddl_e2e::attacks::run(), 135);
}

//! The fault campaign in small (`cargo xtask reliability` runs it in full and writes
//! RELIABILITY.md): one SIGKILL of every process of the publisher, and one of the subscriber,
//! in the middle of a stream of DDL and rows. Afterwards every statement and row the publisher
//! committed is on the subscriber exactly once, nothing else is, and both schemas are the same.

use ddl_e2e::faults::{trial, Plan, Side};
use std::time::Duration;

/// `kill_after` 9: while the publisher runs the tenth transaction (a large one); the subscriber
/// while it waits in the middle of the thirteenth (`mid_replay`: its `ALTER TABLE ledger` waits
/// for a local lock after the transaction's first row).
fn kill_and_check(side: Side, streaming: bool) {
    let plan = Plan {
        side,
        transactions: 24,
        kill_after: 9,
        delay: Duration::from_millis(5),
        streaming,
        mid_replay: side == Side::Subscriber,
        name: format!("faults-{}", side.name()),
    };
    let report = trial(&plan);
    eprintln!("{plan:?}: {report:?}");
    assert!(report.passed(), "{:#?}", report.problems());
    // The counting saw the stream (a trial that counted nothing would pass too).
    assert!(report.ddl_committed >= 24, "{report:?}");
    assert!(report.rows_committed > 3000, "{report:?}");
    assert!(report.committed_at_kill >= 9, "{report:?}");
    assert_eq!(report.replay_waiting_at_kill, plan.mid_replay, "{report:?}");
}

#[test]
fn sigkill_of_the_publisher_loses_nothing_and_applies_nothing_twice() {
    kill_and_check(Side::Publisher, false);
}

#[test]
fn sigkill_of_the_subscriber_in_a_replay_loses_nothing_and_applies_nothing_twice() {
    kill_and_check(Side::Subscriber, true);
}

//! A DDL replay waiting on a lock a local session holds on the subscriber (see
//! `ddl_e2e::contention`): it waits visibly (pg_stat_activity shows the lock wait, who blocks
//! it and the statement being replayed), loses nothing, and a deadlock with the local session
//! is broken without losing anything either.

use ddl_e2e::contention::{deadlock, lock_wait, ALTER};

#[test]
fn a_replay_waiting_on_a_local_lock_shows_what_it_waits_on_and_loses_nothing() {
    let report = lock_wait();
    eprintln!("{report:#?}");
    assert!(report.passed(ALTER), "{report:#?}");
    assert_eq!(report.wait_event, "Lock/relation", "{report:#?}");
    assert!(
        report.waiting_for.starts_with("AccessExclusiveLock on t"),
        "{report:#?}"
    );
    assert!(
        report.query.starts_with("/* ddl_sync replay "),
        "{report:#?}"
    );
}

#[test]
fn a_deadlock_between_a_replay_and_a_local_session_loses_nothing() {
    let report = deadlock();
    eprintln!("{report:#?}");
    assert!(report.passed(ALTER), "{report:#?}");
    assert!(
        report.outcome.starts_with("deadlock detected"),
        "{report:#?}"
    );
}

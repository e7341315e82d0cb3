//! The kit against real PostgreSQL 15 servers.

use ddl_testkit::{ClusterBuilder, ErrorKind, StopMode};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Polls `f` until it returns `Some`, for at most 30 s.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_cluster_starts_and_answers() {
    let pg = ClusterBuilder::new().name("starts").build().unwrap();
    let version = pg.psql("postgres", "SELECT version()").unwrap();
    // The server of the bindir it was built from (15, or the one `DDL_PG_CONFIG` names).
    let binary = std::process::Command::new(pg.bin("postgres"))
        .arg("--version")
        .output()
        .unwrap();
    let binary = String::from_utf8_lossy(&binary.stdout);
    // `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`
    let number = binary.split_whitespace().nth(2).unwrap();
    assert!(
        version.starts_with(&format!("PostgreSQL {number} ")),
        "{version} / {binary}"
    );
    assert_eq!(pg.psql("postgres", "SHOW wal_level").unwrap(), "logical");
    assert_eq!(
        pg.psql("postgres", "SHOW max_prepared_transactions")
            .unwrap(),
        "10"
    );
    assert_eq!(
        pg.psql("postgres", "SHOW port").unwrap(),
        pg.port().to_string()
    );
    assert!(pg.data_dir().join("PG_VERSION").exists());
    assert!(pg
        .socket_dir()
        .join(format!(".s.PGSQL.{}", pg.port()))
        .exists());
    // Multi-statement scripts, several rows, several columns.
    let out = pg
        .psql(
            "postgres",
            "CREATE TABLE t (a int, b text);\nINSERT INTO t VALUES (1, 'x'), (2, NULL);\nSELECT * FROM t ORDER BY a;",
        )
        .unwrap();
    assert_eq!(out, "1|x\n2|");
}

#[test]
fn psql_errors_carry_the_server_message() {
    let pg = ClusterBuilder::new().name("psqlerr").build().unwrap();
    let err = pg
        .psql("postgres", "SELECT 1;\nSELECT nope;\nSELECT 2;")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Sql);
    assert!(
        err.to_string().contains("column \"nope\" does not exist"),
        "{err}"
    );
}

#[test]
fn two_clusters_run_at_once_and_replicate() {
    let mut builder = ClusterBuilder::new();
    let publisher = builder.name("pub").build().unwrap();
    let subscriber = builder.name("sub").build().unwrap();
    assert_ne!(publisher.port(), subscriber.port());
    assert_ne!(publisher.data_dir(), subscriber.data_dir());

    let ddl = "CREATE TABLE t (id int PRIMARY KEY, v text);";
    publisher
        .psql(
            "postgres",
            &format!("{ddl} CREATE PUBLICATION p FOR TABLE t; INSERT INTO t VALUES (1, 'one');"),
        )
        .unwrap();
    subscriber
        .psql(
            "postgres",
            &format!(
                "{ddl} CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p;",
                publisher.connstr("postgres")
            ),
        )
        .unwrap();
    publisher
        .psql("postgres", "INSERT INTO t VALUES (2, 'two')")
        .unwrap();
    eventually("both rows on the subscriber", || {
        let n = subscriber.psql("postgres", "SELECT count(*) FROM t").ok()?;
        (n == "2").then_some(())
    });
    // Drop the subscription first, or dropping the publisher first leaves its worker retrying.
    subscriber.psql("postgres", "DROP SUBSCRIPTION s").unwrap();
}

#[test]
fn the_directory_is_removed_on_drop() {
    let pg = ClusterBuilder::new().name("drop").build().unwrap();
    let base = pg.base_dir().to_path_buf();
    assert!(pg.data_dir().starts_with(&base));
    assert!(base.exists());
    drop(pg);
    assert!(!base.exists(), "{} is still there", base.display());
}

#[test]
fn the_directory_is_removed_when_a_test_panics() {
    let mut seen: Option<PathBuf> = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let pg = ClusterBuilder::new().name("panic").build().unwrap();
        seen = Some(pg.base_dir().to_path_buf());
        pg.psql("postgres", "SELECT 1").unwrap();
        panic!("a failing test");
    }));
    assert!(result.is_err());
    let base = seen.expect("the cluster was built");
    assert!(!base.exists(), "{} is still there", base.display());
}

#[test]
fn a_start_failure_reports_the_server_message_and_cleans_up() {
    let err = ClusterBuilder::new()
        .name("badconf")
        .conf("shared_buffers", "banana")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Start);
    assert!(
        err.to_string()
            .contains("invalid value for parameter \"shared_buffers\""),
        "{err}"
    );
    let prefix = format!("ddl-testkit-badconf-{}-", std::process::id());
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn stop_start_and_crash_recovery_keep_data_and_port() {
    let mut pg = ClusterBuilder::new().name("restart").build().unwrap();
    let port = pg.port();
    pg.psql(
        "postgres",
        "CREATE TABLE t (id int); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    pg.stop(StopMode::Immediate).unwrap();
    assert!(pg.psql("postgres", "SELECT 1").is_err());
    pg.start().unwrap();
    assert_eq!(pg.psql("postgres", "SELECT count(*) FROM t").unwrap(), "1");
    assert!(pg.log_tail(50).contains("database system was interrupted"));
    pg.restart().unwrap();
    assert_eq!(pg.port(), port);
    assert_eq!(pg.psql("postgres", "SELECT count(*) FROM t").unwrap(), "1");
}

#[test]
fn kill_leaves_no_process_and_the_next_start_recovers() {
    let mut pg = ClusterBuilder::new().name("kill").build().unwrap();
    pg.psql(
        "postgres",
        "CREATE TABLE t (id int); INSERT INTO t VALUES (1);",
    )
    .unwrap();
    let pidfile = std::fs::read_to_string(pg.data_dir().join("postmaster.pid")).unwrap();
    let mut pids: Vec<String> = pg
        .psql("postgres", "SELECT pid FROM pg_stat_activity")
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    pids.extend(pidfile.lines().next().map(str::to_string));
    assert!(pids.len() > 3, "{pids:?}");
    pg.kill().unwrap();
    for pid in &pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "server process {pid} survived"
        );
    }
    assert!(pg.psql("postgres", "SELECT 1").is_err());
    pg.start().unwrap();
    assert_eq!(pg.psql("postgres", "SELECT count(*) FROM t").unwrap(), "1");
    // No shutdown of any kind ran: the log goes straight from running to recovery.
    let log = pg.log_tail(200);
    assert!(!log.contains("shutdown request"), "{log}");
    assert!(log.contains("database system was interrupted"), "{log}");
}

#[test]
fn pg_recvlogical_streams_to_a_file_until_endpos() {
    let pg = ClusterBuilder::new().name("recv").build().unwrap();
    pg.psql(
        "postgres",
        "CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR ALL TABLES;",
    )
    .unwrap();
    let mut recv = pg.recvlogical("postgres", "s");
    recv.option("proto_version", "1")
        .option("publication_names", "p")
        .timeout(Duration::from_secs(60));
    recv.create_slot().unwrap();
    pg.psql("postgres", "INSERT INTO t VALUES (1)").unwrap();
    let endpos = pg
        .psql("postgres", "SELECT pg_current_wal_insert_lsn()")
        .unwrap();
    // WAL past endpos, so pg_recvlogical knows it has seen everything up to it.
    pg.psql("postgres", "SELECT pg_current_xact_id()").unwrap();

    let file = pg.base_dir().join("out.bin");
    recv.stream_to_file(&file, &endpos).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    // BEGIN, RELATION, INSERT, COMMIT, each followed by '\n'.
    assert_eq!(bytes.first(), Some(&b'B'), "{bytes:?}");
    assert_eq!(bytes.last(), Some(&b'\n'));
    assert!(bytes.windows(2).any(|w| w == b"\nR"));
    assert!(bytes.windows(2).any(|w| w == b"\nI"));

    // An end position that never comes: killed after the timeout.
    let mut slow = pg.recvlogical("postgres", "s");
    slow.option("proto_version", "1")
        .option("publication_names", "p")
        .timeout(Duration::from_secs(2));
    let err = slow.stream_to_file(&file, "FF/0").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");

    recv.drop_slot().unwrap();
    assert_eq!(
        pg.psql("postgres", "SELECT count(*) FROM pg_replication_slots")
            .unwrap(),
        "0"
    );
}

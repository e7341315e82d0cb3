//! The package as a user gets it: `cargo xtask package --debug` (the same archive as the release
//! one, from the debug build that `cargo xtask test` has already compiled), installed into a
//! fresh private copy of the PostgreSQL tree (`ddl_e2e::pgtree`: PostgreSQL finds its lib and
//! share directories relative to its programs, so nothing touches the system's directories).
//!
//! 1. README.md's Quickstart, run as written (`ddl_e2e::quickstart`), with the archive's
//!    install block.
//! 2. The extension's upgrade path: for every released version kept in
//!    `ddl-apply/sql/released/`, `CREATE EXTENSION ddl_sync VERSION '<it>'` then `ALTER
//!    EXTENSION ddl_sync UPDATE` must give exactly the objects of a fresh `CREATE EXTENSION`.

use ddl_e2e::pgtree::{debug_archive, run_sh, PgTree};
use ddl_e2e::quickstart::{wait_for_subscriptions, Install, Quickstart};
use ddl_e2e::readme::section_blocks;
use ddl_e2e::{compare, query};
use ddl_testkit::{Cluster, ClusterBuilder, TempDir};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The version in `ddl_sync-<version>-pg<major>.tar.gz`.
fn archive_version(archive: &Path) -> String {
    let name = archive.file_name().expect("a file").to_string_lossy();
    name.strip_prefix("ddl_sync-")
        .and_then(|n| n.strip_suffix(".tar.gz"))
        .and_then(|n| n.rsplit_once("-pg"))
        .map(|(version, _)| version.to_string())
        .unwrap_or_else(|| panic!("unexpected archive name {name}"))
}

/// The upgrade scripts in the source tree, `ddl_sync--<from>--<to>.sql`.
fn upgrade_scripts() -> Vec<String> {
    let dir = workspace().join("ddl-apply/sql");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ddl_sync--") && n.matches("--").count() == 2)
        .collect();
    names.sort();
    names
}

#[test]
fn the_archive_installs_and_the_readme_quickstart_runs_as_written() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let blocks = section_blocks(&readme, "## Quickstart");
    let archive = debug_archive();
    let version = archive_version(&archive);
    // ddl_sync-<version>-pg<major>/, for the major it was built for.
    let top = format!(
        "{}/",
        archive
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".tar.gz"))
            .expect("an archive name")
    );
    assert!(top.starts_with(&format!("ddl_sync-{version}-pg")), "{top}");

    // Self-describing: INSTALL, README and the installer beside the tree.
    let listing = run_sh(
        "tar -tzf \"$ARCHIVE\"",
        Path::new("/"),
        &[("ARCHIVE", archive.as_os_str())],
    );
    for name in ["INSTALL", "README.md", "install.sh"] {
        assert!(
            listing.lines().any(|l| l == format!("{top}{name}")),
            "{name} is not in the archive:\n{listing}"
        );
    }

    let tree = PgTree::fresh();
    // The install block unpacks from the directory that holds the archive, as a user would.
    let work = TempDir::new("quickstart").expect("work dir");
    std::os::unix::fs::symlink(
        &archive,
        work.path().join(archive.file_name().expect("name")),
    )
    .expect("link the archive");

    let mut run = Quickstart::new(
        tree.bindir(),
        Install::Archive {
            destdir: tree.root().to_path_buf(),
        },
        work.path(),
    );
    for block in &blocks {
        run.block(block);
    }
    assert!(run.installed, "the Quickstart has no install block");

    // What the archive installed: every file the package promises, where PostgreSQL looks.
    let ext = tree.extension_dir();
    let mut expected = vec![
        tree.pkglibdir().join("ddl_pgoutput.so"),
        tree.pkglibdir().join("ddl_sync.so"),
        ext.join("ddl_sync.control"),
        ext.join(format!("ddl_sync--{version}.sql")),
        tree.includedir_server()
            .join("extension/ddl_sync/ddl_sync_adapter.h"),
        tree.bindir().join("ddl-dump"),
    ];
    let scripts = upgrade_scripts();
    assert!(!scripts.is_empty(), "no upgrade script in ddl-apply/sql");
    expected.extend(scripts.iter().map(|s| ext.join(s)));
    for file in &expected {
        assert!(
            file.symlink_metadata().is_ok_and(|m| m.is_file()),
            "the archive did not install {}",
            file.display()
        );
    }

    let publisher = run
        .nodes
        .get("publisher")
        .expect("the Quickstart has a publisher");
    let subscriber = run
        .nodes
        .get("subscriber")
        .expect("the Quickstart has a subscriber");
    // The servers ran from the private tree, with the archive's libraries.
    assert_eq!(
        query(
            publisher,
            "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'"
        ),
        tree.pkglibdir().display().to_string()
    );
    assert_eq!(
        query(subscriber, "SELECT ddl_sync.library_version()"),
        version
    );
    // The README's promises were checked against real output, not skipped.
    for (lang, node) in [("sql", "subscriber"), ("sh", "publisher")] {
        assert!(
            run.checked_outputs
                .iter()
                .any(|(l, n)| l == lang && n == node),
            "the Quickstart shows no output of a {lang} block on the {node}: nothing checks \
             that it does what it says (checked: {:?})",
            run.checked_outputs
        );
    }
    // And the subscriber has the publisher's schema, every replicated statement applied.
    wait_for_subscriptions(subscriber, &run.nodes);
    compare::assert_same_schema(publisher, subscriber);
    compare::assert_all_applied(subscriber);
}

#[test]
fn the_extension_updates_from_every_released_version_to_a_fresh_install() {
    let tree = PgTree::fresh();
    let archive = debug_archive();
    tree.install(&archive);
    let current = archive_version(&archive);

    // The install scripts of released versions, kept in the source tree (they are not
    // shipped: an update needs only the upgrade scripts, which came with the archive).
    let released_dir = workspace().join("ddl-apply/sql/released");
    let mut released: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&released_dir).expect("ddl-apply/sql/released") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let version = name
            .strip_prefix("ddl_sync--")
            .and_then(|n| n.strip_suffix(".sql"))
            .unwrap_or_else(|| panic!("unexpected file {name} in {}", released_dir.display()));
        assert_ne!(
            version, current,
            "{name}: the current version is not released yet; keep only earlier ones"
        );
        std::fs::copy(entry.path(), tree.extension_dir().join(&name)).expect("copy fixture");
        released.push(version.to_string());
    }
    released.sort();
    assert!(!released.is_empty(), "no released version to update from");

    let pg = ClusterBuilder::new()
        .name("upgrade")
        .bindir(tree.bindir())
        .shared_preload_libraries(&["ddl_pgoutput"])
        .build()
        .expect("cluster");
    query(&pg, "CREATE DATABASE fresh");
    psql_in(&pg, "fresh", "CREATE EXTENSION ddl_sync");
    assert_eq!(
        psql_in(
            &pg,
            "fresh",
            "SELECT extversion || ' ' || ddl_sync.library_version() FROM pg_extension \
             WHERE extname = 'ddl_sync'"
        ),
        format!("{current} {current}")
    );
    let fresh = extension_objects(&pg, "fresh");
    assert!(
        fresh
            .dump
            .iter()
            .any(|b| b.contains("CREATE TABLE ddl_sync.events (")),
        "the dump shows no extension objects:\n{}",
        fresh.dump.concat()
    );

    for version in &released {
        let db = format!("from_{}", version.replace(['.', '-'], "_"));
        query(&pg, &format!("CREATE DATABASE {db}"));
        psql_in(
            &pg,
            &db,
            &format!("CREATE EXTENSION ddl_sync VERSION '{version}'"),
        );
        let extversion = "SELECT extversion FROM pg_extension WHERE extname = 'ddl_sync'";
        assert_eq!(psql_in(&pg, &db, extversion), *version);
        // Until the update, the old version's SQL calls into this library: its replay of
        // eleven arguments is served (here refused, as outside an apply worker).
        assert_eq!(
            psql_in(
                &pg,
                &db,
                "SELECT status || ': ' || detail FROM ddl_sync.replay('table', 'postgres', \
                 'CREATE TABLE', 'public', 'public.t', 'CREATE TABLE t ()', 'public', \
                 current_user, 42, '0/1', current_database())"
            ),
            "refused: not running in a subscription's apply worker",
            "{version}'s replay"
        );
        psql_in(&pg, &db, "ALTER EXTENSION ddl_sync UPDATE");
        assert_eq!(psql_in(&pg, &db, extversion), current);

        let updated = extension_objects(&pg, &db);
        assert_eq!(
            updated.members, fresh.members,
            "updated from {version}: other extension members or initial privileges than a \
             fresh install"
        );
        compare::assert_same_blocks(
            (
                &format!("the database updated from {version}"),
                &updated.dump,
            ),
            ("a fresh install", &fresh.dump),
        );
    }
}

fn psql_in(pg: &Cluster, db: &str, sql: &str) -> String {
    pg.psql(db, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The `ddl_sync` extension of a database as comparable text.
struct ExtensionObjects {
    /// Each member object, then each initial privilege recorded for the extension's objects.
    members: Vec<String>,
    /// `pg_dump --schema-only` of the database after every member was detached from the
    /// extension (pg_dump leaves members out), so that it shows their definitions.
    dump: Vec<String>,
}

/// Reads the members of `ddl_sync` in `db`, then detaches them all (the database is of no use
/// afterwards but for the dump) and dumps it.
fn extension_objects(pg: &Cluster, db: &str) -> ExtensionObjects {
    let members_sql = "\
        SELECT o.type AS type, o.identity AS identity
          FROM pg_depend d, pg_identify_object(d.classid, d.objid, d.objsubid) o
         WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
           AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'ddl_sync')";
    let mut members: Vec<String> = psql_in(
        pg,
        db,
        &format!("SELECT type || ' ' || identity FROM ({members_sql}) m ORDER BY 1"),
    )
    .lines()
    .map(str::to_string)
    .collect();
    members.extend(
        psql_in(
            pg,
            db,
            "SELECT 'initial privileges of ' || o.type || ' ' || o.identity || ': '
                    || p.initprivs::text
               FROM pg_init_privs p, pg_identify_object(p.classoid, p.objoid, p.objsubid) o
              WHERE p.privtype = 'e' ORDER BY 1",
        )
        .lines()
        .map(str::to_string),
    );
    // ALTER EXTENSION ... DROP takes TYPE for what pg_identify_object calls a composite type.
    // 18 also lists the row type of each member table and view and the array type of each
    // member type, which go with the object they belong to and cannot be dropped by themselves.
    let droppable = format!(
        "{members_sql}
           AND NOT (d.classid = 'pg_type'::regclass AND EXISTS (
                    SELECT FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
                     WHERE t.oid = d.objid AND (t.typcategory = 'A' OR c.relkind <> 'c')))"
    );
    psql_in(
        pg,
        db,
        &format!(
            "DO $$
             DECLARE m record;
             BEGIN
                 FOR m IN {droppable} LOOP
                     EXECUTE format('ALTER EXTENSION ddl_sync DROP %s %s',
                                    CASE m.type WHEN 'composite type' THEN 'type' ELSE m.type END,
                                    m.identity);
                 END LOOP;
             END $$"
        ),
    );
    ExtensionObjects {
        members,
        dump: compare::dump_blocks(pg, db),
    }
}

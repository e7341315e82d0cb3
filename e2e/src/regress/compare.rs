//! What a regression run is measured by: test outputs with and without our libraries, the
//! subscriber's apply log, and the rows on both nodes.

use super::{script, RegressRun};
use crate::compare::ROWS_CHECKSUM;
use ddl_testkit::Cluster;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Why a test's output changed with our libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// `ddl_sync.volatile_rewrite = 'error'` (the default) refused an ALTER TABLE that would
    /// give existing rows values computed on each node; later statements of the test see the
    /// table without the change.
    VolatileRewrite,
    /// The extension's own objects are visible to queries over the whole catalog: its event
    /// triggers, its tables in a publication `FOR ALL TABLES`.
    OwnObjects,
    /// None of the documented policies: a defect.
    Unexplained,
}

impl Cause {
    /// What it is, in words, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Cause::VolatileRewrite => {
                "policy `ddl_sync.volatile_rewrite = 'error'`: an ALTER TABLE that would give \
                 existing rows values computed on each node is refused (and what the test does \
                 with the table afterwards changes with it)"
            }
            Cause::OwnObjects => {
                "the extension's own objects are visible: its two event triggers, and its tables \
                 in a publication FOR ALL TABLES"
            }
            Cause::Unexplained => "unexplained",
        }
    }
}

/// A test whose output with our libraries differs from the output without them.
pub struct ChangedTest {
    /// The test's name in the schedule.
    pub name: String,
    /// Lines only in one of the outputs.
    pub diff_lines: usize,
    /// Why, as far as the changed lines tell.
    pub cause: Cause,
    /// The first few changed lines, as `diff` prints them.
    pub sample: Vec<String>,
}

/// The tests of `tests` whose outputs differ between the two runs; each run's own output
/// directory is blanked out of its outputs first (server-side COPY names its files there).
pub(crate) fn changed_tests(
    tests: &[&str],
    plain: &RegressRun,
    ours: &RegressRun,
) -> Vec<ChangedTest> {
    let read = |run: &RegressRun, test: &str| {
        std::fs::read_to_string(run.out.join("results").join(format!("{test}.out")))
            .unwrap_or_default()
            .replace(&run.out.display().to_string(), "<outputdir>")
    };
    let mut changed = Vec::new();
    for test in tests {
        let (a, b) = (read(plain, test), read(ours, test));
        if a == b {
            continue;
        }
        let lines = diff(&a, &b);
        let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
        let cause = if has("would give the existing rows") {
            Cause::VolatileRewrite
        } else if has("ddl_sync") {
            Cause::OwnObjects
        } else {
            Cause::Unexplained
        };
        changed.push(ChangedTest {
            name: test.to_string(),
            diff_lines: lines.len(),
            cause,
            sample: lines.into_iter().take(6).collect(),
        });
    }
    changed
}

/// The changed lines between two texts (`-` for the first, `+` for the second), by `diff`.
pub(crate) fn diff(a: &str, b: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("ddl-regress-diff-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let (pa, pb) = (dir.join("a"), dir.join("b"));
    let written = std::fs::write(&pa, a).and_then(|_| std::fs::write(&pb, b));
    let out = written.ok().and_then(|_| {
        Command::new("diff")
            .arg("-U0")
            .arg(&pa)
            .arg(&pb)
            .output()
            .ok()
    });
    let _ = std::fs::remove_dir_all(&dir);
    let Some(out) = out else {
        return vec!["(diff could not run)".to_string()];
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .map(|l| l.chars().take(160).collect())
        .collect()
}

/// Events that share a status (or, for those not compared, a command tag) and a reason (names
/// blanked out).
pub struct EventGroup {
    /// `failed`, `refused`, `skipped` or `diverged`; for applied events not compared, their
    /// command tag.
    pub status: String,
    /// The apply log's detail, names blanked out.
    pub reason: String,
    /// How many events.
    pub count: usize,
    /// One of the statements.
    pub example: String,
}

/// Apply log rows by status, most frequent first.
pub(crate) type StatusCounts = Vec<(String, usize)>;

/// What verification found among the applied events (`diverged` ones are a status of their
/// own).
#[derive(Default)]
pub struct Verification {
    /// Applied and shown equal to what the statement made on the publisher.
    pub verified: usize,
    /// Applied and not compared, by command tag and why, most frequent first: statements
    /// that make nothing described (ddl-wire's README lists what is), or with a note.
    pub not_compared: Vec<EventGroup>,
}

/// What the subscriber made from the definitions events carry (ddl-apply's `replay/tables.rs`),
/// where the statement did not make it.
#[derive(Default)]
pub struct MadeFromDefinition {
    /// Tables made.
    pub tables: usize,
    /// Columns or keys added to tables that were there.
    pub completed: usize,
}

/// The part of an apply log detail that `replay/tables.rs` writes (one `; `-separated note per
/// table), counted apart from the reason.
const FROM_DEFINITION: &str = "from the publisher's definition";

/// The subscriber's apply log rows (in database `db`) by status, the ones not applied grouped
/// by reason, what was made from definitions, and what verification found.
pub(crate) fn events(
    subscriber: &Cluster,
    db: &str,
) -> Result<
    (
        StatusCounts,
        Vec<EventGroup>,
        MadeFromDefinition,
        Verification,
    ),
    String,
> {
    let rows = subscriber
        .psql(
            db,
            "SELECT apply_status, coalesce(apply_verified::text, '-'),
                    CASE WHEN description IS NULL THEN 'the publisher sent no description: '
                         ELSE '' END || command_tag,
                    replace(coalesce(apply_detail, ''), E'\\n', ' '),
                    replace(left(sql, 100), E'\\n', ' ')
               FROM ddl_sync.events",
        )
        .map_err(|e| format!("cannot read the apply log: {e}"))?;
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    let mut made = MadeFromDefinition::default();
    let mut verification = Verification::default();
    let mut not_compared: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    for row in rows.lines() {
        let mut fields = row.splitn(5, '|');
        let (status, verified, tag, detail, sql) = (
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
        );
        *by_status.entry(status.to_string()).or_default() += 1;
        match (status, verified) {
            ("applied", "true") => verification.verified += 1,
            ("applied", _) => {
                let note: Vec<&str> = detail
                    .split("; ")
                    .filter(|part| part.starts_with("not compared"))
                    .collect();
                let (tag, why) = match tag.strip_prefix("the publisher sent no description: ") {
                    Some(tag) => (tag, "the publisher sent no description".to_string()),
                    None => (tag, blank_names(&note.join("; "))),
                };
                not_compared
                    .entry((tag.to_string(), why))
                    .or_insert((0, sql.to_string()))
                    .0 += 1;
            }
            _ => {}
        }
        let (notes, reason): (Vec<&str>, Vec<&str>) = detail
            .split("; ")
            .partition(|part| part.contains(FROM_DEFINITION));
        for note in notes {
            if note.contains(" was made ") {
                made.tables += 1;
            } else {
                made.completed += 1;
            }
        }
        if status != "applied" {
            let entry = groups
                .entry((status.to_string(), blank_names(&reason.join("; "))))
                .or_insert((0, sql.to_string()));
            entry.0 += 1;
        }
    }
    let mut by_status: Vec<(String, usize)> = by_status.into_iter().collect();
    by_status.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    verification.not_compared = most_first(not_compared);
    Ok((by_status, most_first(groups), made, verification))
}

/// Groups of events by (status or tag, reason), with their count and an example, most
/// frequent first.
fn most_first(groups: BTreeMap<(String, String), (usize, String)>) -> Vec<EventGroup> {
    let mut groups: Vec<EventGroup> = groups
        .into_iter()
        .map(|((status, reason), (count, example))| EventGroup {
            status,
            reason,
            count,
            example,
        })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    groups
}

/// `detail` with every double-quoted name replaced by `"…"` and every number by `#`, so that
/// the same reason about different objects (or at different times) groups together.
fn blank_names(detail: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in detail.chars() {
        if c == '"' {
            if !quoted {
                out.push_str("\"…");
            }
            quoted = !quoted;
        }
        if quoted {
            continue;
        }
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The published tables' rows on both nodes.
pub struct RowCheck {
    /// Tables of the publication (outside schema `ddl_sync`).
    pub tables: usize,
    /// Those with the same rows on both nodes.
    pub equal: usize,
    /// The others, with what differs.
    pub differing: Vec<(String, String)>,
}

/// Compares every published table's row count and rows (md5 of the sorted text forms) in
/// database `db`.
pub(crate) fn rows(
    publisher: &Cluster,
    subscriber: &Cluster,
    db: &str,
) -> Result<RowCheck, String> {
    let tables = publisher
        .psql(
            db,
            "SELECT format('%I.%I', schemaname, tablename) FROM pg_publication_tables
              WHERE pubname = 'p' AND schemaname <> 'ddl_sync' ORDER BY 1",
        )
        .map_err(|e| format!("cannot list the published tables: {e}"))?;
    let tables: Vec<&str> = tables.lines().collect();
    let sums = |pg: &Cluster| -> BTreeMap<String, String> {
        let sql: String = tables
            .iter()
            .map(|t| {
                format!(
                    "SELECT '{}' || '|' || {ROWS_CHECKSUM} FROM {t} r;\n",
                    t.replace('\'', "''")
                )
            })
            .collect();
        script(pg, db, &sql)
            .lines()
            .filter_map(|l| l.split_once('|'))
            .map(|(t, s)| (t.to_string(), s.to_string()))
            .collect()
    };
    let (a, b) = (sums(publisher), sums(subscriber));
    let subscribed: BTreeSet<String> = subscriber
        .psql(
            db,
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_subscription_rel r
               JOIN pg_class c ON c.oid = r.srrelid JOIN pg_namespace n ON n.oid = c.relnamespace",
        )
        .map_err(|e| format!("cannot read pg_subscription_rel: {e}"))?
        .lines()
        .map(str::to_string)
        .collect();
    let mut check = RowCheck {
        tables: tables.len(),
        equal: 0,
        differing: Vec::new(),
    };
    for table in &tables {
        let why = match (a.get(*table), b.get(*table)) {
            (Some(x), Some(y)) if x == y => {
                check.equal += 1;
                continue;
            }
            (None, _) => "unreadable on the publisher".to_string(),
            (Some(_), None) => "missing on the subscriber".to_string(),
            (Some(x), Some(y)) if !subscribed.contains(*table) => {
                format!("not in the subscription: publisher {x}; subscriber {y}")
            }
            (Some(x), Some(y)) => format!("publisher {x}; subscriber {y}"),
        };
        check.differing.push((table.to_string(), why));
    }
    Ok(check)
}

/// `-- Name: x; Type: TABLE; Schema: public; Owner: postgres` of a pg_dump block.
pub(crate) fn block_header(block: &str) -> String {
    block
        .lines()
        .find(|l| l.starts_with("-- Name: "))
        .unwrap_or_else(|| block.lines().next().unwrap_or(""))
        .trim_start_matches("-- ")
        .to_string()
}

/// The subscriber's last ERROR, with how often it was logged.
pub(crate) fn last_error(subscriber: &Cluster) -> Option<String> {
    let log = std::fs::read_to_string(subscriber.log_path()).ok()?;
    let errors: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("ERROR:  ").map(|(_, e)| e))
        .collect();
    let last = *errors.last()?;
    let times = errors.iter().filter(|e| **e == last).count();
    Some(format!("{last} (logged {times} times)"))
}

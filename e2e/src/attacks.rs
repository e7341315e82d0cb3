//! Attacks on DDL replication by an ordinary role, each with what must stop it.
//!
//! The attacker is `mallory`, made with `CREATE ROLE mallory LOGIN` and nothing else, on the
//! publisher and (for the cases that need the role there) on the subscriber. Schema `public`
//! lets every role create objects, as PostgreSQL before 15 did (the GRANT is replicated).
//! Every case checks three things:
//! - the attack fails;
//! - the reason is visible: a WARNING in the publisher's log with the `rejected` counter of
//!   `ddl_sync.publication_stats`, an apply log row of `ddl_sync.events` with its detail, or
//!   the error the attacker gets;
//! - replication goes on: a genuine DDL statement committed after the attack, then a marker
//!   row, arrive on the subscriber, through the same walsender process.
//!
//! The classes, one function each, in the order they run:
//! 1. `forged_records`: `ddl_sync` messages written with `pg_logical_emit_message` that the
//!    capture never sealed (tag of zeros, random tag with the right system identifier and xid,
//!    in a savepoint, next to genuine DDL, in a transaction spilled to disk, through a
//!    superuser's SECURITY DEFINER wrapper), and the non-transactional variant;
//! 2. `poison`: content that must not make the walsender ERROR (NUL bytes, invalid UTF-8,
//!    truncations, absurd lengths, trailing bytes, unknown flags and versions);
//! 3. `key_holder`: records sealed in SQL with the real key, as only a role that may read
//!    server files can: the control is applied, and the later checks (author, transaction, NUL
//!    bytes) each refuse on their own;
//! 4. `replayed_records`: the exact bytes of a genuine record (read from a second slot) emitted
//!    again in another transaction, in savepoints, with the xid rewritten, non-transactionally,
//!    and a genuine record of another cluster;
//! 5. `spoofed_keys`: records claiming the de-duplication keys of statements to come, or the
//!    subscriber itself as their origin; `ddl_sync.replay_origin` set from SQL;
//! 6. `privileges`: the functions, tables, slots, subscription and key file an ordinary role
//!    must not reach;
//! 7. `missing_role`: statements of a role that exists only on the publisher;
//! 8. `event_rows`: rows inserted into the publisher's `ddl_sync.events`, through
//!    `ddl_pgoutput` and through a slot made with plain `pgoutput`;
//! 9. `search_path_hijack`: operators `=` and functions shadowing `pg_catalog`'s planted in
//!    `public` (by mallory through replication, and by a subscriber-local role), then DDL run
//!    with `search_path = public, pg_catalog`;
//! 10. `switches`: the former setting `ddl_sync.local_change` turned on by code a replayed
//!     statement runs in the apply worker;
//! 11. `apply_time_code`: triggers and rules enabled ALWAYS/REPLICA, and mallory's functions in
//!     CHECK constraints, defaults, generated columns, indexes, partition keys, domains and
//!     operators, which PostgreSQL 15 would run as the subscription owner (a superuser) for
//!     every row applied; the same statements by a superuser; SECURITY DEFINER functions (which
//!     would run in the apply worker's session), and turning them into SECURITY INVOKER ones
//!     afterwards;
//! 12. `caller_rights`: PostgreSQL's own functions that act with their caller's rights (run SQL
//!     text, read relations, change superuser-only settings, sequences, large objects, other
//!     sessions, advisory locks, replication slots) or that mallory may not execute, in CHECK
//!     constraints, defaults and domains, which PostgreSQL 15 would run as the subscription
//!     owner, and a cast to json of her own function (which `to_json` would call); the
//!     built-ins ordinary DDL uses (`serial`, `now()`, `gen_random_uuid()`, a granted
//!     sequence) still apply;
//! 13. `session_leak`: a replayed statement's code changing the apply worker's own
//!     search_path for the rest of its session;
//! 14. `dump_script`: `copy_schema` of a publisher database whose objects' text holds lines
//!     of pg_dump's own script: a `\restrict` line in a comment and a function body (once
//!     dropped, the next object's name, SQL chosen by mallory, ran as the superuser creating
//!     the subscription), pg_dump's closing comment in a body (which cut the script short),
//!     and a subscriber-local role's comment holding a fake `-- Name: ...` header (which made
//!     the publisher's `ENABLE ROW LEVEL SECURITY` count as already here);
//! 15. `claims`: the dialect a statement claims: mallory setting the placeholder
//!     `babelfishpg_tsql.sql_dialect = 'tsql'` on a server without Babelfish, and a sealed
//!     record of dialect `tsql` whose relation is in another schema than the record says;
//! 16. `held_replays`: eve, a subscriber role with no right on a table, holding a lock on it
//!     (`PREPARE` locks before permissions are checked), and a statement that sleeps only
//!     where it is replayed: each bound (`ddl_sync.replay_lock_timeout`,
//!     `ddl_sync.replay_statement_timeout`) ends the wait, visibly;
//! 17. `role_names`: mallory, given CREATEROLE on the publisher, makes roles named like roles
//!     that may do more on the subscriber only (a superuser, a member of
//!     `pg_read_server_files`) and runs DDL as them;
//! 18. `bindings`: eve, a subscriber-local role, plants in the subscriber's `public` an exact
//!     match for what a superuser's statement uses there (an operator `<>(varchar, varchar)`,
//!     an overload of a function), which parsing the same text again binds on the subscriber
//!     only: in a CHECK the apply worker would run for every row, and run by the statement
//!     itself (a constraint validated, an index built); the publisher's own use of an ordinary
//!     role's function still applies.
//!
//! Planted code calls `public.mallory_escalate`, which does harm only when it runs as a
//! superuser: it writes a row into `attack_log` and makes mallory a superuser. The last
//! outcome checks that this never happened on either node.
//!
//! [`run`] runs them all on one pair of fresh clusters; the e2e test asserts every case passes,
//! `cargo xtask reliability` writes the table into RELIABILITY.md.

use crate::hostile::{
    bytea, caught_up, emit_sql, encode, event_insert_sql, forged, Effect, Harness, Outcome,
};
use crate::{hex_messages, peek_hex, psql_verbose, query};
use ddl_testkit::Cluster;
use ddl_wire::{
    DdlRecord, Message, ProtocolContext, RecordFlags, RecordOrigin, StreamDecoder, Streaming,
    RECORD_PREFIX, RECORD_TAG_LEN,
};

const MALLORY: &str = "mallory";
/// A role that exists only on the publisher.
const GHOST: &str = "ghost";
/// A role that exists only on the subscriber.
const EVE: &str = "eve";
const SUPERUSER: &str = "postgres";
/// The record key's file in the publisher's data directory.
const KEY_FILE: &str = "ddl_sync_record.key";
/// What the capture's HMAC starts with before the record (`CONTEXT` in ddl-capture's
/// `seal.rs`); the key-holder cases seal records the same way.
const SEAL_CONTEXT: &[u8] = b"ddl_sync record v2\0";
/// SQL for the 4 big-endian bytes of the emitting transaction's xid.
const XID_BYTES: &str =
    "decode(lpad(to_hex(pg_current_xact_id()::text::bigint % 4294967296), 8, '0'), 'hex')";
/// The walsender's reason for a record the capture did not seal.
const TAG_WRONG: &str = "its authentication tag is wrong";
/// The subscriber's reason for code attached by a role that is not a superuser.
const AS_OWNER: &str = "it would run as the subscription owner";

/// Runs every attack; the last outcome says whether any planted code ever ran as a superuser.
pub fn run() -> Vec<Outcome> {
    let mut a = Arena::new();
    let mut out = Vec::new();
    common_objects(&mut a, &mut out);
    forged_records(&mut a, &mut out);
    poison(&mut a, &mut out);
    key_holder(&mut a, &mut out);
    replayed_records(&mut a, &mut out);
    spoofed_keys(&mut a, &mut out);
    privileges(&mut a, &mut out);
    missing_role(&mut a, &mut out);
    event_rows(&mut a, &mut out);
    search_path_hijack(&mut a, &mut out);
    switches(&mut a, &mut out);
    apply_time_code(&mut a, &mut out);
    caller_rights(&mut a, &mut out);
    session_leak(&mut a, &mut out);
    dump_script(&mut a, &mut out);
    claims(&mut a, &mut out);
    held_replays(&mut a, &mut out);
    role_names(&mut a, &mut out);
    bindings(&mut a, &mut out);
    finally(&mut a, &mut out);
    out
}

/// The hostile harness with every DDL kind replayed, the roles, and what a round saw last.
struct Arena {
    h: Harness,
    /// Genuine statements run after attacks so far.
    genuine: u32,
    /// The pid of the subscription's walsender when last seen.
    walsender: String,
    /// `rejected` and `emitted` of publication `p` when last seen.
    counters: (i64, i64),
    pub_sysid: u64,
    sub_sysid: u64,
    /// Escalations found (and undone so that later cases start clean) after a class.
    escalations: Vec<String>,
}

/// What an attack left, once a genuine statement after it and the next marker arrived.
struct Round {
    /// The attack's apply log rows (the genuine statement's taken out) and publisher warnings.
    effect: Effect,
    /// ddl_sync messages the walsender refused for publication `p` meanwhile.
    rejected: i64,
    /// DDL events the walsender sent for publication `p` meanwhile (the genuine one included).
    emitted: i64,
    /// Whether the genuine statement was applied on the subscriber.
    genuine_applied: bool,
    /// The genuine statement's apply log row.
    genuine: String,
    /// Whether the subscription's walsender is the process it was before (it did not ERROR).
    same_walsender: bool,
}

impl Round {
    /// Replication goes on: the genuine statement applied, the walsender never restarted.
    fn continues(&self) -> bool {
        self.genuine_applied && self.same_walsender
    }

    /// How many walsender WARNINGs about ignored ddl_sync messages the publisher's log got.
    fn refusals(&self) -> usize {
        self.effect
            .warnings
            .iter()
            .filter(|w| w.contains("ignoring ddl_sync message"))
            .count()
    }

    fn warned(&self, why: &str) -> bool {
        self.effect
            .warnings
            .iter()
            .any(|w| w.contains("ignoring ddl_sync message") && w.contains(why))
    }

    /// `n` messages refused by the walsender with `why` in the WARNING, counted, nothing sent
    /// for them, and replication going on.
    fn refused_by_walsender(&self, n: i64, why: &str) -> bool {
        self.effect.log.is_empty()
            && self.rejected == n
            && self.refusals() == n as usize
            && self.emitted == 1
            && self.warned(why)
            && self.continues()
    }

    /// A message taken for nothing: no WARNING, not counted, nothing sent.
    fn ignored(&self) -> bool {
        self.effect.log.is_empty()
            && self.rejected == 0
            && self.refusals() == 0
            && self.emitted == 1
            && self.continues()
    }

    /// Exactly one apply log row from the attack: `status` for `tag`, with `why` in it.
    fn logged(&self, status: &str, tag: &str, why: &str) -> bool {
        self.effect.log.len() == 1
            && self.effect.log[0].starts_with(&format!("{status}|{tag}|"))
            && self.effect.log[0].contains(why)
            && self.continues()
    }

    /// `n` apply log rows from the attack, all `applied`.
    fn all_applied(&self, n: usize) -> bool {
        self.effect.log.len() == n
            && self.effect.log.iter().all(|l| l.starts_with("applied|"))
            && self.continues()
    }

    /// `n` apply log rows from the attack, all replayed: `applied`, or `diverged` (run, on a
    /// table that differs here, e.g. because earlier attacks on it were refused).
    fn all_replayed(&self, n: usize) -> bool {
        self.effect.log.len() == n
            && self
                .effect
                .log
                .iter()
                .all(|l| l.starts_with("applied|") || l.starts_with("diverged|"))
            && self.continues()
    }

    fn describe(&self) -> String {
        let mut text = self.effect.describe();
        if self.rejected != 0 {
            text.push_str(&format!("; rejected +{}", self.rejected));
        }
        text.push_str(&format!(
            "; emitted +{}; the genuine statement after it: {}",
            self.emitted, self.genuine
        ));
        if !self.same_walsender {
            text.push_str("; the walsender is not the process it was (it restarted)");
        }
        text
    }
}

impl Arena {
    fn new() -> Arena {
        let h = Harness::with("attacks", "all");
        query(
            &h.publisher,
            &format!(
                "CREATE ROLE {MALLORY} LOGIN; CREATE ROLE {GHOST} LOGIN;
                 GRANT CREATE ON SCHEMA public TO PUBLIC;"
            ),
        );
        query(
            &h.subscriber,
            &format!("CREATE ROLE {MALLORY} LOGIN; CREATE ROLE {EVE} LOGIN;"),
        );
        let pub_sysid = sysid(&h.publisher);
        let sub_sysid = sysid(&h.subscriber);
        let walsender = walsender(&h.publisher);
        let mut a = Arena {
            h,
            genuine: 0,
            walsender,
            counters: (0, 0),
            pub_sysid,
            sub_sysid,
            escalations: Vec::new(),
        };
        a.counters = a.read_counters();
        a
    }

    fn publisher(&self) -> &Cluster {
        &self.h.publisher
    }

    fn subscriber(&self) -> &Cluster {
        &self.h.subscriber
    }

    fn read_counters(&self) -> (i64, i64) {
        let line = query(
            self.publisher(),
            "SELECT rejected || ' ' || emitted FROM ddl_sync.publication_stats
              WHERE publication = 'p'",
        );
        let mut numbers = line.split(' ').map(|n| n.parse::<i64>().unwrap_or(-1));
        (numbers.next().unwrap_or(-1), numbers.next().unwrap_or(-1))
    }

    /// Commits a genuine statement on the publisher, waits for the next marker, and returns
    /// what the attack before it left.
    fn round(&mut self) -> Round {
        self.genuine += 1;
        let comment = format!("genuine statement {} after an attack", self.genuine);
        query(
            self.publisher(),
            &format!("COMMENT ON TABLE marks IS '{comment}'"),
        );
        let mut effect = self.h.settle();
        let genuine = effect
            .log
            .iter()
            .rposition(|row| row.split('|').nth(1) == Some("COMMENT"))
            .map(|i| effect.log.remove(i));
        let seen = query(
            self.subscriber(),
            "SELECT coalesce(obj_description('marks'::regclass, 'pg_class'), '')",
        );
        let counters = self.read_counters();
        let pid = walsender(self.publisher());
        let round = Round {
            effect,
            rejected: counters.0 - self.counters.0,
            emitted: counters.1 - self.counters.1,
            genuine_applied: genuine
                .as_deref()
                .is_some_and(|g| g.starts_with("applied|COMMENT|"))
                && seen == comment,
            genuine: genuine.unwrap_or_else(|| "no apply log row".into()),
            same_walsender: !pid.is_empty() && pid == self.walsender,
        };
        self.counters = counters;
        self.walsender = pid;
        round
    }

    /// Emits `payload` as a `ddl_sync` message in a transaction of `role`'s.
    fn emit(&self, role: &str, transactional: bool, payload: &[u8]) {
        run_as(self.publisher(), role, &emit_sql(transactional, payload));
    }

    fn exists(&self, relation: &str) -> bool {
        self.h.exists(self.subscriber(), relation)
    }

    /// Whether mallory is an ordinary role on both nodes and no planted code ever ran as a
    /// superuser (nothing in `attack_log` on either node), with what was seen.
    fn unescalated(&self) -> (bool, String) {
        let mut ok = true;
        let mut seen = Vec::new();
        for (side, pg) in [
            ("publisher", self.publisher()),
            ("subscriber", self.subscriber()),
        ] {
            let superuser = rolsuper(pg, MALLORY);
            let log = query(
                pg,
                "SELECT count(*) || coalesce(': ' || string_agg(what, ', '), '') FROM attack_log",
            );
            ok &= superuser == "false" && log == "0";
            seen.push(format!(
                "{side}: mallory superuser {superuser}, attack_log {log}"
            ));
        }
        (ok, seen.join("; "))
    }

    /// After a class: when planted code did run as a superuser (already reported by that
    /// class's outcomes), note it and undo it, so that the next classes start clean.
    fn reset_if_escalated(&mut self, class: &str) {
        let (ok, seen) = self.unescalated();
        let eve = rolsuper(self.subscriber(), EVE);
        if ok && eve == "false" {
            return;
        }
        self.escalations
            .push(format!("after {class}: {seen}; eve superuser {eve}"));
        query(
            self.publisher(),
            &format!("ALTER ROLE {MALLORY} NOSUPERUSER; TRUNCATE attack_log;"),
        );
        query(
            self.subscriber(),
            &format!(
                "ALTER ROLE {MALLORY} NOSUPERUSER; ALTER ROLE {EVE} NOSUPERUSER; \
                 TRUNCATE attack_log;"
            ),
        );
    }
}

/// The system identifier of `pg`.
fn sysid(pg: &Cluster) -> u64 {
    query(pg, "SELECT system_identifier FROM pg_control_system()")
        .parse::<i64>()
        .expect("a system identifier") as u64
}

/// The pid of the walsender of subscription `sub` (empty when there is none).
fn walsender(publisher: &Cluster) -> String {
    query(
        publisher,
        "SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_replication
          WHERE application_name = 'sub'",
    )
}

/// `rolsuper` of `role` on `pg` (`missing` when there is no such role).
fn rolsuper(pg: &Cluster, role: &str) -> String {
    query(
        pg,
        &format!(
            "SELECT coalesce((SELECT rolsuper::text FROM pg_roles WHERE rolname = '{role}'), \
             'missing')"
        ),
    )
}

/// Runs `sql` on `pg` (database postgres) as `role`, after `SET SESSION AUTHORIZATION`:
/// whether it succeeded, and psql's ERROR lines (verbose: `ERROR:  42501: ...`).
fn as_role(pg: &Cluster, role: &str, sql: &str) -> (bool, String) {
    let (ok, stderr) = psql_verbose(
        pg,
        "postgres",
        &format!("SET SESSION AUTHORIZATION {role};\n{sql};\n"),
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("ERROR:")).collect();
    (ok, errors.join(" "))
}

/// [`as_role`] for a step that must succeed: panics with the error otherwise.
fn run_as(pg: &Cluster, role: &str, sql: &str) {
    let (ok, errors) = as_role(pg, role, sql);
    assert!(ok, "as {role} on {}: {sql}\n{errors}", pg.name());
}

/// `sql` on `pg`, or the error as text (for checks whose query may fail after a successful
/// attack, e.g. on a dropped column).
fn try_query(pg: &Cluster, sql: &str) -> String {
    pg.psql("postgres", sql)
        .unwrap_or_else(|e| format!("error: {e}"))
}

/// The type of column `column` of `table` on `pg`, `missing` when there is none.
fn column_type(pg: &Cluster, table: &str, column: &str) -> String {
    query(
        pg,
        &format!(
            "SELECT coalesce((SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                               WHERE attrelid = to_regclass('{table}') AND attname = '{column}'
                                 AND NOT attisdropped), 'missing')"
        ),
    )
}

fn push(
    out: &mut Vec<Outcome>,
    name: impl Into<String>,
    expected: &'static str,
    passed: bool,
    observed: String,
) {
    out.push(Outcome {
        name: name.into(),
        expected,
        observed,
        passed,
    });
}

/// An outcome for the set-up statements of a class: an ordinary role's own DDL replicates as
/// usual (`statements` apply log rows, all applied).
fn setup(out: &mut Vec<Outcome>, what: &str, r: &Round, statements: usize) {
    push(
        out,
        format!("setup: {what}"),
        "applied on the subscriber: an ordinary role's own DDL replicates as usual",
        r.all_applied(statements),
        r.describe(),
    );
}

/// 32 bytes that are not a tag, from `seed` (xorshift).
fn noise(seed: u64) -> [u8; RECORD_TAG_LEN] {
    let mut x = seed | 1;
    let mut out = [0; RECORD_TAG_LEN];
    for b in &mut out {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    out
}

/// The origin of a record captured on the node with system identifier `sysid`.
fn captured_on(sysid: u64) -> RecordOrigin {
    RecordOrigin {
        capturing_sysid: sysid,
        original_sysid: 0,
        original_lsn: 0,
    }
}

/// The statement that emits `payload` with its xid (bytes 2..6) replaced by the emitting
/// transaction's.
fn bound_emit_sql(payload: &[u8]) -> String {
    format!(
        "SELECT pg_logical_emit_message(true, 'ddl_sync', overlay({} placing {XID_BYTES} from 3 for 4))",
        bytea(payload)
    )
}

/// SQL of `public.<role>_escalate(what)`, a plpgsql function of `role` that does its harm only
/// when it runs as a superuser: a row in `log`, and `role` made a superuser.
fn escalate_sql(role: &str, log: &str) -> String {
    format!(
        "CREATE FUNCTION public.{role}_escalate(what text) RETURNS void LANGUAGE plpgsql AS $f$ \
         BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) \
         current_user AND rolsuper) THEN INSERT INTO public.{log} VALUES \
         (pg_catalog.concat(what, ' ran as ', current_user)); \
         EXECUTE 'ALTER ROLE {role} SUPERUSER'; END IF; END $f$"
    )
}

/// Objects every class uses: `attack_log` (a superuser's), `mallory_escalate` and the table
/// `m_big` (mallory's), a superuser's SECURITY DEFINER wrapper of `pg_logical_emit_message`.
fn common_objects(a: &mut Arena, out: &mut Vec<Outcome>) {
    query(
        a.publisher(),
        "CREATE TABLE attack_log (what text);
         CREATE FUNCTION public.emit_ddl_sync(payload bytea) RETURNS pg_lsn LANGUAGE sql
             SECURITY DEFINER AS $f$ SELECT pg_logical_emit_message(true, 'ddl_sync', payload) $f$;",
    );
    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "{};\nCREATE TABLE m_big (id int PRIMARY KEY, pad text)",
            escalate_sql(MALLORY, "attack_log")
        ),
    );
    let r = a.round();
    setup(
        out,
        "CREATE on schema public for all, attack_log and a SECURITY DEFINER wrapper of \
         pg_logical_emit_message (superuser); mallory_escalate and a table (mallory)",
        &r,
        5,
    );
}

fn forged_records(a: &mut Arena, out: &mut Vec<Outcome>) {
    const REFUSED: &str = "refused by the walsender: a WARNING in the publisher's log (\"its \
         authentication tag is wrong\"), `rejected` +1, nothing sent, no apply log row; the \
         genuine statement after it is applied";

    let alter = forged(
        "ALTER TABLE",
        "table",
        "public.t",
        "ALTER TABLE t ALTER COLUMN id TYPE bigint USING (id + 1000)",
    );
    a.emit(MALLORY, true, &encode(&alter));
    let r = a.round();
    let ty = column_type(a.subscriber(), "t", "id");
    push(
        out,
        "mallory: pg_logical_emit_message(true, 'ddl_sync', ...) with a well-formed record \
         claiming role postgres and `ALTER TABLE t ALTER COLUMN id TYPE bigint USING (id + \
         1000)`, tag of zeros",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && ty == "integer",
        format!("{}; t.id on the subscriber: {ty}", r.describe()),
    );

    let create = forged(
        "CREATE TABLE",
        "table",
        "public.forged",
        "CREATE TABLE forged (a int)",
    );
    let right_sysid = DdlRecord {
        origin: captured_on(a.pub_sysid),
        tag: noise(7),
        ..create
    };
    a.emit(MALLORY, true, &encode(&right_sysid));
    let r = a.round();
    push(
        out,
        "mallory: a record of `CREATE TABLE forged (a int)` naming the publisher's system \
         identifier (from pg_control_system()), random tag",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("forged"),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        &bound_emit_sql(&encode(&right_sysid)),
    );
    let r = a.round();
    push(
        out,
        "mallory: the same with the record's xid set to her own transaction's in SQL \
         (everything right but the tag)",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("forged"),
        r.describe(),
    );

    a.emit(MALLORY, false, &encode(&right_sysid));
    let r = a.round();
    push(
        out,
        "mallory: the same record, non-transactional",
        "ignored (only transactional messages can be DDL records): no WARNING, not counted, \
         nothing sent",
        r.ignored() && !a.exists("forged"),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "BEGIN; SAVEPOINT s; {}; RELEASE SAVEPOINT s; COMMIT",
            emit_sql(true, &encode(&right_sysid))
        ),
    );
    let r = a.round();
    push(
        out,
        "mallory: the same record emitted in a subtransaction (SAVEPOINT ... RELEASE)",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("forged"),
        r.describe(),
    );

    let hidden = forged(
        "CREATE TABLE",
        "table",
        "public.forged_mixed",
        "CREATE TABLE forged_mixed (a int)",
    );
    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "BEGIN; CREATE TABLE m_mixed (a int); {}; COMMIT",
            emit_sql(
                true,
                &encode(&DdlRecord {
                    origin: captured_on(a.pub_sysid),
                    ..hidden
                })
            )
        ),
    );
    let r = a.round();
    push(
        out,
        "mallory: one transaction with her genuine `CREATE TABLE m_mixed (a int)` and a forged \
         record of `CREATE TABLE forged_mixed (a int)`",
        "the genuine statement applied, the forged record refused by the walsender (WARNING, \
         `rejected` +1)",
        r.logged("applied", "CREATE TABLE", "")
            && r.rejected == 1
            && r.refusals() == 1
            && r.warned(TAG_WRONG)
            && r.emitted == 2
            && a.exists("m_mixed")
            && !a.exists("forged_mixed"),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "BEGIN;
             INSERT INTO m_big SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g;
             {};
             INSERT INTO m_big SELECT g, 'y' FROM generate_series(5001, 6000) g;
             COMMIT",
            emit_sql(true, &encode(&right_sysid))
        ),
    );
    let r = a.round();
    let rows = query(a.subscriber(), "SELECT count(*) FROM m_big");
    push(
        out,
        "mallory: a forged record between 6,000 rows of one transaction (spilled to disk on the \
         publisher's 64 kB logical_decoding_work_mem)",
        "the record refused by the walsender (WARNING, `rejected` +1); all 6,000 rows arrive",
        r.refused_by_walsender(1, TAG_WRONG) && rows == "6000",
        format!("{}; rows on the subscriber: {rows}", r.describe()),
    );

    let own = DdlRecord {
        origin: captured_on(a.pub_sysid),
        role: MALLORY,
        session_user: MALLORY,
        ..forged(
            "CREATE TABLE",
            "table",
            "public.m_self",
            "CREATE TABLE m_self (a int)",
        )
    };
    a.emit(MALLORY, true, &encode(&own));
    let r = a.round();
    push(
        out,
        "mallory: a forged record of a statement she may run herself (`CREATE TABLE m_self`, \
         role mallory)",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("m_self"),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "SELECT public.emit_ddl_sync({})",
            bytea(&encode(&right_sysid))
        ),
    );
    let r = a.round();
    push(
        out,
        "mallory: the record through a superuser's SECURITY DEFINER wrapper of \
         pg_logical_emit_message",
        REFUSED,
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("forged"),
        r.describe(),
    );
}

fn poison(a: &mut Arena, out: &mut Vec<Outcome>) {
    const EXPECTED: &str = "a WARNING (\"ignoring ddl_sync message ...\" with the reason), \
        `rejected` +1, nothing sent; the walsender does not ERROR (same process), the genuine \
        statement and the marker after it arrive";
    let base = DdlRecord {
        origin: captured_on(a.pub_sysid),
        ..forged(
            "CREATE TABLE",
            "table",
            "public.poison",
            "CREATE TABLE poison (a int)",
        )
    };
    let bytes = encode(&base);
    let nul = encode(&DdlRecord {
        sql: "CREATE TABLE poison (a int)\0; DROP TABLE t",
        ..base
    });
    let mut bad_utf8 = bytes.clone();
    let at = bad_utf8
        .windows(6)
        .rposition(|w| w == b"poison")
        .expect("the name in the statement");
    bad_utf8[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
    let mut huge = bytes.clone();
    let sql_length_at = 42
        + [
            base.dialect,
            base.command_tag,
            base.kind,
            base.schema,
            base.object_identity,
        ]
        .iter()
        .map(|s| 4 + s.len())
        .sum::<usize>();
    huge[sql_length_at..sql_length_at + 4].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
    let mut trailing = bytes.clone();
    trailing.extend_from_slice(b"!!");
    let mut flags = bytes.clone();
    flags[1] |= 0x80;
    let mut v1 = bytes[..bytes.len() - RECORD_TAG_LEN].to_vec();
    v1[0] = 1;
    let cases = [
        (
            "a NUL byte in its statement (`CREATE TABLE poison (a int)\\0; DROP TABLE t`)",
            nul,
            TAG_WRONG,
        ),
        (
            "invalid UTF-8 in its statement (bytes ff fe)",
            bad_utf8,
            "is not valid UTF-8",
        ),
        (
            "cut 40 bytes short (inside its last field)",
            bytes[..bytes.len() - 40].to_vec(),
            "ends inside field",
        ),
        ("a statement length of 4 GB", huge, "ends inside field sql"),
        ("two bytes after its tag", trailing, "after the tag"),
        ("an unknown flag bit (0x80)", flags, "unknown flag bits"),
        (
            "one byte (the version number 2)",
            vec![2],
            "ends inside field flags",
        ),
        (
            "32 zero bytes (a tag alone)",
            vec![0; RECORD_TAG_LEN],
            "format version 0",
        ),
        (
            "a format version 1 record (before tags)",
            v1,
            "format version 1",
        ),
    ];

    for (what, payload, why) in cases {
        a.emit(MALLORY, true, &payload);
        let r = a.round();
        let malformed = why == TAG_WRONG || r.warned("malformed");
        push(
            out,
            format!("mallory: a ddl_sync message with {what}"),
            EXPECTED,
            r.refused_by_walsender(1, why) && malformed && !a.exists("poison") && a.exists("t"),
            r.describe(),
        );
    }

    a.emit(MALLORY, true, b"");
    let r = a.round();
    push(
        out,
        "mallory: an empty ddl_sync message (what the capture writes as padding)",
        "ignored: no WARNING, not counted, nothing sent",
        r.ignored(),
        r.describe(),
    );
}

/// The record key of `pg`, read as a superuser.
fn record_key(pg: &Cluster) -> Vec<u8> {
    let hex = query(
        pg,
        &format!("SELECT encode(pg_read_binary_file('{KEY_FILE}'), 'hex')"),
    );
    hex_messages(&hex).into_iter().next().unwrap_or_default()
}

/// The statement that emits `record` sealed under `key` as the capture seals (HMAC-SHA256 of
/// the seal context and the record without its tag, computed with SQL's `sha256()`); with
/// `bind_xid`, the record's xid is first set to the emitting transaction's.
fn sealed_emit_sql(key: &[u8], record: &DdlRecord<'_>, bind_xid: bool) -> String {
    assert!(
        !key.is_empty() && key.len() <= 64,
        "a key of {} bytes: HMAC-SHA256 hashes keys longer than a block first",
        key.len()
    );
    let bytes = encode(record);
    let body = DdlRecord::sealed_part(&bytes).expect("a record holds a tag");
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |x: u8| block.iter().map(|b| b ^ x).collect::<Vec<u8>>();
    let body_sql = if bind_xid {
        format!("overlay({} placing {XID_BYTES} from 3 for 4)", bytea(body))
    } else {
        bytea(body)
    };
    format!(
        "SELECT pg_logical_emit_message(true, 'ddl_sync', b || sha256({} || sha256({} || {} || b)))
           FROM (SELECT {body_sql} AS b) AS record",
        bytea(&pad(0x5c)),
        bytea(&pad(0x36)),
        bytea(SEAL_CONTEXT)
    )
}

fn key_holder(a: &mut Arena, out: &mut Vec<Outcome>) {
    let key = record_key(a.publisher());
    let control = DdlRecord {
        origin: captured_on(a.pub_sysid),
        ..forged(
            "CREATE TABLE",
            "table",
            "public.sealed_control",
            "CREATE TABLE sealed_control (a int)",
        )
    };
    query(a.publisher(), &sealed_emit_sql(&key, &control, true));
    let r = a.round();
    push(
        out,
        "superuser reading $PGDATA/ddl_sync_record.key: a record sealed in SQL with it, right \
         system identifier and xid (the control of the cases below)",
        "applied: whoever may read server files can write records (SECURITY.md, trusted roles); \
         this also shows the cases below are sealed right",
        r.logged("applied", "CREATE TABLE", "") && a.exists("sealed_control"),
        r.describe(),
    );

    let cases: [(&str, DdlRecord<'_>, bool, String); 4] = [
        (
            "naming system 1 as its author",
            DdlRecord {
                origin: captured_on(1),
                ..control
            },
            true,
            "it names system 1 as its author, not this one".to_string(),
        ),
        (
            "sealed for transaction 4000000000, emitted in another",
            DdlRecord {
                xid: 4_000_000_000,
                ..control
            },
            false,
            "it was sealed in transaction 4000000000, not in this one".to_string(),
        ),
        (
            "with a NUL byte in its statement",
            DdlRecord {
                sql: "CREATE TABLE sealed_nul (a int)\0; DROP TABLE t",
                object_identity: "public.sealed_nul",
                ..control
            },
            true,
            "its field sql holds a NUL byte".to_string(),
        ),
        (
            "with a NUL byte in its role (`postgres\\0mallory`)",
            DdlRecord {
                role: "postgres\0mallory",
                sql: "CREATE TABLE sealed_nul (a int)",
                object_identity: "public.sealed_nul",
                ..control
            },
            true,
            "its field role holds a NUL byte".to_string(),
        ),
    ];
    for (what, record, bind_xid, why) in cases {
        query(a.publisher(), &sealed_emit_sql(&key, &record, bind_xid));
        let r = a.round();
        push(
            out,
            format!("superuser with the key: a sealed record {what}"),
            "refused by the walsender for that reason alone (WARNING, `rejected` +1), nothing \
             sent",
            r.refused_by_walsender(1, &why) && !a.exists("sealed_nul") && a.exists("t"),
            r.describe(),
        );
    }
}

/// Runs `sql` on `pg` as `role` while a slot of its own watches (publication `p_peek`), and
/// returns the bytes of the ddl_sync record of that statement.
fn capture(pg: &Cluster, role: &str, sql: &str) -> Vec<u8> {
    query(
        pg,
        "SELECT pg_create_logical_replication_slot('attack_capture', 'ddl_pgoutput')",
    );
    run_as(pg, role, sql);
    let hex = peek_hex(
        pg,
        "attack_capture",
        &[
            ("proto_version", "1"),
            ("publication_names", "p_peek"),
            ("messages", "true"),
        ],
    );
    query(pg, "SELECT pg_drop_replication_slot('attack_capture')");
    let hex = hex.unwrap_or_else(|e| panic!("peek of slot attack_capture: {e}"));
    let wanted = sql.trim().trim_end_matches(';').trim();
    let mut decoder =
        StreamDecoder::new(ProtocolContext::new(1, Streaming::Off).expect("protocol version 1"));
    let mut seen = Vec::new();
    for bytes in hex_messages(&hex) {
        let Ok(Message::LogicalMessage(m)) = decoder.decode(&bytes) else {
            continue;
        };
        if m.prefix() != RECORD_PREFIX || m.content().is_empty() {
            continue;
        }
        match DdlRecord::parse(m.content()) {
            Ok(record) if record.sql.trim().trim_end_matches(';').trim() == wanted => {
                return m.content().to_vec();
            }
            Ok(record) => seen.push(record.sql.to_string()),
            Err(e) => seen.push(format!("unreadable: {e}")),
        }
    }
    panic!("no record of `{sql}` in slot attack_capture; records seen: {seen:?}")
}

fn replayed_records(a: &mut Arena, out: &mut Vec<Outcome>) {
    const REPLAYED: &str = "refused by the walsender: a WARNING (\"it was sealed in transaction \
        N, not in this one: a copy of another transaction's record\"), `rejected` counts it, \
        nothing sent; column c and the rows stay as they are on the subscriber";
    query(
        a.publisher(),
        "CREATE PUBLICATION p_peek FOR ALL TABLES WITH (ddl = 'all')",
    );
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE TABLE m_replay (id int PRIMARY KEY, c int);
         INSERT INTO m_replay SELECT g, g FROM generate_series(1, 3) g",
    );
    let r = a.round();
    setup(out, "mallory creates m_replay (id, c) with 3 rows", &r, 1);
    let dropped = capture(a.publisher(), MALLORY, "ALTER TABLE m_replay DROP COLUMN c");
    let r = a.round();
    setup(
        out,
        "mallory drops column c of m_replay (its record read from a second slot)",
        &r,
        1,
    );
    run_as(
        a.publisher(),
        MALLORY,
        "ALTER TABLE m_replay ADD COLUMN c int; UPDATE m_replay SET c = id * 10",
    );
    let r = a.round();
    setup(out, "mallory adds column c back and fills it", &r, 1);

    /// Whether column c and the rows of m_replay are as they must be, and what was seen.
    fn intact(a: &Arena) -> (bool, String) {
        let rows = "SELECT string_agg(id || '=' || coalesce(c::text, 'null'), ',' ORDER BY id) \
                    FROM m_replay";
        let on_pub = try_query(a.publisher(), rows);
        let on_sub = try_query(a.subscriber(), rows);
        let column = column_type(a.subscriber(), "m_replay", "c");
        (
            column == "integer" && on_pub == on_sub && on_pub == "1=10,2=20,3=30",
            format!(
                "column c on the subscriber: {column}; rows publisher {on_pub}, subscriber \
                 {on_sub}"
            ),
        )
    }

    a.emit(MALLORY, true, &dropped);
    let r = a.round();
    let (kept, seen) = intact(a);
    push(
        out,
        "mallory: the genuine record of the old `ALTER TABLE m_replay DROP COLUMN c`, emitted \
         again byte for byte after the column was added back",
        REPLAYED,
        r.refused_by_walsender(1, "it was sealed in transaction")
            && r.warned("a copy of another transaction's record")
            && kept,
        format!("{}; {seen}", r.describe()),
    );

    let once = emit_sql(true, &dropped);
    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "BEGIN; SAVEPOINT s; {once}; {once}; {once}; {once}; {once}; RELEASE SAVEPOINT s; \
             {once}; {once}; {once}; {once}; {once}; COMMIT"
        ),
    );
    let r = a.round();
    let (kept, seen) = intact(a);
    push(
        out,
        "mallory: the same bytes ten times in one transaction, five of them in a savepoint",
        REPLAYED,
        r.refused_by_walsender(10, "it was sealed in transaction") && kept,
        format!("{}; {seen}", r.describe()),
    );

    run_as(a.publisher(), MALLORY, &bound_emit_sql(&dropped));
    let r = a.round();
    let (kept, seen) = intact(a);
    push(
        out,
        "mallory: the same bytes with the xid rewritten to her own transaction's",
        "refused by the walsender: the xid is under the tag (\"its authentication tag is \
         wrong\"), `rejected` +1; nothing changes on the subscriber",
        r.refused_by_walsender(1, TAG_WRONG) && kept,
        format!("{}; {seen}", r.describe()),
    );

    a.emit(MALLORY, false, &dropped);
    let r = a.round();
    let (kept, seen) = intact(a);
    push(
        out,
        "mallory: the same bytes, non-transactional",
        "ignored: no WARNING, not counted, nothing sent; nothing changes on the subscriber",
        r.ignored() && kept,
        format!("{}; {seen}", r.describe()),
    );

    let other = crate::ddl_publisher("attacks-other");
    query(
        &other,
        "CREATE PUBLICATION p_peek FOR ALL TABLES WITH (ddl = 'all')",
    );
    let foreign = capture(&other, SUPERUSER, "CREATE TABLE other_t (a int)");
    drop(other);
    a.emit(MALLORY, true, &foreign);
    let r = a.round();
    push(
        out,
        "mallory: a genuine record of another ddl_sync publisher (`CREATE TABLE other_t`, by \
         its superuser), emitted on this one",
        "refused by the walsender: sealed under another key (\"its authentication tag is \
         wrong\"), `rejected` +1, nothing sent",
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("other_t"),
        r.describe(),
    );
}

fn spoofed_keys(a: &mut Arena, out: &mut Vec<Outcome>) {
    const CLAIMS: u32 = 64;
    /// Events the subscriber dropped as already applied, so far.
    fn duplicates(a: &Arena) -> String {
        query(
            a.subscriber(),
            "SELECT coalesce(sum(duplicates), 0) FROM ddl_sync.subscription_counters",
        )
    }
    let claim = DdlRecord {
        flags: RecordFlags::TOP_LEVEL | RecordFlags::TRANSACTIONAL | RecordFlags::FORWARDED,
        origin: RecordOrigin {
            capturing_sysid: a.pub_sysid,
            original_sysid: a.pub_sysid,
            original_lsn: 0,
        },
        ..forged(
            "CREATE TABLE",
            "table",
            "public.spoof",
            "CREATE TABLE spoof (a int)",
        )
    };
    let before = duplicates(a);
    // original_lsn is bytes 34..42 of the record.
    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "SELECT pg_logical_emit_message(true, 'ddl_sync', overlay({} placing
                 decode(lpad(to_hex((pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint + 8 * g), 16, '0'), 'hex')
                 from 35 for 8))
               FROM generate_series(0, {}) AS g",
            bytea(&encode(&claim)),
            CLAIMS - 1
        ),
    );
    let r = a.round();
    let after = duplicates(a);
    push(
        out,
        format!(
            "mallory: {CLAIMS} forwarded records claiming the origin keys (publisher, next LSNs \
             in steps of 8) that the statements after them will have"
        ),
        "all refused by the walsender (WARNING each, `rejected` +64), so no key is taken: the \
         genuine statement after them is applied, not dropped as a duplicate",
        r.refused_by_walsender(CLAIMS as i64, TAG_WRONG) && before == after,
        format!("{}; duplicates counted {before} -> {after}", r.describe()),
    );

    let cycle = DdlRecord {
        origin: RecordOrigin {
            capturing_sysid: a.pub_sysid,
            original_sysid: a.sub_sysid,
            original_lsn: 0x1000,
        },
        ..claim
    };
    a.emit(MALLORY, true, &encode(&cycle));
    let r = a.round();
    push(
        out,
        "mallory: a forwarded record naming the subscriber as the statement's origin (which the \
         subscriber would take for its own DDL come back around a cycle)",
        "refused by the walsender (WARNING, `rejected` +1); the genuine statement after it is \
         applied",
        r.refused_by_walsender(1, TAG_WRONG) && !a.exists("spoof"),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        &format!(
            "DO $$ BEGIN PERFORM pg_catalog.set_config('ddl_sync.replay_origin', '{} 0/10', false);
                 EXCEPTION WHEN OTHERS THEN NULL; END $$;
             CREATE TABLE m_origin (a int)",
            a.sub_sysid as i64
        ),
    );
    let r = a.round();
    let row = query(
        a.subscriber(),
        "SELECT coalesce((SELECT apply_status || ' ' || origin_sysid || ' ' || origin_lsn || ' '
                                 || forwarded
                            FROM ddl_sync.events WHERE object_identity = 'public.m_origin'
                             AND command_tag = 'CREATE TABLE'),
                         'no row')",
    );
    let origin = row.split(' ').collect::<Vec<_>>();
    let publisher_sysid = (a.pub_sysid as i64).to_string();
    push(
        out,
        "mallory: set_config('ddl_sync.replay_origin', '<subscriber> 0/10', false), then her \
         `CREATE TABLE m_origin (a int)`",
        "no effect (the origin is not a setting): the statement is applied on the subscriber, \
         keyed by the publisher and its own LSN, not forwarded",
        r.logged("applied", "CREATE TABLE", "")
            && origin.len() == 4
            && origin[0] == "applied"
            && origin[1] == publisher_sysid
            && origin[2] != "0/10"
            && origin[3] == "false"
            && a.exists("m_origin"),
        format!("{}; its apply log row: {row}", r.describe()),
    );
}

fn privileges(a: &mut Arena, out: &mut Vec<Outcome>) {
    use std::os::unix::fs::PermissionsExt;
    let key_path = a.publisher().data_dir().join(KEY_FILE);
    let mode = std::fs::metadata(&key_path).map(|m| m.permissions().mode() & 0o777);
    push(
        out,
        "the record key $PGDATA/ddl_sync_record.key",
        "exists, mode 0600: only the server's OS user reads it",
        matches!(mode, Ok(0o600)),
        match mode {
            Ok(m) => format!("mode {m:o}"),
            Err(e) => format!("cannot stat {}: {e}", key_path.display()),
        },
    );
    let key = key_path.display().to_string();
    let replay = "SELECT * FROM ddl_sync.replay(NULL::ddl_sync.events)";
    // (on the subscriber, what for, the statement)
    let cases = [
        (
            false,
            "read the record key",
            format!("SELECT pg_read_binary_file('{KEY_FILE}')"),
        ),
        (
            false,
            "read the record key with COPY",
            format!("BEGIN; CREATE TEMP TABLE k (line text); COPY k FROM '{key}'; COMMIT"),
        ),
        (
            false,
            "read the record key as a large object",
            format!("SELECT lo_import('{key}')"),
        ),
        (
            false,
            "declare the capture's replay-origin entry point (not declared in SQL)",
            "CREATE FUNCTION public.m_set_origin(boolean, bigint, bigint) RETURNS void \
             LANGUAGE c AS '$libdir/ddl_pgoutput', 'ddl_sync_set_replay_origin'"
                .to_string(),
        ),
        (
            false,
            "turn on the extension's own-change flag",
            "SELECT ddl_sync.set_local_change(true)".to_string(),
        ),
        (
            true,
            "turn on the extension's own-change flag",
            "SELECT ddl_sync.set_local_change(true)".to_string(),
        ),
        (true, "call the replay directly", replay.to_string()),
        (
            false,
            "insert an event row by hand",
            event_insert_sql(
                900,
                "postgres",
                "table",
                "CREATE TABLE",
                "CREATE TABLE pwned (a int)",
            ),
        ),
        (
            true,
            "insert an event row by hand",
            event_insert_sql(
                901,
                "postgres",
                "table",
                "CREATE TABLE",
                "CREATE TABLE pwned (a int)",
            ),
        ),
        (
            true,
            "rewrite the apply log",
            "UPDATE ddl_sync.events SET apply_status = 'applied'".to_string(),
        ),
        (
            true,
            "erase the apply log",
            "DELETE FROM ddl_sync.events".to_string(),
        ),
        (
            false,
            "truncate ddl_sync.events (replicated: it would empty the subscriber's apply log)",
            "TRUNCATE ddl_sync.events".to_string(),
        ),
        (
            true,
            "disable the apply trigger",
            "ALTER TABLE ddl_sync.events DISABLE TRIGGER apply_event".to_string(),
        ),
        (
            true,
            "forge the subscription's counters",
            "INSERT INTO ddl_sync.subscription_counters (subid, applied) VALUES (0, 1000)"
                .to_string(),
        ),
        (
            false,
            "change the publications' DDL configuration directly",
            "DELETE FROM ddl_sync.publication_sync".to_string(),
        ),
        (
            false,
            "stop the publication's DDL",
            "ALTER PUBLICATION p SET (ddl = 'table')".to_string(),
        ),
        (
            false,
            "reset the statistics (hide the rejected count)",
            "SELECT ddl_sync.reset_publication_stats('p')".to_string(),
        ),
        (
            false,
            "disable the capture",
            "ALTER EVENT TRIGGER ddl_sync_capture_ddl_command_end DISABLE".to_string(),
        ),
        (
            true,
            "change the subscription's DDL kinds and conflict policy",
            "SELECT ddl_sync.set_subscription_ddl('sub', 'table', 'skip')".to_string(),
        ),
        (
            true,
            "stop the subscription",
            "ALTER SUBSCRIPTION sub DISABLE".to_string(),
        ),
        (
            false,
            "read the DDL stream from the subscription's slot",
            "SELECT * FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, \
             'proto_version', '1', 'publication_names', 'p')"
                .to_string(),
        ),
        (
            false,
            "make a slot of her own",
            "SELECT pg_create_logical_replication_slot('mallory_slot', 'ddl_pgoutput')".to_string(),
        ),
    ];
    for (on_subscriber, what, sql) in cases {
        let (side, pg) = if on_subscriber {
            ("subscriber", a.subscriber())
        } else {
            ("publisher", a.publisher())
        };
        let (ok, error) = as_role(pg, MALLORY, &sql);
        let r = a.round();
        push(
            out,
            format!("mallory on the {side}: {what}: `{sql}`"),
            "fails with insufficient_privilege (42501); replication goes on",
            !ok && error.contains("42501") && r.continues() && r.effect.log.is_empty(),
            format!(
                "{}; {}",
                if ok { "succeeded" } else { error.as_str() },
                r.describe()
            ),
        );
    }
}

/// Statements of a role only the publisher has are refused. What the subscriber keeps of them is
/// the floor every table gets (replay/tables.rs): a table made from its definition, so that its
/// rows do not stop the subscription, owned by the subscription owner with nothing that runs
/// code or grants a right; nothing of the other kinds.
fn missing_role(a: &mut Arena, out: &mut Vec<Outcome>) {
    let cases = [
        (
            "CREATE TABLE ghost_t (a int)",
            "CREATE TABLE",
            "SELECT count(*) FROM pg_class WHERE relname = 'ghost_t'
                AND relowner = 'postgres'::regrole AND relacl IS NULL AND NOT relhastriggers
                AND NOT relhasrules AND NOT EXISTS (SELECT FROM pg_attrdef WHERE adrelid = 'ghost_t'::regclass)",
            "1",
        ),
        (
            "CREATE FUNCTION public.ghost_fn() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'",
            "CREATE FUNCTION",
            "SELECT count(*) FROM pg_proc WHERE proname = 'ghost_fn'",
            "0",
        ),
        (
            "CREATE VIEW ghost_v AS SELECT 1 AS one",
            "CREATE VIEW",
            "SELECT count(*) FROM pg_class WHERE relname = 'ghost_v'",
            "0",
        ),
        (
            "CREATE TYPE ghost_mood AS ENUM ('sad')",
            "CREATE TYPE",
            "SELECT count(*) FROM pg_type WHERE typname = 'ghost_mood'",
            "0",
        ),
    ];
    for (sql, tag, made, expected) in cases {
        run_as(a.publisher(), GHOST, sql);
        let r = a.round();
        let count = query(a.subscriber(), made);
        push(
            out,
            format!("ghost (a role only the publisher has): `{sql}`"),
            if expected == "0" {
                "refused on the subscriber: role \"ghost\" does not exist on this subscriber; \
                 nothing created (in particular nothing owned by the subscription owner)"
            } else {
                "refused on the subscriber: role \"ghost\" does not exist on this subscriber; \
                 the table made from its definition only: owned by the subscription owner, no \
                 privilege, default, trigger or rule"
            },
            r.logged(
                "refused",
                tag,
                "role \"ghost\" does not exist on this subscriber",
            ) && count == expected,
            format!(
                "{}; objects as expected on the subscriber: {count}",
                r.describe()
            ),
        );
    }
}

fn event_rows(a: &mut Arena, out: &mut Vec<Outcome>) {
    let (ok, error) = as_role(
        a.publisher(),
        MALLORY,
        &event_insert_sql(
            1,
            "postgres",
            "table",
            "CREATE TABLE",
            "CREATE TABLE pwned_event (a int)",
        ),
    );
    query(
        a.publisher(),
        &event_insert_sql(
            1,
            "postgres",
            "table",
            "CREATE TABLE",
            "CREATE TABLE pwned_event (a int)",
        ),
    );
    let r = a.round();
    let local = query(
        a.publisher(),
        "SELECT apply_status || '|' || apply_detail FROM ddl_sync.events
          WHERE origin_sysid = 42 AND origin_lsn = '0/1'",
    );
    push(
        out,
        "publisher: a row inserted into ddl_sync.events (mallory may not; a superuser does) \
         claiming `CREATE TABLE pwned_event (a int)`",
        "mallory's INSERT fails (42501); the superuser's row is refused where it was inserted \
         (not by an apply worker) and never sent by ddl_pgoutput: no apply log row",
        !ok && error.contains("42501")
            && r.effect.log.is_empty()
            && local.starts_with("refused|not inserted by a subscription's apply worker")
            && !a.exists("pwned_event")
            && r.continues(),
        format!(
            "mallory: {}; the row on the publisher: {local}; {}",
            if ok { "succeeded" } else { error.as_str() },
            r.describe()
        ),
    );

    query(
        a.publisher(),
        "CREATE PUBLICATION p_events FOR TABLE ddl_sync.events;
         SELECT pg_create_logical_replication_slot('s_plain', 'pgoutput');",
    );
    query(
        a.subscriber(),
        &format!(
            "CREATE SUBSCRIPTION sub_plain CONNECTION '{}' PUBLICATION p_events
                 WITH (create_slot = false, slot_name = 's_plain', copy_data = false)",
            a.publisher().connstr("postgres")
        ),
    );
    query(
        a.publisher(),
        &event_insert_sql(
            2,
            "postgres",
            "table",
            "CREATE TABLE",
            "CREATE TABLE pwned_plain (a int)",
        ),
    );
    let arrived = caught_up(a.publisher(), "sub_plain");
    let row = query(
        a.subscriber(),
        "SELECT coalesce((SELECT apply_status || '|' || apply_detail FROM ddl_sync.events
                           WHERE origin_sysid = 42 AND origin_lsn = '0/2'), 'no row')",
    );
    let r = a.round();
    push(
        out,
        "publisher: the same, read by a second subscription whose slot was made with plain \
         pgoutput (publication of ddl_sync.events)",
        "the row arrives as a row and is kept refused: a row of the publisher's own \
         ddl_sync.events, nothing replayed",
        arrived
            && row.starts_with("refused|a row of the publisher's own ddl_sync.events")
            && !a.exists("pwned_plain")
            && r.continues(),
        format!(
            "{}the row on the subscriber: {row}; {}",
            if arrived {
                ""
            } else {
                "sub_plain did not catch up; "
            },
            r.describe()
        ),
    );
    query(a.subscriber(), "DROP SUBSCRIPTION sub_plain");
    query(a.publisher(), "DROP PUBLICATION p_events");

    // A TRUNCATE of the publisher's table would empty the subscriber's apply log (and its
    // de-duplication keys) if it travelled.
    query(
        a.publisher(),
        "CREATE TABLE marks_noise (id int PRIMARY KEY); INSERT INTO marks_noise VALUES (1);",
    );
    a.round();
    let before = query(a.subscriber(), "SELECT count(*) FROM ddl_sync.events");
    let (ok, error) = as_role(a.publisher(), MALLORY, "TRUNCATE ddl_sync.events");
    query(a.publisher(), "TRUNCATE ddl_sync.events, marks_noise");
    let r = a.round();
    let after = query(a.subscriber(), "SELECT count(*) FROM ddl_sync.events");
    let noise = query(a.subscriber(), "SELECT count(*) FROM marks_noise");
    push(
        out,
        "publisher: TRUNCATE ddl_sync.events (mallory may not; a superuser does, together with \
         another published table)",
        "mallory's TRUNCATE fails (42501); the superuser's reaches the subscriber for the other \
         table only: the subscriber's apply log keeps every row",
        !ok && error.contains("42501")
            && after.parse::<i64>().unwrap_or(-1) >= before.parse::<i64>().unwrap_or(i64::MAX)
            && noise == "0"
            && r.continues(),
        format!(
            "mallory: {}; apply log rows before {before}, after {after}; marks_noise rows on \
             the subscriber: {noise}; {}",
            if ok { "succeeded" } else { error.as_str() },
            r.describe()
        ),
    );
}

/// A `pg_catalog` function that a role shadows with one of its own in `public`.
struct Shadow {
    name: &'static str,
    /// Parameters, named `a`, `b`, `c`.
    params: &'static str,
    /// The same names, to pass on.
    args: &'static str,
    returns: &'static str,
}

const fn shadow(
    name: &'static str,
    params: &'static str,
    args: &'static str,
    returns: &'static str,
) -> Shadow {
    Shadow {
        name,
        params,
        args,
        returns,
    }
}

/// SQL of `role` that creates in `public` an operator `=` for each pair of types and a function
/// for each [`Shadow`]: each calls `public.<role>_escalate`, then returns what `pg_catalog`'s
/// would. Statements, one per line.
fn plant(role: &str, operators: &[(&str, &str)], shadows: &[Shadow]) -> (String, usize) {
    let mut sql = String::new();
    for (i, (left, right)) in operators.iter().enumerate() {
        sql.push_str(&format!(
            "CREATE FUNCTION public.{role}_eq_{i}(a {left}, b {right}) RETURNS boolean \
             LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.{role}_escalate('operator = ({left}, \
             {right})'); RETURN a OPERATOR(pg_catalog.=) b; END $f$;\n\
             CREATE OPERATOR public.= (LEFTARG = {left}, RIGHTARG = {right}, \
             FUNCTION = public.{role}_eq_{i});\n"
        ));
    }
    for s in shadows {
        sql.push_str(&format!(
            "CREATE FUNCTION public.{name}({params}) RETURNS {returns} LANGUAGE plpgsql AS $f$ \
             BEGIN PERFORM public.{role}_escalate('{name}'); RETURN pg_catalog.{name}({args}); \
             END $f$;\n",
            name = s.name,
            params = s.params,
            returns = s.returns,
            args = s.args,
        ));
    }
    (sql, 2 * operators.len() + shadows.len())
}

fn search_path_hijack(a: &mut Arena, out: &mut Vec<Outcome>) {
    let (mallory_plant, statements) = plant(
        MALLORY,
        &[
            ("oid", "oid"),
            ("text", "text"),
            ("name", "name"),
            ("name", "text"),
            ("bigint", "bigint"),
            ("pg_lsn", "pg_lsn"),
        ],
        &[
            shadow("quote_ident", "a text", "a", "text"),
            shadow("current_setting", "a text", "a", "text"),
            shadow("current_setting", "a text, b boolean", "a, b", "text"),
            shadow("set_config", "a text, b text, c boolean", "a, b, c", "text"),
            shadow("lower", "a text", "a", "text"),
            shadow("format", "a text", "a", "text"),
            shadow("pg_get_userbyid", "a oid", "a", "name"),
            shadow("to_regclass", "a text", "a", "regclass"),
        ],
    );
    run_as(a.publisher(), MALLORY, &mallory_plant);
    let r = a.round();
    setup(
        out,
        "mallory plants in public operators = (oid, oid), (text, text), (name, name), (name, \
         text), (bigint, bigint), (pg_lsn, pg_lsn) and functions shadowing quote_ident, \
         current_setting, set_config, lower, format, pg_get_userbyid, to_regclass (each calls \
         mallory_escalate first)",
        &r,
        statements,
    );

    const UNHARMED: &str = "applied; no planted operator or function runs as a superuser on \
        either node (attack_log empty, mallory not a superuser); rows arrive";

    run_as(
        a.publisher(),
        MALLORY,
        "SET search_path = public, pg_catalog;
         CREATE TABLE hijack_t (id int PRIMARY KEY, name text);
         CREATE INDEX hijack_i ON hijack_t (name);
         ALTER TABLE hijack_t ADD COLUMN note text;
         CREATE VIEW hijack_v AS SELECT id FROM hijack_t WHERE name = 'x';
         INSERT INTO hijack_t VALUES (1, 'a', 'b');",
    );
    let r = a.round();
    let rows = query(a.subscriber(), "SELECT count(*) FROM hijack_t");
    let (clean, seen) = a.unescalated();
    push(
        out,
        "mallory, with search_path = public, pg_catalog: CREATE TABLE (registered by the \
         subscriber), CREATE INDEX, ALTER TABLE ADD COLUMN, CREATE VIEW, a row",
        UNHARMED,
        r.all_applied(4) && rows == "1" && clean,
        format!("{}; rows: {rows}; {seen}", r.describe()),
    );

    query(
        a.publisher(),
        "SET search_path = public, pg_catalog;
         CREATE TABLE su_path_t (id int PRIMARY KEY, name text);
         ALTER TABLE su_path_t ADD COLUMN note text;
         CREATE INDEX su_path_i ON su_path_t (name);
         INSERT INTO su_path_t VALUES (1, 'a', 'b');",
    );
    let r = a.round();
    let rows = query(a.subscriber(), "SELECT count(*) FROM su_path_t");
    let (clean, seen) = a.unescalated();
    push(
        out,
        "superuser, with search_path = public, pg_catalog, after mallory's planting: CREATE \
         TABLE, ALTER TABLE, CREATE INDEX, a row (ddl_sync's capture and replay add no lookup \
         in public)",
        UNHARMED,
        r.all_applied(3) && rows == "1" && clean,
        format!("{}; rows: {rows}; {seen}", r.describe()),
    );
    a.reset_if_escalated("mallory's planting");

    // eve exists only on the subscriber and plants there, locally.
    let (eve_plant, _) = plant(
        EVE,
        &[
            ("integer", "integer"),
            ("smallint", "smallint"),
            ("\"char\"", "\"char\""),
            ("boolean", "boolean"),
            ("regclass", "regclass"),
        ],
        &[
            shadow("upper", "a text", "a", "text"),
            shadow("length", "a text", "a", "integer"),
            shadow("quote_literal", "a text", "a", "text"),
            shadow("replace", "a text, b text, c text", "a, b, c", "text"),
            shadow("split_part", "a text, b text, c integer", "a, b, c", "text"),
            shadow("format_type", "a oid, b integer", "a, b", "text"),
            shadow("pg_get_indexdef", "a oid", "a", "text"),
            shadow("array_to_string", "a anyarray, b text", "a, b", "text"),
            shadow("btrim", "a text", "a", "text"),
        ],
    );
    run_as(
        a.subscriber(),
        EVE,
        &format!(
            "CREATE TABLE public.eve_log (what text);\n{};\n{eve_plant}",
            escalate_sql(EVE, "eve_log")
        ),
    );
    query(
        a.publisher(),
        "SET search_path = public, pg_catalog;
         CREATE TABLE eve_bait (id int PRIMARY KEY, flag boolean, kind \"char\", small smallint);
         ALTER TABLE eve_bait ADD COLUMN note text;
         CREATE INDEX eve_bait_i ON eve_bait (small);
         INSERT INTO eve_bait VALUES (1, true, 'r', 1, 'n');",
    );
    run_as(
        a.publisher(),
        MALLORY,
        "SET search_path = public, pg_catalog;
         CREATE TABLE eve_bait_m (id int PRIMARY KEY, small smallint);
         ALTER TABLE eve_bait_m ADD COLUMN n int;",
    );
    let r = a.round();
    let eve = rolsuper(a.subscriber(), EVE);
    let eve_log = query(
        a.subscriber(),
        "SELECT count(*) || coalesce(': ' || string_agg(what, ', '), '') FROM eve_log",
    );
    let rows = query(a.subscriber(), "SELECT count(*) FROM eve_bait");
    let (clean, seen) = a.unescalated();
    push(
        out,
        "eve (a role only the subscriber has) plants in the subscriber's public operators = \
         (integer, integer), (smallint, smallint), (\"char\", \"char\"), (boolean, boolean), \
         (regclass, regclass) and shadows of upper, length, quote_literal, replace, split_part, \
         format_type, pg_get_indexdef, array_to_string, btrim; then a superuser and mallory \
         replicate DDL with search_path = public, pg_catalog",
        "applied; none of eve's code runs as a superuser (eve_log empty, eve not a superuser); \
         rows arrive",
        r.all_applied(5) && eve == "false" && eve_log == "0" && rows == "1" && clean,
        format!(
            "{}; eve superuser {eve}; eve_log {eve_log}; rows: {rows}; {seen}",
            r.describe()
        ),
    );
    a.reset_if_escalated("eve's planting");
}

fn switches(a: &mut Arena, out: &mut Vec<Outcome>) {
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE TABLE m_lc (v int);
         INSERT INTO m_lc VALUES (1), (2);
         CREATE FUNCTION public.mallory_flip(v int) RETURNS bigint LANGUAGE plpgsql IMMUTABLE \
         AS $f$ BEGIN \
         BEGIN PERFORM pg_catalog.set_config('ddl_sync.local_change', 'on', false); \
         EXCEPTION WHEN OTHERS THEN NULL; END; \
         BEGIN PERFORM ddl_sync.set_local_change(true); EXCEPTION WHEN OTHERS THEN NULL; END; \
         RETURN v; END $f$",
    );
    let r = a.round();
    setup(
        out,
        "mallory creates m_lc with rows and mallory_flip(), which sets \
         ddl_sync.local_change = on for the session and calls ddl_sync.set_local_change(true)",
        &r,
        2,
    );
    let local_rows = "SELECT count(*) FROM ddl_sync.publication_sync";
    let before = query(a.subscriber(), local_rows);
    run_as(
        a.publisher(),
        MALLORY,
        "ALTER TABLE m_lc ALTER COLUMN v TYPE bigint USING public.mallory_flip(v)",
    );
    query(
        a.publisher(),
        "CREATE PUBLICATION p_lc FOR ALL TABLES WITH (ddl = 'table')",
    );
    let r = a.round();
    let sent = query(
        a.publisher(),
        "SELECT count(*) FROM ddl_sync.publication_sync s
           JOIN pg_publication p ON p.oid = s.pfsyncpubid WHERE p.pubname = 'p_lc'",
    );
    let after = query(a.subscriber(), local_rows);
    let ty = column_type(a.subscriber(), "m_lc", "v");
    push(
        out,
        "mallory: `ALTER TABLE m_lc ALTER COLUMN v TYPE bigint USING public.mallory_flip(v)` \
         (her code runs in the apply worker during the replay), then the publisher writes \
         publication_sync rows (CREATE PUBLICATION ... WITH (ddl))",
        "the statement applied; the publisher's publication_sync rows still never land in the \
         subscriber's ddl_sync.publication_sync (the flag is not a setting)",
        r.logged("applied", "ALTER TABLE", "") && sent != "0" && before == after && ty == "bigint",
        format!(
            "{}; publisher's p_lc rows: {sent}; subscriber's publication_sync rows {before} -> \
             {after}; m_lc.v on the subscriber: {ty}",
            r.describe()
        ),
    );
}

fn apply_time_code(a: &mut Arena, out: &mut Vec<Outcome>) {
    let escalating = |name: &str, params: &str, returns: &str, extra: &str, result: &str| {
        format!(
            "CREATE FUNCTION public.{name}({params}) RETURNS {returns} LANGUAGE plpgsql {extra} \
             AS $f$ BEGIN PERFORM public.mallory_escalate('{name}'); RETURN {result}; END $f$;\n"
        )
    };
    let mut setup_sql = String::from(
        "CREATE TABLE m_code (x int, d int);\n\
         CREATE TABLE m_side (x int);\n\
         INSERT INTO m_code VALUES (0, 0);\n\
         INSERT INTO m_side VALUES (0);\n",
    );
    setup_sql.push_str(&escalating("mallory_check", "v int", "boolean", "", "true"));
    setup_sql.push_str(&escalating("mallory_default", "", "int", "", "0"));
    setup_sql.push_str(&escalating("mallory_imm", "v int", "int", "IMMUTABLE", "v"));
    setup_sql.push_str(&escalating(
        "mallory_pred",
        "v int",
        "boolean",
        "IMMUTABLE",
        "true",
    ));
    setup_sql.push_str(&escalating("mallory_trg", "", "trigger", "", "NEW"));
    setup_sql.push_str(&escalating(
        "mallory_eq",
        "a int, b int",
        "boolean",
        "IMMUTABLE",
        "a OPERATOR(pg_catalog.=) b",
    ));
    setup_sql.push_str(&escalating(
        "mallory_sd",
        "v int",
        "boolean",
        "SECURITY DEFINER",
        "true",
    ));
    setup_sql.push_str(&escalating(
        "mallory_sd2",
        "v int",
        "boolean",
        "SECURITY DEFINER",
        "true",
    ));
    setup_sql.push_str(
        "CREATE OPERATOR public.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mallory_eq);\n\
         CREATE TRIGGER m_tg BEFORE INSERT ON m_code FOR EACH ROW EXECUTE FUNCTION public.mallory_trg();\n\
         CREATE RULE m_rule AS ON INSERT TO m_code DO ALSO SELECT public.mallory_escalate('m_rule');\n\
         CREATE DOMAIN m_dom2 AS int;\n",
    );
    run_as(a.publisher(), MALLORY, &setup_sql);
    let r = a.round();
    setup(
        out,
        "mallory creates tables m_code and m_side with a row each, eight functions that call \
         mallory_escalate (two SECURITY DEFINER), an operator ===, a trigger and a rule on \
         m_code (enabled on origin only), a domain",
        &r,
        14,
    );

    const REFUSED: &str = "refused on the subscriber (\"... it would run as the subscription \
        owner\"), undone there; replication goes on";
    let attacks: [(&str, &str, &str); 15] = [
        ("ALTER TABLE m_code ENABLE ALWAYS TRIGGER m_tg", "ALTER TABLE", "is enabled ALWAYS"),
        ("ALTER TABLE m_code ENABLE REPLICA TRIGGER m_tg", "ALTER TABLE", "is enabled REPLICA"),
        ("ALTER TABLE m_code ENABLE ALWAYS RULE m_rule", "ALTER TABLE", "is enabled ALWAYS"),
        ("ALTER TABLE m_code ENABLE REPLICA RULE m_rule", "ALTER TABLE", "is enabled REPLICA"),
        (
            "ALTER TABLE m_code ADD CONSTRAINT m_ck CHECK (public.mallory_check(x))",
            "ALTER TABLE",
            "mallory_check(integer)",
        ),
        (
            "ALTER TABLE m_code ALTER COLUMN d SET DEFAULT public.mallory_default()",
            "ALTER TABLE",
            "mallory_default()",
        ),
        (
            "ALTER TABLE m_code ADD CONSTRAINT m_ck_op CHECK (x OPERATOR(public.===) x)",
            "ALTER TABLE",
            "mallory_eq(integer,integer)",
        ),
        (
            "ALTER TABLE m_side ADD COLUMN g int GENERATED ALWAYS AS (public.mallory_imm(x)) STORED",
            "ALTER TABLE",
            "mallory_imm(integer)",
        ),
        (
            "CREATE INDEX m_idx ON m_side ((public.mallory_imm(x)))",
            "CREATE INDEX",
            "mallory_imm(integer)",
        ),
        (
            "CREATE INDEX m_pidx ON m_side (x) WHERE public.mallory_pred(x)",
            "CREATE INDEX",
            "mallory_pred(integer)",
        ),
        (
            "CREATE TABLE m_part (x int) PARTITION BY RANGE ((public.mallory_imm(x)))",
            "CREATE TABLE",
            "mallory_imm(integer)",
        ),
        (
            "CREATE TABLE m_dflt (x int DEFAULT public.mallory_default())",
            "CREATE TABLE",
            "mallory_default()",
        ),
        (
            "CREATE DOMAIN m_dom AS int CHECK (public.mallory_check(VALUE))",
            "CREATE DOMAIN",
            "mallory_check(integer)",
        ),
        (
            "ALTER DOMAIN m_dom2 ADD CONSTRAINT m_dom2_ck CHECK (public.mallory_check(VALUE))",
            "ALTER DOMAIN",
            "mallory_check(integer)",
        ),
        (
            "CREATE DOMAIN m_dom3 AS int DEFAULT public.mallory_default()",
            "CREATE DOMAIN",
            "mallory_default()",
        ),
    ];
    refused_as_owner(a, out, REFUSED, &attacks);

    for sql in [
        "ALTER TABLE m_code ADD CONSTRAINT m_ck_sd CHECK (public.mallory_sd(x))",
        "ALTER TABLE m_code ADD CONSTRAINT m_ck_sd2 CHECK (public.mallory_sd2(x))",
    ] {
        run_as(a.publisher(), MALLORY, sql);
        let r = a.round();
        push(
            out,
            format!("mallory: `{sql}` (a SECURITY DEFINER function of hers)"),
            "refused: it runs as mallory, but in the apply worker's session, whose settings, \
             advisory locks and LISTENs it could change for every row applied after it",
            r.logged(
                "refused",
                "ALTER TABLE",
                "(SECURITY DEFINER, it would run in the apply",
            ),
            r.describe(),
        );
    }

    query(
        a.publisher(),
        "CREATE TABLE su_code (x int, d int);
         CREATE FUNCTION public.su_trg() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
         CREATE FUNCTION public.su_check(v int) RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN RETURN true; END $f$;
         CREATE FUNCTION public.su_imm(v int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT v';
         CREATE FUNCTION public.su_default() RETURNS int LANGUAGE sql AS 'SELECT 0';
         CREATE TRIGGER su_tg BEFORE INSERT ON su_code FOR EACH ROW EXECUTE FUNCTION public.su_trg();
         CREATE RULE su_rule AS ON INSERT TO su_code DO ALSO NOTIFY su_code_inserted;",
    );
    let r = a.round();
    setup(
        out,
        "a superuser creates su_code, four functions, a trigger and a rule",
        &r,
        7,
    );
    query(
        a.publisher(),
        "ALTER TABLE su_code ENABLE ALWAYS TRIGGER su_tg;
         ALTER TABLE su_code ENABLE ALWAYS RULE su_rule;
         ALTER TABLE su_code ADD CONSTRAINT su_ck CHECK (public.su_check(x));
         ALTER TABLE su_code ALTER COLUMN d SET DEFAULT public.su_default();
         CREATE INDEX su_idx ON su_code ((public.su_imm(x)));",
    );
    let r = a.round();
    push(
        out,
        "superuser: the same kinds of statement on their own table (ENABLE ALWAYS TRIGGER and \
         RULE, CHECK and DEFAULT with their functions, an expression index)",
        "all applied: a superuser's statements are not checked",
        r.all_applied(5),
        r.describe(),
    );

    const BYPASS: &str = "applied: no expression calls the function on the subscriber (the \
        CHECKs were refused), so making it SECURITY INVOKER attaches nothing";
    for (sql, tag) in [
        (
            "ALTER FUNCTION public.mallory_sd(int) SECURITY INVOKER",
            "ALTER FUNCTION",
        ),
        (
            "CREATE OR REPLACE FUNCTION public.mallory_sd2(v int) RETURNS boolean LANGUAGE \
             plpgsql AS $f$ BEGIN PERFORM public.mallory_escalate('mallory_sd2 replaced'); \
             RETURN true; END $f$",
            "CREATE FUNCTION",
        ),
    ] {
        run_as(a.publisher(), MALLORY, sql);
        let r = a.round();
        push(
            out,
            format!(
                "mallory, after her SECURITY DEFINER function was refused in a CHECK: `{sql}` \
                 (now SECURITY INVOKER)"
            ),
            BYPASS,
            r.logged("applied", tag, ""),
            r.describe(),
        );
    }

    run_as(a.publisher(), MALLORY, "INSERT INTO m_code (x) VALUES (1)");
    query(a.publisher(), "INSERT INTO su_code (x) VALUES (1)");
    let r = a.round();
    let rows = query(
        a.subscriber(),
        "SELECT (SELECT count(*) FROM m_code) || ' ' || (SELECT count(*) FROM su_code)",
    );
    let (clean, seen) = a.unescalated();
    push(
        out,
        "rows into m_code (mallory) and su_code (superuser) after all of the above, applied on \
         the subscriber as the subscription owner",
        "the rows arrive; none of mallory's code runs as a superuser (attack_log empty, \
         mallory not a superuser on either node)",
        rows == "2 1" && clean && r.continues(),
        format!("{}; rows m_code, su_code: {rows}; {seen}", r.describe()),
    );
    a.reset_if_escalated("apply-time code");
}

/// Runs each of mallory's `attacks` (statement, command tag, what the refusal must name) on the
/// publisher: each must be refused on the subscriber, its apply log row saying it would run as
/// the subscription owner and naming `what`, and replication must go on.
fn refused_as_owner(
    a: &mut Arena,
    out: &mut Vec<Outcome>,
    expected: &'static str,
    attacks: &[(&str, &str, &str)],
) {
    for &(sql, tag, what) in attacks {
        run_as(a.publisher(), MALLORY, sql);
        let r = a.round();
        push(
            out,
            format!("mallory: `{sql}`"),
            expected,
            r.logged("refused", tag, AS_OWNER) && r.effect.log[0].contains(what),
            r.describe(),
        );
    }
}

/// Built-ins that act with their caller's rights, in expressions of mallory's that PostgreSQL
/// 15 would evaluate as the subscription owner for every row applied.
fn caller_rights(a: &mut Arena, out: &mut Vec<Outcome>) {
    query(
        a.publisher(),
        "CREATE SEQUENCE public.su_seq;
         CREATE SEQUENCE public.su_granted;
         GRANT USAGE ON SEQUENCE public.su_granted TO mallory;
         CREATE TABLE public.su_secret (secret text);
         INSERT INTO public.su_secret VALUES ('the superuser''s secret');",
    );
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE TABLE m_calls (x int, d int);
         CREATE TYPE m_mood AS ENUM ('ok');
         CREATE FUNCTION public.mallory_json(m_mood) RETURNS json LANGUAGE plpgsql AS $f$
             BEGIN PERFORM public.mallory_escalate('mallory_json'); RETURN '{}'; END $f$",
    );
    let r = a.round();
    setup(
        out,
        "a superuser creates two sequences (USAGE on su_granted granted to mallory) and a \
         table su_secret mallory may not read; mallory creates m_calls, an enum m_mood and \
         mallory_json(m_mood)",
        &r,
        7,
    );

    const REFUSED: &str = "refused on the subscriber (\"... it would run as the subscription \
        owner\", naming the function and why), undone there; replication goes on";
    // `current_setting('session_replication_role') = 'origin' OR ...` holds on the publisher
    // and not in an apply worker: the rest runs only on the subscriber, as an attacker would
    // have it, and mallory's own rows stay valid where she writes them.
    let attacks: [(&str, &str, &str); 14] = [
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_sql CHECK (pg_catalog.query_to_xml('SELECT \
             public.mallory_escalate(''query_to_xml'')', false, false, '') IS NOT NULL)",
            "ALTER TABLE",
            "query_to_xml(text,boolean,boolean,text), which runs the SQL text",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_ts CHECK (pg_catalog.ts_rewrite('a'::\
             pg_catalog.tsquery, 'SELECT ''a''::pg_catalog.tsquery, ''b''::pg_catalog.tsquery \
             FROM public.mallory_escalate(''ts_rewrite'')') IS NOT NULL)",
            "ALTER TABLE",
            "ts_rewrite(tsquery,text), which runs the SQL text",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_read CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.table_to_xml('public.su_secret'::pg_catalog.regclass, false, false, '') \
             IS NOT NULL)",
            "ALTER TABLE",
            "table_to_xml(regclass,boolean,boolean,text), which reads the relations",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_role CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.set_config('session_replication_role', 'origin', false) IS NOT NULL)",
            "ALTER TABLE",
            "set_config(text,text,boolean), which changes settings",
        ),
        (
            "ALTER TABLE m_calls ALTER COLUMN d SET DEFAULT pg_catalog.setval('public.su_seq', 1)",
            "ALTER TABLE",
            "su_seq, which role mallory may not (UPDATE)",
        ),
        (
            "ALTER TABLE m_calls ALTER COLUMN d SET DEFAULT pg_catalog.nextval('public.su_seq')",
            "ALTER TABLE",
            "su_seq, which role mallory may not (USAGE)",
        ),
        (
            "ALTER TABLE m_calls ALTER COLUMN d SET DEFAULT pg_catalog.nextval(\
             pg_catalog.concat('public.su_', 'seq')::pg_catalog.regclass)",
            "ALTER TABLE",
            "names no constant sequence",
        ),
        (
            // Not on m_calls: PostgreSQL checks EXECUTE when it prepares the expression, so
            // the constraint would stop mallory's own rows on the publisher.
            "CREATE TABLE m_file (x int CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.pg_read_file('postgresql.conf') IS NOT NULL))",
            "CREATE TABLE",
            "pg_read_file(text), which role mallory may not execute",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_lo CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.lo_unlink(424242) IS NOT NULL)",
            "ALTER TABLE",
            "lo_unlink(oid), which reads or writes large objects",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_kill CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.pg_terminate_backend(1) IS NOT NULL)",
            "ALTER TABLE",
            "which signals other sessions",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_slot CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.pg_replication_slot_advance('s', '0/0') IS NULL)",
            "ALTER TABLE",
            "which creates, reads, moves or drops replication slots",
        ),
        (
            "ALTER TABLE m_calls ADD CONSTRAINT c_lock CHECK (pg_catalog.current_setting(\
             'session_replication_role') OPERATOR(pg_catalog.=) 'origin' OR \
             pg_catalog.pg_try_advisory_lock(42))",
            "ALTER TABLE",
            "an advisory lock the worker would hold until it exits",
        ),
        (
            "CREATE DOMAIN m_dom_sql AS int CHECK (pg_catalog.query_to_xml('SELECT \
             public.mallory_escalate(''domain'')', false, false, '') IS NOT NULL)",
            "CREATE DOMAIN",
            "which runs the SQL text",
        ),
        // to_json(m_mood) looks the cast up as it runs: a CHECK (to_json('ok'::m_mood) ...)
        // would call mallory_json as the subscription owner, with no call in the expression.
        (
            "CREATE CAST (m_mood AS json) WITH FUNCTION public.mallory_json(m_mood)",
            "CREATE CAST",
            "m_mood to json calls public.mallory_json(public.m_mood), owned by mallory",
        ),
    ];
    refused_as_owner(a, out, REFUSED, &attacks);

    let ordinary = [
        "ALTER TABLE m_calls ADD COLUMN s serial",
        "ALTER TABLE m_calls ADD COLUMN t timestamptz DEFAULT pg_catalog.now()",
        "ALTER TABLE m_calls ADD COLUMN u uuid DEFAULT pg_catalog.gen_random_uuid()",
        "ALTER TABLE m_calls ADD COLUMN n bigint DEFAULT pg_catalog.nextval('public.su_granted')",
        "ALTER TABLE m_calls ADD CONSTRAINT c_len CHECK (pg_catalog.length(x::text) < 20)",
        "ALTER TABLE m_calls ADD COLUMN g int GENERATED ALWAYS AS (pg_catalog.abs(x) * 2) STORED",
        "CREATE INDEX m_calls_abs ON m_calls (pg_catalog.abs(x)) WHERE x > 0",
    ];
    run_as(a.publisher(), MALLORY, &ordinary.join(";\n"));
    let r = a.round();
    push(
        out,
        format!(
            "mallory: the built-ins ordinary DDL uses: `{}`",
            ordinary.join("; ")
        ),
        "all replayed: these act the same whoever calls them (mallory may use su_granted); \
         m_calls lacks here the constraints and default of the attacks refused above, which \
         verification reports as diverged",
        r.all_replayed(ordinary.len()),
        r.describe(),
    );

    run_as(
        a.publisher(),
        MALLORY,
        "INSERT INTO m_calls (x, d) VALUES (1, 1)",
    );
    let r = a.round();
    let row = query(
        a.subscriber(),
        "SELECT x || ' ' || d || ' ' || g || ' ' || (s IS NOT NULL) || ' ' || \
                (n IS NOT NULL) FROM m_calls",
    );
    let (clean, seen) = a.unescalated();
    push(
        out,
        "a row into m_calls after all of the above, applied on the subscriber as the \
         subscription owner",
        "the row arrives; none of mallory's code runs as a superuser (attack_log empty, \
         mallory not a superuser on either node)",
        row == "1 1 2 true true" && clean && r.continues(),
        format!("{}; the row: {row}; {seen}", r.describe()),
    );
    a.reset_if_escalated("caller's rights");
}

fn session_leak(a: &mut Arena, out: &mut Vec<Outcome>) {
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE TABLE m_leak (v int);
         INSERT INTO m_leak VALUES (1);
         CREATE FUNCTION public.mallory_leak(v int) RETURNS bigint LANGUAGE plpgsql IMMUTABLE \
         AS $f$ BEGIN PERFORM pg_catalog.set_config('search_path', 'public, pg_catalog', false); \
         RETURN v; END $f$",
    );
    let r = a.round();
    setup(
        out,
        "mallory creates m_leak with a row and mallory_leak(), which sets search_path = public, \
         pg_catalog for the rest of the session",
        &r,
        2,
    );
    run_as(
        a.publisher(),
        MALLORY,
        "ALTER TABLE m_leak ALTER COLUMN v TYPE bigint USING public.mallory_leak(v)",
    );
    let first = a.round();
    // Later transactions of the same apply worker: the events' own comparisons (bigint,
    // pg_lsn) and ddl_sync's queries would find mallory's operators = first.
    query(
        a.publisher(),
        "CREATE TABLE leak_after (id int PRIMARY KEY); INSERT INTO leak_after VALUES (1);",
    );
    let second = a.round();
    let (clean, seen) = a.unescalated();
    push(
        out,
        "mallory: `ALTER TABLE m_leak ALTER COLUMN v TYPE bigint USING public.mallory_leak(v)` \
         (her code sets the apply worker's search_path to public, pg_catalog with \
         set_config(..., false)), then more DDL and rows (her operators = (bigint, bigint), \
         (pg_lsn, pg_lsn), ... are in public)",
        "the change does not outlive the replayed statement: none of mallory's code runs as a \
         superuser afterwards (attack_log empty, mallory not a superuser); replication goes on",
        clean && first.continues() && second.continues() && a.exists("leak_after"),
        format!(
            "the statement: {}; after it: {}; {seen}",
            first.describe(),
            second.describe()
        ),
    );
    // Code the replay itself runs (a USING expression) taking a session-level advisory lock:
    // the apply worker would hold it for its life.
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE FUNCTION public.mallory_hold(v bigint) RETURNS numeric LANGUAGE plpgsql IMMUTABLE \
         AS $f$ \
         BEGIN PERFORM pg_catalog.pg_advisory_lock(4242); RETURN v; END $f$;
         ALTER TABLE m_leak ALTER COLUMN v TYPE numeric USING public.mallory_hold(v)",
    );
    let r = a.round();
    let held = query(
        a.subscriber(),
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242",
    );
    push(
        out,
        "mallory: `ALTER TABLE m_leak ALTER COLUMN v TYPE numeric USING public.mallory_hold(v)`, \
         her function taking pg_advisory_lock(4242)",
        "applied, and the lock does not outlive the replay: the apply worker holds no advisory \
         lock afterwards",
        r.all_applied(2) && held == "0",
        format!(
            "{}; advisory locks 4242 held on the subscriber: {held}",
            r.describe()
        ),
    );
    // Wrapped in a SECURITY DEFINER function of hers, in a CHECK the apply worker runs for
    // every row: the setting would be kept for the worker's life, the lock held until it exits.
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE FUNCTION public.mallory_sd_leak(v int) RETURNS boolean LANGUAGE plpgsql \
         SECURITY DEFINER AS $f$ BEGIN PERFORM pg_catalog.set_config('array_nulls', 'off', \
         false); PERFORM pg_catalog.pg_advisory_lock(42); RETURN true; END $f$",
    );
    let r = a.round();
    setup(
        out,
        "mallory creates mallory_sd_leak(), SECURITY DEFINER, which sets array_nulls = off for \
         the session and takes a session-level advisory lock",
        &r,
        1,
    );
    run_as(
        a.publisher(),
        MALLORY,
        "ALTER TABLE m_leak ADD CONSTRAINT m_leak_sd CHECK (public.mallory_sd_leak(1))",
    );
    let r = a.round();
    push(
        out,
        "mallory: `ALTER TABLE m_leak ADD CONSTRAINT m_leak_sd CHECK \
         (public.mallory_sd_leak(1))` (her SECURITY DEFINER wrapper of set_config and \
         pg_advisory_lock)",
        "refused: the wrapper would run in the apply worker's session, which it would change for \
         every row after it; replication goes on",
        r.logged(
            "refused",
            "ALTER TABLE",
            "(SECURITY DEFINER, it would run in the apply",
        ),
        r.describe(),
    );
    a.reset_if_escalated("the session leak");
}

/// The database of class 14 on both nodes.
const DUMPED: &str = "dumped";

/// `sql` in database [`DUMPED`] of `pg`, as `role`: whether it succeeded, and its errors.
fn in_dumped(pg: &Cluster, role: &str, sql: &str) -> (bool, String) {
    let (ok, stderr) = psql_verbose(
        pg,
        DUMPED,
        &format!("SET SESSION AUTHORIZATION {role};\n{sql};\n"),
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("ERROR:")).collect();
    (ok, errors.join(" "))
}

/// One value from database [`DUMPED`] of `pg`, or the error as text.
fn dumped_value(pg: &Cluster, sql: &str) -> String {
    pg.psql(DUMPED, sql)
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|e| format!("error: {e}"))
}

fn dump_script(a: &mut Arena, out: &mut Vec<Outcome>) {
    for pg in [a.publisher(), a.subscriber()] {
        query(pg, &format!("CREATE DATABASE {DUMPED}"));
        let (ok, errors) = in_dumped(
            pg,
            SUPERUSER,
            "CREATE EXTENSION ddl_sync; GRANT CREATE ON SCHEMA public TO PUBLIC",
        );
        assert!(ok, "{}: {errors}", pg.name());
    }
    let (ok, errors) = in_dumped(
        a.publisher(),
        SUPERUSER,
        "CREATE TABLE public.attack_log (what text);
         CREATE TABLE public.tenant_rows (tenant text, v text);
         ALTER TABLE public.tenant_rows ENABLE ROW LEVEL SECURITY;
         CREATE POLICY own ON public.tenant_rows USING (tenant = current_user);
         GRANT SELECT ON public.tenant_rows TO mallory;
         CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    );
    assert!(ok, "{errors}");
    // The name that follows the comment in pg_dump's order is SQL once the comment's literal
    // has lost its closing quote.
    let injected = "zz_dump_b';SELECT public.mallory_escalate('dump')--";
    let (mallory_ok, mallory_errors) = in_dumped(
        a.publisher(),
        MALLORY,
        &format!(
            "{};
             CREATE TABLE public.zz_dump_a (v int);
             COMMENT ON TABLE public.zz_dump_a IS 'harmless\n\\restrict x';
             CREATE TABLE public.\"{injected}\" (v int);
             CREATE FUNCTION public.mallory_body() RETURNS text LANGUAGE sql AS
               $f$ SELECT 'a
\\unrestrict x
'::text $f$;
             CREATE FUNCTION public.mallory_trailer() RETURNS int LANGUAGE sql AS $f$
--
-- PostgreSQL database dump complete
--
SELECT 1 $f$",
            escalate_sql(MALLORY, "attack_log")
        ),
    );
    // Eve, a role of the subscriber's alone, comments on her own table with the text of the
    // publisher's ROW SECURITY entry as pg_dump's plain script prints it.
    let (eve_ok, eve_errors) = in_dumped(
        a.subscriber(),
        EVE,
        "CREATE TABLE public.eve_notes (v text);
         COMMENT ON TABLE public.eve_notes IS 'notes\n\n--\n-- Name: tenant_rows; Type: ROW \
         SECURITY; Schema: public; Owner: postgres\n--\n\nALTER TABLE public.tenant_rows ENABLE ROW \
         LEVEL SECURITY;\n\nSET x'",
    );
    let (copied, copy_errors) = psql_verbose(
        a.subscriber(),
        DUMPED,
        &format!(
            // The harness's subscriber does not preload ddl_sync: a call loads its hook.
            "SELECT ddl_sync.library_version();
             CREATE SUBSCRIPTION dump_copy CONNECTION '{}' PUBLICATION p \
             WITH (ddl = 'all', copy_schema = true, copy_data = false);",
            a.publisher().connstr(DUMPED)
        ),
    );
    let (clean, seen) = a.unescalated();
    let copy = format!(
        "set-up: mallory {mallory_ok} {mallory_errors}, eve {eve_ok} {eve_errors}; \
         CREATE SUBSCRIPTION: {copied} {}",
        copy_errors
            .lines()
            .filter(|l| l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let same = |sql: &str| {
        let (p, s) = (
            dumped_value(a.publisher(), sql),
            dumped_value(a.subscriber(), sql),
        );
        (
            p == s && !p.starts_with("error"),
            format!("publisher {p:?}, subscriber {s:?}"),
        )
    };
    let (comment_same, comment) =
        same("SELECT obj_description('public.zz_dump_a'::regclass, 'pg_class')");
    let (named_same, named) = same(&format!(
        "SELECT to_regclass('public.\"{}\"') IS NOT NULL",
        injected.replace('\'', "''")
    ));
    push(
        out,
        "mallory: a comment on table zz_dump_a whose second line is `\\restrict x`, then a table \
         named `zz_dump_b';SELECT public.mallory_escalate('dump')--`; a superuser runs \
         CREATE SUBSCRIPTION ... WITH (copy_schema = true) on a new database",
        "the copy makes both objects as they are on the publisher (the comment's text whole, the \
         name a name): nothing runs as the superuser copying, mallory stays an ordinary role",
        mallory_ok && copied && clean && comment_same && named_same,
        format!("{copy}; comment: {comment}; the table: {named}; {seen}"),
    );
    let (body_same, body) = same("SELECT prosrc FROM pg_proc WHERE proname = 'mallory_body'");
    push(
        out,
        "mallory: a function body with the line `\\unrestrict x`",
        "copied with its body whole",
        copied && body_same,
        format!("{copy}; body: {body}"),
    );
    let (trailer_same, trailer) =
        same("SELECT prosrc FROM pg_proc WHERE proname = 'mallory_trailer'");
    push(
        out,
        "mallory: a function body holding pg_dump's closing comment \
         (`--` / `-- PostgreSQL database dump complete` / `--`)",
        "the copy is not cut short there: it succeeds, with the body whole",
        copied && trailer_same,
        format!("{copy}; body: {trailer}"),
    );
    let (rls_same, rls) =
        same("SELECT relrowsecurity FROM pg_class WHERE oid = 'public.tenant_rows'::regclass");
    push(
        out,
        "eve (subscriber only): a comment on her own table holding the text of the publisher's \
         `-- Name: tenant_rows; Type: ROW SECURITY` entry; then the copy compares with the \
         objects already here",
        "row security is enabled on the copied tenant_rows as on the publisher: no text of an \
         object makes another object count as here already",
        eve_ok && copied && rls_same,
        format!("{copy}; row security: {rls}"),
    );
    let (dropped, drop_errors) =
        psql_verbose(a.subscriber(), DUMPED, "DROP SUBSCRIPTION dump_copy;");
    let r = a.round();
    push(
        out,
        "after the copies: the subscription of the copy dropped (its slot with it)",
        "replication of the attacked subscription goes on",
        dropped && r.continues(),
        format!("drop: {dropped} {drop_errors}; {}", r.describe()),
    );
    a.reset_if_escalated("the dump script");
}

fn claims(a: &mut Arena, out: &mut Vec<Outcome>) {
    query(a.publisher(), "CREATE SCHEMA claimed_elsewhere");
    let r = a.round();
    setup(out, "a superuser creates schema claimed_elsewhere", &r, 1);
    run_as(
        a.publisher(),
        MALLORY,
        "SET babelfishpg_tsql.sql_dialect = 'tsql'; CREATE TABLE public.m_dialect (v int)",
    );
    let r = a.round();
    let dialect = query(
        a.subscriber(),
        "SELECT coalesce(string_agg(dialect, ','), 'none') FROM ddl_sync.events
          WHERE object_identity = 'public.m_dialect'",
    );
    push(
        out,
        "mallory: SET babelfishpg_tsql.sql_dialect = 'tsql' (a placeholder: no Babelfish here), \
         then CREATE TABLE m_dialect",
        "recorded as dialect postgres, which PostgreSQL's parser really read it as, and checked \
         and applied as such",
        r.logged("applied", "CREATE TABLE", "") && dialect == "postgres" && a.exists("m_dialect"),
        format!("{}; dialect on the subscriber: {dialect}", r.describe()),
    );
    let key = record_key(a.publisher());
    let record = DdlRecord {
        origin: captured_on(a.pub_sysid),
        dialect: "tsql",
        ..forged(
            "CREATE TABLE",
            "table",
            "public.claim_t",
            "CREATE TABLE claimed_elsewhere.claim_t (v int)",
        )
    };
    query(a.publisher(), &sealed_emit_sql(&key, &record, true));
    let r = a.round();
    push(
        out,
        "superuser with the key: a sealed record of dialect tsql claiming schema public, whose \
         statement creates claimed_elsewhere.claim_t",
        "refused: the statement the tsql adapter runs is checked like a postgres one, its \
         relation's schema here included, so the claimed dialect skips no check",
        r.logged(
            "refused",
            "CREATE TABLE",
            "is in schema \"claimed_elsewhere\" here, but the event was judged as in schema \"public\"",
        ) && !a.exists("claimed_elsewhere.claim_t"),
        r.describe(),
    );
}

fn held_replays(a: &mut Arena, out: &mut Vec<Outcome>) {
    query(
        a.subscriber(),
        "SELECT ddl_sync.library_version();
         ALTER SYSTEM SET ddl_sync.replay_lock_timeout = '1s';
         ALTER SYSTEM SET ddl_sync.replay_statement_timeout = '3s';
         SELECT pg_reload_conf();",
    );
    query(a.publisher(), "CREATE TABLE held_t (id int PRIMARY KEY)");
    let r = a.round();
    setup(out, "a superuser creates held_t", &r, 1);
    // PostgreSQL's own count of the apply worker's errors (ddl_sync.subscription_stats keeps
    // them too where ddl_sync is preloaded, which this harness does not do).
    let errors = || {
        query(
            a.subscriber(),
            "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'sub'",
        )
    };
    let before = errors();
    let mut eve = crate::Session::open(a.subscriber(), "eve_holds");
    eve.run(&format!(
        "SET SESSION AUTHORIZATION {EVE}; BEGIN; PREPARE p AS SELECT 1 FROM public.held_t;"
    ));
    let (denied, _) = as_role(a.subscriber(), EVE, "SELECT 1 FROM public.held_t");
    query(a.publisher(), "ALTER TABLE held_t ADD COLUMN c int");
    // The replay's wait ends, it is counted and named; the apply worker retries.
    let seen = crate::wait_for("the lock timeout's error", crate::hostile::TIMEOUT, || {
        let (now, log) = (errors(), a.subscriber().log_tail(200));
        let line = log
            .lines()
            .find(|l| l.contains("lock timeout"))
            .map(str::to_string);
        match line {
            Some(line) if now != before => Ok(format!("apply_error_count {now}; {line}")),
            _ => Err(format!("apply_error_count {now}")),
        }
    });
    eve.run("ROLLBACK;");
    eve.finish();
    let r = a.round();
    let column = column_type(a.subscriber(), "held_t", "c");
    push(
        out,
        "eve (subscriber only, no right on held_t): BEGIN; PREPARE p AS SELECT 1 FROM held_t \
         (a lock without a right), held while the publisher's ALTER TABLE held_t ADD COLUMN c \
         replays; ddl_sync.replay_lock_timeout = 1s",
        "each wait of the replay ends after 1 s with PostgreSQL's lock timeout, an error of the \
         apply worker (counted in pg_stat_subscription_stats, and in ddl_sync's statistics where \
         it is preloaded); the statement is retried, not skipped, and applies once eve lets \
         go; replication goes on",
        !denied
            && seen.contains("canceling statement due to lock timeout")
            && column == "integer"
            && r.effect
                .log
                .iter()
                .any(|l| l.starts_with("applied|ALTER TABLE|"))
            && r.genuine_applied,
        format!(
            "eve's SELECT without the PREPARE succeeded: {denied}; stats: {seen}; column c: \
             {column}; {}",
            r.describe()
        ),
    );
    query(
        a.subscriber(),
        "SELECT ddl_sync.library_version(); ALTER SUBSCRIPTION sub SET (ddl_conflict = 'skip')",
    );
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE MATERIALIZED VIEW m_sleepy AS SELECT 1 AS x FROM (SELECT pg_sleep(CASE WHEN \
         current_setting('session_replication_role') = 'replica' THEN 600 ELSE 0 END)) AS s",
    );
    let r = a.round();
    query(
        a.subscriber(),
        "SELECT ddl_sync.library_version();
         ALTER SUBSCRIPTION sub SET (ddl_conflict = 'error');
         ALTER SYSTEM RESET ddl_sync.replay_lock_timeout;
         ALTER SYSTEM RESET ddl_sync.replay_statement_timeout;
         SELECT pg_reload_conf();",
    );
    push(
        out,
        "mallory: CREATE MATERIALIZED VIEW m_sleepy whose query sleeps 600 s only where \
         session_replication_role is replica (the apply worker); ddl_sync.replay_statement_timeout \
         = 3s, ddl_conflict = 'skip'",
        "the replay is cancelled after 3 s and recorded as failed, naming the bound; replication \
         goes on",
        r.logged(
            "failed",
            "CREATE MATERIALIZED VIEW",
            "ran longer than ddl_sync.replay_statement_timeout",
        ) && !a.exists("m_sleepy"),
        r.describe(),
    );
}

fn role_names(a: &mut Arena, out: &mut Vec<Outcome>) {
    query(
        a.subscriber(),
        "CREATE ROLE sub_admin SUPERUSER; CREATE ROLE file_reader;
         GRANT pg_read_server_files TO file_reader;",
    );
    query(a.publisher(), &format!("ALTER ROLE {MALLORY} CREATEROLE"));
    for (role, more) in [
        ("sub_admin", "SUPERUSER"),
        ("file_reader", "pg_read_server_files"),
    ] {
        run_as(
            a.publisher(),
            MALLORY,
            &format!(
                "CREATE ROLE {role}; GRANT {role} TO {MALLORY}; SET ROLE {role}; \
                 CREATE TABLE public.m_as_{role} (v int)"
            ),
        );
        let r = a.round();
        push(
            out,
            format!(
                "mallory with CREATEROLE on the publisher: CREATE ROLE {role} (on the subscriber \
                 a role with {more}), SET ROLE {role}, CREATE TABLE m_as_{role}"
            ),
            "refused: the role of that name may do more on the subscriber than on the \
             publisher, so the statement never runs with those rights; replication goes on",
            r.logged(
                "refused",
                "CREATE TABLE",
                &format!("role \"{role}\" may do more here than the publisher's role of that name could ({more})"),
            ),
            r.describe(),
        );
    }
    query(a.publisher(), &format!("ALTER ROLE {MALLORY} NOCREATEROLE"));
    a.reset_if_escalated("the role names");
}

fn bindings(a: &mut Arena, out: &mut Vec<Outcome>) {
    // eve's planting, on the subscriber only (eve_log and eve_escalate are class 9's).
    run_as(
        a.subscriber(),
        EVE,
        "CREATE FUNCTION public.eve_ne(a varchar, b varchar) RETURNS boolean LANGUAGE plpgsql
             AS $f$ BEGIN PERFORM public.eve_escalate('operator <> (varchar, varchar)');
             RETURN a::text OPERATOR(pg_catalog.<>) b::text; END $f$;
         CREATE OPERATOR public.<> (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public.eve_ne);
         CREATE FUNCTION public.bind_norm(a varchar) RETURNS text LANGUAGE plpgsql IMMUTABLE
             AS $f$ BEGIN PERFORM public.eve_escalate('bind_norm(varchar)');
             RETURN pg_catalog.lower(a); END $f$;",
    );
    // The publisher's objects: a superuser's function and table with rows, mallory's function.
    query(
        a.publisher(),
        "CREATE FUNCTION public.bind_norm(a text) RETURNS text LANGUAGE sql IMMUTABLE
             AS $f$ SELECT pg_catalog.lower(a) $f$;
         CREATE TABLE bind_rows (id int PRIMARY KEY, code varchar);
         INSERT INTO bind_rows VALUES (1, 'a'), (2, 'b');",
    );
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE FUNCTION public.m_len(a text) RETURNS integer LANGUAGE sql IMMUTABLE
             AS $f$ SELECT pg_catalog.length(a) $f$;",
    );
    let r = a.round();
    setup(
        out,
        "eve plants public.<>(varchar, varchar) and public.bind_norm(varchar) on the \
         subscriber; a superuser's bind_norm(text) and table bind_rows, mallory's m_len(text)",
        &r,
        3,
    );
    let eve_ran = |a: &Arena| {
        query(
            a.subscriber(),
            "SELECT count(*) || coalesce(': ' || string_agg(what, ', '), '') FROM eve_log",
        )
    };
    const WHY: &str = "which role \"eve\" (not a superuser) can change here, and which the \
                       statement did not bind where it first ran";

    query(
        a.publisher(),
        "CREATE TABLE bind_codes (id int PRIMARY KEY, code varchar CHECK (code <> ''));
         INSERT INTO bind_codes VALUES (1, 'x');",
    );
    let r = a.round();
    let rows = query(a.subscriber(), "SELECT count(*) FROM bind_codes");
    let checks = query(
        a.subscriber(),
        "SELECT count(*) FROM pg_constraint
          WHERE conrelid = to_regclass('bind_codes') AND contype = 'c'",
    );
    let ran = eve_ran(a);
    push(
        out,
        "a superuser's CREATE TABLE bind_codes (code varchar CHECK (code <> '')): on the \
         subscriber `<>` finds eve's operator, which the apply worker would run for every row",
        "refused, naming eve's operator; the table made from its definition (no CHECK), its \
         rows arrive; eve's code never ran",
        r.logged(
            "refused",
            "CREATE TABLE",
            "it uses operator public.<>(character varying,character varying)",
        ) && r.effect.log[0].contains(WHY)
            && rows == "1"
            && checks == "0"
            && ran == "0",
        format!(
            "{}; rows {rows}; CHECKs {checks}; eve_log {ran}",
            r.describe()
        ),
    );

    query(
        a.publisher(),
        "ALTER TABLE bind_rows ADD CONSTRAINT bind_rows_code CHECK (code <> '')",
    );
    let r = a.round();
    let ran = eve_ran(a);
    push(
        out,
        "a superuser's ALTER TABLE bind_rows ADD CONSTRAINT ... CHECK (code <> ''): validating \
         it would run eve's operator as the replay's superuser",
        "refused before eve's function runs (eve_log empty), naming it; replication goes on",
        r.logged(
            "refused",
            "ALTER TABLE",
            "it would run function public.eve_ne(character varying,character varying)",
        ) && ran == "0",
        format!("{}; eve_log {ran}", r.describe()),
    );

    query(
        a.publisher(),
        "CREATE INDEX bind_rows_norm ON bind_rows (bind_norm(code))",
    );
    let r = a.round();
    let ran = eve_ran(a);
    let index = a.exists("bind_rows_norm");
    push(
        out,
        "a superuser's CREATE INDEX ON bind_rows (bind_norm(code)): on the subscriber eve's \
         overload bind_norm(varchar) matches better than the publisher's bind_norm(text)",
        "refused before eve's function runs (eve_log empty), no index; replication goes on",
        r.logged(
            "refused",
            "CREATE INDEX",
            "it would run function public.bind_norm(character varying)",
        ) && ran == "0"
            && !index,
        format!("{}; eve_log {ran}; index {index}", r.describe()),
    );

    query(
        a.publisher(),
        "CREATE TABLE bind_ok (id int PRIMARY KEY, v text CHECK (public.m_len(v) > 0),
                               w text DEFAULT bind_norm('X'::text));
         CREATE INDEX bind_ok_norm ON bind_ok (bind_norm(v));
         INSERT INTO bind_ok VALUES (1, 'a');",
    );
    let r = a.round();
    let rows = query(a.subscriber(), "SELECT count(*) FROM bind_ok");
    let ran = eve_ran(a);
    push(
        out,
        "control: a superuser's CHECK calling mallory's m_len(text), a default and an index \
         calling bind_norm(text) with text arguments, which the publisher bound too",
        "applied (both nodes bind the same objects), rows arrive, eve's code never ran",
        r.all_applied(2) && rows == "1" && ran == "0",
        format!("{}; rows {rows}; eve_log {ran}", r.describe()),
    );

    // A trigger PostgreSQL clones onto a new partition binds no name, but it is code the new
    // table runs: mallory's own ALWAYS trigger on her partitioned table, on the subscriber
    // only, would be cloned onto a superuser's new partition and run for every row applied
    // to it, as the apply worker's role. (A clone is not an internal trigger: the replay
    // looks into it as into any, unlike a foreign key's.)
    run_as(
        a.publisher(),
        MALLORY,
        "CREATE TABLE m_parts (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)",
    );
    let r = a.round();
    setup(out, "mallory's partitioned table m_parts", &r, 1);
    run_as(
        a.subscriber(),
        MALLORY,
        "CREATE FUNCTION public.m_parts_trig() RETURNS trigger LANGUAGE plpgsql
             AS $f$ BEGIN PERFORM public.mallory_escalate('m_parts_trig'); RETURN NEW; END $f$;
         CREATE TRIGGER m_parts_trig BEFORE INSERT ON m_parts
             FOR EACH ROW EXECUTE FUNCTION public.m_parts_trig();
         ALTER TABLE m_parts ENABLE ALWAYS TRIGGER m_parts_trig;",
    );
    query(
        a.publisher(),
        "CREATE TABLE m_parts_1 PARTITION OF m_parts FOR VALUES FROM (0) TO (10);
         INSERT INTO m_parts VALUES (1, 'a');",
    );
    let r = a.round();
    let ran = query(
        a.subscriber(),
        "SELECT count(*) FROM attack_log WHERE what LIKE 'm\\_parts\\_trig%'",
    );
    push(
        out,
        "a superuser's CREATE TABLE m_parts_1 PARTITION OF m_parts, where mallory added an \
         ALWAYS row trigger to her m_parts on the subscriber only: PostgreSQL clones it onto \
         the new partition",
        "refused, naming mallory's trigger function; her code never ran",
        r.logged(
            "refused",
            "CREATE TABLE",
            "it uses function public.m_parts_trig()",
        ) && ran == "0",
        format!("{}; attack_log {ran}", r.describe()),
    );
    a.reset_if_escalated("the bindings");
}

fn finally(a: &mut Arena, out: &mut Vec<Outcome>) {
    let r = a.round();
    let (clean, seen) = a.unescalated();
    let eve = rolsuper(a.subscriber(), EVE);
    push(
        out,
        "after all attacks: both nodes",
        "no planted code ever ran as a superuser (no escalation after any class), mallory and \
         eve are ordinary roles, replication goes on",
        a.escalations.is_empty() && clean && eve == "false" && r.continues(),
        format!(
            "{seen}; eve superuser {eve}; escalations: {}",
            if a.escalations.is_empty() {
                "none".to_string()
            } else {
                a.escalations.join(" | ")
            }
        ),
    );
}

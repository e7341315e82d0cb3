//! DDL replay on subscribers: the `apply_event` trigger on `ddl_sync.events` ([`trigger`])
//! inside a subscription's apply worker, and `ddl_sync.replay(row)`.
//!
//! Nothing in the row is trusted. The statement is parsed again with this server's parser and
//! must be exactly one statement whose real kind is the one the row claims, one the subscription
//! replays (`ddl_sync.subscription_ddl`) and one its rules let through; statements that are
//! never replicated (global objects, ALTER SYSTEM, ...) are refused whatever the row says. Then
//! the statement runs with the captured search_path and role (the role only when it exists here
//! and the subscription owner may become it), through the adapter of its SQL dialect, and every
//! setting is restored after, also on error.

#[cfg(any(test, feature = "pg_test"))]
mod adapter_tests;
mod adapters;
mod bound;
mod c_abi;
pub(crate) mod counters;
pub(crate) mod created;
mod dependents;
mod detach;
mod generated;
mod host;
mod limits;
mod made;
mod object;
mod resolution;
mod settings;
mod sql_adapter;
mod statement;
pub(crate) mod stats;
mod tables;
mod tablespace;
mod trigger;
mod verify;

use crate::replay::host::ServerHost;
use crate::replay::resolution::Resolution;
use crate::replay::statement::Checked;
use crate::replay::verify::Verified;
use crate::subscriber::applying::{self, Conflict, Divergence, Subscription};
use crate::subscriber::{activity, apply_code};
use ddl_adapter::{Adapter, Context, Failure, Outcome};
use ddl_filter::{DdlCandidate, DdlKind};
use pgrx::prelude::*;
use std::time::Instant;

/// How the replay of one event ended, as recorded on its row.
#[derive(Default)]
struct Verdict {
    status: &'static str,
    detail: Option<String>,
    adapter: Option<String>,
    /// What it made compared with the publisher's description (see [`verify`]): equal, or
    /// not; `None` when not compared.
    verified: Option<bool>,
    /// It ran as `ddl_fallback_role`, its own role being missing here.
    ran_as_fallback: bool,
}

impl Verdict {
    fn new(status: &'static str, detail: impl Into<String>) -> Verdict {
        Verdict {
            status,
            detail: Some(detail.into()),
            ..Verdict::default()
        }
    }

    /// Adds `notes` to the detail, after what it says.
    fn add_notes(&mut self, notes: impl IntoIterator<Item = String>) {
        for note in notes {
            self.detail = Some(match self.detail.take() {
                Some(detail) => format!("{detail}; {note}"),
                None => note,
            });
        }
    }
}

/// What `ddl_sync.replay` returns for the row: (status, detail, adapter, seconds, verified).
/// (pg_extern reads the column names from the spelled-out tuple, so the function spells it
/// out.)
type Outcome5 = (String, Option<String>, Option<String>, f64, Option<bool>);

/// Replays one DDL event: the row of `ddl_sync.events` the apply trigger is inserting
/// (`ddl_sync.replay(NEW)`), read through ddl-wire's event schema.
#[pg_extern(volatile, name = "replay")]
#[allow(clippy::type_complexity)] // pgrx's form of a set-returning function: one name per column
fn replay_row(
    event: pgrx::composite_type!("ddl_sync.events"),
) -> TableIterator<
    'static,
    (
        name!(status, String),
        name!(detail, Option<String>),
        name!(adapter, Option<String>),
        name!(seconds, f64),
        name!(verified, Option<bool>),
    ),
> {
    let started = Instant::now();
    // SAFETY: pgrx made `event` from the row passed, a composite datum of ddl_sync.events' row
    // type; in the caller's transaction.
    let row = unsafe { ddl_server::event_row::EventRow::read(event.into_pg()) };
    TableIterator::once(outcome(replay_read(row), started))
}

/// The replay of a row of `ddl_sync.events` as read (by [`trigger`], or for [`replay_row`]).
fn replay_read(row: Result<ddl_server::event_row::EventRow, String>) -> Verdict {
    match row.as_ref().map(|row| row.event()) {
        Ok(Ok(event)) => replay_event(&Event::new(event)),
        Ok(Err(e)) => Verdict::new("refused", format!("not a DDL event: {e}")),
        Err(why) => Verdict::new("refused", format!("not a DDL event: {why}")),
    }
}

/// The replay as extension 0.3.0's SQL calls it (`ddl_sync.replay` of eleven arguments, C
/// symbol `replay_wrapper`), until `ALTER EXTENSION ddl_sync UPDATE` replaces it with
/// [`replay_row`]: a library must serve the SQL objects of the version before it. Such a
/// table has none of the columns added since.
#[allow(clippy::too_many_arguments)] // 0.3.0's arguments
#[pg_extern(sql = false, volatile)]
fn replay(
    kind: &str,
    dialect: &str,
    command_tag: &str,
    schema_name: &str,
    object_identity: &str,
    sql: &str,
    search_path: &str,
    role_name: &str,
    origin_sysid: i64,
    origin_lsn: &str,
    database_name: &str,
) -> TableIterator<
    'static,
    (
        name!(status, String),
        name!(detail, Option<String>),
        name!(adapter, Option<String>),
        name!(seconds, f64),
    ),
> {
    let started = Instant::now();
    let Some(origin_lsn) = ddl_wire::Lsn::parse(origin_lsn.as_bytes()) else {
        let why = format!("origin LSN \"{origin_lsn}\" is not an LSN");
        return legacy(outcome(
            Verdict::new("refused", format!("not a DDL event: {why}")),
            started,
        ));
    };
    let event = ddl_wire::DdlEvent {
        lsn: ddl_wire::Lsn(0),
        origin_sysid: origin_sysid as u64,
        origin_lsn,
        xid: 0,
        top_level: true,
        forwarded: false,
        kind,
        dialect,
        command_tag,
        schema: schema_name,
        object_identity,
        sql,
        search_path,
        role: role_name,
        // Not among 0.3.0's arguments; the replay does not read it.
        session_user: "",
        database: database_name,
        tables: None,
        settings: None,
        role_rights: None,
        bindings: None,
        capturing_sysid: None,
        sent_generated_columns: None,
        description: None,
    };
    legacy(outcome(replay_event(&Event::new(event)), started))
}

fn outcome(verdict: Verdict, started: Instant) -> Outcome5 {
    (
        verdict.status.to_string(),
        verdict.detail,
        verdict.adapter,
        started.elapsed().as_secs_f64(),
        verdict.verified,
    )
}

/// The outcome as 0.3.0's replay returns it: no `verified` (nothing from a 0.3.0 row is
/// described).
fn legacy(
    (status, detail, adapter, seconds, _): Outcome5,
) -> TableIterator<'static, (String, Option<String>, Option<String>, f64)> {
    TableIterator::once((status, detail, adapter, seconds))
}

/// An event being replayed: the row, and the settings and description it holds, parsed.
struct Event<'a> {
    row: ddl_wire::DdlEvent<'a>,
    /// The session settings that change what the statement means (see [`settings`]).
    settings: settings::Settings<'a>,
    /// The row's `description` read, once for every step that needs it (the verification,
    /// the follow-ups): what the publisher's statement made, or why it does not read.
    published: Option<Result<ddl_wire::Description, ddl_wire::DescriptionError>>,
}

impl<'a> Event<'a> {
    fn new(row: ddl_wire::DdlEvent<'a>) -> Event<'a> {
        Event {
            settings: settings::parse(row.settings.unwrap_or("")),
            published: row.description.map(ddl_wire::Description::from_json),
            row,
        }
    }

    /// The tables the statement left on the publisher (see [`tables`]); empty when none or
    /// not known.
    fn tables(&self) -> &'a str {
        self.row.tables.unwrap_or("")
    }

    /// What the publisher's statement made, when the event says it and it reads.
    fn published(&self) -> Option<&ddl_wire::Description> {
        self.published.as_ref()?.as_ref().ok()
    }

    /// `<system identifier> <LSN>`, for messages: the event's key.
    fn origin(&self) -> String {
        format!(
            "{} {}",
            self.row.origin_sysid as i64,
            ddl_server::text::lsn(self.row.origin_lsn)
        )
    }

    /// The origin as numbers.
    fn origin_key(&self) -> (i64, u64) {
        (self.row.origin_sysid as i64, self.row.origin_lsn.0)
    }
}

fn replay_event(event: &Event<'_>) -> Verdict {
    let Some(subscription) = Subscription::of_this_worker() else {
        return Verdict::new("refused", "not running in a subscription's apply worker");
    };
    let Some(config) = subscription.config() else {
        let verdict = Verdict::new(
            "skipped",
            format!(
                "subscription \"{}\" does not replay DDL (see ddl_sync.set_subscription_ddl)",
                subscription.name
            ),
        );
        log_verdict(event, &subscription, &verdict);
        return verdict;
    };
    // The capture (when this node publishes DDL too) records the statement as forwarded, with
    // the origin it came from, so the next node of a cascade keys it the same way.
    host::set_replay_origin(Some(event.origin_key()));
    let activity = activity::Activity::report(&event.origin(), event.row.sql);
    let decision = resolution::take(
        subscription.oid,
        event.row.origin_sysid,
        event.row.origin_lsn,
    );
    let verdict = match decision {
        None => check_and_run(event, &subscription, &config),
        Some(Resolution::Skip { note }) => {
            let mut verdict = Verdict::new("skipped", format!("skipped {note}"));
            let owner = host::replay_role(event.row.role, config.fallback_role.as_deref());
            verdict.add_notes(tables::make_missing(
                event.tables(),
                owner.as_deref(),
                &subscription,
            ));
            verdict
        }
        Some(Resolution::Replace { sql, note }) => {
            replace(event, &sql, &note, &subscription, &config)
        }
    };
    drop(activity);
    stats::passed(subscription.oid, event.origin_key());
    host::set_replay_origin(None);
    log_verdict(event, &subscription, &verdict);
    verdict
}

/// Replays an operator's replacement `sql` for `event` (see [`resolution`]): the statement
/// is checked and run as a replayed one of its own tag and kind, with the event's role and
/// search_path.
fn replace(
    event: &Event<'_>,
    sql: &str,
    note: &str,
    subscription: &Subscription,
    config: &applying::Config,
) -> Verdict {
    let mut verdict = match run_as_event(event, sql, subscription, config) {
        Ok(verdict) => verdict,
        Err(why) => {
            return Verdict::new(
                "refused",
                format!("the replacement \"{sql}\" {note} is refused: {why}"),
            )
        }
    };
    let replaced = format!("replaced {note} by \"{sql}\"");
    verdict.detail = Some(match verdict.detail.take() {
        Some(detail) => format!("{replaced}; {detail}"),
        None => replaced,
    });
    verdict
}

/// Checks and runs `sql` as a statement of `event` (its role, search_path and settings) of
/// the tag and kind its text says, as any event's statement is; `Err` when the text cannot be
/// read.
fn run_as_event(
    event: &Event<'_>,
    sql: &str,
    subscription: &Subscription,
    config: &applying::Config,
) -> Result<Verdict, String> {
    let (tag, kind) =
        settings::usable(event.settings, event.row.search_path).and_then(|(settings, _)| {
            ddl_server::guc::with_settings(&settings, || statement::claims(sql))
        })?;
    let replacement = Event {
        row: ddl_wire::DdlEvent {
            sql,
            command_tag: &tag,
            kind,
            dialect: "postgres",
            ..event.row
        },
        settings: event.settings,
        published: event.published.clone(),
    };
    Ok(check_and_run(&replacement, subscription, config))
}

/// One line per replicated statement in the subscriber's log: LOG for what changed the schema
/// (as `log_statement = 'ddl'` would show a local one) and for what the subscription's own
/// configuration skipped, WARNING for what was refused or failed and left the schemas
/// different. The statement text is only in the apply log (`ddl_sync.apply_log`).
fn log_verdict(event: &Event<'_>, subscription: &Subscription, verdict: &Verdict) {
    let detail = verdict.detail.as_deref().unwrap_or("");
    if verdict.status == "applied" && detail.is_empty() && !logs_ddl() {
        return;
    }
    let what = format!(
        "subscription \"{}\": {} {} (origin {})",
        subscription.name,
        event.row.command_tag,
        event.row.object_identity,
        event.origin()
    );
    match verdict.status {
        "applied" if detail.is_empty() => log!("ddl_sync: {what} applied"),
        "applied" => log!("ddl_sync: {what} applied: {detail}"),
        "skipped" => log!("ddl_sync: {what} skipped: {detail}"),
        _ => warning!("ddl_sync: {what} {}: {detail}", verdict.status),
    }
}

/// Whether `log_statement` logs a local DDL statement (`ddl`, `mod` or `all`): a statement
/// applied as it is gets its LOG line exactly where the same statement run here by a client
/// would (PostgreSQL's default, `none`, logs neither; each line cost some 29,000 instructions,
/// 4 % of a replayed statement's own). What was applied with a note, skipped, refused or
/// failed is always logged.
fn logs_ddl() -> bool {
    // SAFETY: reads a setting's backing variable in the backend.
    unsafe { pg_sys::log_statement >= pg_sys::LogStmtLevel::LOGSTMT_DDL as i32 }
}

fn check_and_run(
    event: &Event<'_>,
    subscription: &Subscription,
    config: &applying::Config,
) -> Verdict {
    match decide_and_run(event, subscription, config) {
        Replayed::ForHere(mut verdict) => {
            // Whatever became of the statement, rows of the tables it left on the publisher
            // follow it.
            let owner = host::replay_role(event.row.role, config.fallback_role.as_deref());
            verdict.add_notes(tables::make_missing(
                event.tables(),
                owner.as_deref(),
                subscription,
            ));
            // And the tables made here for a refused role go when the publisher drops them.
            verdict.add_notes(made::drop_dropped(event, subscription));
            verdict
        }
        Replayed::NotForHere(verdict) => verdict,
    }
}

/// A replay's verdict, and whether the subscription takes the event at all: one its kinds or
/// rules leave out is the subscriber's own business, tables included.
enum Replayed {
    ForHere(Verdict),
    NotForHere(Verdict),
}

fn decide_and_run(
    event: &Event<'_>,
    subscription: &Subscription,
    config: &applying::Config,
) -> Replayed {
    // Names in the statement resolve, and its literals parse, as the statement will: with the
    // event's search_path and settings.
    let refused = |reason: String| {
        let claimed = DdlKind::ALL.iter().find(|k| k.token() == event.row.kind);
        let verdict = Verdict::new("refused", reason);
        match claimed {
            Some(kind) if config.kinds.contains(kind.kinds()) => Replayed::ForHere(verdict),
            _ => Replayed::NotForHere(verdict),
        }
    };
    let (settings, setting_notes) = match settings::usable(event.settings, event.row.search_path) {
        Ok(usable) => usable,
        Err(reason) => return refused(reason),
    };
    let checked = match ddl_server::guc::with_settings(&settings, || check(event)) {
        Ok(checked) => checked,
        Err(reason) => return refused(reason),
    };
    if !config.kinds.contains(checked.kind.kinds()) {
        return Replayed::NotForHere(Verdict::new(
            "refused",
            format!(
                "kind {} is not replayed by subscription \"{}\" (ddl = '{}')",
                checked.kind.token(),
                subscription.name,
                config.kinds
            ),
        ));
    }
    // The subscriber's rules judge the object the statement will change here, not what the
    // record says it changed on the publisher: the two differ when the search_path finds
    // another schema first on this node.
    if let Some(here) = &checked.schema {
        if !event.row.schema.is_empty() && here != event.row.schema {
            return Replayed::ForHere(Verdict::new(
                "refused",
                format!(
                    "the statement's relation is in schema \"{here}\" here but was in \"{}\" on \
                     the publisher (search_path {})",
                    event.row.schema, event.row.search_path
                ),
            ));
        }
    }
    let candidate = DdlCandidate {
        kind: checked.kind,
        tag: &checked.tag,
        schema: checked
            .schema
            .as_deref()
            .or((!event.row.schema.is_empty()).then_some(event.row.schema)),
        identity: (!event.row.object_identity.is_empty()).then_some(event.row.object_identity),
        sql: event.row.sql,
    };
    if !config.rules.decide(&candidate).replicate() {
        return Replayed::NotForHere(Verdict::new(
            "skipped",
            "excluded by the subscription's rules",
        ));
    }
    let registry = adapters::registry(event.row.dialect);
    let Some(adapter) = registry.get(event.row.dialect) else {
        return Replayed::ForHere(Verdict::new(
            "refused",
            format!("no adapter for SQL dialect \"{}\"", event.row.dialect),
        ));
    };
    let (mut verdict, created) = created::watching(|| {
        run(
            adapter,
            event,
            &settings,
            &checked,
            config.conflict,
            config.fallback_role.as_deref(),
            subscription.oid,
        )
    });
    verdict.adapter = Some(adapter.name().to_string());
    verdict.add_notes(setting_notes);
    if verdict.status == "applied" {
        // Every table the statement made, whatever its tag; the table an ALTER changed.
        let mut notes: Vec<String> = created
            .iter()
            .filter_map(|&relid| subscription.register_relation(relid))
            .collect();
        notes.extend(
            checked
                .altered
                .and_then(|relid| subscription.recheck_columns(relid)),
        );
        for note in notes {
            warning!("ddl_sync: subscription \"{}\": {note}", subscription.name);
            verdict.add_notes(Some(note));
        }
        let table = if checked.creates_table() {
            ddl_server::relcache::relation_named(event.row.object_identity)
        } else {
            checked.altered
        };
        if let Some(relid) = table {
            verdict.add_notes(generated::take_sent_values(
                relid,
                event.row.sent_generated_columns,
            ));
        }
        verdict.add_notes(dependents::drop_kept(event, subscription, config));
        let on_purpose = verify::OnPurpose {
            ran_as_fallback: verdict.ran_as_fallback,
            fallback_role: config.fallback_role.clone(),
            sent_generated: event
                .row
                .sent_generated_columns
                .and_then(|field| ddl_wire::parse_name_set(field).ok())
                .map(|names| names.into_iter().collect())
                .unwrap_or_default(),
        };
        verify_made(
            event,
            subscription,
            config.divergence,
            &on_purpose,
            &mut verdict,
        );
    }
    Replayed::ForHere(verdict)
}

/// Compares what the applied statement made with what it made on the publisher (see
/// [`verify`]): verified, or diverged under the subscription's policy.
fn verify_made(
    event: &Event<'_>,
    subscription: &Subscription,
    policy: Divergence,
    on_purpose: &verify::OnPurpose,
    verdict: &mut Verdict,
) {
    match verify::compare(
        event.row.command_tag,
        event.row.object_identity,
        event.published.as_ref().map(Result::as_ref),
        on_purpose,
    ) {
        Verified::NotDescribed => {}
        Verified::NotCompared(note) => verdict.add_notes(Some(note)),
        Verified::Equal(note) => {
            verdict.verified = Some(true);
            verdict.add_notes(note);
        }
        Verified::Diverged(difference) if policy == Divergence::Error => {
            let failed = stats::Failed {
                origin: event.origin_key(),
                sql: event.row.sql,
            };
            let message = format!(
                "ddl_sync: replay of \"{}\" diverged (ddl_divergence = error): {difference}",
                event.row.sql
            );
            stats::record(subscription.oid, &failed, &message);
            ddl_server::errors::Error::new(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                message,
            )
            .hint(
                "Make the subscriber's objects as the publisher's, or resolve the event with \
                 ddl_sync.resolve_event; the apply worker retries the transaction.",
            )
            .raise()
        }
        Verified::Diverged(difference) => {
            verdict.status = "diverged";
            verdict.verified = Some(false);
            verdict.add_notes(Some(difference));
        }
    }
}

/// The statement of a `postgres` event is checked now, with this server's parser. Another
/// dialect's text is not PostgreSQL's (backquotes, T-SQL): the row's claimed tag, kind and
/// schema stand in for the subscription's kinds and rules, and every statement the adapter runs
/// is checked against that claim when it runs (`host::execute_claimed`), its relation's schema
/// as resolved here included: so no claim of a dialect skips the checks a `postgres` event
/// gets.
fn check(event: &Event<'_>) -> Result<Checked, String> {
    if event.row.dialect.eq_ignore_ascii_case("postgres") {
        return statement::check(event.row.sql, event.row.command_tag, event.row.kind);
    }
    let kind = DdlKind::ALL
        .iter()
        .copied()
        .find(|k| k.token() == event.row.kind)
        .ok_or_else(|| {
            format!(
                "the row claims kind \"{}\", which is not a DDL kind",
                event.row.kind
            )
        })?;
    Ok(Checked {
        tag: event.row.command_tag.to_string(),
        kind,
        schema: (!event.row.schema.is_empty()).then(|| event.row.schema.to_string()),
        altered: None,
        parsed: Default::default(),
    })
}

/// Defines the replay's settings (see `limits`).
pub(crate) fn define_settings() {
    limits::define_settings();
}

/// init_context → execute_ddl → cleanup_context, with the subscription's conflict policy.
#[allow(clippy::too_many_arguments)] // the event, how to run it, and where
fn run(
    adapter: &dyn Adapter,
    event: &Event<'_>,
    settings: &[(&str, &str)],
    checked: &Checked,
    conflict: Conflict,
    fallback: Option<&str>,
    subscription: pg_sys::Oid,
) -> Verdict {
    let published = match event.row.bindings.map(ddl_wire::parse_name_set).transpose() {
        Ok(published) => published,
        Err(e) => return Verdict::new("refused", format!("the event's bindings are damaged: {e}")),
    };
    let mut host = ServerHost::new(checked, settings::owned(settings), published);
    let mut ctx = Context {
        dialect: event.row.dialect.to_string(),
        database: event.row.database.to_string(),
        search_path: event.row.search_path.to_string(),
        role: event.row.role.to_string(),
        ..Context::default()
    };
    let role_note = match host.enter_role(
        &mut ctx,
        event.row.role,
        event.row.role_rights.unwrap_or(""),
    ) {
        Ok(()) => None,
        Err(reason) => match fallback {
            Some(fallback) if !host::role_exists(event.row.role) => {
                match host.enter_fallback(&mut ctx, event.row.role, fallback) {
                    Ok(note) => Some(note),
                    Err(reason) => return Verdict::new("refused", reason),
                }
            }
            _ => return Verdict::new("refused", reason),
        },
    };
    let attempt = || {
        limits::bounded(|| {
            let mut outcome = adapter.init_context(&mut ctx, &mut host);
            if outcome.is_success() {
                outcome = adapter.execute_ddl(&mut ctx, &mut host, event.row.sql);
            }
            outcome.and(adapter.cleanup_context(&mut ctx, &mut host))
        })
    };
    let failed = stats::Failed {
        origin: event.origin_key(),
        sql: event.row.sql,
    };
    let started = std::time::Instant::now();
    let outcome = match conflict {
        // An ERROR goes up to the apply worker, which retries the whole transaction: nothing
        // is lost and nothing is applied twice (the replication origin did not advance).
        // The ERROR takes the apply log row and the counters with it: kept apart.
        Conflict::Error => stats::recording(subscription, &failed, attempt),
        Conflict::Skip => ddl_server::xact::in_subtransaction(attempt, Outcome::is_success)
            .unwrap_or_else(host::outcome_of),
    };
    let outcome = limits::out_of_time(outcome, started.elapsed());
    host.leave_role();
    // Nothing the statement's code took for the session (advisory locks, LISTEN) outlives it,
    // as its settings do not.
    ddl_server::session::release_in_background_worker();
    let notes = host.notes();
    // A statement the adapter ran was not the event's: refused whatever the policy, as a
    // statement refused before running (retrying would not change it).
    if let Some(reason) = host.refusal() {
        return Verdict::new("refused", reason);
    }
    match outcome {
        Outcome::Success => Verdict {
            status: "applied",
            ran_as_fallback: role_note.is_some(),
            detail: role_note
                .into_iter()
                .chain(notes)
                .reduce(|all, note| format!("{all}; {note}")),
            ..Verdict::default()
        },
        // Under either policy a failure that passes goes to the apply worker, which retries
        // the transaction; under `error`, every failure does.
        Outcome::Retryable(e) => raise(subscription, &failed, &e),
        Outcome::Fatal(e) if conflict == Conflict::Error => raise(subscription, &failed, &e),
        Outcome::Fatal(e) => Verdict {
            status: "failed",
            detail: Some(match role_note {
                Some(note) => format!("{e} ({note})"),
                None => e.message,
            }),
            ..Verdict::default()
        },
        _ => Verdict::new(
            "failed",
            "the adapter ended with an outcome this version does not know",
        ),
    }
}

/// The ERROR that stops the apply worker for `failure` (which PostgreSQL retries), with its
/// SQLSTATE when it has one; the event is kept as the one the subscription is stuck on.
fn raise(subscription: pg_sys::Oid, failed: &stats::Failed<'_>, failure: &Failure) -> ! {
    let message = format!("ddl_sync: replay of \"{}\" failed: {failure}", failed.sql);
    stats::record(subscription, failed, &message);
    host::raise(failure, &message)
}

//! Verification: after a statement is applied, what the replay made is described as the
//! publisher described what the statement made (the event's `description`, ddl-server's
//! `describe`), and the two are compared.
//!
//! Equal: the apply log row says the statement was verified (`apply_verified`), and the
//! subscription's `verified` counter counts it. Different: the event is `diverged`, the row names each attribute that
//! differs with both values, a WARNING says so, and the `ddl_divergence` policy decides what
//! happens next. Differences the replay makes on purpose are expected, not a divergence: the
//! owner of what a statement made when it ran as `ddl_fallback_role` because its role does not
//! exist here.

use ddl_wire::{Action, Description, DescriptionError, Difference, ObjectDescription};

/// What the comparison found.
pub enum Verified {
    /// The event has no description (a kind not described yet, an older publisher).
    NotDescribed,
    /// Not compared: describing what the replay made failed, as the note says.
    NotCompared(String),
    /// Equal, but for the expected differences a note names, if any.
    Equal(Option<String>),
    /// Different: each difference, readably.
    Diverged(String),
}

/// What the replay changed on purpose, so that the descriptions are expected to differ there.
#[derive(Default)]
pub struct OnPurpose {
    /// The statement ran as `ddl_fallback_role`: what it made is that role's.
    pub ran_as_fallback: bool,
    /// The subscription's `ddl_fallback_role`: what an earlier statement made as that role is
    /// still that role's.
    pub fallback_role: Option<String>,
    /// The generated columns whose values the publisher sends (the event's
    /// `sent_generated_columns`), which are plain columns here (see [`super::generated`]).
    pub sent_generated: Vec<String>,
}

impl OnPurpose {
    /// Why `difference` was made on purpose; `None` when it was not.
    fn reason(&self, difference: &Difference) -> Option<&'static str> {
        if difference.attribute == "owner" {
            if self.ran_as_fallback {
                return Some(
                    "the statement ran as ddl_fallback_role: its role does not exist here",
                );
            }
            let made_as_fallback = difference.subscriber.is_some()
                && difference.subscriber == self.fallback_role
                && difference
                    .publisher
                    .as_deref()
                    .is_some_and(|owner| !super::host::role_exists(owner));
            if made_as_fallback {
                return Some(
                    "owned by ddl_fallback_role: the role that owns it on the publisher does not \
                     exist here",
                );
            }
        }
        let column = difference
            .attribute
            .strip_prefix("column ")?
            .strip_suffix(": generated")?;
        (difference.subscriber.is_none() && self.sent_generated.iter().any(|c| c == column))
            .then_some("a plain column here: the publisher sends its values")
    }
}

/// Compares what the replay of `command_tag` on `identity` made with `published`, the event's
/// description as read; `on_purpose`: what the replay changed knowingly.
pub fn compare(
    command_tag: &str,
    identity: &str,
    published: Option<Result<&Description, &DescriptionError>>,
    on_purpose: &OnPurpose,
) -> Verified {
    let published = match published {
        None => return Verified::NotDescribed,
        Some(Ok(published)) => published,
        Some(Err(e)) => return Verified::NotCompared(format!("not compared: the publisher's {e}")),
    };
    // In the replay's transaction, after the statement.
    // Not told of a rename: `renamed_from` is the publisher's word, not compared.
    let mut here =
        match ddl_server::describe::statement(command_tag, identity, "", Default::default()) {
            Ok(here) => here.unwrap_or_default(),
            Err(e) => {
                return Verified::NotCompared(format!("not compared with the publisher: {e}"))
            }
        };
    // What the publisher's statement dropped with its object: gone here too (see
    // `dependents`), or a difference.
    let dependents: Vec<ObjectDescription> = published
        .objects
        .iter()
        .filter(|p| p.action == Action::Dropped)
        .filter(|p| {
            !here
                .objects
                .iter()
                .any(|h| h.kind == p.kind && h.identity == p.identity)
        })
        .filter(|p| ddl_server::describe::is_gone(&p.kind, &p.identity))
        .map(|p| ObjectDescription {
            action: Action::Dropped,
            kind: p.kind.clone(),
            identity: p.identity.clone(),
            ..Default::default()
        })
        .collect();
    here.objects.extend(dependents);
    let (expected, diverged): (Vec<Difference>, Vec<Difference>) =
        ddl_wire::differences(published, &here)
            .into_iter()
            .partition(|d| on_purpose.reason(d).is_some());
    if !diverged.is_empty() {
        let each: Vec<String> = diverged.iter().map(Difference::to_string).collect();
        return Verified::Diverged(format!(
            "what the statement made here differs from what it made on the publisher: {}",
            each.join("; ")
        ));
    }
    if expected.is_empty() {
        return Verified::Equal(None);
    }
    // By reason: `table public.g column b: generated, column d: generated (a plain column...)`.
    let mut by_reason: Vec<(&str, Vec<String>)> = Vec::new();
    for d in &expected {
        let reason = on_purpose.reason(d).unwrap_or_default();
        let what = format!("{} {}", d.object, d.attribute);
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, whats)) => whats.push(what),
            None => by_reason.push((reason, vec![what])),
        }
    }
    let each: Vec<String> = by_reason
        .iter()
        .map(|(reason, whats)| format!("{} ({reason})", whats.join(", ")))
        .collect();
    Verified::Equal(Some(format!(
        "verified, but for differences made on purpose: {}",
        each.join("; ")
    )))
}

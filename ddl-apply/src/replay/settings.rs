//! The settings an event's statement ran with on its origin: its search_path, and the session
//! settings that change what a statement means (how its literals parse, what it creates by
//! default), which the record carries as `settings` (ddl-capture's `MEANING_SETTINGS`).
//!
//! They hold only around the statement, its parse included: ddl_sync's own queries run with
//! the apply worker's settings. A name this list does not know (a newer publisher's) is left
//! out: the record is the publisher's, but nothing outside this list is set from it.

/// The session settings a replay sets from the record: the list the capture writes.
const KNOWN: [&str; 11] = ddl_wire::MEANING_SETTINGS;

/// An event's `settings` column, one `name=value` per line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings<'a>(&'a str);

/// The settings of an event's `settings` column.
pub fn parse(text: &str) -> Settings<'_> {
    Settings(text)
}

impl<'a> Settings<'a> {
    /// `search_path`, then each known setting of the record, as `(name, value)`, for
    /// `ddl_server::guc::with_settings`.
    pub fn with_search_path(self, search_path: &'a str) -> Vec<(&'a str, &'a str)> {
        let mut all = vec![("search_path", search_path)];
        all.extend(
            self.0
                .lines()
                .filter_map(|line| line.split_once('='))
                .filter_map(|(name, value)| {
                    KNOWN
                        .iter()
                        .find(|known| known.eq_ignore_ascii_case(name))
                        .map(|known| (*known, value))
                }),
        );
        all
    }
}

/// The settings that decide how the statement's text itself is read: a server that does not
/// accept the record's value would read other literals than the publisher did (19 accepts
/// only `standard_conforming_strings = on`), so the event is refused rather than replayed.
const READS_TEXT: [&str; 1] = ["standard_conforming_strings"];

/// The settings a replay sets, as `(name, value)`, and a note for each it could not.
pub type Usable<'a> = (Vec<(&'a str, &'a str)>, Vec<String>);

/// The settings to replay the statement with: [`Settings::with_search_path`] less those this
/// server does not accept (a table access method it lacks, a time zone it does not know), and
/// a note for each of those, for the row: the statement then runs with this server's value.
/// `Err` with the reason when one of them decides how the text reads ([`READS_TEXT`]).
///
/// Those that have their value here already are left out too: setting them changes nothing,
/// and each step of the replay that sets the rest (check, run, follow-ups) would compare them
/// again (57 lookups of a setting per event before, in the apply benchmark).
#[inline(never)] // a phase of `cargo xtask bench apply-instructions`
pub fn usable<'a>(settings: Settings<'a>, search_path: &'a str) -> Result<Usable<'a>, String> {
    let mut notes = Vec::new();
    let mut usable = Vec::new();
    for (name, value) in settings.with_search_path(search_path) {
        // Not checked either: some checks read files (timezone_abbreviations' reads its whole
        // set, some 480,000 instructions, at every replayed event).
        if ddl_server::guc::has_value(name, value) {
            continue;
        }
        if ddl_server::guc::valid(name, value) {
            usable.push((name, value));
        } else if READS_TEXT.contains(&name) {
            return Err(format!(
                "the statement was read with {name} = '{value}', which this server does not \
                 accept: its literals would read differently here"
            ));
        } else {
            notes.push(format!(
                "{name} = '{value}' is not valid here: the statement ran with this server's"
            ));
        }
    }
    Ok((usable, notes))
}

/// Owned settings, for the claim of a replay.
pub fn owned(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_settings_follow_the_search_path() {
        let s = parse("DateStyle=SQL, DMY\nwork_mem=1GB\ntimezone=Europe/Paris\nnonsense\n");
        assert_eq!(
            s.with_search_path("app, public"),
            vec![
                ("search_path", "app, public"),
                ("DateStyle", "SQL, DMY"),
                ("TimeZone", "Europe/Paris"),
            ]
        );
        assert_eq!(parse("").with_search_path("x"), vec![("search_path", "x")]);
    }
}

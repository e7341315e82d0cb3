//! How single values are written: LSNs and timestamps as PostgreSQL shows them, and strings
//! escaped so that a message always stays on one line.

use std::fmt::Write;

/// An LSN as PostgreSQL 15 to 18 print a `pg_lsn` (`ddl_wire::Lsn`): the high and low 32 bits in
/// hex, `16/B374D848`.
pub fn lsn(lsn: u64) -> String {
    ddl_wire::Lsn(lsn).to_string()
}

/// Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
const PG_EPOCH_DAYS: i64 = 10_957;
const MICROS_PER_SECOND: i64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// A PostgreSQL timestamp (microseconds since 2000-01-01 00:00:00 UTC) in ISO 8601, in UTC,
/// always with six fractional digits: `2025-11-29T20:51:03.123456Z`. The two special values
/// print as PostgreSQL prints them (`infinity`, `-infinity`); years past 9999 or before 0 get
/// ISO 8601's expanded form with a sign.
pub fn timestamp(micros: i64) -> String {
    match micros {
        i64::MAX => return "infinity".to_owned(),
        i64::MIN => return "-infinity".to_owned(),
        _ => {}
    }
    let seconds = micros.div_euclid(MICROS_PER_SECOND);
    let fraction = micros.rem_euclid(MICROS_PER_SECOND);
    let days = seconds.div_euclid(SECONDS_PER_DAY);
    let second_of_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (year, month, day) = civil_from_days(days + PG_EPOCH_DAYS);
    let mut out = String::with_capacity(27);
    if (0..=9999).contains(&year) {
        let _ = write!(out, "{year:04}");
    } else {
        let _ = write!(out, "{year:+05}");
    }
    let _ = write!(
        out,
        "-{month:02}-{day:02}T{:02}:{:02}:{:02}.{fraction:06}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    );
    out
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`: eras of 400 years, years starting on March 1st).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // 0 = March
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Appends `bytes` for a human reader, on one line: control characters as `\n`, `\t`, `\r` or
/// `\xNN`, bytes that are not UTF-8 as `\xNN`. With `quoted`, the text goes between double
/// quotes and `"` and `\` are escaped too, so the value reads back unambiguously.
pub fn push_escaped(out: &mut String, bytes: &[u8], quoted: bool) {
    if quoted {
        out.push('"');
    }
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '"' | '\\' if quoted => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => {
                    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    if quoted {
        out.push('"');
    }
}

/// Appends `bytes` as PostgreSQL's bytea hex format: `\x0a0b`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(2 + 2 * bytes.len());
    out.push_str("\\x");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// `bytes` as PostgreSQL's bytea hex format: `\x0a0b`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    push_hex(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_prints_like_pg_lsn() {
        assert_eq!(lsn(0), "0/0");
        assert_eq!(lsn(0x16_B374_D848), "16/B374D848");
        assert_eq!(lsn(0x0000_0001_0000_0000), "1/0");
        assert_eq!(lsn(u64::MAX), "FFFFFFFF/FFFFFFFF");
    }

    /// Expected values from `date -u -d @UNIX_SECONDS`; PostgreSQL seconds are Unix seconds
    /// minus 946684800.
    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(timestamp(0), "2000-01-01T00:00:00.000000Z");
        assert_eq!(timestamp(-1), "1999-12-31T23:59:59.999999Z");
        // 2024-02-29T12:34:56Z is Unix 1709210096.
        let leap_day = (1_709_210_096 - 946_684_800) * MICROS_PER_SECOND + 789_012;
        assert_eq!(timestamp(leap_day), "2024-02-29T12:34:56.789012Z");
        // 1970-01-01T00:00:00Z.
        assert_eq!(
            timestamp(-946_684_800 * MICROS_PER_SECOND),
            "1970-01-01T00:00:00.000000Z"
        );
        // 2100-03-01 (2100 is not a leap year): Unix 4107542400.
        assert_eq!(
            timestamp((4_107_542_400 - 946_684_800) * MICROS_PER_SECOND),
            "2100-03-01T00:00:00.000000Z"
        );
        assert_eq!(timestamp(i64::MAX), "infinity");
        assert_eq!(timestamp(i64::MIN), "-infinity");
        // The extremes that are not infinities still print, with an expanded year.
        assert_eq!(timestamp(i64::MAX - 1), "+294277-01-09T04:00:54.775806Z");
        assert_eq!(timestamp(i64::MIN + 1), "-290278-12-22T19:59:05.224193Z");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_last() {
        let mut last = civil_from_days(-1);
        for days in 0..146_097 {
            let (y, m, d) = civil_from_days(days);
            let next_day = (y, m, d) == (last.0, last.1, last.2 + 1);
            let next_month = (y, m, d) == (last.0, last.1 + 1, 1);
            let next_year = (y, m, d) == (last.0 + 1, 1, 1);
            assert!(
                next_day || next_month || next_year,
                "{last:?} then {y}-{m}-{d}"
            );
            last = (y, m, d);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
    }

    #[test]
    fn escaping_keeps_one_line_and_marks_non_utf8() {
        let mut s = String::new();
        push_escaped(&mut s, b"a\nb\t\"c\"\\ \xff\x01", true);
        assert_eq!(s, r#""a\nb\t\"c\"\\ \xff\u{1}""#);
        let mut s = String::new();
        push_escaped(&mut s, b"\"$user\", public\n", false);
        assert_eq!(s, "\"$user\", public\\n");
        assert_eq!(hex(&[0, 0xab, 10]), "\\x00ab0a");
    }
}

//! A description's JSON text, written directly.
//!
//! Why not serde_json's serializer: the capture writes one description per DDL statement, and
//! the generic serializer cost about 3,100 instructions for a table of a few columns (this,
//! 2,200), a share of the capture's whole budget (BENCHMARKS.md, "Instructions"). This writes
//! the same text (serde_json's compact form of these types, fields in their order, attributes
//! at their default left out) into one buffer; a test holds the two equal on hostile strings.
//! Reading stays serde_json's.

use std::fmt::Write;

use super::{Action, ColumnDescription, Description, ObjectDescription, Part, TableDescription};

/// The compact JSON of `d`.
pub(super) fn write(d: &Description) -> String {
    // Room for a table of a few columns at once.
    let mut out = String::with_capacity(512);
    let mut o = Object::open(&mut out);
    o.key("version");
    // Writing to a String cannot fail.
    let _ = write!(o.out, "{}", d.version);
    o.array("objects", &d.objects, object);
    o.close();
    out
}

fn object(out: &mut String, d: &ObjectDescription) {
    let mut o = Object::open(out);
    o.string("action", action(d.action));
    o.string("kind", &d.kind);
    o.string("identity", &d.identity);
    o.optional("renamed_from", &d.renamed_from);
    o.optional("owner", &d.owner);
    o.optional("definition", &d.definition);
    o.unless_empty("columns", &d.columns, column);
    o.unless_empty("labels", &d.labels, |out, label| string(out, label));
    if let Some(table) = &d.table {
        o.key("table");
        self::table(o.out, table);
    }
    o.close();
}

fn table(out: &mut String, t: &TableDescription) {
    let mut o = Object::open(out);
    o.unless_empty("constraints", &t.constraints, part);
    o.unless_empty("indexes", &t.indexes, part);
    o.unless_empty("triggers", &t.triggers, part);
    o.unless_empty("policies", &t.policies, part);
    o.unless_empty("rules", &t.rules, part);
    o.optional("row_security", &t.row_security);
    o.string("replica_identity", &t.replica_identity);
    o.optional("partition_key", &t.partition_key);
    o.optional("partition_of", &t.partition_of);
    o.unless_empty("inherits", &t.inherits, |out, parent| string(out, parent));
    o.close();
}

fn column(out: &mut String, c: &ColumnDescription) {
    let mut o = Object::open(out);
    o.string("name", &c.name);
    o.string("type", &c.type_name);
    o.optional("renamed_from", &c.renamed_from);
    o.optional("collation", &c.collation);
    if c.not_null {
        o.key("not_null");
        o.out.push_str("true");
    }
    o.optional("default", &c.default);
    o.optional("identity", &c.identity);
    o.optional("generated", &c.generated);
    o.close();
}

fn part(out: &mut String, p: &Part) {
    let mut o = Object::open(out);
    o.string("name", &p.name);
    o.string("definition", &p.definition);
    o.close();
}

fn action(action: Action) -> &'static str {
    match action {
        Action::Created => "created",
        Action::Altered => "altered",
        Action::Dropped => "dropped",
        Action::Present => "present",
    }
}

/// A JSON object being written: its members, separated.
struct Object<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut String) -> Self {
        out.push('{');
        Object { out, first: true }
    }

    /// Starts the member `name` (a key of this module: nothing to escape).
    fn key(&mut self, name: &str) {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
        self.out.push('"');
        self.out.push_str(name);
        self.out.push_str("\":");
    }

    fn string(&mut self, name: &str, value: &str) {
        self.key(name);
        string(self.out, value);
    }

    /// The member, when there is a value (serde's `skip_serializing_if = "Option::is_none"`).
    fn optional(&mut self, name: &str, value: &Option<String>) {
        if let Some(value) = value {
            self.string(name, value);
        }
    }

    /// The member, when `items` is not empty (`skip_serializing_if = "Vec::is_empty"`).
    fn unless_empty<T>(&mut self, name: &str, items: &[T], item: impl Fn(&mut String, &T)) {
        if !items.is_empty() {
            self.array(name, items, item);
        }
    }

    fn array<T>(&mut self, name: &str, items: &[T], item: impl Fn(&mut String, &T)) {
        self.key(name);
        self.out.push('[');
        for (i, value) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            item(self.out, value);
        }
        self.out.push(']');
    }

    fn close(self) {
        self.out.push('}');
    }
}

/// `s` as a JSON string, escaped as serde_json escapes: `"` and `\`, the control characters
/// `\b \t \n \f \r` by letter and the others as `\u00xx`; everything else as it is.
fn string(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    // Names and definitions seldom hold anything to escape.
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    out.push('"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Escaped bytes are ASCII, so both sides of each are whole characters.
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of choices (no dependency for a test's randomness).
    struct Choices(u64);

    impl Choices {
        fn next(&mut self, below: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % below
        }
        fn text(&mut self) -> String {
            const PIECES: [&str; 12] = [
                "a",
                "\"",
                "\\",
                "\n",
                "\u{1}",
                "\u{1f}",
                "\u{7f}",
                "é",
                "日本",
                "\t\r\u{8}\u{c}",
                " ",
                "'x'::text",
            ];
            (0..self.next(6))
                .map(|_| PIECES[self.next(PIECES.len())])
                .collect()
        }
        fn maybe(&mut self) -> Option<String> {
            (self.next(2) == 0).then(|| self.text())
        }
        fn list<T>(&mut self, f: impl Fn(&mut Self) -> T) -> Vec<T> {
            (0..self.next(3)).map(|_| f(self)).collect()
        }
        fn part(&mut self) -> Part {
            Part {
                name: self.text(),
                definition: self.text(),
            }
        }
    }

    fn description(c: &mut Choices) -> Description {
        Description {
            version: [0, 1, 9, 10, 4_294_967_295][c.next(5)],
            objects: c.list(|c| ObjectDescription {
                action: [
                    Action::Created,
                    Action::Altered,
                    Action::Dropped,
                    Action::Present,
                ][c.next(4)],
                kind: c.text(),
                identity: c.text(),
                renamed_from: c.maybe(),
                owner: c.maybe(),
                definition: c.maybe(),
                columns: c.list(|c| ColumnDescription {
                    name: c.text(),
                    type_name: c.text(),
                    renamed_from: c.maybe(),
                    collation: c.maybe(),
                    not_null: c.next(2) == 0,
                    default: c.maybe(),
                    identity: c.maybe(),
                    generated: c.maybe(),
                }),
                labels: c.list(Choices::text),
                table: (c.next(2) == 0).then(|| TableDescription {
                    constraints: c.list(Choices::part),
                    indexes: c.list(Choices::part),
                    triggers: c.list(Choices::part),
                    policies: c.list(Choices::part),
                    rules: c.list(Choices::part),
                    row_security: c.maybe(),
                    replica_identity: c.text(),
                    partition_key: c.maybe(),
                    partition_of: c.maybe(),
                    inherits: c.list(Choices::text),
                }),
            }),
        }
    }

    #[test]
    fn the_text_is_serde_jsons_compact_form() {
        let mut c = Choices(29);
        for _ in 0..5_000 {
            let d = description(&mut c);
            let ours = write(&d);
            assert_eq!(ours, serde_json::to_string(&d).unwrap());
            assert_eq!(Description::from_json(&ours), Ok(d));
        }
    }

    #[test]
    fn every_control_character_is_escaped_as_serde_json_does() {
        let all: String = (0u8..=0x7f).map(char::from).collect();
        let mut ours = String::new();
        string(&mut ours, &all);
        assert_eq!(ours, serde_json::to_string(&all).unwrap());
    }
}

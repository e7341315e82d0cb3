//! The description of what a DDL statement made: the event's `description` field.
//!
//! Both nodes describe the objects a statement created, changed or dropped the same way, from
//! their catalogs after the statement: the publisher's plugin as of the statement's message,
//! the subscriber after replaying it. Equal descriptions show that the replay made what the
//! statement made; a difference names the attribute that differs ([`differences`]). A CDC
//! consumer reads the same field to act on a schema change without parsing SQL.
//!
//! The field is JSON ([`Description::to_json`], [`Description::from_json`]):
//!
//! ```json
//! {"version":1,"objects":[{"action":"created","kind":"table","identity":"public.t",
//!   "owner":"app","columns":[{"name":"a","type":"integer","not_null":true},
//!   {"name":"b","type":"text","collation":"\"C\"","default":"'x'::text"}],
//!   "table":{"constraints":[{"name":"t_pkey","definition":"PRIMARY KEY (a)"}],
//!   "indexes":[{"name":"t_pkey","definition":"CREATE UNIQUE INDEX t_pkey ON public.t USING btree (a)"}],
//!   "replica_identity":"default"}}]}
//! ```
//!
//! Names, types and expressions are written as PostgreSQL deparses them with `pg_catalog` alone
//! on the search_path (every object outside `pg_catalog` is schema-qualified) and PostgreSQL's
//! defaults for the settings that change how constants and names are written (`DateStyle`,
//! `TimeZone`, `extra_float_digits`, ...), so the text does not depend on either node's
//! settings. Attributes with their default value (no collation, no
//! default, nullable, ...) are left out. Columns are in their table's order; a table's parts
//! (constraints, indexes, triggers, policies, rules) by name. What a node keeps for itself is
//! not described: tablespaces, storage parameters, statistics targets, comments, privileges. A reader must accept fields it does not know
//! (a later version may add attributes); `version` changes when a field changes meaning.

mod json;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The version of the format this crate writes.
pub const DESCRIPTION_VERSION: u32 = 1;

/// What one statement made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    /// The format's version ([`DESCRIPTION_VERSION`] when written by this crate).
    pub version: u32,
    /// Each object the statement created, changed or dropped.
    pub objects: Vec<ObjectDescription>,
}

/// One object and what happened to it. Which attributes an object has depends on its kind
/// (see the crate's README): a table has columns and table parts, a view columns and a
/// definition, an enum labels, a function a definition, a schema only an owner.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectDescription {
    /// Whether the statement created, changed or dropped it.
    pub action: Action,
    /// Its kind: `table`, `view`, `materialized view`, `sequence`, `function`, `procedure`,
    /// `aggregate`, `type`, `domain`, `trigger`, `policy`, `rule`, `schema`, `extension`.
    pub kind: String,
    /// Its identity after the statement, as PostgreSQL's `pg_identify_object` writes it
    /// (`public.t`, `public.f(integer)`, `trg on public.t`); for a dropped object, before.
    pub identity: String,
    /// Its identity before the statement, when the statement renamed it or moved it to
    /// another schema. Said by the publisher only: it is what the statement did, not what the
    /// object is, so [`differences`] does not compare it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// The owning role, for the kinds that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// What defines it, as PostgreSQL deparses it or in one canonical clause: a view's query,
    /// a function's `CREATE FUNCTION`, a trigger's `CREATE TRIGGER`, a sequence's options, a
    /// domain's base type and constraints, an extension's version and schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The columns of a table, view, materialized view or composite type, in order (dropped
    /// ones left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnDescription>,
    /// The labels of an enum, in their order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// What a table (or a materialized view) has besides its columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableDescription>,
}

/// What a statement did to an object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It did not exist before (or `CREATE OR REPLACE` replaced it).
    Created,
    /// It existed and was changed.
    #[default]
    Altered,
    /// It does not exist after.
    Dropped,
    /// Not a statement's doing: the object as it is, described on demand
    /// (`ddl_sync.describe_table`).
    Present,
}

/// What a table has besides its columns: the parts it owns by name, and how it is keyed,
/// partitioned and inherited.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDescription {
    /// Its constraints other than NOT NULL (which [`ColumnDescription::not_null`] says), as
    /// `pg_get_constraintdef` writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Part>,
    /// Its indexes, as `pg_get_indexdef` writes them (without a tablespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<Part>,
    /// Its triggers (not those PostgreSQL makes for foreign keys), as `pg_get_triggerdef`
    /// writes them, with `ENABLE REPLICA`, `ENABLE ALWAYS` or `DISABLE` when not enabled in
    /// the ordinary way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Part>,
    /// Its row-level security policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<Part>,
    /// Its rules (not a view's `_RETURN`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Part>,
    /// `enabled` or `forced` when row-level security is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_security: Option<String>,
    /// `default`, `nothing`, `full`, or `index <name>`.
    pub replica_identity: String,
    /// `PARTITION BY ...` of a partitioned table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_key: Option<String>,
    /// The parent and bound of a partition (`public.p FOR VALUES ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_of: Option<String>,
    /// The tables it inherits from (not a partition's parent), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherits: Vec<String>,
}

/// One column of a table, view or composite type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDescription {
    /// Its name.
    pub name: String,
    /// Its type with its modifier (`character varying(20)`, `public.money_amount`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its name before the statement, when the statement renamed it (`RENAME COLUMN`); not
    /// compared, as for [`ObjectDescription::renamed_from`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Its collation, when not its type's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<String>,
    /// NOT NULL.
    #[serde(default, skip_serializing_if = "is_false")]
    pub not_null: bool,
    /// Its default expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// `always` or `by default` for an identity column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The expression of a generated column, with `STORED` or `VIRTUAL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
}

/// A named part of a table (a constraint, an index, a trigger, a policy, a rule) and its
/// definition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// Its name.
    pub name: String,
    /// Its definition.
    pub definition: String,
}

/// One attribute of a column, as text (`None`: it has none), for [`differences`].
type ColumnAttribute = for<'a> fn(&'a ColumnDescription) -> Option<&'a str>;

fn is_false(b: &bool) -> bool {
    !*b
}

impl Description {
    /// The field's text: compact JSON, fields in the order of this crate's types, attributes
    /// at their default left out (as serde_json writes these types).
    pub fn to_json(&self) -> String {
        json::write(self)
    }

    /// The description in a field's text. An error names what is wrong; any text, however
    /// hostile, gives a value or an error (serde_json limits nesting).
    pub fn from_json(field: &str) -> Result<Description, DescriptionError> {
        serde_json::from_str(field).map_err(|e| DescriptionError(e.to_string()))
    }

    /// The SHA-256 of [`to_json`](Self::to_json), in hex: equal descriptions have equal
    /// digests, so two nodes can be compared by it.
    pub fn digest(&self) -> String {
        let hash = Sha256::digest(self.to_json().as_bytes());
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A `description` field that is not a description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptionError(String);

impl fmt::Display for DescriptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the description is not valid: {}", self.0)
    }
}

impl std::error::Error for DescriptionError {}

/// One attribute that differs between two descriptions of the same statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The object (`table public.t`).
    pub object: String,
    /// The attribute (`column b: default`).
    pub attribute: String,
    /// Its value in the first description (`None`: it has none).
    pub publisher: Option<String>,
    /// Its value in the second.
    pub subscriber: Option<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<String>| match v {
            Some(v) => format!("\"{v}\""),
            None => "none".to_string(),
        };
        write!(
            f,
            "{} {}: publisher {}, subscriber {}",
            self.object,
            self.attribute,
            show(&self.publisher),
            show(&self.subscriber)
        )
    }
}

/// Every attribute in which `subscriber` differs from `publisher`, objects matched by kind and
/// identity, columns and table parts by name; empty when they describe the same.
///
/// Every replayed statement is compared: values are compared where they are, and an
/// attribute's name is written only for a difference.
pub fn differences(publisher: &Description, subscriber: &Description) -> Vec<Difference> {
    let mut out = Vec::new();
    let same =
        |a: &ObjectDescription, b: &ObjectDescription| a.kind == b.kind && a.identity == b.identity;
    for p in &publisher.objects {
        let object = || format!("{} {}", p.kind, p.identity);
        let Some(s) = subscriber.objects.iter().find(|s| same(p, s)) else {
            out.push(Difference {
                object: object(),
                attribute: "presence".into(),
                publisher: Some(action_word(p.action).into()),
                subscriber: None,
            });
            continue;
        };
        let mut differ = |attribute: &dyn fmt::Display, pv: Option<&str>, sv: Option<&str>| {
            if pv != sv {
                out.push(Difference {
                    object: object(),
                    attribute: attribute.to_string(),
                    publisher: pv.map(str::to_string),
                    subscriber: sv.map(str::to_string),
                });
            }
        };
        differ(
            &"action",
            Some(action_word(p.action)),
            Some(action_word(s.action)),
        );
        object_differences(p, s, &mut differ);
    }
    for s in &subscriber.objects {
        if !publisher.objects.iter().any(|p| same(p, s)) {
            out.push(Difference {
                object: format!("{} {}", s.kind, s.identity),
                attribute: "presence".into(),
                publisher: None,
                subscriber: Some(action_word(s.action).into()),
            });
        }
    }
    out
}

/// Reports an attribute by name with both values (`None`: it has none), when they differ.
type Differ<'a> = dyn FnMut(&dyn fmt::Display, Option<&str>, Option<&str>) + 'a;

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Created => "created",
        Action::Altered => "altered",
        Action::Dropped => "dropped",
        Action::Present => "present",
    }
}

fn object_differences(p: &ObjectDescription, s: &ObjectDescription, differ: &mut Differ<'_>) {
    differ(&"owner", p.owner.as_deref(), s.owner.as_deref());
    differ(
        &"definition",
        p.definition.as_deref(),
        s.definition.as_deref(),
    );
    if p.labels != s.labels {
        let labels = |o: &ObjectDescription| (!o.labels.is_empty()).then(|| o.labels.join(", "));
        differ(&"labels", labels(p).as_deref(), labels(s).as_deref());
    }
    column_differences(&p.columns, &s.columns, differ);
    match (&p.table, &s.table) {
        (Some(pt), Some(st)) => table_differences(pt, st, differ),
        (None, None) => {}
        (pt, st) => differ(
            &"table",
            pt.as_ref().map(|_| "described"),
            st.as_ref().map(|_| "described"),
        ),
    }
}

fn column_differences(p: &[ColumnDescription], s: &[ColumnDescription], differ: &mut Differ<'_>) {
    let (pn, sn): (Vec<&str>, Vec<&str>) = (
        p.iter().map(|c| c.name.as_str()).collect(),
        s.iter().map(|c| c.name.as_str()).collect(),
    );
    for name in union(&pn, &sn) {
        let pc = p.iter().find(|c| c.name == name);
        let sc = s.iter().find(|c| c.name == name);
        match (pc, sc) {
            (Some(pc), Some(sc)) => {
                let fields: [(&str, ColumnAttribute); 6] = [
                    ("type", |c| Some(&c.type_name)),
                    ("collation", |c| c.collation.as_deref()),
                    ("not null", |c| c.not_null.then_some("NOT NULL")),
                    ("default", |c| c.default.as_deref()),
                    ("identity", |c| c.identity.as_deref()),
                    ("generated", |c| c.generated.as_deref()),
                ];
                for (field, value) in fields {
                    differ(
                        &format_args!("column {name}: {field}"),
                        value(pc),
                        value(sc),
                    );
                }
            }
            (pc, sc) => differ(
                &format_args!("column {name}"),
                pc.map(|c| c.type_name.as_str()),
                sc.map(|c| c.type_name.as_str()),
            ),
        }
    }
}

fn table_differences(p: &TableDescription, s: &TableDescription, differ: &mut Differ<'_>) {
    differ(
        &"replica identity",
        Some(&p.replica_identity),
        Some(&s.replica_identity),
    );
    differ(
        &"row security",
        p.row_security.as_deref(),
        s.row_security.as_deref(),
    );
    differ(
        &"partition key",
        p.partition_key.as_deref(),
        s.partition_key.as_deref(),
    );
    differ(
        &"partition of",
        p.partition_of.as_deref(),
        s.partition_of.as_deref(),
    );
    if p.inherits != s.inherits {
        let inherits =
            |t: &TableDescription| (!t.inherits.is_empty()).then(|| t.inherits.join(", "));
        differ(&"inherits", inherits(p).as_deref(), inherits(s).as_deref());
    }
    part_differences("constraint", &p.constraints, &s.constraints, differ);
    part_differences("index", &p.indexes, &s.indexes, differ);
    part_differences("trigger", &p.triggers, &s.triggers, differ);
    part_differences("policy", &p.policies, &s.policies, differ);
    part_differences("rule", &p.rules, &s.rules, differ);
}

/// The differences of two lists of parts, matched by name.
fn part_differences(what: &str, p: &[Part], s: &[Part], differ: &mut Differ<'_>) {
    let (pn, sn): (Vec<&str>, Vec<&str>) = (
        p.iter().map(|part| part.name.as_str()).collect(),
        s.iter().map(|part| part.name.as_str()).collect(),
    );
    for name in union(&pn, &sn) {
        differ(
            &format_args!("{what} {name}"),
            definition_of(p, name),
            definition_of(s, name),
        );
    }
}

/// The definition of the part of `parts` named `name`.
fn definition_of<'a>(parts: &'a [Part], name: &str) -> Option<&'a str> {
    parts
        .iter()
        .find(|part| part.name == name)
        .map(|part| part.definition.as_str())
}

/// The names of `a`, then those of `b` that `a` lacks, each once.
fn union<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::with_capacity(a.len() + b.len());
    for name in a.iter().chain(b) {
        if !out.contains(name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Description {
        Description {
            version: DESCRIPTION_VERSION,
            objects: vec![ObjectDescription {
                action: Action::Created,
                kind: "table".into(),
                identity: "public.t".into(),
                owner: Some("app".into()),
                columns: vec![
                    ColumnDescription {
                        name: "a".into(),
                        type_name: "integer".into(),
                        not_null: true,
                        ..Default::default()
                    },
                    ColumnDescription {
                        name: "b".into(),
                        type_name: "text".into(),
                        default: Some("'x'::text".into()),
                        ..Default::default()
                    },
                ],
                table: Some(TableDescription {
                    constraints: vec![Part {
                        name: "t_pkey".into(),
                        definition: "PRIMARY KEY (a)".into(),
                    }],
                    replica_identity: "default".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
        }
    }

    #[test]
    fn round_trips_through_compact_json_without_defaults() {
        let d = table();
        let json = d.to_json();
        assert_eq!(
            json,
            r#"{"version":1,"objects":[{"action":"created","kind":"table","identity":"public.t","owner":"app","columns":[{"name":"a","type":"integer","not_null":true},{"name":"b","type":"text","default":"'x'::text"}],"table":{"constraints":[{"name":"t_pkey","definition":"PRIMARY KEY (a)"}],"replica_identity":"default"}}]}"#
        );
        assert_eq!(Description::from_json(&json), Ok(d.clone()));
        assert_eq!(d.digest().len(), 64);
        assert_eq!(d.digest(), table().digest());
    }

    #[test]
    fn unknown_fields_are_accepted_and_bad_text_is_an_error() {
        let json = r#"{"version":2,"objects":[],"later":{"x":1}}"#;
        assert_eq!(Description::from_json(json).unwrap().version, 2);
        for bad in [
            "",
            "{",
            "[]",
            r#"{"version":"1","objects":[]}"#,
            "{\"objects\":[]}",
        ] {
            let e = Description::from_json(bad).unwrap_err();
            assert!(
                e.to_string().starts_with("the description is not valid"),
                "{e}"
            );
        }
        let deep = "[".repeat(100_000);
        assert!(Description::from_json(&deep).is_err());
    }

    #[test]
    fn equal_descriptions_have_no_differences() {
        assert!(differences(&table(), &table()).is_empty());
    }

    #[test]
    fn a_difference_names_the_object_the_attribute_and_both_values() {
        let p = table();
        let mut s = table();
        let o = &mut s.objects[0];
        o.columns[1].default = None;
        o.columns.push(ColumnDescription {
            name: "local".into(),
            type_name: "integer".into(),
            ..Default::default()
        });
        o.owner = Some("other".into());
        o.table.as_mut().unwrap().constraints[0].definition = "PRIMARY KEY (a, b)".into();
        let found: Vec<String> = differences(&p, &s).iter().map(|d| d.to_string()).collect();
        assert_eq!(
            found,
            [
                "table public.t owner: publisher \"app\", subscriber \"other\"",
                "table public.t column b: default: publisher \"'x'::text\", subscriber none",
                "table public.t column local: publisher none, subscriber \"integer\"",
                "table public.t constraint t_pkey: publisher \"PRIMARY KEY (a)\", subscriber \
                 \"PRIMARY KEY (a, b)\"",
            ]
        );
    }

    #[test]
    fn objects_one_side_lacks_are_differences() {
        let p = table();
        let s = Description {
            version: 1,
            objects: vec![],
        };
        let found = differences(&p, &s);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].attribute, "presence");
        assert_eq!(
            differences(&s, &p)[0].subscriber.as_deref(),
            Some("created")
        );
    }
}

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
//!   "table":{"owner":"app","columns":[{"name":"a","type":"integer","not_null":true},
//!   {"name":"b","type":"text","collation":"\"C\"","default":"'x'::text"}],
//!   "constraints":[{"name":"t_pkey","definition":"PRIMARY KEY (a)"}],
//!   "indexes":[{"name":"t_pkey","definition":"CREATE UNIQUE INDEX t_pkey ON public.t USING btree (a)"}],
//!   "replica_identity":"default"}}]}
//! ```
//!
//! Names, types and expressions are written as PostgreSQL deparses them with `pg_catalog` alone
//! on the search_path: every object outside `pg_catalog` is schema-qualified, so the text does
//! not depend on either node's settings. Attributes with their default value (no collation, no
//! default, nullable, ...) are left out. Columns are in their table's order; constraints and
//! indexes by name. What a node keeps for itself is not described: tablespaces, storage
//! parameters, statistics targets, comments. A reader must accept fields it does not know
//! (a later version may add attributes); `version` changes when a field changes meaning.

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

/// One object and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectDescription {
    /// Whether the statement created, changed or dropped it.
    pub action: Action,
    /// Its kind, as the event's `kind` names kinds (`table`, ...).
    pub kind: String,
    /// Its schema-qualified identity after the statement (`public.t`); for a dropped object,
    /// before.
    pub identity: String,
    /// What a table is after the statement; `None` for a dropped one or another kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<TableDescription>,
}

/// What a statement did to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It did not exist before.
    Created,
    /// It existed and was changed.
    Altered,
    /// It does not exist after.
    Dropped,
}

/// A table as its rows and its users see it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDescription {
    /// The owning role.
    pub owner: String,
    /// Its columns, in order (dropped ones left out).
    pub columns: Vec<ColumnDescription>,
    /// Its constraints other than NOT NULL (which [`ColumnDescription::not_null`] says), by
    /// name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintDescription>,
    /// Its indexes, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexDescription>,
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

/// One column of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDescription {
    /// Its name.
    pub name: String,
    /// Its type with its modifier (`character varying(20)`, `public.money_amount`).
    #[serde(rename = "type")]
    pub type_name: String,
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

/// One constraint of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstraintDescription {
    /// Its name.
    pub name: String,
    /// Its definition, as `pg_get_constraintdef` writes it.
    pub definition: String,
}

/// One index of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDescription {
    /// Its name.
    pub name: String,
    /// Its definition, as `pg_get_indexdef` writes it (without a tablespace).
    pub definition: String,
}

/// One attribute of a column, as text (`None`: it has none), for [`differences`].
type ColumnAttribute = fn(&ColumnDescription) -> Option<String>;

fn is_false(b: &bool) -> bool {
    !*b
}

impl Description {
    /// The field's text: compact JSON, fields in the order of this crate's types.
    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings, booleans and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
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
/// identity, columns, constraints and indexes by name; empty when they describe the same.
pub fn differences(publisher: &Description, subscriber: &Description) -> Vec<Difference> {
    let mut out = Vec::new();
    for p in &publisher.objects {
        let object = format!("{} {}", p.kind, p.identity);
        let s = subscriber
            .objects
            .iter()
            .find(|s| s.kind == p.kind && s.identity == p.identity);
        let Some(s) = s else {
            out.push(Difference {
                object,
                attribute: "presence".into(),
                publisher: Some(action_word(p.action).into()),
                subscriber: None,
            });
            continue;
        };
        if p.action != s.action {
            out.push(Difference {
                object: object.clone(),
                attribute: "action".into(),
                publisher: Some(action_word(p.action).into()),
                subscriber: Some(action_word(s.action).into()),
            });
        }
        match (&p.table, &s.table) {
            (Some(pt), Some(st)) => table_differences(&object, pt, st, &mut out),
            (None, None) => {}
            (pt, st) => out.push(Difference {
                object,
                attribute: "table".into(),
                publisher: pt.as_ref().map(|_| "described".into()),
                subscriber: st.as_ref().map(|_| "described".into()),
            }),
        }
    }
    for s in &subscriber.objects {
        if !publisher
            .objects
            .iter()
            .any(|p| p.kind == s.kind && p.identity == s.identity)
        {
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

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Created => "created",
        Action::Altered => "altered",
        Action::Dropped => "dropped",
    }
}

fn table_differences(
    object: &str,
    p: &TableDescription,
    s: &TableDescription,
    out: &mut Vec<Difference>,
) {
    let mut differ = |attribute: String, pv: Option<&str>, sv: Option<&str>| {
        if pv != sv {
            out.push(Difference {
                object: object.to_string(),
                attribute,
                publisher: pv.map(str::to_string),
                subscriber: sv.map(str::to_string),
            });
        }
    };
    differ("owner".into(), Some(&p.owner), Some(&s.owner));
    differ(
        "replica identity".into(),
        Some(&p.replica_identity),
        Some(&s.replica_identity),
    );
    differ(
        "partition key".into(),
        p.partition_key.as_deref(),
        s.partition_key.as_deref(),
    );
    differ(
        "partition of".into(),
        p.partition_of.as_deref(),
        s.partition_of.as_deref(),
    );
    let inherits = |t: &TableDescription| (!t.inherits.is_empty()).then(|| t.inherits.join(", "));
    differ(
        "inherits".into(),
        inherits(p).as_deref(),
        inherits(s).as_deref(),
    );
    let names = |t: &TableDescription| t.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    for name in union(&names(p), &names(s)) {
        let pc = p.columns.iter().find(|c| c.name == name);
        let sc = s.columns.iter().find(|c| c.name == name);
        let column = format!("column {name}");
        match (pc, sc) {
            (Some(pc), Some(sc)) => {
                let fields: [(&str, ColumnAttribute); 6] = [
                    ("type", |c| Some(c.type_name.clone())),
                    ("collation", |c| c.collation.clone()),
                    ("not null", |c| c.not_null.then(|| "NOT NULL".to_string())),
                    ("default", |c| c.default.clone()),
                    ("identity", |c| c.identity.clone()),
                    ("generated", |c| c.generated.clone()),
                ];
                for (field, value) in fields {
                    differ(
                        format!("{column}: {field}"),
                        value(pc).as_deref(),
                        value(sc).as_deref(),
                    );
                }
            }
            (pc, sc) => differ(
                column,
                pc.map(|c| c.type_name.as_str()),
                sc.map(|c| c.type_name.as_str()),
            ),
        }
    }
    let constraints = |t: &TableDescription| {
        t.constraints
            .iter()
            .map(|c| (c.name.clone(), c.definition.clone()))
            .collect::<Vec<_>>()
    };
    named_differences("constraint", &constraints(p), &constraints(s), &mut differ);
    let indexes = |t: &TableDescription| {
        t.indexes
            .iter()
            .map(|i| (i.name.clone(), i.definition.clone()))
            .collect::<Vec<_>>()
    };
    named_differences("index", &indexes(p), &indexes(s), &mut differ);
}

/// The differences of two lists of `(name, definition)`, matched by name.
fn named_differences(
    what: &str,
    p: &[(String, String)],
    s: &[(String, String)],
    differ: &mut impl FnMut(String, Option<&str>, Option<&str>),
) {
    let names = |l: &[(String, String)]| l.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    for name in union(&names(p), &names(s)) {
        let definition =
            |l: &[(String, String)]| l.iter().find(|(n, _)| *n == name).map(|(_, d)| d.clone());
        differ(
            format!("{what} {name}"),
            definition(p).as_deref(),
            definition(s).as_deref(),
        );
    }
}

/// The names of `a`, then those of `b` that `a` lacks, each once.
fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.len() + b.len());
    for name in a.iter().chain(b) {
        if !out.contains(name) {
            out.push(name.clone());
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
                table: Some(TableDescription {
                    owner: "app".into(),
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
                    constraints: vec![ConstraintDescription {
                        name: "t_pkey".into(),
                        definition: "PRIMARY KEY (a)".into(),
                    }],
                    indexes: vec![],
                    replica_identity: "default".into(),
                    ..Default::default()
                }),
            }],
        }
    }

    #[test]
    fn round_trips_through_compact_json_without_defaults() {
        let d = table();
        let json = d.to_json();
        assert_eq!(
            json,
            r#"{"version":1,"objects":[{"action":"created","kind":"table","identity":"public.t","table":{"owner":"app","columns":[{"name":"a","type":"integer","not_null":true},{"name":"b","type":"text","default":"'x'::text"}],"constraints":[{"name":"t_pkey","definition":"PRIMARY KEY (a)"}],"replica_identity":"default"}}]}"#
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
        let t = s.objects[0].table.as_mut().unwrap();
        t.columns[1].default = None;
        t.columns.push(ColumnDescription {
            name: "local".into(),
            type_name: "integer".into(),
            ..Default::default()
        });
        t.owner = "other".into();
        t.constraints[0].definition = "PRIMARY KEY (a, b)".into();
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

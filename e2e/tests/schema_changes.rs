//! Schema changes as data, for CDC consumers: a real `pg_recvlogical -P ddl_pgoutput` stream,
//! read with ddl-wire, carries with each table statement a `description` of what it made,
//! which says exactly what changed without parsing the SQL.

use ddl_e2e::ddl_publisher;
use ddl_testkit::TempDir;
use ddl_wire::{
    Action, Description, EventsRelation, Message, ProtocolContext, RecvlogicalReader, Streaming,
};
use std::collections::HashMap;
use std::time::Duration;

const WORKLOAD: &str = "
CREATE TABLE t (id int PRIMARY KEY, note text NOT NULL DEFAULT 'none');
ALTER TABLE t ADD COLUMN amount numeric(10,2);
ALTER TABLE t DROP COLUMN note;
ALTER TABLE t ALTER COLUMN amount TYPE bigint;
ALTER TABLE t RENAME COLUMN amount TO total;
ALTER TABLE t RENAME TO orders;
CREATE INDEX orders_total ON orders (total);
CREATE SCHEMA archive;
ALTER TABLE orders SET SCHEMA archive;
DROP TABLE archive.orders;
";

/// `(tag, description)` of each DDL event in the stream.
fn events(bytes: &[u8]) -> Vec<(String, Option<Description>)> {
    let mut relations: HashMap<u32, EventsRelation> = HashMap::new();
    let mut out = Vec::new();
    let ctx = ProtocolContext::new(1, Streaming::Off).unwrap();
    for item in RecvlogicalReader::new(bytes, ctx) {
        let (_, message) = item.expect("a readable stream");
        match message {
            Message::Relation(rel) => {
                if let Some(ev) = EventsRelation::from_relation(&rel).expect("events relation") {
                    relations.insert(ev.rel_id(), ev);
                }
            }
            Message::Insert(ins) => {
                if let Some(ev) = relations.get(&ins.rel_id()) {
                    let event = ev.event(&ins).expect("a DDL event");
                    let description = event
                        .description
                        .map(|d| Description::from_json(d).expect("a valid description"));
                    out.push((event.command_tag.to_string(), description));
                }
            }
            _ => {}
        }
    }
    out
}

/// `name type` of each column of the one table `d` describes.
fn columns(d: &Description) -> Vec<String> {
    d.objects[0]
        .columns
        .iter()
        .map(|c| format!("{} {}", c.name, c.type_name))
        .collect()
}

#[test]
fn a_consumer_reads_each_table_change_as_data() {
    let pg = ddl_publisher("schema-changes");
    pg.psql(
        "postgres",
        "CREATE PUBLICATION p FOR ALL TABLES WITH (ddl = 'all')",
    )
    .expect("publication");
    let mut recv = pg.recvlogical("postgres", "cdc");
    recv.plugin("ddl_pgoutput")
        .timeout(Duration::from_secs(120))
        .option("proto_version", "1")
        .option("publication_names", "p");
    recv.create_slot().expect("slot");
    pg.psql("postgres", WORKLOAD).expect("workload");
    let end = pg
        .psql("postgres", "SELECT pg_current_wal_insert_lsn()")
        .unwrap();
    pg.psql("postgres", "CREATE TABLE after_the_end (a int)")
        .unwrap();
    let dir = TempDir::new("schema-changes").unwrap();
    let file = dir.path().join("stream.bin");
    recv.stream_to_file(&file, &end).expect("pg_recvlogical");
    let events = events(&std::fs::read(&file).unwrap());
    let tags: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tags,
        [
            "CREATE TABLE",
            "ALTER TABLE",
            "ALTER TABLE",
            "ALTER TABLE",
            "ALTER TABLE",
            "ALTER TABLE",
            "CREATE INDEX",
            "CREATE SCHEMA",
            "ALTER TABLE",
            "DROP TABLE"
        ]
    );
    let d: Vec<&Description> = events
        .iter()
        .map(|(tag, d)| d.as_ref().unwrap_or_else(|| panic!("{tag} is described")))
        .collect();

    // CREATE TABLE: the table, its columns with their defaults, its key.
    let created = &d[0].objects[0];
    assert_eq!(
        (
            created.action,
            created.kind.as_str(),
            created.identity.as_str()
        ),
        (Action::Created, "table", "public.t")
    );
    let table = created.table.as_ref().unwrap();
    assert_eq!(columns(d[0]), ["id integer", "note text"]);
    assert_eq!(created.owner.as_deref(), Some("postgres"));
    assert!(created.columns[1].not_null);
    assert_eq!(created.columns[1].default.as_deref(), Some("'none'::text"));
    assert_eq!(table.constraints[0].definition, "PRIMARY KEY (id)");
    assert_eq!(table.replica_identity, "default");

    // ADD COLUMN, DROP COLUMN, a type change: the table after each.
    assert_eq!(d[1].objects[0].action, Action::Altered);
    assert_eq!(
        columns(d[1]),
        ["id integer", "note text", "amount numeric(10,2)"]
    );
    assert_eq!(columns(d[2]), ["id integer", "amount numeric(10,2)"]);
    assert_eq!(columns(d[3]), ["id integer", "amount bigint"]);

    // RENAME COLUMN: the table, with the column under its new name, and its old one.
    assert_eq!(d[4].objects[0].identity, "public.t");
    assert_eq!(columns(d[4]), ["id integer", "total bigint"]);
    assert_eq!(d[4].objects[0].renamed_from, None);
    assert_eq!(
        d[4].objects[0].columns[1].renamed_from.as_deref(),
        Some("amount")
    );

    // RENAME: the table under its new name, and its old one.
    assert_eq!(d[5].objects[0].identity, "public.orders");
    assert_eq!(d[5].objects[0].renamed_from.as_deref(), Some("public.t"));

    // CREATE INDEX: its table, with the index.
    let indexed = d[6].objects[0].table.as_ref().unwrap();
    assert_eq!(d[6].objects[0].identity, "public.orders");
    assert!(indexed.indexes.iter().any(|i| i.name == "orders_total"
        && i.definition == "CREATE INDEX orders_total ON public.orders USING btree (total)"));

    // CREATE SCHEMA: its owner; SET SCHEMA: the table where it is now, and where it was.
    assert_eq!(
        (
            d[7].objects[0].kind.as_str(),
            d[7].objects[0].owner.as_deref()
        ),
        ("schema", Some("postgres"))
    );
    assert_eq!(d[8].objects[0].identity, "archive.orders");
    assert_eq!(
        d[8].objects[0].renamed_from.as_deref(),
        Some("public.orders")
    );
    assert!(d[8].objects[0].table.as_ref().unwrap().indexes[0]
        .definition
        .contains("ON archive.orders"));

    // DROP TABLE: dropped, nothing left to describe.
    let dropped = &d[9].objects[0];
    assert_eq!(
        (dropped.action, dropped.identity.as_str()),
        (Action::Dropped, "archive.orders")
    );
    assert!(dropped.table.is_none());
}

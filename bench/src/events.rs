//! Reading a `ddl_pgoutput` stream written by pg_recvlogical: its DDL events, and what is left
//! without them (which must be pgoutput's own output).

use crate::Result;
use ddl_wire::{
    EventsRelation, Message, ProtocolContext, RecvlogicalReader, Streaming, BEGIN_TAG, COMMIT_TAG,
};
use std::collections::HashMap;

/// A pg_recvlogical output (protocol 1) with its DDL events taken out.
pub(super) struct Split<'a> {
    /// The other messages, each with its `\n`, bytes unchanged.
    pub(super) kept: Vec<&'a [u8]>,
    /// The statements of the DDL events.
    pub(super) events: Vec<&'a str>,
    /// Relation messages of `ddl_sync.events` taken out.
    pub(super) event_relations: usize,
    /// BEGIN/COMMIT pairs left empty (DDL-only transactions, which pgoutput does not send).
    pub(super) empty_transactions: usize,
}

/// Takes the Relation and Insert messages of `ddl_sync.events` out of `bytes`, then every
/// BEGIN immediately followed by COMMIT.
pub(super) fn split_events(bytes: &[u8]) -> Result<Split<'_>> {
    let ctx = ProtocolContext::new(1, Streaming::Off).map_err(|e| e.to_string())?;
    let mut reader = RecvlogicalReader::new(bytes, ctx);
    let mut relations: HashMap<u32, EventsRelation> = HashMap::new();
    let mut split = Split {
        kept: Vec::new(),
        events: Vec::new(),
        event_relations: 0,
        empty_transactions: 0,
    };
    let mut kept = Vec::new();
    while let Some(item) = reader.next() {
        let (offset, message) = item.map_err(|e| e.to_string())?;
        let whole = &bytes[offset..reader.position()];
        match &message {
            Message::Relation(rel) => {
                if let Some(ev) = EventsRelation::from_relation(rel).map_err(|e| e.to_string())? {
                    relations.insert(ev.rel_id(), ev);
                    split.event_relations += 1;
                    continue;
                }
            }
            Message::Insert(ins) => {
                if let Some(ev) = relations.get(&ins.rel_id()) {
                    split
                        .events
                        .push(ev.event(ins).map_err(|e| e.to_string())?.sql);
                    continue;
                }
            }
            _ => {}
        }
        kept.push(whole);
    }
    let mut i = 0;
    while i < kept.len() {
        if kept[i].first() == Some(&BEGIN_TAG)
            && kept.get(i + 1).and_then(|m| m.first()) == Some(&COMMIT_TAG)
        {
            split.empty_transactions += 1;
            i += 2;
        } else {
            split.kept.push(kept[i]);
            i += 1;
        }
    }
    Ok(split)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_events_and_their_empty_transactions_are_taken_out() {
        use ddl_wire::{
            event_columns, write_begin, write_commit, write_insert, write_relation, Column, PgStr,
            TupleValue,
        };
        let mut file = Vec::new();
        let mut push = |m: Vec<u8>| {
            file.extend_from_slice(&m);
            file.push(b'\n');
        };
        let mut begin = Vec::new();
        write_begin(0x10, 0, 7, &mut begin);
        let mut commit = Vec::new();
        write_commit(0x10, 0x18, 0, &mut commit);
        let names: Vec<std::ffi::CString> = event_columns()
            .map(|(n, _)| std::ffi::CString::new(n).unwrap())
            .collect();
        let types: Vec<u32> = event_columns()
            .map(|(_, t)| match t {
                "pg_lsn" => 3220,
                "bigint" => 20,
                "boolean" => 16,
                _ => 25,
            })
            .collect();
        let columns: Vec<Column> = names
            .iter()
            .zip(&types)
            .map(|(n, &t)| Column::new(0, PgStr::from(n.as_c_str()), t, -1))
            .collect();
        let mut relation = Vec::new();
        write_relation(
            None,
            99,
            c"ddl_sync".into(),
            c"events".into(),
            b'd',
            &columns,
            &mut relation,
        )
        .unwrap();
        let values: Vec<&[u8]> = event_columns()
            .map(|(n, t)| match (n, t) {
                ("sql", _) => &b"COMMENT ON TABLE pgbench_branches IS 'bench 7'"[..],
                (_, "pg_lsn") => b"0/10",
                (_, "bigint") => b"7",
                (_, "boolean") => b"t",
                _ => b"x",
            })
            .collect();
        let tuple: Vec<TupleValue> = values.iter().map(|v| TupleValue::Text(v)).collect();
        let mut insert = Vec::new();
        write_insert(None, 99, &tuple, &mut insert).unwrap();

        push(begin.clone());
        push(relation);
        push(insert);
        push(commit.clone());
        push(begin.clone());
        push(commit.clone());
        let split = split_events(&file).unwrap();
        assert_eq!(
            split.events,
            ["COMMENT ON TABLE pgbench_branches IS 'bench 7'"]
        );
        assert_eq!((split.event_relations, split.empty_transactions), (1, 2));
        assert!(split.kept.is_empty());
    }
}

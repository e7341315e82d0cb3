//! `DdlRecord::parse` on arbitrary bytes: whatever it accepts must encode back to the same
//! bytes, every string must borrow from the input, and errors must point inside it.
#![no_main]

use ddl_wire::DdlRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match DdlRecord::parse(data) {
        Ok(record) => {
            let mut again = Vec::with_capacity(data.len());
            record.encode(&mut again);
            if data[0] == ddl_wire::RECORD_FORMAT_VERSION {
                assert_eq!(again, data);
            } else {
                // An older version is written back in the current one, meaning the same (with
                // no bindings where they were not known).
                assert_eq!(
                    DdlRecord::parse(&again),
                    Ok(DdlRecord {
                        bindings: Some(""),
                        ..record
                    })
                );
            }
            let range = data.as_ptr_range();
            for s in [
                record.dialect,
                record.command_tag,
                record.schema,
                record.object_identity,
                record.sql,
                record.search_path,
                record.role,
                record.session_user,
                record.database,
                record.tables,
                record.settings,
                record.role_rights,
                record.bindings.unwrap_or(""),
                record.renamed_from,
                record.description,
            ] {
                assert!(s.is_empty() || range.contains(&s.as_ptr()));
            }
            if let Some(bindings) = record.bindings {
                let _ = ddl_wire::parse_name_set(bindings);
            }
        }
        Err(e) => {
            assert!(e.offset() <= data.len());
            let _ = e.to_string();
        }
    }
});

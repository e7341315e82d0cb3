//! The run-time contract between the two libraries (`ddl_server::contract`), checked against
//! the installed extension and plugin library: a symbol renamed on one side, a function the
//! SQL declares that the contract does not name, or a column the plugin reads that the
//! catalog lost fails here.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use crate::tests::rows;
    use ddl_server::contract;
    use pgrx::pg_sys;
    use pgrx::prelude::*;
    use std::ffi::CString;

    #[pg_test]
    fn the_extension_declares_exactly_the_plugin_functions_of_the_contract() {
        let declared: Vec<String> = rows(
            "SELECT p.prosrc FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ddl_sync'
              WHERE p.probin = '$libdir/ddl_pgoutput'
              ORDER BY 1",
        )
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten())
        .collect();
        let mut expected: Vec<String> = contract::PLUGIN_SQL_SYMBOLS
            .iter()
            .map(|s| s.to_string())
            .collect();
        expected.sort();
        assert_eq!(declared, expected);
        assert_eq!(
            contract::PLUGIN_LIBRARY.to_str().unwrap(),
            "$libdir/ddl_pgoutput"
        );
    }

    #[pg_test]
    fn the_plugin_library_has_every_function_the_contract_names() {
        let mut symbols: Vec<CString> = contract::PLUGIN_SQL_SYMBOLS
            .iter()
            .map(|s| CString::new(*s).unwrap())
            .collect();
        symbols.push(contract::SET_REPLAY_ORIGIN.to_owned());
        for symbol in &symbols {
            // SAFETY: a lookup in the installed plugin library (loaded once per process).
            let found = unsafe {
                pg_sys::load_external_function(
                    contract::PLUGIN_LIBRARY.as_ptr(),
                    symbol.as_ptr(),
                    false,
                    std::ptr::null_mut(),
                )
            };
            assert!(!found.is_null(), "ddl_pgoutput has no {symbol:?}");
        }
        assert!(contract::set_replay_origin().is_some());
    }

    #[pg_test]
    fn the_tables_the_plugin_reads_have_its_columns() {
        for (table, columns) in contract::PLUGIN_READS {
            for column in columns {
                let found = Spi::get_one_with_args::<bool>(
                    "SELECT EXISTS (SELECT FROM pg_attribute
                      WHERE attrelid = ('ddl_sync.' || $1)::regclass AND attname = $2
                        AND attnum > 0 AND NOT attisdropped)",
                    &[
                        table.to_str().unwrap().into(),
                        column.to_str().unwrap().into(),
                    ],
                )
                .expect("query ran");
                assert_eq!(
                    found,
                    Some(true),
                    "ddl_sync.{table:?} has no column {column:?}"
                );
            }
        }
    }
}

//! Event trigger functions written in Rust and called by PostgreSQL by symbol name
//! (`CREATE FUNCTION ... RETURNS event_trigger LANGUAGE c AS '$libdir/...', 'symbol'`).

use pgrx::pg_sys;
use pgrx::prelude::*;

/// `PG_FUNCTION_INFO_V1` for a function PostgreSQL calls by symbol name: without it PostgreSQL
/// refuses to call the function.
#[macro_export]
macro_rules! function_info_v1 {
    ($finfo:ident) => {
        #[doc(hidden)]
        #[no_mangle]
        pub extern "C" fn $finfo() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
            const V1: ::pgrx::pg_sys::Pg_finfo_record =
                ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }
    };
}

extern "C-unwind" {
    #[link_name = "GetCommandTagName"]
    fn server_command_tag_name(tag: pg_sys::CommandTag::Type) -> *const std::ffi::c_char;
}

/// The name of the statement's command tag (`CREATE TABLE`), PostgreSQL's static string.
/// Through the server's own function rather than pgrx's binding, whose guard costs more than
/// this array lookup, which cannot fail.
///
/// # Safety
/// `data` is the trigger's data ([`data`]).
pub unsafe fn tag_name(data: *const pg_sys::EventTriggerData) -> &'static str {
    // SAFETY: the caller's promise; the name is a static string of cmdtaglist.h, ASCII by
    // construction.
    unsafe { std::ffi::CStr::from_ptr(server_command_tag_name((*data).tag)) }
        .to_str()
        .unwrap_or("")
}

/// The trigger's data; PostgreSQL's own ERROR (SQLSTATE 39P03) when the function was called
/// some other way (`SELECT f()` is refused before the call for a function returning
/// `event_trigger`, but a C caller could still try).
///
/// # Safety
/// `fcinfo` is the call frame PostgreSQL gave a function it called.
pub unsafe fn data(fcinfo: pg_sys::FunctionCallInfo) -> *mut pg_sys::EventTriggerData {
    // SAFETY: the caller's promise: a call frame, whose `context` is null or a node.
    let context = unsafe { (*fcinfo).context };
    // SAFETY: as above.
    if context.is_null() || unsafe { (*context).type_ } != pg_sys::NodeTag::T_EventTriggerData {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED,
            "ddl_sync event trigger functions can only be called as event triggers"
        );
    }
    context.cast()
}

//! Adapters registered from C: another extension's `_PG_init` calls the exported
//! `ddl_sync_register_adapter` with a `DdlSyncAdapter` (see `include/ddl_sync_adapter.h`, the
//! contract; the structs here mirror it field for field).

use ddl_adapter::{Adapter, Context, Failure, Host, Outcome};
use pgrx::pg_sys::ffi::pg_guard_ffi_boundary;
use pgrx::prelude::*;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

/// `DDL_SYNC_ADAPTER_ABI_VERSION` of the header this library was built with.
pub const ABI_VERSION: u32 = 1;

const SUCCESS: c_int = 0;
const RETRYABLE: c_int = 1;
const FATAL: c_int = 2;

type Step = unsafe extern "C-unwind" fn(*mut DdlSyncContext) -> c_int;
type Execute = unsafe extern "C-unwind" fn(*mut DdlSyncContext, *const c_char) -> c_int;
type SetSetting =
    unsafe extern "C-unwind" fn(*mut DdlSyncContext, *const c_char, *const c_char) -> c_int;

/// `DdlSyncAdapter` of the header.
#[repr(C)]
pub struct DdlSyncAdapter {
    pub abi_version: u32,
    pub name: *const c_char,
    pub dialect: *const c_char,
    pub init_context: Option<Step>,
    pub execute_ddl: Option<Execute>,
    pub cleanup_context: Option<Step>,
}

/// `DdlSyncContext` of the header.
#[repr(C)]
pub struct DdlSyncContext {
    pub dialect: *const c_char,
    pub database: *const c_char,
    pub search_path: *const c_char,
    pub role: *const c_char,
    pub role_switched: bool,
    pub private_data: *mut c_void,
    pub message: *const c_char,
    pub execute: Execute,
    pub set_setting: SetSetting,
    host: *mut c_void,
}

thread_local! {
    /// Adapters registered in this process, oldest first. Registered in the postmaster (from
    /// shared_preload_libraries), they are inherited by every backend it forks.
    static REGISTERED: RefCell<Vec<CAdapter>> = const { RefCell::new(Vec::new()) };
}

/// The adapters registered from C in this process, oldest first.
pub fn registered() -> Vec<CAdapter> {
    REGISTERED.with(|r| r.borrow().clone())
}

/// Registers a C adapter for its dialect; see the header. Errors are ERRORs (from `_PG_init`,
/// they stop the library from loading).
///
/// # Safety
/// `adapter` is NULL or points to a `DdlSyncAdapter` whose strings are NULL or NUL-terminated,
/// and whose callbacks have the header's signatures.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn ddl_sync_register_adapter(adapter: *const DdlSyncAdapter) {
    // SAFETY: the caller's promise: NULL or a valid struct, which we only read during the call.
    let adapter = match unsafe { adapter.as_ref() } {
        Some(a) => a,
        None => invalid("ddl_sync_register_adapter: the adapter is NULL".into()),
    };
    if adapter.abi_version != ABI_VERSION {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "ddl_sync adapter ABI version {} is not supported (this ddl_sync speaks version {ABI_VERSION})",
                adapter.abi_version
            ),
            "Rebuild the adapter against the ddl_sync_adapter.h installed with this ddl_sync."
        );
    }
    let text = |p: *const c_char, what: &str| -> String {
        // SAFETY: the caller's promise: the struct's strings are NULL or NUL-terminated.
        let s = unsafe { text_of(p) };
        if s.is_empty() {
            invalid(format!("ddl_sync adapter {what} must not be NULL or empty"));
        }
        s
    };
    let name = text(adapter.name, "name");
    let dialect = text(adapter.dialect, "dialect");
    let Some(execute_ddl) = adapter.execute_ddl else {
        invalid(format!("ddl_sync adapter \"{name}\" has no execute_ddl"));
    };
    REGISTERED.with(|r| {
        r.borrow_mut().push(CAdapter {
            name,
            dialect,
            init_context: adapter.init_context,
            execute_ddl,
            cleanup_context: adapter.cleanup_context,
        })
    });
}

fn invalid(message: String) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message
    );
}

/// A registered C adapter, as an [`Adapter`].
#[derive(Clone)]
pub struct CAdapter {
    name: String,
    dialect: String,
    init_context: Option<Step>,
    execute_ddl: Execute,
    cleanup_context: Option<Step>,
}

/// `private_data` between two callbacks. A pointer the C adapter owns; only this backend's
/// thread ever touches it.
struct Private(*mut c_void);
// SAFETY: see above; `Context::private` requires Send, and the pointer never leaves the thread.
unsafe impl Send for Private {}

/// What the host callbacks reach through `DdlSyncContext::host` during one call.
struct Bridge<'a> {
    ctx: &'a mut Context,
    host: &'a mut dyn Host,
    /// Keeps the text the last failing service put in `message` alive until the next call.
    message: CString,
}

impl CAdapter {
    /// Calls one callback with a `DdlSyncContext` made from `ctx`, and maps its result.
    fn call(
        &self,
        ctx: &mut Context,
        host: &mut dyn Host,
        f: impl FnOnce(*mut DdlSyncContext) -> c_int,
    ) -> Outcome {
        let text = |s: &str| CString::new(s.replace('\0', "")).unwrap_or_default();
        let (dialect, database, search_path, role) = (
            text(&ctx.dialect),
            text(&ctx.database),
            text(&ctx.search_path),
            text(&ctx.role),
        );
        let role_switched = ctx.role_switched;
        let private = ctx
            .private
            .take()
            .and_then(|p| p.downcast::<Private>().ok())
            .map_or(ptr::null_mut(), |p| p.0);
        let mut bridge = Bridge {
            ctx,
            host,
            message: CString::default(),
        };
        let mut c = DdlSyncContext {
            dialect: dialect.as_ptr(),
            database: database.as_ptr(),
            search_path: search_path.as_ptr(),
            role: role.as_ptr(),
            role_switched,
            private_data: private,
            message: ptr::null(),
            execute: host_execute,
            set_setting: host_set_setting,
            host: (&mut bridge as *mut Bridge<'_>).cast(),
        };
        // SAFETY: a C function pointer registered for this purpose; an ereport inside comes
        // back as a Rust panic (an ERROR for our caller), which is what the header promises.
        let code = unsafe { pg_guard_ffi_boundary(|| f(&mut c)) };
        // SAFETY: NULL, or a NUL-terminated string the adapter or a service set just now (see
        // `text_of` for its encoding).
        let message = unsafe { text_of(c.message) };
        let message = (!message.is_empty()).then_some(message);
        if !c.private_data.is_null() {
            bridge.ctx.private = Some(Box::new(Private(c.private_data)));
        }
        let why = || {
            message
                .clone()
                .unwrap_or_else(|| format!("adapter \"{}\" failed", self.name))
        };
        match code {
            SUCCESS => Outcome::Success,
            RETRYABLE => Outcome::Retryable(Failure::new(why())),
            FATAL => Outcome::fatal(why()),
            other => Outcome::fatal(format!(
                "adapter \"{}\" returned {other}, not a DdlSyncResult",
                self.name
            )),
        }
    }
}

impl Adapter for CAdapter {
    fn name(&self) -> &str {
        &self.name
    }
    fn dialect(&self) -> &str {
        &self.dialect
    }
    fn init_context(&self, ctx: &mut Context, host: &mut dyn Host) -> Outcome {
        match self.init_context {
            // SAFETY: the adapter's own callback, registered with the header's signature,
            // called with the context `call` made for it.
            Some(init) => self.call(ctx, host, |c| unsafe { init(c) }),
            None => Outcome::Success,
        }
    }
    fn execute_ddl(&self, ctx: &mut Context, host: &mut dyn Host, sql: &str) -> Outcome {
        let Ok(sql) = CString::new(sql) else {
            return Outcome::fatal("the statement contains a NUL byte");
        };
        let execute = self.execute_ddl;
        // SAFETY: as above.
        self.call(ctx, host, |c| unsafe { execute(c, sql.as_ptr()) })
    }
    fn cleanup_context(&self, ctx: &mut Context, host: &mut dyn Host) -> Outcome {
        let cleanup = match self.cleanup_context {
            // SAFETY: as above.
            Some(cleanup) => self.call(ctx, host, |c| unsafe { cleanup(c) }),
            None => Outcome::Success,
        };
        // The settings made through ctx->set_setting, whatever the adapter's cleanup did.
        cleanup.and(ctx.restore_settings(host))
    }
}

/// The text of a C string of the adapter ABI; empty for NULL.
///
/// Not converted from the database encoding: these are not server strings. Names and
/// dialects are registered from `_PG_init`, in the postmaster, before there is any database;
/// the statements, settings and messages an adapter hands back are in the encoding of the
/// strings ddl_sync gave it, UTF-8 (the replay runs only in UTF8 databases, see
/// `subscription::config`).
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn text_of(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// The bridge of a context ddl_sync made.
///
/// # Safety
/// `c` is a context made by [`CAdapter::call`], during that call, and no other reference to
/// its bridge is in use while the result lives.
unsafe fn bridge<'a>(c: *mut DdlSyncContext) -> &'a mut Bridge<'a> {
    // SAFETY: the caller's promise: `host` points to the Bridge on `call`'s stack, which
    // `call` does not touch until the adapter's callback returns.
    unsafe { &mut *((*c).host as *mut Bridge<'a>) }
}

/// Reports `outcome` to C: its code, and its reason in `message`.
///
/// # Safety
/// As [`bridge`], with `bridge` the one of `c`.
unsafe fn report(c: *mut DdlSyncContext, bridge: &mut Bridge<'_>, outcome: Outcome) -> c_int {
    let (code, why) = match outcome {
        Outcome::Success => return SUCCESS,
        Outcome::Retryable(why) => (RETRYABLE, why.message),
        Outcome::Fatal(why) => (FATAL, why.message),
        _ => (FATAL, "an outcome this version does not know".to_string()),
    };
    bridge.message = CString::new(why.replace('\0', "")).unwrap_or_default();
    // SAFETY: the caller's promise: `c` is live; the text stays in the bridge until the next
    // service call or the end of `call`, after the adapter has read it.
    unsafe { (*c).message = bridge.message.as_ptr() };
    code
}

/// `ctx->execute`.
///
/// # Safety
/// Called by a C adapter with the context ddl_sync gave its callback, during that callback,
/// and `sql` NULL or NUL-terminated.
#[pg_guard]
unsafe extern "C-unwind" fn host_execute(c: *mut DdlSyncContext, sql: *const c_char) -> c_int {
    // SAFETY: the caller's promise (the header's contract for this service).
    unsafe {
        let bridge = bridge(c);
        let outcome = bridge.host.execute(&text_of(sql));
        report(c, bridge, outcome)
    }
}

/// `ctx->set_setting`.
///
/// # Safety
/// As [`host_execute`], with `name` and `value` NULL or NUL-terminated.
#[pg_guard]
unsafe extern "C-unwind" fn host_set_setting(
    c: *mut DdlSyncContext,
    name: *const c_char,
    value: *const c_char,
) -> c_int {
    // SAFETY: the caller's promise (the header's contract for this service).
    unsafe {
        let bridge = bridge(c);
        let outcome = bridge
            .ctx
            .set_setting(bridge.host, &text_of(name), &text_of(value));
        report(c, bridge, outcome)
    }
}

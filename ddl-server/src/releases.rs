//! Which servers a build of these libraries may run in.
//!
//! PostgreSQL's magic block compares only the major. A minor release keeps what extensions use,
//! as a rule, but not always: the November 2026 minor releases (15.20, 16.16, 17.12, 18.7;
//! CVE-2026-6460's fix) made `ReorderBufferChange`'s data union 8 bytes longer, moving the
//! `node` after it. So the libraries depend on layouts only where they must, and say where:
//!
//! - The fields of logical decoding's structures that they read or write are pinned below at
//!   the offsets every known minor release of their major has (a field that majors place
//!   differently is pinned per major): the build fails if a header moves one. They never allocate those structures at their own idea of the size (the
//!   reorder buffer allocates and frees its changes), so growth after the pinned fields, as in
//!   November 2026, changes nothing they touch: a 15.18 build runs in 15.20 (e2e
//!   `debian_package` does exactly that on every run of 15).
//! - A minor release that moves a pinned field goes into [`LAYOUT_CHANGES`]; a build with older
//!   headers then refuses servers of that release or later.
//! - A build refuses a server of another major, an older minor release than its headers (which
//!   may call or describe what that server lacks), and any pre-release but its own (a beta or
//!   release candidate has the release's `PG_VERSION_NUM` but not always its layouts).

use pgrx::pg_sys;
use std::mem::{offset_of, size_of};

/// Fails the build when a header puts a field these libraries use somewhere else than every
/// known release of its major: a minor release that moves one must go into [`LAYOUT_CHANGES`]
/// (builds of older headers must refuse it) before the pin is changed.
macro_rules! pin_offsets {
    ($($ty:ident { $($($field:ident).+ : $offset:literal),+ $(,)? })*) => {
        $($(
            const _: () = assert!(
                offset_of!(pg_sys::$ty, $($field).+) == $offset,
                concat!(
                    stringify!($ty), ".", stringify!($($field).+),
                    " moved: add the release to LAYOUT_CHANGES before pinning its new offset"
                )
            );
        )+)*
    };
}

pin_offsets! {
    // ddl-decode's events.rs: fills a change the reorder buffer allocated, as decode.c fills
    // an INSERT (its relation, tuple and flag in the `tp` member of the data union).
    ReorderBufferChange {
        lsn: 0,
        action: 8,
        txn: 16,
        origin_id: 24,
        data: 32,
        data.tp.clear_toast_afterwards: 44,
        data.tp.oldtuple: 48,
        data.tp.newtuple: 56,
    }
    // ddl-decode: the plugin's memory, options and reorder buffer.
    LogicalDecodingContext {
        context: 0,
        reorder: 24,
        output_plugin_options: 224,
    }
}

// ddl-decode's events.rs: the (sub)transaction that wrote a record, found by its xid in the
// top-level transaction's list, and the origin a change inherits. 18 added fields before
// `node`: its place differs by major, not by minor release.
pin_offsets! {
    ReorderBufferTXN {
        xid: 4,
        origin_id: 64,
        subtxns: 208,
    }
}
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pin_offsets! {
    ReorderBufferTXN { node: 240 }
}
#[cfg(not(any(feature = "pg15", feature = "pg16", feature = "pg17")))]
pin_offsets! {
    ReorderBufferTXN { node: 256 }
}

// ddl-decode's pgoutput.rs hands pgoutput's `_PG_output_plugin_init` a structure of its own to
// fill: its size is the one layout these libraries allocate themselves.
const _: () = assert!(
    size_of::<pg_sys::OutputPluginCallbacks>() == 168,
    "OutputPluginCallbacks changed size: add the release to LAYOUT_CHANGES before pinning it"
);

/// Minor releases that moved a field pinned above, by major: a build with the headers of an
/// older release must not run in a server of that release or later. None so far: the changes
/// of 15.20, 16.16, 17.12 and 18.7 lie after every pinned field.
const LAYOUT_CHANGES: &[(u32, u32)] = &[];

/// Why a library built with the headers of PostgreSQL `built` (`PG_VERSION_NUM`) must not run
/// in a server of version `running`, or `None`.
pub fn headers_unfit(built: u32, running: u32) -> Option<String> {
    headers_unfit_across(built, running, LAYOUT_CHANGES)
}

/// [`headers_unfit`] with the layout changes `changes`.
fn headers_unfit_across(built: u32, running: u32, changes: &[(u32, u32)]) -> Option<String> {
    let (major, minor) = (built / 10000, built % 10000);
    let (running_major, running_minor) = (running / 10000, running % 10000);
    if running_major != major {
        return Some(format!(
            "it was built with the headers of PostgreSQL {major}.{minor}, and this server is \
             {running_major}.{running_minor}: install the build made for PostgreSQL \
             {running_major}"
        ));
    }
    if running_minor < minor {
        return Some(format!(
            "it was built with the headers of PostgreSQL {major}.{minor}, newer than this \
             server ({major}.{running_minor}), which may lack what they describe: install the \
             build made for {major}.{running_minor}, or update the server"
        ));
    }
    changes
        .iter()
        .find(|&&(m, at)| m == major && minor < at && at <= running_minor)
        .map(|(_, at)| {
            format!(
                "it was built with the headers of PostgreSQL {major}.{minor}, and this server is \
                 {major}.{running_minor}: {major}.{at} changed the layout of structures it uses; \
                 install a build made with the headers of {major}.{at} or later"
            )
        })
}

/// Why a library built with the headers of pre-release `built` (`PG_VERSION`, such as `19rc1`)
/// must not run in the server whose `server_version` is `running`, or `None`. A beta or release
/// candidate has the release's `PG_VERSION_NUM` (190000) but not always its layouts (19rc2 made
/// `ReorderBufferChange` longer), so such a build runs only in the server it was built for.
pub fn prerelease_unfit(built: &str, running: &str) -> Option<String> {
    // Debian's builds say which package they are (`19rc1 (Debian 19~rc1-1)`).
    let release = |v: &'_ str| v.split_whitespace().next().unwrap_or("").to_string();
    let (built, running) = (release(built), release(running));
    let prerelease = built.contains("beta") || built.contains("rc") || built.contains("devel");
    (prerelease && running != built).then(|| {
        format!(
            "it was built with the headers of PostgreSQL {built}, a pre-release, and this \
             server is {running}: install a build made with this server's headers"
        )
    })
}

/// Raises an ERROR naming `library` when this server is not one the headers it was built with
/// fit ([`headers_unfit`], [`prerelease_unfit`]): from `_PG_init`, so that the library never
/// loads into it.
pub fn refuse_unfit_server(library: &str) {
    // SAFETY: reads a setting that always exists, in any process that loads libraries.
    let running = unsafe {
        let value = pg_sys::GetConfigOption(c"server_version_num".as_ptr(), false, false);
        std::ffi::CStr::from_ptr(value)
            .to_str()
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
    };
    let Some(running) = running else {
        return;
    };
    // SAFETY: as above.
    let running_name = unsafe {
        let value = pg_sys::GetConfigOption(c"server_version".as_ptr(), false, false);
        std::ffi::CStr::from_ptr(value)
            .to_string_lossy()
            .into_owned()
    };
    let built_name = pg_sys::PG_VERSION.to_string_lossy();
    if let Some(why) = headers_unfit(pg_sys::PG_VERSION_NUM, running)
        .or_else(|| prerelease_unfit(&built_name, &running_name))
    {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{library} cannot run in this server: {why}")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{headers_unfit, headers_unfit_across, prerelease_unfit};

    #[test]
    fn a_build_runs_in_its_minor_release_and_every_later_one() {
        assert_eq!(headers_unfit(170011, 170011), None);
        assert_eq!(headers_unfit(160015, 160020), None);
        // Across the November 2026 change, which moved nothing pinned.
        assert_eq!(headers_unfit(170011, 170012), None);
        assert_eq!(headers_unfit(150018, 150020), None);
        let older = headers_unfit(170011, 170010).unwrap();
        assert!(
            older.contains("17.11, newer than this server (17.10)"),
            "{older}"
        );
        let major = headers_unfit(170011, 180006).unwrap();
        assert!(
            major.contains("install the build made for PostgreSQL 18"),
            "{major}"
        );
    }

    #[test]
    fn a_release_that_moves_a_pinned_field_ends_the_older_builds_run() {
        let changes = [(17, 14)];
        assert_eq!(headers_unfit_across(170011, 170013, &changes), None);
        let across = headers_unfit_across(170011, 170014, &changes).unwrap();
        assert!(across.contains("17.14 changed the layout"), "{across}");
        assert_eq!(headers_unfit_across(170014, 170015, &changes), None);
        assert_eq!(headers_unfit_across(160011, 160014, &changes), None);
    }

    #[test]
    fn a_prerelease_build_runs_only_in_its_own_server() {
        assert_eq!(prerelease_unfit("19rc1", "19rc1 (Debian 19~rc1-1)"), None);
        assert_eq!(
            prerelease_unfit("19rc1 (Debian 19~rc1-1)", "19rc1 (Debian 19~rc1-1)"),
            None
        );
        assert_eq!(prerelease_unfit("18.7", "18.8"), None);
        let later = prerelease_unfit("19rc1", "19rc2").unwrap();
        assert!(later.contains("PostgreSQL 19rc1, a pre-release"), "{later}");
        assert!(prerelease_unfit("19beta2", "19.0").is_some());
    }
}

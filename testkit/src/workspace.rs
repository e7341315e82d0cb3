//! Where this workspace is, for the tools that write into it.

use std::path::PathBuf;

/// The workspace root, found from this crate's manifest (testkit lives one level below it), so
/// the tools built from this workspace work from any directory.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit lives one level below the workspace root")
        .to_path_buf()
}

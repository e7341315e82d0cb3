//! Markdown reports that the tools rewrite one section at a time (BENCHMARKS.md for `cargo xtask
//! bench`, RELIABILITY.md for `reliability`, FIDELITY.md for `regress`), and the description of
//! the machine the figures come from.

use crate::cmd::Result;
use crate::{workspace_root, Cmd};

/// Where and when the figures were made.
pub struct Machine {
    /// UTC, `YYYY-MM-DD`.
    pub date: String,
    nproc: usize,
    cpu: String,
    rustc: String,
}

impl Machine {
    /// This machine, now.
    pub fn describe() -> Machine {
        let date = Cmd::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .probe()
            .unwrap_or_default();
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("model name")?
                        .split_once(':')
                        .map(|(_, m)| m.trim().to_string())
                })
            })
            .unwrap_or_else(|| "unknown CPU".to_string());
        let rustc = Cmd::new("rustc")
            .args(["--version"])
            .probe()
            .unwrap_or_default();
        Machine {
            date,
            nproc,
            cpu,
            rustc,
        }
    }

    /// `2 CPUs (nproc), <model name>; rustc ...`.
    pub fn line(&self) -> String {
        format!("{} CPUs (nproc), {}; {}", self.nproc, self.cpu, self.rustc)
    }
}

/// Rewrites the level-2 section titled `heading` of `file` (at the workspace root) with
/// `section`, keeping the other sections; a new file starts with `intro`.
pub fn write_section(file: &str, intro: &str, heading: &str, section: &str) -> Result {
    let path = workspace_root().join(file);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let old = if old.trim().is_empty() {
        intro.to_string()
    } else {
        old
    };
    std::fs::write(&path, replace_section(&old, heading, section))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("xtask: wrote the `{heading}` section of {}", path.display());
    Ok(())
}

/// `doc` with the level-2 section titled `heading` replaced by `section` (which starts with that
/// heading), or with `section` appended when there is none.
fn replace_section(doc: &str, heading: &str, section: &str) -> String {
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == heading) else {
        let sep = if doc.is_empty() || doc.ends_with("\n\n") {
            ""
        } else if doc.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return format!("{doc}{sep}{section}");
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |i| start + 1 + i);
    let mut out: String = lines[..start].concat();
    out.push_str(section);
    if end < lines.len() {
        out.push('\n');
        out.push_str(&lines[end..].concat());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_in_place_and_others_kept() {
        let new = "## Wire\n\nnew\n";
        assert_eq!(replace_section("", "## Wire", new), new);
        let doc = "# Benchmarks\n\nintro\n\n## Apply\n\na\n\n## Wire\n\nold\nold\n\n## Zed\n\nz\n";
        assert_eq!(
            replace_section(doc, "## Wire", new),
            "# Benchmarks\n\nintro\n\n## Apply\n\na\n\n## Wire\n\nnew\n\n## Zed\n\nz\n"
        );
        let last = "# B\n\n## Wire\n\nold\n";
        assert_eq!(
            replace_section(last, "## Wire", new),
            "# B\n\n## Wire\n\nnew\n"
        );
        assert_eq!(
            replace_section("# B\n", "## Wire", new),
            "# B\n\n## Wire\n\nnew\n"
        );
        // A level-3 heading inside the section belongs to it.
        let nested = "## Wire\n\n### detail\nold\n## Next\n";
        assert_eq!(
            replace_section(nested, "## Wire", new),
            "## Wire\n\nnew\n\n## Next\n"
        );
    }
}

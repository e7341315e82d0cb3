//! `cargo xtask tidy`: the house rules, as a test (after rust-analyzer's `tidy`). It reads the
//! sources and documents only, needs no PostgreSQL and builds nothing; `cargo xtask test` runs it
//! right after `cargo fmt --check`.
//!
//! The rules, each failure named `file:line: what`:
//!
//! 1. **Errors with a code.** No bare `error!(`/`pgrx::error!(` (always `XX000`) and no `.expect(`
//!    in the non-test code of the crates that link PostgreSQL: ERRORs go through
//!    `ddl_server::errors`. Test code is skipped: files named `tests.rs` or `*_tests.rs`, and the
//!    rest of a file from a `#[cfg(...test...)]` attribute on an inline `mod` (test modules come
//!    last in their file).
//! 2. **No unsafe where PostgreSQL is not linked.** Every crate root (`src/lib.rs`,
//!    `src/main.rs`, `src/bin/*.rs`) of a member without a `pgrx` dependency says
//!    `#![forbid(unsafe_code)]`, but for the [`UNSAFE_ALLOWED`] exceptions (none today).
//! 3. **Every module is documented.** Each `.rs` file under a member's `src/` starts with a `//!`
//!    comment.
//! 4. **One list of commands.** The command block of README.md (```` ```text xtask-commands ````)
//!    is [`COMMANDS`](crate::COMMANDS) (names, arguments, descriptions; spacing aside), every
//!    `cargo xtask <command>` written as code in a document names a command, and every
//!    `"usage: cargo xtask <command> ..."` in xtask's sources gives that command's arguments.
//! 5. **Versions agree.** Each crate's CHANGELOG.md opens with the section of its Cargo.toml
//!    version; the extension's control file takes its version from Cargo.toml, its newest
//!    upgrade script leads to that version from one whose install script is kept in
//!    `sql/released/`; SECURITY.md names the version and record format it describes.
//! 6. **Lints in one place.** Every member inherits `[workspace.lints]` (`[lints] workspace =
//!    true`), and no crate root sets one of those lints again.
//! 7. **ERRORs caught in one place.** `PgTryBuilder` appears in the non-test code of the crates
//!    that link PostgreSQL only in the files of [`ERROR_CATCHERS`]: an ERROR is caught with the
//!    subtransaction that undoes what raised it, or (the parser's) where nothing needs undoing,
//!    both in `ddl_server::xact`; anything else caught must be raised again.

use crate::{project_root, Result, COMMANDS};
use std::fs;
use std::path::{Path, PathBuf};

/// Members without PostgreSQL that may use `unsafe`: (directory, why). Empty: none needs it.
const UNSAFE_ALLOWED: &[(&str, &str)] = &[];

/// The files that may catch an ERROR (rule 7): (path, why).
const ERROR_CATCHERS: &[(&str, &str)] = &[
    (
        "ddl-server/src/xact.rs",
        "in_subtransaction, and catching_parser_error for the scanner and raw parser",
    ),
    (
        "ddl-apply/src/replay/stats.rs",
        "records a replay's ERROR and raises it again",
    ),
];

/// The extension's crate and name, whose versions rule 5 checks.
const EXTENSION_CRATE: &str = "ddl-apply";
const EXTENSION: &str = "ddl_sync";

/// The info string of README.md's command block.
const COMMAND_BLOCK: &str = "text xtask-commands";

pub fn run(args: &[&str]) -> Result {
    if let Some(a) = args.first() {
        return Err(format!("tidy: unexpected argument {a:?}"));
    }
    let root = project_root();
    let workspace = Workspace::read(&root)?;
    let mut problems = Vec::new();
    for member in &workspace.members {
        if member.links_postgres {
            errors_with_a_code(&root, member, &mut problems)?;
            errors_caught_in_one_place(&root, member, &mut problems)?;
        } else {
            no_unsafe(&root, member, &mut problems)?;
        }
        module_docs(&root, member, &mut problems)?;
        lints_inherited(&root, member, &workspace.lints, &mut problems)?;
        changelog_version(&root, member, &mut problems)?;
    }
    extension_versions(&root, &workspace, &mut problems)?;
    commands(&root, &mut problems)?;
    if problems.is_empty() {
        println!(
            "tidy: {} crates follow the house rules",
            workspace.members.len()
        );
        Ok(())
    } else {
        Err(format!(
            "tidy: {} house rule(s) broken (see xtask/src/tidy.rs):\n{}",
            problems.len(),
            problems.join("\n")
        ))
    }
}

/// The workspace as the rules see it.
struct Workspace {
    members: Vec<Member>,
    /// The lints of `[workspace.lints]`, as a crate root would name them (`clippy::x`).
    lints: Vec<String>,
}

struct Member {
    /// Its directory, relative to the root (`adapters/api`).
    dir: String,
    version: String,
    manifest: String,
    /// Whether it depends on pgrx (the server crates).
    links_postgres: bool,
}

impl Workspace {
    fn read(root: &Path) -> Result<Workspace> {
        let manifest = read(&root.join("Cargo.toml"))?;
        let mut members = Vec::new();
        for dir in workspace_members(&manifest) {
            let text = read(&root.join(&dir).join("Cargo.toml"))?;
            members.push(Member {
                version: package_version(&text)
                    .ok_or_else(|| format!("tidy: {dir}/Cargo.toml has no package version"))?,
                links_postgres: dependencies(&text).iter().any(|d| d == "pgrx"),
                manifest: text,
                dir,
            });
        }
        Ok(Workspace {
            members,
            lints: workspace_lints(&manifest),
        })
    }
}

// ---- rule 1: errors with a code ----

fn errors_with_a_code(root: &Path, member: &Member, problems: &mut Vec<String>) -> Result {
    for file in rust_files(&root.join(&member.dir).join("src"))? {
        if is_test_file(&file) {
            continue;
        }
        let text = read(&file)?;
        for (line, what) in bare_errors(&text) {
            problems.push(format!(
                "{}:{line}: {what} in server code: raise through ddl_server::errors \
                 (internal for our own faults, raise with a SQLSTATE otherwise)",
                relative(root, &file)
            ));
        }
    }
    Ok(())
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The bare `error!(` and `.expect(` of the non-test code of `text`: (line number, which).
fn bare_errors(text: &str) -> Vec<(usize, &'static str)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = test_code_start(&lines).unwrap_or(lines.len());
    let mut found = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let code = without_comment(line);
        if has_bare_error(code) {
            found.push((i + 1, "bare error!"));
        }
        if code.contains(".expect(") {
            found.push((i + 1, ".expect("));
        }
    }
    found
}

/// The index of the line where the test code at the end of a file starts: a `#[cfg(...)]`
/// whose predicate names `test`, on an inline `mod` (other attributes may come between).
fn test_code_start(lines: &[&str]) -> Option<usize> {
    (0..lines.len()).find(|&i| {
        is_test_cfg(lines[i])
            && lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.starts_with("#[") && !l.starts_with("//"))
                .is_some_and(is_inline_mod)
    })
}

fn is_test_cfg(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("#[cfg(")
        && line
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '"'))
            .any(|word| word == "test")
}

fn is_inline_mod(line: &str) -> bool {
    let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
    let line = line.strip_prefix("pub ").unwrap_or(line);
    line.starts_with("mod ") && line.ends_with('{')
}

/// `line` without its `//` comment (doc comments included). A `//` inside a string literal
/// cuts the line short too, which can only hide code, never invent it.
fn without_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// Whether `code` calls pgrx's `error!` macro: `error!(` alone or as `pgrx::error!(`, not another
/// crate's (`tracing::error!` logs) nor a longer name (`my_error!`).
fn has_bare_error(code: &str) -> bool {
    code.match_indices("error!(").any(|(at, _)| {
        let before = &code[..at];
        match before.chars().next_back() {
            None => true,
            Some(c) if c.is_alphanumeric() || c == '_' => false,
            Some(':') => before.ends_with("pgrx::"),
            Some(_) => true,
        }
    })
}

// ---- rule 2: no unsafe without PostgreSQL ----

fn no_unsafe(root: &Path, member: &Member, problems: &mut Vec<String>) -> Result {
    if UNSAFE_ALLOWED.iter().any(|(dir, _)| *dir == member.dir) {
        return Ok(());
    }
    for file in crate_roots(&root.join(&member.dir))? {
        let text = read(&file)?;
        if !text.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]") {
            problems.push(format!(
                "{}:1: a crate that does not link PostgreSQL needs `#![forbid(unsafe_code)]` \
                 (or an entry with its reason in tidy.rs's UNSAFE_ALLOWED)",
                relative(root, &file)
            ));
        }
    }
    Ok(())
}

/// `src/lib.rs`, `src/main.rs` and `src/bin/*.rs`, those that exist.
fn crate_roots(member: &Path) -> Result<Vec<PathBuf>> {
    let src = member.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|p| p.is_file())
        .collect();
    if src.join("bin").is_dir() {
        roots.extend(rust_files(&src.join("bin"))?);
    }
    Ok(roots)
}

// ---- rule 3: module docs ----

fn module_docs(root: &Path, member: &Member, problems: &mut Vec<String>) -> Result {
    for file in rust_files(&root.join(&member.dir).join("src"))? {
        let text = read(&file)?;
        if !text.trim_start().starts_with("//!") {
            problems.push(format!(
                "{}:1: a module starts with a `//!` comment that says what it is for",
                relative(root, &file)
            ));
        }
    }
    Ok(())
}

// ---- rule 4: one list of commands ----

fn commands(root: &Path, problems: &mut Vec<String>) -> Result {
    let expected: Vec<Entry> = COMMANDS
        .iter()
        .map(|c| Entry::new(c.name, c.args, c.what))
        .collect();
    let readme = read(&root.join("README.md"))?;
    match command_block(&readme) {
        None => problems.push(format!(
            "README.md:1: no ```{COMMAND_BLOCK} block (it lists `cargo xtask help`'s commands)"
        )),
        Some((line, listed)) => {
            if listed != expected {
                problems.push(format!(
                    "README.md:{line}: the command block differs from xtask's COMMANDS; it \
                     should read:\n{}",
                    crate::listing()
                ));
            }
        }
    }
    for file in documents(root)? {
        let text = read(&file)?;
        for (line, word) in xtask_mentions(&text) {
            let known = ["help", "--help", "-h"].contains(&word.as_str())
                || word.starts_with('<')
                || COMMANDS.iter().any(|c| c.name == word);
            if !known {
                problems.push(format!(
                    "{}:{line}: `cargo xtask {word}` is no command of xtask",
                    relative(root, &file)
                ));
            }
        }
    }
    for file in rust_files(&root.join("xtask/src"))? {
        if file.ends_with("tidy.rs") {
            continue; // its examples
        }
        let text = read(&file)?;
        for (line, name, args) in usage_strings(&text) {
            match COMMANDS.iter().find(|c| c.name == name) {
                Some(c) if squeeze(c.args) == squeeze(&args) => {}
                Some(c) => problems.push(format!(
                    "{}:{line}: usage of `{name}` says {args:?}, COMMANDS says {:?}",
                    relative(root, &file),
                    c.args
                )),
                None => problems.push(format!(
                    "{}:{line}: usage of `{name}`, which is not in COMMANDS",
                    relative(root, &file)
                )),
            }
        }
    }
    Ok(())
}

/// One line of the command list, spacing normalised.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    name: String,
    args: String,
    what: String,
}

impl Entry {
    fn new(name: &str, args: &str, what: &str) -> Entry {
        Entry {
            name: name.to_string(),
            args: squeeze(args),
            what: squeeze(what),
        }
    }
}

/// Runs of whitespace as one space, trimmed.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The entries of the ```` ```text xtask-commands ```` block and the line it starts on. An
/// entry is `cargo xtask <name> <args>`, two or more spaces, its description; a line that starts
/// with a space continues the description (or, after a command alone on its line, is it).
fn command_block(markdown: &str) -> Option<(usize, Vec<Entry>)> {
    let mut lines = markdown.lines().enumerate();
    let (start, _) = lines
        .by_ref()
        .find(|(_, l)| l.trim() == format!("```{COMMAND_BLOCK}"))?;
    let mut entries: Vec<Entry> = Vec::new();
    for (_, line) in lines {
        if line.trim_start().starts_with("```") {
            return Some((start + 1, entries));
        }
        if let Some(command) = line.strip_prefix("cargo xtask ") {
            let (command, what) = command.split_once("  ").unwrap_or((command, ""));
            let (name, args) = command
                .trim()
                .split_once(' ')
                .unwrap_or((command.trim(), ""));
            entries.push(Entry::new(name, args, what));
        } else if let Some(last) = entries.last_mut() {
            last.what = squeeze(&format!("{} {line}", last.what));
        }
    }
    None
}

/// `cargo xtask <word>` written as code (in backticks, or in a fenced block): (line, word),
/// after any `--pg N`. A code span that closes after `xtask` names no command.
fn xtask_mentions(markdown: &str) -> Vec<(usize, String)> {
    // Words with their line, and whether they are code: a fence's lines, or a span that opens
    // with the word.
    let mut words: Vec<(usize, &str, bool)> = Vec::new();
    let mut fenced = false;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        words.extend(line.split_whitespace().map(|w| (i + 1, w, fenced)));
    }
    let mut found = Vec::new();
    for (at, pair) in words.windows(2).enumerate() {
        let [(line, cargo, fenced), (_, xtask, _)] = pair else {
            continue;
        };
        let code = *fenced || cargo.trim_start_matches('(').starts_with('`');
        if !code || cargo.trim_start_matches(['`', '(']) != "cargo" || *xtask != "xtask" {
            continue;
        }
        let mut rest = words[at + 2..].iter().map(|(_, w, _)| *w);
        let mut word = rest.next();
        if word == Some("--pg") {
            rest.next();
            word = rest.next();
        }
        // The command is the word's leading name (`package` of `package`/`install`).
        let word = word.unwrap_or("");
        let end = word
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_<>".contains(c)))
            .unwrap_or(word.len());
        if end > 0 {
            found.push((*line, word[..end].to_string()));
        }
    }
    found
}

/// `"usage: cargo xtask <name> <args>"` literals in Rust source: (line, name, args).
fn usage_strings(source: &str) -> Vec<(usize, String, String)> {
    const START: &str = "\"usage: cargo xtask ";
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let line = without_comment(line);
        let Some(at) = line.find(START) else { continue };
        let rest = &line[at + START.len()..];
        let Some(end) = rest.find('"') else { continue };
        let usage = &rest[..end];
        if usage.starts_with('[') {
            continue; // the whole usage of main.rs
        }
        let (name, args) = usage.split_once(' ').unwrap_or((usage, ""));
        found.push((i + 1, name.to_string(), args.to_string()));
    }
    found
}

/// The Markdown files a reader follows: every `.md` of the repository but the changelogs
/// (history may name commands since renamed).
fn documents(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    walk(root, &mut |path| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".md") && name != "CHANGELOG.md" {
            found.push(path.to_path_buf());
        }
    })?;
    found.sort();
    Ok(found)
}

// ---- rule 5: versions ----

fn changelog_version(root: &Path, member: &Member, problems: &mut Vec<String>) -> Result {
    let path = root.join(&member.dir).join("CHANGELOG.md");
    if !path.is_file() {
        return Ok(());
    }
    let text = read(&path)?;
    match top_section_version(&text) {
        Some((_, version)) if version == member.version => {}
        Some((line, version)) => problems.push(format!(
            "{}/CHANGELOG.md:{line}: the top section is {version}, Cargo.toml says {}",
            member.dir, member.version
        )),
        None => problems.push(format!(
            "{}/CHANGELOG.md:1: no `## <version>` section",
            member.dir
        )),
    }
    Ok(())
}

/// The version of the first `## ` heading: (line, version).
fn top_section_version(changelog: &str) -> Option<(usize, String)> {
    let (i, heading) = changelog
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("## "))?;
    let version = heading[3..]
        .split(|c: char| c.is_whitespace() || c == '(')
        .find(|w| parse_version(w).is_some())?;
    Some((i + 1, version.to_string()))
}

fn extension_versions(root: &Path, workspace: &Workspace, problems: &mut Vec<String>) -> Result {
    let Some(member) = workspace.members.iter().find(|m| m.dir == EXTENSION_CRATE) else {
        problems.push(format!(
            "Cargo.toml:1: the extension's crate {EXTENSION_CRATE} is no member"
        ));
        return Ok(());
    };
    let version = &member.version;
    let dir = root.join(EXTENSION_CRATE);
    let control = format!("{EXTENSION_CRATE}/{EXTENSION}.control");
    let text = read(&root.join(&control))?;
    match control_default_version(&text) {
        Some((_, v)) if v == "@CARGO_VERSION@" || v == *version => {}
        Some((line, v)) => problems.push(format!(
            "{control}:{line}: default_version is {v:?}: '@CARGO_VERSION@' (Cargo.toml's {version})"
        )),
        None => problems.push(format!("{control}:1: no default_version")),
    }
    let mut scripts = Vec::new();
    for entry in read_dir(&dir.join("sql"))? {
        if let Some(name) = entry.file_name().and_then(|n| n.to_str()) {
            scripts.extend(upgrade_script(name));
        }
    }
    match scripts.iter().max_by_key(|(_, to)| parse_version(to)) {
        Some((from, to)) if to == version => {
            let released = format!("sql/released/{EXTENSION}--{from}.sql");
            if !dir.join(&released).is_file() {
                problems.push(format!(
                    "{EXTENSION_CRATE}/sql/{EXTENSION}--{from}--{to}.sql:1: the install script of \
                     {from}, which it updates, is not kept as {EXTENSION_CRATE}/{released}"
                ));
            }
        }
        Some((from, to)) => problems.push(format!(
            "{EXTENSION_CRATE}/sql/{EXTENSION}--{from}--{to}.sql:1: the newest upgrade script \
             leads to {to}, Cargo.toml says {version} (README.md there: \"Bumping the version\")"
        )),
        None => problems.push(format!("{EXTENSION_CRATE}/sql:1: no upgrade script")),
    }
    let security = read(&root.join("SECURITY.md"))?;
    let format = ddl_wire::RECORD_FORMAT_VERSION.to_string();
    match described_version(&security) {
        Some((_, v, f)) if v == *version && f == format => {}
        Some((line, v, f)) => problems.push(format!(
            "SECURITY.md:{line}: describes {EXTENSION} {v} (record format {f}); the crates are at \
             {version} (record format {format}): is the rest of the file current too?"
        )),
        None => problems.push(format!(
            "SECURITY.md:1: no longer says which version it describes \
             (\"describes `{EXTENSION}` X.Y.Z (record format N)\")"
        )),
    }
    Ok(())
}

/// `default_version = '...'` of a control file: (line, value).
fn control_default_version(control: &str) -> Option<(usize, String)> {
    control.lines().enumerate().find_map(|(i, l)| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "default_version")
            .then(|| (i + 1, value.trim().trim_matches('\'').to_string()))
    })
}

/// `ddl_sync--FROM--TO.sql`: (FROM, TO).
fn upgrade_script(name: &str) -> Option<(String, String)> {
    let versions = name
        .strip_prefix(EXTENSION)?
        .strip_prefix("--")?
        .strip_suffix(".sql")?;
    let (from, to) = versions.split_once("--")?;
    parse_version(from)?;
    parse_version(to)?;
    Some((from.to_string(), to.to_string()))
}

/// SECURITY.md's "describes `ddl_sync` X.Y.Z (record format N)": (line, version, format).
fn described_version(text: &str) -> Option<(usize, String, String)> {
    let key = format!("describes `{EXTENSION}` ");
    let flat = text.replace('\n', " ");
    let at = flat.find(&key)?;
    let line = text[..at].matches('\n').count() + 1;
    let mut words = flat[at + key.len()..].split_whitespace();
    let version = words.next()?.to_string();
    parse_version(&version)?;
    let format = match (words.next(), words.next(), words.next()) {
        (Some("(record"), Some("format"), Some(n)) => n.trim_end_matches([')', ',', '.']),
        _ => "",
    };
    Some((line, version, format.to_string()))
}

fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.split('.');
    let version = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    parts.next().is_none().then_some(version)
}

// ---- rule 6: lints in one place ----

fn lints_inherited(
    root: &Path,
    member: &Member,
    lints: &[String],
    problems: &mut Vec<String>,
) -> Result {
    if !inherits_lints(&member.manifest) {
        problems.push(format!(
            "{}/Cargo.toml:1: add `[lints]` with `workspace = true` (the lints every crate shares)",
            member.dir
        ));
    }
    for file in crate_roots(&root.join(&member.dir))? {
        let text = read(&file)?;
        for (i, line) in text.lines().enumerate() {
            if let Some(lint) = crate_lint(line).filter(|l| lints.contains(l)) {
                problems.push(format!(
                    "{}:{}: {lint} is set in [workspace.lints] already",
                    relative(root, &file),
                    i + 1
                ));
            }
        }
    }
    Ok(())
}

/// Whether a manifest has `[lints]` with `workspace = true`.
fn inherits_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && squeeze(line) == "workspace = true" {
            return true;
        }
    }
    manifest
        .lines()
        .any(|l| squeeze(l) == "lints.workspace = true")
}

/// The lint of a crate-level `#![deny(x)]`, `#![warn(x)]` or `#![forbid(x)]`.
fn crate_lint(line: &str) -> Option<String> {
    let inner = line.trim().strip_prefix("#![")?.strip_suffix(")]")?;
    let (level, lint) = inner.split_once('(')?;
    ["deny", "warn", "forbid"]
        .contains(&level)
        .then(|| lint.trim().to_string())
}

/// `[workspace.lints.rust]` and `[workspace.lints.<tool>]` keys, as `name` and `tool::name`.
fn workspace_lints(manifest: &str) -> Vec<String> {
    let mut lints = Vec::new();
    let mut tool: Option<&str> = None;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            tool = header
                .strip_suffix(']')
                .and_then(|h| h.strip_prefix("workspace.lints."));
        } else if let (Some(tool), Some((key, _))) = (tool, line.split_once('=')) {
            let key = key.trim();
            lints.push(if tool == "rust" {
                key.to_string()
            } else {
                format!("{tool}::{key}")
            });
        }
    }
    lints
}

// ---- manifests ----

/// The `members = [...]` of a workspace manifest.
fn workspace_members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members = [") else {
        return Vec::new();
    };
    let list = &manifest[start + "members = [".len()..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.lines()
        .map(|l| without_hash_comment(l).trim().trim_end_matches(','))
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_matches('"').to_string())
        .collect()
}

fn without_hash_comment(line: &str) -> &str {
    line.find('#').map_or(line, |at| &line[..at])
}

/// `version = "..."` of `[package]`.
fn package_version(manifest: &str) -> Option<String> {
    section(manifest, "[package]").find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "version").then(|| value.trim().trim_matches('"').to_string())
    })
}

/// The names in `[dependencies]`.
fn dependencies(manifest: &str) -> Vec<String> {
    section(manifest, "[dependencies]")
        .filter_map(|l| {
            let key = l.split(['=', '.']).next()?.trim();
            (!key.is_empty() && !key.starts_with('#')).then(|| key.to_string())
        })
        .collect()
}

/// The lines of section `header` of a manifest.
fn section<'a>(manifest: &'a str, header: &'a str) -> impl Iterator<Item = &'a str> {
    manifest
        .lines()
        .map(str::trim)
        .skip_while(move |l| *l != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
}

// ---- rule 7: ERRORs caught in one place ----

fn errors_caught_in_one_place(root: &Path, member: &Member, problems: &mut Vec<String>) -> Result {
    for file in rust_files(&root.join(&member.dir).join("src"))? {
        let path = relative(root, &file);
        if is_test_file(&file) || ERROR_CATCHERS.iter().any(|(allowed, _)| *allowed == path) {
            continue;
        }
        let text = read(&file)?;
        let lines: Vec<&str> = text.lines().collect();
        let end = test_code_start(&lines).unwrap_or(lines.len());
        for (at, line) in lines[..end].iter().enumerate() {
            if without_comment(line).contains("PgTryBuilder") {
                problems.push(format!(
                    "{path}:{}: an ERROR caught outside ddl_server::xact: run it with \
                     xact::in_subtransaction (or add the file to tidy.rs's ERROR_CATCHERS, with \
                     why nothing needs undoing)",
                    at + 1
                ));
            }
        }
    }
    Ok(())
}

// ---- files ----

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| format!("tidy: cannot read {}: {e}", path.display()))
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("tidy: cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Every file under `dir`, skipping hidden directories and build output.
fn walk(dir: &Path, each: &mut dyn FnMut(&Path)) -> Result {
    for path in read_dir(dir)? {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, each)?;
            }
        } else {
            each(&path);
        }
    }
    Ok(())
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    walk(dir, &mut |path| {
        if path.extension().is_some_and(|e| e == "rs") {
            found.push(path.to_path_buf());
        }
    })?;
    Ok(found)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_errors_are_found_outside_tests_and_comments() {
        let source = "\
//! Uses `error!(...)` in a comment only.
fn a() {
    error!(\"ddl_sync: x\");
    pgrx::error!(\"y\");
    tracing::error!(\"logged\");
    my_error!(\"other\");
    ddl_server::errors::internal(\"fine\"); // not error!(
    let x = y.expect(\"z\");
    let w = y.expect_err(\"ok\");
}

#[cfg(any(test, feature = \"pg_test\"))]
#[pg_schema]
mod tests {
    fn t() { x.expect(\"fine in tests\"); error!(\"too\"); }
}
";
        assert_eq!(
            bare_errors(source),
            vec![(3, "bare error!"), (4, "bare error!"), (8, ".expect(")]
        );
    }

    #[test]
    fn a_cfg_test_item_that_is_no_inline_module_ends_nothing() {
        let lines = [
            "#[cfg(any(test, feature = \"pg_test\"))]",
            "mod catalog_tests;",
            "fn after() { x.expect(\"y\") }",
            "#[cfg(test)]",
            "pub mod pg_test {",
        ];
        assert_eq!(test_code_start(&lines), Some(3));
        assert!(!is_test_cfg("#[cfg(feature = \"pg_test\")]"));
        assert!(is_test_cfg("#[cfg(test)]"));
    }

    #[test]
    fn the_command_block_is_read_with_its_continuations() {
        let readme = "\
# x

```text xtask-commands
cargo xtask demo [--keep]     DDL replication
                              end to end
cargo xtask setup             install it all
cargo xtask bench <wire|decode> [options]
                              the benchmarks
```
";
        let (line, entries) = command_block(readme).unwrap();
        assert_eq!(line, 3);
        assert_eq!(
            entries,
            vec![
                Entry::new("demo", "[--keep]", "DDL replication end to end"),
                Entry::new("setup", "", "install it all"),
                Entry::new("bench", "<wire|decode> [options]", "the benchmarks"),
            ]
        );
        assert!(command_block("no block").is_none());
    }

    #[test]
    fn the_listing_reads_back_as_the_commands() {
        let readme = format!("```{COMMAND_BLOCK}\n{}```\n", crate::listing());
        let (_, entries) = command_block(&readme).unwrap();
        let expected: Vec<Entry> = COMMANDS
            .iter()
            .map(|c| Entry::new(c.name, c.args, c.what))
            .collect();
        assert_eq!(entries, expected);
    }

    #[test]
    fn mentions_are_code_only() {
        let text = "\
Run `cargo xtask test`, or `cargo\nxtask --pg 17 demo`; every cargo xtask starts is prose.
The `cargo xtask` command: (`cargo xtask frobnicate`/`install`).

```sh
cargo xtask package --deb
```
";
        assert_eq!(
            xtask_mentions(text),
            vec![
                (1, "test".to_string()),
                (1, "demo".to_string()),
                (3, "frobnicate".to_string()),
                (6, "package".to_string()),
            ]
        );
    }

    #[test]
    fn usage_strings_give_name_and_arguments() {
        let source = "const USAGE: &str = \"usage: cargo xtask regress [--groups N] [--debug]\";\n\
                      const MAIN: &str = \"usage: cargo xtask [--pg 15] <command>\";\n\
                      Err(\"usage: cargo xtask install\".into())";
        assert_eq!(
            usage_strings(source),
            vec![
                (
                    1,
                    "regress".to_string(),
                    "[--groups N] [--debug]".to_string()
                ),
                (3, "install".to_string(), String::new()),
            ]
        );
    }

    #[test]
    fn versions_are_read_from_changelogs_scripts_and_prose() {
        assert_eq!(
            top_section_version("# Changelog\n\n## 0.4.0 - unreleased\n\n## 0.3.0\n"),
            Some((3, "0.4.0".to_string()))
        );
        assert_eq!(
            top_section_version("# C\n## 0.2.0 (unreleased)\n"),
            Some((2, "0.2.0".to_string()))
        );
        assert_eq!(top_section_version("# C\n## Unreleased\n"), None);
        assert_eq!(
            upgrade_script("ddl_sync--0.3.0--0.4.0.sql"),
            Some(("0.3.0".to_string(), "0.4.0".to_string()))
        );
        assert_eq!(upgrade_script("ddl_sync--0.4.0.sql"), None);
        assert_eq!(upgrade_script("apply.sql"), None);
        assert_eq!(
            control_default_version("comment = 'x'\ndefault_version = '@CARGO_VERSION@'\n"),
            Some((2, "@CARGO_VERSION@".to_string()))
        );
        assert_eq!(
            described_version(
                "# Security\n\nIt\ndescribes `ddl_sync` 0.4.0 (record format 4) on 15\n"
            ),
            Some((4, "0.4.0".to_string(), "4".to_string()))
        );
        assert_eq!(
            described_version("It describes `ddl_sync`\n0.3.0 (record\nformat 2)."),
            Some((1, "0.3.0".to_string(), "2".to_string()))
        );
        assert!(parse_version("0.4.0").is_some());
        assert!(parse_version("0.4").is_none());
        assert!(parse_version("0.4.0.1").is_none());
    }

    #[test]
    fn manifests_are_read_as_the_rules_need() {
        let root =
            "[workspace]\nmembers = [\n    \"ddl-wire\",\n    \"adapters/api\", # the API\n]\n\n\
                    [workspace.lints.rust]\nunsafe_op_in_unsafe_fn = \"deny\"\n\n\
                    [workspace.lints.clippy]\nundocumented_unsafe_blocks = \"deny\"\n\n\
                    [workspace.dependencies]\npgrx = \"=0.19.4\"\n";
        assert_eq!(workspace_members(root), vec!["ddl-wire", "adapters/api"]);
        assert_eq!(
            workspace_lints(root),
            vec![
                "unsafe_op_in_unsafe_fn",
                "clippy::undocumented_unsafe_blocks"
            ]
        );
        let member =
            "[package]\nname = \"x\"\nversion = \"0.4.0\"\n\n[lints]\nworkspace = true\n\n\
                      [dependencies]\npgrx.workspace = true\nddl-server = { path = \"../s\" }\n";
        assert_eq!(package_version(member).as_deref(), Some("0.4.0"));
        assert_eq!(dependencies(member), vec!["pgrx", "ddl-server"]);
        assert!(inherits_lints(member));
        assert!(!inherits_lints("[package]\nworkspace = true\n"));
        assert_eq!(
            crate_lint("#![deny(clippy::undocumented_unsafe_blocks)]").as_deref(),
            Some("clippy::undocumented_unsafe_blocks")
        );
        assert_eq!(
            crate_lint("#![forbid(unsafe_code)]").as_deref(),
            Some("unsafe_code")
        );
        assert_eq!(crate_lint("#![allow(dead_code)]"), None);
    }
}

//! A plain `pg_dump` script, cut into its archive entries: see README.md.
//!
//! pg_dump writes each entry of its table of contents after a three-line header,
//!
//! ```text
//! --
//! -- Name: customers; Type: TABLE; Schema: shop; Owner: app_owner
//! --
//! ```
//!
//! (`Schema` and `Owner` are `-` where they do not apply, and a `; Tablespace: ...` field may
//! follow). Everything before the first header is the preamble; the closing comment
//! (`-- PostgreSQL database dump complete`) and what follows it is the trailer, so that an
//! object's block is the same whether it comes last in its dump or not.

#![forbid(unsafe_code)]

/// A script: the preamble, then the blocks in the order pg_dump wrote them (dependencies first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub preamble: String,
    pub blocks: Vec<Block>,
    pub trailer: String,
}

/// One archive entry: its header's fields and its whole text (header included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub name: String,
    /// `TABLE`, `FUNCTION`, `ACL`, `COMMENT`, `DEFAULT`, `CONSTRAINT`, ...
    pub kind: String,
    /// `None` where the header says `-`.
    pub schema: Option<String>,
    /// `None` where the header says `-`.
    pub owner: Option<String>,
    /// The header and the statements, up to the last non-blank line.
    pub text: String,
    /// The `SET` statements pg_dump wrote just before the header (`default_tablespace`,
    /// `default_table_access_method`, when they change): not part of the object, but of what
    /// follows it, whether this block runs or not.
    pub context: String,
}

/// What names an object across two dumps: type, schema, name (not the owner, which may differ).
pub type Key<'a> = (&'a str, Option<&'a str>, &'a str);

impl Block {
    pub fn key(&self) -> Key<'_> {
        (&self.kind, self.schema.as_deref(), &self.name)
    }

    /// `TYPE schema.name` (or `TYPE name`), for messages.
    pub fn describe(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{} {schema}.{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

impl Script {
    /// Cuts `dump` into its preamble and blocks; text that is not a pg_dump script is all
    /// preamble.
    pub fn parse(dump: &str) -> Script {
        let lines: Vec<&str> = dump
            .lines()
            .filter(|l| !l.starts_with("\\restrict ") && !l.starts_with("\\unrestrict "))
            .collect();
        let mut preamble = String::new();
        let mut blocks: Vec<Block> = Vec::new();
        let mut trailer: Option<String> = None;
        for (i, line) in lines.iter().enumerate() {
            let next = lines.get(i + 1).copied();
            if *line == "--" && trailer.is_none() {
                if let Some(block) = next.and_then(parse_header) {
                    blocks.push(block);
                } else if next == Some(TRAILER) {
                    trailer = Some(String::new());
                }
            }
            let text = match (&mut trailer, blocks.last_mut()) {
                (Some(trailer), _) => trailer,
                (None, Some(block)) => &mut block.text,
                (None, None) => &mut preamble,
            };
            text.push_str(line);
            text.push('\n');
        }
        move_context(&mut blocks);
        Script {
            preamble,
            blocks,
            trailer: trailer.unwrap_or_default(),
        }
    }

    /// The script of the preamble and the blocks `keep` accepts, in order, with every block's
    /// context (the settings later blocks rely on).
    pub fn select(&self, mut keep: impl FnMut(&Block) -> bool) -> String {
        let mut out = self.preamble.clone();
        for block in &self.blocks {
            out.push_str(&block.context);
            if keep(block) {
                out.push_str(&block.text);
                out.push('\n');
            }
        }
        out
    }
}

/// Moves the `SET` lines at the end of each block (pg_dump's settings for the next object) to
/// the next block's context, and the blank lines after a block's last statement out of it, so
/// that an object's block reads the same wherever it stands in its dump.
fn move_context(blocks: &mut [Block]) {
    let mut carried = String::new();
    for block in blocks.iter_mut() {
        let mut lines: Vec<&str> = block.text.lines().collect();
        let mut settings = Vec::new();
        while let Some(last) = lines.last() {
            if last.trim().is_empty() {
                lines.pop();
            } else if last.starts_with("SET ") {
                settings.push(*last);
                lines.pop();
            } else {
                break;
            }
        }
        settings.reverse();
        block.context = std::mem::replace(
            &mut carried,
            settings.iter().map(|l| format!("{l}\n")).collect(),
        );
        block.text = lines.iter().map(|l| format!("{l}\n")).collect();
    }
}

/// The comment pg_dump closes a script with.
const TRAILER: &str = "-- PostgreSQL database dump complete";

/// `-- Name: n; Type: t; Schema: s; Owner: o[; Tablespace: x]` as a block without text.
fn parse_header(line: &str) -> Option<Block> {
    let fields = line.strip_prefix("-- Name: ")?;
    let (name, rest) = fields.split_once("; Type: ")?;
    let (kind, rest) = rest.split_once("; Schema: ")?;
    let (schema, rest) = rest.split_once("; Owner: ")?;
    let owner = rest.split_once("; Tablespace: ").map_or(rest, |(o, _)| o);
    let dash = |s: &str| (s != "-").then(|| s.to_string());
    Some(Block {
        name: name.to_string(),
        kind: kind.to_string(),
        schema: dash(schema),
        owner: dash(owner),
        text: String::new(),
        context: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "\\restrict abc
SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);

--
-- Name: shop; Type: SCHEMA; Schema: -; Owner: app_owner
--

CREATE SCHEMA shop;


ALTER SCHEMA shop OWNER TO app_owner;

SET default_table_access_method = heap;

--
-- Name: customers; Type: TABLE; Schema: shop; Owner: app_owner; Tablespace: fast
--

CREATE TABLE shop.customers (
    id bigint NOT NULL
);

--
-- PostgreSQL database dump complete
--

\\unrestrict abc
";

    #[test]
    fn cuts_a_dump_into_its_preamble_and_entries() {
        let script = Script::parse(DUMP);
        assert_eq!(
            script.preamble,
            "SET statement_timeout = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\n\n"
        );
        let keys: Vec<Key> = script.blocks.iter().map(Block::key).collect();
        assert_eq!(
            keys,
            [
                ("SCHEMA", None, "shop"),
                ("TABLE", Some("shop"), "customers")
            ]
        );
        assert_eq!(script.blocks[1].owner.as_deref(), Some("app_owner"));
        assert!(script.blocks[0]
            .text
            .contains("ALTER SCHEMA shop OWNER TO app_owner;"));
        // The closing comment is no block's: the last object's block is as anywhere else.
        assert!(script.blocks[1]
            .text
            .ends_with("    id bigint NOT NULL\n);\n"));
        assert!(script
            .trailer
            .starts_with("--\n-- PostgreSQL database dump complete\n"));
        assert!(!script.select(|_| true).contains("restrict"));
    }

    #[test]
    fn select_keeps_the_preamble_and_the_chosen_blocks_in_order() {
        let script = Script::parse(DUMP);
        let only_table = script.select(|b| b.kind == "TABLE");
        assert!(only_table.starts_with("SET statement_timeout"));
        assert!(only_table.contains("CREATE TABLE shop.customers"));
        assert!(!only_table.contains("CREATE SCHEMA"));
        assert_eq!(script.blocks[1].describe(), "TABLE shop.customers");
    }

    #[test]
    fn settings_between_blocks_are_the_next_blocks_context() {
        let script = Script::parse(DUMP);
        assert!(script.blocks[0]
            .text
            .ends_with("ALTER SCHEMA shop OWNER TO app_owner;\n"));
        assert_eq!(
            script.blocks[1].context,
            "SET default_table_access_method = heap;\n"
        );
        // Kept when the block before it is left out: later blocks rely on it.
        let only_table = script.select(|b| b.kind == "TABLE");
        assert!(
            only_table.contains("SET default_table_access_method = heap;\n--\n-- Name: customers")
        );
        let neither = script.select(|_| false);
        assert!(neither.ends_with("SET default_table_access_method = heap;\n"));
    }

    #[test]
    fn text_that_is_not_a_dump_is_all_preamble() {
        for text in [
            "",
            "--\n-- Name: x\n--\n",
            "SELECT 1;\n-- Name: a; Type: TABLE\n",
        ] {
            let script = Script::parse(text);
            assert!(script.blocks.is_empty(), "{text:?}");
        }
    }
}

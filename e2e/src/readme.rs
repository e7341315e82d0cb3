//! The runnable blocks of a README section, so that a test can run the documentation itself.
//!
//! The convention (README.md, "Quickstart"): every fenced block of the section says where it
//! runs after its language, ```` ```sql publisher ````, ```` ```sh subscriber ````,
//! ```` ```conf publisher ```` (postgresql.conf lines), ```` ```sh install ```` (installing the
//! package); GitHub shows them by their language alone. A ```` ```text ```` block is what the
//! runnable block before it prints. A block with neither is an error: the section must not
//! hold commands that nothing checks.

/// One runnable block, with what it prints when the README says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// `sql`, `sh` or `conf`.
    pub lang: String,
    /// Where it runs: `publisher`, `subscriber`, `install`, ...
    pub node: String,
    /// The block's text, lines joined with `\n`, ending with one.
    pub text: String,
    /// The `text` block after it, if any.
    pub expected: Option<String>,
    /// The line of the opening fence (1-based), for messages.
    pub line: usize,
}

/// The blocks of the section under the heading line `heading` (e.g. `## Quickstart`), up to
/// the next heading of the same or a higher level. Panics on a block without a place to run,
/// on an output block with no block before it, on an unclosed fence and on a missing section.
pub fn section_blocks(markdown: &str, heading: &str) -> Vec<Block> {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let mut lines = markdown.lines().enumerate();
    lines
        .find(|(_, l)| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let mut blocks: Vec<Block> = Vec::new();
    while let Some((i, line)) = lines.next() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let mut text = String::new();
        loop {
            let (_, l) = lines
                .next()
                .unwrap_or_else(|| panic!("line {}: the block never ends", i + 1));
            if l.trim_end() == "```" {
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        let mut words = info.split_whitespace();
        match (words.next(), words.next()) {
            (Some("text"), None) => {
                let before = blocks.last_mut().filter(|b| b.expected.is_none());
                before
                    .unwrap_or_else(|| panic!("line {}: output block with no block before", i + 1))
                    .expected = Some(text);
            }
            (Some(lang), Some(node)) => blocks.push(Block {
                lang: lang.to_string(),
                node: node.to_string(),
                text,
                expected: None,
                line: i + 1,
            }),
            _ => panic!(
                "line {}: block ```{info} says no place to run (```sql publisher, ...): \
                 the test would not run it",
                i + 1
            ),
        }
    }
    blocks
}

/// The `name = value` settings of a postgresql.conf block (comments and blank lines skipped,
/// one level of single quotes taken off).
pub fn conf_settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, value) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not a setting: {l:?}"));
            let value = value.trim();
            let value = value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or(value);
            (name.trim().to_string(), value.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# Title

## Quickstart

Prose.

```conf publisher
wal_level = logical   # needed
shared_preload_libraries = 'ddl_pgoutput'
```

```sql subscriber
SELECT 1;
```
```text
 ?column?
----------
        1
```

### A subsection stays in the section

```sh publisher
echo hi
```

## Next

```sql nowhere
SELECT 2;
```
";

    #[test]
    fn blocks_of_the_section_with_their_outputs() {
        let blocks = section_blocks(DOC, "## Quickstart");
        let summary: Vec<(&str, &str, usize, bool)> = blocks
            .iter()
            .map(|b| (&*b.lang, &*b.node, b.line, b.expected.is_some()))
            .collect();
        assert_eq!(
            summary,
            [
                ("conf", "publisher", 7, false),
                ("sql", "subscriber", 12, true),
                ("sh", "publisher", 23, false),
            ]
        );
        assert_eq!(blocks[1].text, "SELECT 1;\n");
        assert_eq!(
            blocks[1].expected.as_deref(),
            Some(" ?column?\n----------\n        1\n")
        );
        assert_eq!(
            conf_settings(&blocks[0].text),
            [
                ("wal_level".to_string(), "logical".to_string()),
                (
                    "shared_preload_libraries".to_string(),
                    "ddl_pgoutput".to_string()
                )
            ]
        );
    }

    #[test]
    #[should_panic(expected = "says no place to run")]
    fn a_block_without_a_place_is_refused() {
        section_blocks("## Q\n```sql\nSELECT 1;\n```\n", "## Q");
    }

    #[test]
    #[should_panic(expected = "output block with no block before")]
    fn an_output_block_needs_a_block_before() {
        section_blocks("## Q\n```text\n1\n```\n", "## Q");
    }
}

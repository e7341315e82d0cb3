//! `--follow`: read a live slot by running `pg_recvlogical` and dumping its output as it comes.
//!
//! ddl-wire links no PostgreSQL client library, so the replication connection is
//! pg_recvlogical's: it gets the options that make it write exactly what ddl-dump reads
//! (`-f -`, one `\n` after each message), and `--no-loop`, so that a lost connection or a
//! missing slot ends the dump with pg_recvlogical's error instead of retrying silently.

use std::path::PathBuf;
use std::process::Command;

/// What `--follow` needs besides the dump's own options.
#[derive(Debug, Default, clap::Args)]
#[command(next_help_heading = "Following a live slot (runs pg_recvlogical)")]
pub struct Follow {
    /// Stream the slot of this database (a libpq connection string or name, for
    /// pg_recvlogical's -d) instead of reading FILE
    #[arg(
        long = "follow",
        value_name = "CONNSTR",
        requires_all = ["slot", "publications"],
        conflicts_with = "file"
    )]
    pub connstr: Option<String>,
    /// The logical replication slot (plugin ddl_pgoutput or pgoutput)
    #[arg(long, value_name = "S", requires = "connstr")]
    pub slot: Option<String>,
    /// pgoutput's publication_names (repeat, or a comma-separated list)
    #[arg(long = "publication", value_name = "P", requires = "connstr")]
    pub publications: Vec<String>,
    /// Another pgoutput option, e.g. messages=true, passed as -o NAME=VALUE (repeatable)
    #[arg(
        long = "option",
        value_name = "NAME=VALUE",
        value_parser = name_value,
        requires = "connstr"
    )]
    pub options: Vec<String>,
    /// Stop once the stream reaches LSN, else run until interrupted
    #[arg(long, value_name = "LSN", requires = "connstr")]
    pub endpos: Option<String>,
    /// The pg_recvlogical to run (default: the one on PATH)
    #[arg(long = "recvlogical", value_name = "PATH", requires = "connstr")]
    pub program: Option<PathBuf>,
}

/// `--option`'s value, which pg_recvlogical's `-o` takes as `NAME=VALUE`.
fn name_value(option: &str) -> Result<String, String> {
    if option.contains('=') {
        Ok(option.to_owned())
    } else {
        Err("expected NAME=VALUE".to_owned())
    }
}

impl Follow {
    /// The pg_recvlogical command that streams the slot with `proto_version` (and `streaming =
    /// parallel` when `parallel`) to standard output; `None` without `--follow`.
    pub fn command(&self, proto_version: u32, parallel: bool) -> Option<Command> {
        let connstr = self.connstr.as_ref()?;
        let program = self
            .program
            .clone()
            .unwrap_or_else(|| "pg_recvlogical".into());
        let mut cmd = Command::new(program);
        cmd.arg("-d")
            .arg(connstr)
            .arg("--slot")
            .arg(self.slot.as_deref().unwrap_or_default())
            .args(["--start", "--no-loop", "-f", "-"])
            .arg("-o")
            .arg(format!("proto_version={proto_version}"))
            .arg("-o")
            .arg(format!("publication_names={}", self.publications.join(",")));
        if parallel {
            cmd.args(["-o", "streaming=parallel"]);
        }
        for option in &self.options {
            cmd.arg("-o").arg(option);
        }
        if let Some(endpos) = &self.endpos {
            cmd.arg("--endpos").arg(endpos);
        }
        Some(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &Command) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn runs_pg_recvlogical_with_what_the_dump_reads() {
        let follow = Follow {
            connstr: Some("dbname=db port=5433".into()),
            slot: Some("s".into()),
            publications: vec!["p".into(), "q".into()],
            options: vec!["messages=true".into()],
            endpos: Some("0/1A2B".into()),
            program: None,
        };
        let cmd = follow.command(2, false).expect("--follow");
        assert_eq!(cmd.get_program(), "pg_recvlogical");
        assert_eq!(
            args(&cmd).join(" "),
            "-d dbname=db port=5433 --slot s --start --no-loop -f - -o proto_version=2 \
             -o publication_names=p,q -o messages=true --endpos 0/1A2B"
        );
        let cmd = Follow {
            program: Some("/opt/pg/bin/pg_recvlogical".into()),
            ..follow
        }
        .command(4, true)
        .expect("--follow");
        assert_eq!(cmd.get_program(), "/opt/pg/bin/pg_recvlogical");
        assert!(args(&cmd).join(" ").contains("-o streaming=parallel"));
        assert!(Follow::default().command(1, false).is_none());
    }

    #[test]
    fn options_must_be_name_value() {
        assert_eq!(name_value("messages=true"), Ok("messages=true".into()));
        assert_eq!(name_value("messages"), Err("expected NAME=VALUE".into()));
    }
}

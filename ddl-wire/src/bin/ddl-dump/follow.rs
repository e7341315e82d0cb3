//! `--follow`: read a live slot by running `pg_recvlogical` and dumping its output as it comes.
//!
//! ddl-wire links no PostgreSQL client library, so the replication connection is
//! pg_recvlogical's: it gets the options that make it write exactly what ddl-dump reads
//! (`-f -`, one `\n` after each message), and `--no-loop`, so that a lost connection or a
//! missing slot ends the dump with pg_recvlogical's error instead of retrying silently.

use std::ffi::OsString;
use std::process::Command;

/// What `--follow` needs besides the dump's own options.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Follow {
    /// The libpq connection string (`dbname=db host=...`) or database name, for `-d`.
    pub connstr: String,
    pub slot: Option<String>,
    /// `--publication`, each possibly a comma-separated list.
    pub publications: Vec<String>,
    /// `--option NAME=VALUE`, passed as `-o NAME=VALUE`.
    pub options: Vec<String>,
    /// Stop at this LSN (`--endpos`), else run until interrupted.
    pub endpos: Option<String>,
    /// The program to run (`--recvlogical`), else `pg_recvlogical` from PATH.
    pub program: Option<OsString>,
}

impl Follow {
    /// What is missing for a follow, as a usage error.
    pub fn check(&self) -> Result<(), String> {
        if self.slot.is_none() {
            return Err("--follow needs --slot".into());
        }
        if self.publications.is_empty() {
            return Err("--follow needs --publication (pgoutput's publication_names)".into());
        }
        if let Some(bad) = self.options.iter().find(|o| !o.contains('=')) {
            return Err(format!("--option: '{bad}' is not NAME=VALUE"));
        }
        Ok(())
    }

    /// The pg_recvlogical command that streams the slot with `proto_version` (and `streaming =
    /// parallel` when `parallel`) to standard output.
    pub fn command(&self, proto_version: u32, parallel: bool) -> Command {
        let program = self
            .program
            .clone()
            .unwrap_or_else(|| "pg_recvlogical".into());
        let mut cmd = Command::new(program);
        cmd.arg("-d")
            .arg(&self.connstr)
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
        cmd
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
            connstr: "dbname=db port=5433".into(),
            slot: Some("s".into()),
            publications: vec!["p".into(), "q".into()],
            options: vec!["messages=true".into()],
            endpos: Some("0/1A2B".into()),
            program: None,
        };
        assert_eq!(follow.check(), Ok(()));
        let cmd = follow.command(2, false);
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
        .command(4, true);
        assert_eq!(cmd.get_program(), "/opt/pg/bin/pg_recvlogical");
        assert!(args(&cmd).join(" ").contains("-o streaming=parallel"));
    }

    #[test]
    fn says_what_is_missing() {
        let mut follow = Follow::default();
        assert_eq!(follow.check(), Err("--follow needs --slot".into()));
        follow.slot = Some("s".into());
        assert!(follow.check().unwrap_err().contains("--publication"));
        follow.publications.push("p".into());
        follow.options.push("messages".into());
        assert!(follow.check().unwrap_err().contains("is not NAME=VALUE"));
    }
}

//! The per-statement replay context.

use crate::{Host, Outcome};
use std::any::Any;

/// A setting an adapter changed, with the value to put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedSetting {
    /// The parameter name.
    pub name: String,
    /// Its value before the adapter changed it.
    pub previous: String,
}

/// Everything the replay of one DDL event knows, from the event and from the apply side.
#[derive(Default)]
pub struct Context {
    /// The SQL dialect of the event.
    pub dialect: String,
    /// The database the statement ran in on the origin node.
    pub database: String,
    /// The search_path the statement ran with.
    pub search_path: String,
    /// The role the statement runs as on this node.
    pub role: String,
    /// Whether the apply side switched to `role` (false: it runs as the subscription owner).
    pub role_switched: bool,
    /// Settings changed for this statement, restored by `cleanup_context`.
    pub saved_settings: Vec<SavedSetting>,
    /// Adapter-private data, kept from `init_context` to `cleanup_context`.
    pub private: Option<Box<dyn Any + Send>>,
}

impl Context {
    /// Sets `name` through the host and remembers its previous value for
    /// [`Context::restore_settings`]. A parameter the server does not know is a fatal outcome.
    pub fn set_setting(&mut self, host: &mut dyn Host, name: &str, value: &str) -> Outcome {
        match host.set_setting(name, value) {
            Ok(Some(previous)) => {
                self.saved_settings.push(SavedSetting {
                    name: name.to_string(),
                    previous,
                });
                Outcome::Success
            }
            Ok(None) => {
                Outcome::fatal(format!("configuration parameter \"{name}\" does not exist"))
            }
            Err(e) => Outcome::fatal(format!("cannot set \"{name}\" to \"{value}\": {e}")),
        }
    }

    /// Puts back every saved setting, newest first, so a setting changed twice ends at its
    /// original value. Reports the first failure but tries them all.
    pub fn restore_settings(&mut self, host: &mut dyn Host) -> Outcome {
        let mut outcome = Outcome::Success;
        while let Some(s) = self.saved_settings.pop() {
            let step = match host.set_setting(&s.name, &s.previous) {
                Ok(_) => Outcome::Success,
                Err(e) => Outcome::fatal(format!("cannot restore \"{}\": {e}", s.name)),
            };
            outcome = outcome.and(step);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A host with an in-memory settings table, enough to check save and restore.
    #[derive(Default)]
    struct Settings(HashMap<String, String>);

    impl Host for Settings {
        fn set_setting(&mut self, name: &str, value: &str) -> Result<Option<String>, String> {
            match self.0.get_mut(name) {
                Some(v) => Ok(Some(std::mem::replace(v, value.to_string()))),
                None => Ok(None),
            }
        }
        fn execute(&mut self, _sql: &str) -> Outcome {
            Outcome::Success
        }
    }

    #[test]
    fn restores_the_original_value_after_two_changes() {
        let mut host = Settings::default();
        host.0.insert("a".into(), "orig".into());
        let mut ctx = Context::default();
        assert!(ctx.set_setting(&mut host, "a", "one").is_success());
        assert!(ctx.set_setting(&mut host, "a", "two").is_success());
        assert_eq!(host.0["a"], "two");
        assert!(ctx.restore_settings(&mut host).is_success());
        assert_eq!(host.0["a"], "orig");
        assert!(ctx.saved_settings.is_empty());
    }

    #[test]
    fn unknown_setting_is_fatal_and_not_saved() {
        let mut host = Settings::default();
        let mut ctx = Context::default();
        let outcome = ctx.set_setting(&mut host, "nope", "x");
        assert!(
            matches!(outcome, Outcome::Fatal(m) if m.message.contains("\"nope\" does not exist"))
        );
        assert!(ctx.saved_settings.is_empty());
    }
}

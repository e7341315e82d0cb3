//! Adapters by dialect.

use crate::Adapter;
use std::collections::HashMap;

/// What [`Registry::register`] did to an adapter already registered for the same dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The dialect had no adapter.
    Nothing,
    /// The named adapter was replaced (e.g. the built-in `tsql-simple` by a full Babelfish one).
    Adapter(String),
}

/// The adapters known to this backend, one per dialect. The last registration for a dialect
/// wins, so an extension loaded after `ddl_sync` replaces a built-in adapter.
#[derive(Default)]
pub struct Registry {
    by_dialect: HashMap<String, Box<dyn Adapter>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers `adapter` for its dialect and says what it replaced.
    pub fn register(&mut self, adapter: Box<dyn Adapter>) -> Replaced {
        let dialect = adapter.dialect().to_ascii_lowercase();
        match self.by_dialect.insert(dialect, adapter) {
            Some(old) => Replaced::Adapter(old.name().to_string()),
            None => Replaced::Nothing,
        }
    }

    /// The adapter for `dialect` (case-insensitive).
    pub fn get(&self, dialect: &str) -> Option<&dyn Adapter> {
        self.by_dialect
            .get(&dialect.to_ascii_lowercase())
            .map(|a| a.as_ref())
    }

    /// `(dialect, adapter name)` pairs, sorted by dialect, for a catalog view.
    pub fn list(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<_> = self
            .by_dialect
            .iter()
            .map(|(d, a)| (d.as_str(), a.name()))
            .collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, Host, Outcome};

    struct Named(&'static str, &'static str);
    impl Adapter for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn dialect(&self) -> &str {
            self.1
        }
        fn execute_ddl(&self, _: &mut Context, _: &mut dyn Host, _: &str) -> Outcome {
            Outcome::Success
        }
    }

    #[test]
    fn later_registration_replaces_and_reports_it() {
        let mut r = Registry::new();
        assert_eq!(
            r.register(Box::new(Named("tsql-simple", "tsql"))),
            Replaced::Nothing
        );
        assert_eq!(
            r.register(Box::new(Named("babelfish", "TSQL"))),
            Replaced::Adapter("tsql-simple".into())
        );
        assert_eq!(r.get("tsql").map(|a| a.name()), Some("babelfish"));
        assert!(r.get("mysql").is_none());
        assert_eq!(r.list(), vec![("tsql", "babelfish")]);
    }
}

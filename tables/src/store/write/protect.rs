//! Protected fields: a change needs a role the application's authorizer grants.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::entity::{Column, ColumnKind, TableEntity};
use crate::error::{Error, Result};
use crate::store::Store;
pub use crate::update::Authorizer;
use crate::value::{Row, Value};

/// A shared authorizer.
#[derive(Clone)]
pub(crate) struct SharedAuthorizer(pub(crate) Arc<dyn Authorizer>);

impl fmt::Debug for SharedAuthorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorizer")
    }
}

/// Every protected column with its physical name prefix (nested records expanded).
fn protected(columns: &'static [Column], prefix: &str, out: &mut Vec<(String, &'static Column)>) {
    for c in columns {
        match c.kind {
            ColumnKind::Flatten(children) => protected(children, &format!("{prefix}{}_", c.name), out),
            _ if !c.protected.is_empty() => out.push((format!("{prefix}{}", c.name), c)),
            _ => {}
        }
    }
}

/// The cells a column occupies in a row (its plain cell and suffixed forms).
fn cells<'r>(row: &'r Row, column: &str) -> BTreeMap<&'r str, &'r Value> {
    row.properties
        .iter()
        .filter(|(name, _)| crate::layout::is_cell_of(name, column))
        .map(|(name, v)| (name.as_str(), v))
        .collect()
}

fn describe(cells: &BTreeMap<&str, &Value>) -> String {
    if cells.is_empty() {
        return "nothing".into();
    }
    cells
        .iter()
        .map(|(name, v)| match v {
            Value::String(s) if s.chars().count() <= 64 && !name.contains("__") => format!("{s:?}"),
            Value::String(s) => format!("a string of {} chars", s.chars().count()),
            Value::Binary(b) => format!("{} bytes", b.len()),
            Value::Bool(b) => b.to_string(),
            Value::Int32(n) => n.to_string(),
            Value::Int64(n) => n.to_string(),
            Value::Double(d) => d.to_string(),
            Value::DateTime(t) => t.to_string(),
            Value::Guid(g) => g.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl<T: TableEntity> Store<T> {
    /// A store whose whole-entity writes may change protected fields whose
    /// roles `authorizer` grants. Without one, any change of a protected
    /// field is refused with [`Error::Protected`].
    pub fn with_authorizer(&self, authorizer: impl Authorizer + 'static) -> Store<T> {
        let mut store = self.clone();
        store.authorizer = Some(SharedAuthorizer(Arc::new(authorizer)));
        store
    }

    /// Refuses a change of a protected column the authorizer does not allow.
    /// A row written as it was read (protected values unchanged) always passes.
    pub(crate) fn check_protected(&self, stored: Option<&Row>, new: &Row) -> Result<()> {
        let Some(stored) = stored else {
            // A new row changes nothing that was stored.
            return Ok(());
        };
        let mut columns = Vec::new();
        protected(T::SCHEMA.columns, "", &mut columns);
        for (name, column) in columns {
            let (before, after) = (cells(stored, &name), cells(new, &name));
            if before == after {
                continue;
            }
            let allowed = self
                .authorizer
                .as_ref()
                .is_some_and(|a| column.protected.iter().any(|role| a.0.has_role(role)));
            if !allowed {
                return Err(Error::Protected {
                    column: name,
                    roles: column.protected.join(", "),
                    from: describe(&before),
                    to: describe(&after),
                });
            }
        }
        Ok(())
    }
}

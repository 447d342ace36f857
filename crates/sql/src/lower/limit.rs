//! `Limit`: `LIMIT n [OFFSET m]` without an order, the rows after the first `offset` in
//! arrival order, at most `fetch` of them. Every row goes to one key, whose count of rows
//! seen is the operator's state.

use hummer_types::error::Result;

use super::per_key::KeyedChanges;
use crate::changelog::Change;
use crate::value::{Row, Value};

/// The rows after the first `offset`, at most `fetch` of them, in arrival order.
#[derive(Clone, Debug)]
pub struct Limit {
    /// Rows skipped first.
    pub offset: usize,
    /// Rows kept after them.
    pub fetch: usize,
}

impl KeyedChanges for Limit {
    /// How many rows have come.
    type State = usize;
    const TABLE: &'static str = "rows seen";

    fn key(&self, _: &[Value]) -> Row {
        Row::new()
    }

    fn apply(
        &self,
        state: &mut Option<usize>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let seen = state.get_or_insert(0);
        if *seen >= self.offset && *seen < self.offset + self.fetch {
            out.push(change);
        }
        *seen = seen.saturating_add(1);
        Ok(())
    }
}

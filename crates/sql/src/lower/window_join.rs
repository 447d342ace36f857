//! `WindowJoin`: a join of two window table functions' rows on their windows (Flink's window
//! join: `L.window_start = R.window_start AND L.window_end = R.window_end AND ..`).
//!
//! Both inputs come as one stream, each row tagged with its side, keyed by the join key (which
//! holds the window's bounds, so a key is one window). Per key the rows of both sides wait
//! until the watermark passes the window's end; then the pairs that meet the condition go out,
//! and for an outer join each preserved row without a match goes out padded with `NULL`s, and
//! the key is forgotten. A window semi or anti join (`EXISTS`/`NOT EXISTS` correlated on
//! the windows) sends instead each left row with, or without, a match. The result is
//! append-only, as Flink's: nothing is retracted. A row of a window already emitted is late
//! and dropped, as in Flink.

use hummer_operators::keyed_process_function::KeyedProcessFunction;

use super::RowContext;
use hummer_types::Timestamp;
use serde::{Deserialize, Serialize};

use crate::changelog::Change;
use crate::expr::Compiled;
use crate::lower::join::{JoinKind, joined_row, matches_nothing};
use crate::value::{Row, Value};

/// The rows of one window and key on both sides, in arrival order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WindowSides {
    /// The left input's rows.
    pub left: Vec<Row>,
    /// The right input's rows.
    pub right: Vec<Row>,
}

/// What a window join sends when a window ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowJoined {
    /// The pairs that match, and the rows without a match that `JoinKind` pads.
    Pairs(JoinKind),
    /// The left rows with a match (a window semi join: `EXISTS`, `IN`), or without one when
    /// `anti` (a window anti join: `NOT EXISTS`, `NOT IN`), each once.
    LeftRows {
        /// Without a match.
        anti: bool,
    },
}

/// The join: rows are `left_width` (or `right_width`) columns, then the key, then a
/// `BOOLEAN` that is `TRUE` for the left input.
#[derive(Clone, Debug)]
pub struct WindowJoin {
    /// What goes out.
    pub joined: WindowJoined,
    /// The left rows' columns before the key.
    pub left_width: usize,
    /// The right rows' columns before the key.
    pub right_width: usize,
    /// The index of `window_end` in the key.
    pub end_in_key: usize,
    /// What a pair must also meet to match, on the joined row.
    pub condition: Option<Compiled>,
}

impl WindowJoin {
    /// The key of a tagged row: the columns between its side's width and the tag.
    pub fn key(left_width: usize, right_width: usize) -> impl Fn(&Change) -> Row + Clone {
        move |c: &Change| -> Row {
            let n = c.row.len();
            let from_left = matches!(c.row.last(), Some(Value::Boolean(true)));
            let width = if from_left { left_width } else { right_width };
            c.row[width.min(n)..n.saturating_sub(1)].to_vec()
        }
    }

    fn joined(&self, l: Option<&Row>, r: Option<&Row>) -> Row {
        let (l, r) = (l.map(Vec::as_slice), r.map(Vec::as_slice));
        joined_row(l, r, (self.left_width, self.right_width))
    }
}

impl KeyedProcessFunction<Row, Change> for WindowJoin {
    type State = WindowSides;
    type Out = Change;

    fn process_element(&mut self, change: Change, ctx: &mut RowContext<'_, '_, WindowSides>) {
        let Some(end) = ctx.key()[self.end_in_key].time_millis() else {
            return;
        };
        let last: Timestamp = end - 1;
        if last <= ctx.current_watermark() {
            return;
        }
        let from_left = matches!(change.row.last(), Some(Value::Boolean(true)));
        let mut row = change.row;
        row.truncate(if from_left {
            self.left_width
        } else {
            self.right_width
        });
        let sides = ctx.state().get_or_insert_with(WindowSides::default);
        if from_left {
            sides.left.push(row);
        } else {
            sides.right.push(row);
        }
        ctx.timer_service().register_event_time_timer(last);
    }

    fn on_timer(&mut self, _: Timestamp, ctx: &mut RowContext<'_, '_, WindowSides>) {
        let Some(sides) = ctx.state().slot().take() else {
            return;
        };
        // A key with a NULL in it matches nothing.
        let keyed = !matches_nothing(ctx.key());
        let holds = |l: &Row, r: &Row| {
            keyed
                && self
                    .condition
                    .as_ref()
                    .is_none_or(|c| matches!(c.holds(&self.joined(Some(l), Some(r))), Ok(true)))
        };
        let kind = match self.joined {
            WindowJoined::Pairs(kind) => kind,
            WindowJoined::LeftRows { anti } => {
                for l in sides.left {
                    if sides.right.iter().any(|r| holds(&l, r)) != anti {
                        ctx.collect(Change::insert(l));
                    }
                }
                return;
            }
        };
        let mut right_matched = vec![false; sides.right.len()];
        for l in &sides.left {
            let mut matched = false;
            for (r, seen) in sides.right.iter().zip(&mut right_matched) {
                if holds(l, r) {
                    matched = true;
                    *seen = true;
                    ctx.collect(Change::insert(self.joined(Some(l), Some(r))));
                }
            }
            if !matched && kind.preserves_padding_of(false) {
                ctx.collect(Change::insert(self.joined(Some(l), None)));
            }
        }
        if kind.preserves_padding_of(true) {
            for (r, seen) in sides.right.iter().zip(right_matched) {
                if !seen {
                    ctx.collect(Change::insert(self.joined(None, Some(r))));
                }
            }
        }
    }
}

//! The one error of the SQL layer: where in the script, and what is wrong.
//!
//! Every error a statement can get before it runs carries the [`Position`] of what it is
//! about (line and column in the script, as a Flink user's editor shows them), so that the
//! client prints `line 3, column 14: ...` for a script of many statements.

use std::fmt;

/// A place in a script: line and column, both from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1 (in characters).
    pub column: u64,
}

impl Position {
    /// Line `line`, column `column`.
    pub fn new(line: u64, column: u64) -> Self {
        Position { line, column }
    }

    /// This position, read relative to a statement that starts at `start` of the script: a
    /// position on the statement's first line is shifted by its column too.
    pub fn within(self, start: Position) -> Position {
        if self.line <= 1 {
            Position::new(start.line, start.column + self.column.saturating_sub(1))
        } else {
            Position::new(start.line + self.line - 1, self.column)
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// What is wrong with a statement.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The text does not parse.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Position,
        /// What was expected and what was found.
        message: String,
    },
    /// A statement or clause that parses but that Hummer does not run.
    #[error("{at}: {what} is not supported; {supported}")]
    Unsupported {
        /// Where.
        at: Position,
        /// What was found.
        what: String,
        /// What is supported instead.
        supported: String,
    },
    /// A name that does not resolve.
    #[error("{at}: {kind} '{name}' not found{}", nearest_hint(.nearest))]
    Unknown {
        /// Where.
        at: Position,
        /// What kind of name (table, column, function, option).
        kind: &'static str,
        /// The name as written.
        name: String,
        /// The nearest name that exists, if one is near.
        nearest: Option<String>,
    },
    /// A statement that is well-formed but wrong (a duplicate name, a bad option value).
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: Position,
        /// What is wrong.
        message: String,
    },
    /// The engine refused or failed the job a statement ran.
    #[error(transparent)]
    Engine(#[from] hummer_types::error::HummerError),
}

fn nearest_hint(nearest: &Option<String>) -> String {
    match nearest {
        Some(n) => format!("; did you mean '{n}'?"),
        None => String::new(),
    }
}

impl SqlError {
    /// The same error, its position read relative to a statement starting at `start`.
    pub fn within(self, start: Position) -> SqlError {
        match self {
            SqlError::Syntax { at, message } => SqlError::Syntax {
                at: at.within(start),
                message,
            },
            SqlError::Unsupported {
                at,
                what,
                supported,
            } => SqlError::Unsupported {
                at: at.within(start),
                what,
                supported,
            },
            SqlError::Unknown {
                at,
                kind,
                name,
                nearest,
            } => SqlError::Unknown {
                at: at.within(start),
                kind,
                name,
                nearest,
            },
            SqlError::Invalid { at, message } => SqlError::Invalid {
                at: at.within(start),
                message,
            },
            e @ SqlError::Engine(_) => e,
        }
    }

    /// An unknown `kind` named `name`, with the nearest of `candidates` (by edit distance,
    /// case-insensitive) if it is near enough to be a likely typo.
    pub fn unknown<'a>(
        at: Position,
        kind: &'static str,
        name: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> SqlError {
        SqlError::Unknown {
            at,
            kind,
            name: name.to_string(),
            nearest: nearest(name, candidates).map(str::to_string),
        }
    }
}

/// The candidate nearest to `name` by edit distance (case-insensitive), if it is at most a
/// third of the name's length away, rounded up (at least 1, at most 3: `amout` finds `amt`).
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = name.to_lowercase();
    let limit = wanted.chars().count().div_ceil(3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&wanted, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

/// Edit distance between `a` and `b` by characters, a swap of two neighbours counting as one
/// edit (optimal string alignment), so `bdi` is one edit from `bid`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d: Vec<usize> = vec![0; (a.len() + 1) * width];
    for (i, row) in d.chunks_mut(width).enumerate() {
        row[0] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// The SQL layer's result.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_name_is_a_likely_typo_or_none() {
        let columns = ["auction", "bidder", "price", "dateTime"];
        assert_eq!(nearest("aucton", columns), Some("auction"));
        assert_eq!(nearest("DATETIME", columns), Some("dateTime"));
        assert_eq!(nearest("prise", columns), Some("price"));
        assert_eq!(nearest("channel", columns), None);
        assert_eq!(nearest("bdi", ["bid", "auction"]), Some("bid"));
        assert_eq!(nearest("amout", ["amt", "id"]), Some("amt"));
        assert_eq!(nearest("e.nam", ["e.name", "f.id"]), Some("e.name"));
    }

    #[test]
    fn a_position_inside_a_statement_is_shifted_to_the_script() {
        let start = Position::new(5, 3);
        assert_eq!(Position::new(1, 4).within(start), Position::new(5, 6));
        assert_eq!(Position::new(2, 4).within(start), Position::new(6, 4));
    }

    #[test]
    fn an_unknown_name_says_what_it_may_have_meant() {
        let e = SqlError::unknown(Position::new(1, 8), "column", "pric", ["price", "auction"]);
        assert_eq!(
            e.to_string(),
            "line 1, column 8: column 'pric' not found; did you mean 'price'?"
        );
    }
}

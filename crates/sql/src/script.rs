//! A script as its statements: `;`-separated, with `--` and `/* */` comments, and each
//! statement's place in the script so that an error points into the file the user wrote.
//!
//! A `;` inside a string literal (`'a;b'`, with `''` for a quote), a quoted identifier
//! (`"a;b"`, `` `a;b` ``) or a comment does not end a statement. Statements that are only
//! whitespace and comments are dropped; the last statement needs no `;`.

use crate::error::{Position, Result, SqlError};

/// One statement of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementText {
    /// Its text, from its first token up to (not including) the `;` that ends it.
    pub text: String,
    /// Where its first token is in the script.
    pub start: Position,
}

/// What the scanner is inside of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inside {
    Code,
    Quoted(char),
    LineComment,
    BlockComment,
}

/// Splits `script` into its statements.
///
/// ```
/// use hummer_sql::script::split;
/// let statements = split("SET 'a' = 'b';\n-- a comment; still one\nSELECT ';' FROM t").unwrap();
/// assert_eq!(statements.len(), 2);
/// assert_eq!(statements[1].text, "SELECT ';' FROM t");
/// assert_eq!((statements[1].start.line, statements[1].start.column), (3, 1));
/// ```
pub fn split(script: &str) -> Result<Vec<StatementText>> {
    let mut statements = Vec::new();
    let mut inside = Inside::Code;
    // Start of the current statement's first token (byte offset and position), once seen.
    let mut first: Option<(usize, Position)> = None;
    let mut opened = Position::default();
    let (mut line, mut column) = (1u64, 1u64);
    let mut chars = script.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let here = Position::new(line, column);
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
        let next = chars.peek().map(|&(_, n)| n);
        match inside {
            Inside::Code => match c {
                '-' if next == Some('-') => inside = Inside::LineComment,
                '/' if next == Some('*') => {
                    inside = Inside::BlockComment;
                    opened = here;
                    chars.next();
                    column += 1;
                }
                ';' => {
                    if let Some((from, start)) = first.take() {
                        statements.push(statement(&script[from..at], start));
                    }
                }
                c if c.is_whitespace() => {}
                c => {
                    if first.is_none() {
                        first = Some((at, here));
                    }
                    if matches!(c, '\'' | '"' | '`') {
                        inside = Inside::Quoted(c);
                        opened = here;
                    }
                }
            },
            Inside::Quoted(q) if c == q => {
                if next == Some(q) {
                    // A doubled quote stands for itself.
                    chars.next();
                    column += 1;
                } else {
                    inside = Inside::Code;
                }
            }
            Inside::Quoted(_) => {}
            Inside::LineComment if c == '\n' => inside = Inside::Code,
            Inside::LineComment => {}
            Inside::BlockComment if c == '*' && next == Some('/') => {
                chars.next();
                column += 1;
                inside = Inside::Code;
            }
            Inside::BlockComment => {}
        }
    }
    match inside {
        Inside::Quoted(q) => {
            return Err(SqlError::Syntax {
                at: opened,
                message: format!("the {} opened here is never closed", quote_name(q)),
            });
        }
        Inside::BlockComment => {
            return Err(SqlError::Syntax {
                at: opened,
                message: "the comment opened here is never closed (*/)".into(),
            });
        }
        Inside::Code | Inside::LineComment => {}
    }
    if let Some((from, start)) = first {
        statements.push(statement(&script[from..], start));
    }
    Ok(statements)
}

fn statement(text: &str, start: Position) -> StatementText {
    StatementText {
        text: text.trim_end().to_string(),
        start,
    }
}

fn quote_name(q: char) -> &'static str {
    match q {
        '\'' => "string literal",
        _ => "quoted identifier",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn semicolons_in_strings_identifiers_and_comments_do_not_split() {
        let script = "CREATE TABLE `a;b` (x STRING) WITH ('k' = 'v;w');\n\
                      /* one; two */ SELECT 'it''s; here' FROM \"q;r\" -- end; \n;\n;";
        let s = split(script).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].text,
            "CREATE TABLE `a;b` (x STRING) WITH ('k' = 'v;w')"
        );
        assert_eq!(s[1].text, "SELECT 'it''s; here' FROM \"q;r\" -- end;");
        assert_eq!(s[1].start, Position::new(2, 16));
    }

    #[test]
    fn an_unclosed_string_or_comment_is_refused_where_it_opens() {
        let e = split("SELECT 1;\nSELECT 'abc").unwrap_err().to_string();
        assert_eq!(
            e,
            "line 2, column 8: the string literal opened here is never closed"
        );
        let e = split("SELECT 1 /* x").unwrap_err().to_string();
        assert!(e.starts_with("line 1, column 10: the comment"), "{e}");
    }

    #[test]
    fn a_script_of_comments_has_no_statement() {
        assert!(split("-- nothing\n /* here */ ;; \n").unwrap().is_empty());
    }

    proptest! {
        /// Statements joined by `;` (with comments and blank lines between them) split back
        /// into the same statements, each starting where it was put.
        #[test]
        fn split_inverts_join(
            parts in proptest::collection::vec(
                prop_oneof![
                    "[a-z]([a-z ]{0,5}[a-z])?",
                    "[a-z]{1,3} '[a-z; ]{0,5}'",
                    "[a-z]{1,3} `[a-z;]{0,4}`",
                    "[a-z]{1,3} --[a-z; ]{0,5}\n[a-z]{1,3}",
                ],
                0..6,
            ),
            gaps in proptest::collection::vec(
                prop_oneof![Just(" "), Just("\n"), Just("\n-- c;\n"), Just(" /* ; */ ")],
                6,
            ),
        ) {
            let mut script = String::new();
            let mut expected = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                script.push_str(gaps[i]);
                let before = &script;
                let line = before.matches('\n').count() as u64 + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
                expected.push((part.trim_end().to_string(), Position::new(line, column)));
                script.push_str(part);
                script.push(';');
            }
            let got: Vec<(String, Position)> =
                split(&script).unwrap().into_iter().map(|s| (s.text, s.start)).collect();
            prop_assert_eq!(got, expected);
        }
    }
}

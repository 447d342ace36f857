//! One statement of a script, parsed: Flink's DDL and client commands by this module on
//! `sqlparser`'s tokens, queries and `INSERT` by `sqlparser` itself.
//!
//! Flink's `CREATE TABLE` has no `sqlparser` statement (computed columns `c AS expr`,
//! `WATERMARK FOR c AS expr`, `PRIMARY KEY (..) NOT ENFORCED`, `WITH ('k' = 'v')`), nor do
//! `SET 'k' = 'v'`, `CREATE FUNCTION .. AS 'class'` and the client's `SHOW`, `DESCRIBE`,
//! `HELP` and `QUIT`; every other statement goes to `sqlparser` in [`FlinkDialect`].

use std::collections::BTreeMap;

use sqlparser::ast::{self, Expr, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::dialect::FlinkDialect;
use crate::error::{Position, Result, SqlError};
use crate::script::StatementText;
use crate::types::{DataType, parse_data_type};

/// A statement, parsed.
#[derive(Debug, Clone)]
pub enum Statement {
    /// `SET 'key' = 'value'`, or `SET` alone (lists the options set).
    Set(Option<(String, String)>),
    /// `RESET 'key'`, or `RESET` alone (all).
    Reset(Option<String>),
    /// `CREATE [TEMPORARY] TABLE`.
    CreateTable(Box<TableDefinition>),
    /// `CREATE [TEMPORARY] VIEW name [(columns)] AS query`.
    CreateView {
        /// The view's name.
        name: String,
        /// Column names given to the query's columns, if any.
        columns: Vec<String>,
        /// The query.
        query: Box<ast::Query>,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// Where the statement starts.
        at: Position,
    },
    /// `CREATE [TEMPORARY [SYSTEM]] FUNCTION name AS 'class' [LANGUAGE ..]`.
    CreateFunction {
        /// The function's name in SQL.
        name: String,
        /// The class it names (a Java class in Flink; a registered function here).
        class: String,
        /// A system function (`TEMPORARY SYSTEM`): it goes before a built-in of its name;
        /// a catalog function goes after.
        system: bool,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// Where the statement starts.
        at: Position,
    },
    /// `DROP [TEMPORARY] TABLE|VIEW|FUNCTION [IF EXISTS] name`.
    Drop {
        /// What is dropped.
        kind: ObjectKind,
        /// Its name.
        name: String,
        /// `IF EXISTS`.
        if_exists: bool,
        /// Where the statement starts.
        at: Position,
    },
    /// `SHOW TABLES`, `SHOW VIEWS`, `SHOW FUNCTIONS`.
    Show(ObjectKind),
    /// `DESCRIBE name` / `DESC name`.
    Describe {
        /// The table or view.
        name: String,
        /// Where the name is.
        at: Position,
    },
    /// `EXPLAIN [PLAN FOR] statement`.
    Explain(Box<Statement>),
    /// `INSERT INTO ..` (the `sqlparser` statement).
    Insert(Box<ast::Statement>, Position),
    /// A query (`SELECT`, `WITH`, `VALUES`, a set operation).
    Query(Box<ast::Query>, Position),
    /// `BEGIN STATEMENT SET`, or `EXECUTE STATEMENT SET BEGIN` with the first `INSERT` of
    /// the set after it: the `INSERT`s up to `END` run as one job.
    BeginStatementSet(Option<(Box<ast::Statement>, Position)>),
    /// `END` of a statement set.
    End,
    /// `HELP`.
    Help,
    /// `QUIT` / `EXIT`.
    Quit,
}

/// The kinds of named objects of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// Tables.
    Table,
    /// Views.
    View,
    /// Functions.
    Function,
}

/// A `CREATE TABLE` statement.
#[derive(Debug, Clone)]
pub struct TableDefinition {
    /// The table's name.
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDefinition>,
    /// `WATERMARK FOR column AS expr`.
    pub watermark: Option<WatermarkDefinition>,
    /// `PRIMARY KEY (..) NOT ENFORCED`.
    pub primary_key: Vec<String>,
    /// `WITH (..)`: the connector's options, keys as written.
    pub options: BTreeMap<String, String>,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Where the statement starts.
    pub at: Position,
}

/// A column of a `CREATE TABLE`.
#[derive(Debug, Clone)]
pub struct ColumnDefinition {
    /// Its name.
    pub name: String,
    /// What it is.
    pub kind: ColumnKind,
    /// Where it is declared.
    pub at: Position,
}

/// A physical column (read from the connector) or a computed one.
#[derive(Debug, Clone)]
pub enum ColumnKind {
    /// `name type`.
    Physical(DataType),
    /// `name AS expr`.
    Computed(Box<Expr>),
}

/// `WATERMARK FOR column AS expr`.
#[derive(Debug, Clone)]
pub struct WatermarkDefinition {
    /// The rowtime column.
    pub column: String,
    /// The watermark's expression (`column - INTERVAL '5' SECOND`, say).
    pub expr: Expr,
    /// Where it is declared.
    pub at: Position,
}

/// Parses one statement of a script; positions in errors are the script's.
pub fn parse(statement: &StatementText) -> Result<Statement> {
    parse_text(&statement.text).map_err(|e| e.within(statement.start))
}

/// Parses the text of one statement (positions relative to it).
pub(crate) fn parse_text(text: &str) -> Result<Statement> {
    let dialect = FlinkDialect;
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(syntax_error)?;
    let statement = parse_statement(&mut parser)?;
    let _ = parser.consume_token(&Token::SemiColon);
    let rest = parser.peek_token();
    // `CREATE TABLE t (..) WITH (..) LIKE other`: Flink's table inheritance.
    if let (Statement::CreateTable(_), Token::Word(w)) = (&statement, &rest.token)
        && w.keyword == Keyword::LIKE
    {
        return Err(SqlError::Unsupported {
            at: position(&rest),
            what: "CREATE TABLE .. LIKE".into(),
            supported: "CREATE TABLE with its columns and options written out is".into(),
        });
    }
    if rest.token != Token::EOF {
        return Err(SqlError::Syntax {
            at: position(&rest),
            message: format!("unexpected '{}' after the end of the statement", rest.token),
        });
    }
    Ok(statement)
}

fn parse_statement(parser: &mut Parser<'_>) -> Result<Statement> {
    let first = parser.peek_token();
    let at = position(&first);
    let word = match &first.token {
        Token::Word(w) => w.value.to_uppercase(),
        _ => String::new(),
    };
    match word.as_str() {
        "SET" => {
            parser.next_token();
            parse_set(parser)
        }
        "RESET" => {
            parser.next_token();
            let key = match parser.peek_token().token {
                Token::SingleQuotedString(_) => {
                    Some(parser.parse_literal_string().map_err(syntax_error)?)
                }
                _ => None,
            };
            Ok(Statement::Reset(key))
        }
        "HELP" => {
            parser.next_token();
            Ok(Statement::Help)
        }
        "QUIT" | "EXIT" => {
            parser.next_token();
            Ok(Statement::Quit)
        }
        "SHOW" => {
            parser.next_token();
            let kind = object_kind_plural(parser)?;
            Ok(Statement::Show(kind))
        }
        "DESCRIBE" | "DESC" => {
            parser.next_token();
            let name_at = position(&parser.peek_token());
            let name = object_name(parser)?;
            Ok(Statement::Describe { name, at: name_at })
        }
        "EXPLAIN" => {
            parser.next_token();
            let _ = parser.parse_keywords(&[Keyword::PLAN, Keyword::FOR]);
            Ok(Statement::Explain(Box::new(parse_statement(parser)?)))
        }
        "CREATE" => parse_create(parser, at),
        "DROP" => parse_drop(parser, at),
        "BEGIN" => {
            parser.next_token();
            expect_words(parser, &["STATEMENT", "SET"])?;
            Ok(Statement::BeginStatementSet(None))
        }
        "EXECUTE" => {
            parser.next_token();
            if !next_is_word(parser, "STATEMENT") {
                // `EXECUTE INSERT INTO ..`: the INSERT.
                return parse_statement(parser);
            }
            expect_words(parser, &["STATEMENT", "SET", "BEGIN"])?;
            if matches!(parser.peek_token().token, Token::EOF | Token::SemiColon) {
                return Ok(Statement::BeginStatementSet(None));
            }
            match parse_statement(parser)? {
                Statement::Insert(insert, at) => {
                    Ok(Statement::BeginStatementSet(Some((insert, at))))
                }
                _ => Err(SqlError::Unsupported {
                    at,
                    what: "a statement other than INSERT INTO in a statement set".into(),
                    supported: "INSERT INTO statements are".into(),
                }),
            }
        }
        "END" => {
            parser.next_token();
            Ok(Statement::End)
        }
        _ => {
            let statement = parser.parse_statement().map_err(syntax_error)?;
            match statement {
                ast::Statement::Query(query) => Ok(Statement::Query(query, at)),
                insert @ ast::Statement::Insert(_) => Ok(Statement::Insert(Box::new(insert), at)),
                other => Err(unsupported_statement(&other.to_string(), at)),
            }
        }
    }
}

/// Whether the next token is the word `word` (in any case).
fn next_is_word(parser: &Parser<'_>, word: &str) -> bool {
    matches!(&parser.peek_token().token, Token::Word(w) if w.value.eq_ignore_ascii_case(word))
}

/// Consumes the words `words` (in any case), or says which was expected.
fn expect_words(parser: &mut Parser<'_>, words: &[&str]) -> Result<()> {
    for word in words {
        if !next_is_word(parser, word) {
            let found = parser.peek_token();
            return Err(SqlError::Syntax {
                at: position(&found),
                message: format!("expected {}, found '{}'", words.join(" "), found.token),
            });
        }
        parser.next_token();
    }
    Ok(())
}

fn unsupported_statement(text: &str, at: Position) -> SqlError {
    let what: String = text
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    SqlError::Unsupported {
        at,
        what: format!("the statement '{what} ..'"),
        supported: SUPPORTED_STATEMENTS.into(),
    }
}

/// What a script may hold, for errors and `HELP`.
pub const SUPPORTED_STATEMENTS: &str = "the statements are SET, RESET, CREATE [TEMPORARY] \
    TABLE|VIEW|FUNCTION, DROP TABLE|VIEW|FUNCTION, SHOW TABLES|VIEWS|FUNCTIONS, DESCRIBE, \
    EXPLAIN, INSERT INTO, SELECT (and WITH, VALUES, UNION ALL), BEGIN STATEMENT SET (or \
    EXECUTE STATEMENT SET BEGIN) .. END, HELP and QUIT";

/// `SET` or `SET 'key' = 'value'`.
fn parse_set(parser: &mut Parser<'_>) -> Result<Statement> {
    if parser.peek_token().token == Token::EOF || parser.peek_token().token == Token::SemiColon {
        return Ok(Statement::Set(None));
    }
    let key = option_text(parser)?;
    parser.expect_token(&Token::Eq).map_err(syntax_error)?;
    let value = option_text(parser)?;
    Ok(Statement::Set(Some((key, value))))
}

/// The name a legacy connector option of Flink 1.10's descriptors (`'connector.type'`,
/// `'connector.path'`, `'format.type'`, which upstream Nexmark's q13 still writes) has now.
fn current_option_name(key: &str) -> Option<&'static str> {
    Some(match key {
        "connector.type" => "connector",
        "connector.path" => "path",
        "format.type" => "format",
        "format.field-delimiter" => "csv.field-delimiter",
        "format.ignore-parse-errors" => "csv.ignore-parse-errors",
        _ => return None,
    })
}

/// A quoted option key or value (Flink's form), or a bare word or number.
fn option_text(parser: &mut Parser<'_>) -> Result<String> {
    let token = parser.next_token();
    let at = position(&token);
    match token.token {
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Ok(s),
        Token::Number(n, _) => Ok(n),
        Token::Word(w) => {
            // An unquoted key such as `parallelism.default`.
            let mut text = w.value;
            while parser.consume_token(&Token::Period) {
                match parser.next_token().token {
                    Token::Word(w) => {
                        text.push('.');
                        text.push_str(&w.value);
                    }
                    other => {
                        return Err(SqlError::Syntax {
                            at: position(&parser.peek_token()),
                            message: format!("expected an option name, found '{other}'"),
                        });
                    }
                }
            }
            Ok(text)
        }
        other => Err(SqlError::Syntax {
            at,
            message: format!(
                "expected a quoted option such as 'parallelism.default', found '{other}'"
            ),
        }),
    }
}

/// `TABLES`, `VIEWS`, `FUNCTIONS`.
fn object_kind_plural(parser: &mut Parser<'_>) -> Result<ObjectKind> {
    let token = parser.next_token();
    let word = match &token.token {
        Token::Word(w) => w.value.to_uppercase(),
        _ => String::new(),
    };
    match word.as_str() {
        "TABLES" => Ok(ObjectKind::Table),
        "VIEWS" => Ok(ObjectKind::View),
        "FUNCTIONS" | "USER" => {
            let _ = parser.parse_keyword(Keyword::FUNCTIONS);
            Ok(ObjectKind::Function)
        }
        _ => Err(SqlError::Unsupported {
            at: position(&token),
            what: format!("SHOW {}", token.token),
            supported: "SHOW TABLES, SHOW VIEWS and SHOW FUNCTIONS are".into(),
        }),
    }
}

/// After `CREATE` or `DROP` (`verb`): `[TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION`, and
/// whether it said `SYSTEM`.
fn object_kind(parser: &mut Parser<'_>, verb: &str) -> Result<(ObjectKind, bool)> {
    let _ = parser.parse_keyword(Keyword::TEMPORARY);
    let system = parser.parse_keyword(Keyword::SYSTEM);
    let kind_at = position(&parser.peek_token());
    if parser.parse_keyword(Keyword::TABLE) {
        Ok((ObjectKind::Table, system))
    } else if parser.parse_keyword(Keyword::VIEW) {
        Ok((ObjectKind::View, system))
    } else if parser.parse_keyword(Keyword::FUNCTION) {
        Ok((ObjectKind::Function, system))
    } else {
        Err(SqlError::Unsupported {
            at: kind_at,
            what: format!("{verb} {}", parser.peek_token().token),
            supported: format!("{verb} TABLE, {verb} VIEW and {verb} FUNCTION are"),
        })
    }
}

fn parse_create(parser: &mut Parser<'_>, at: Position) -> Result<Statement> {
    parser.next_token();
    let (kind, system) = object_kind(parser, "CREATE")?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = object_name(parser)?;
    match kind {
        ObjectKind::Table => parse_table(parser, name, if_not_exists, at)
            .map(|t| Statement::CreateTable(Box::new(t))),
        ObjectKind::View => {
            let columns = if parser.consume_token(&Token::LParen) {
                let columns = parser
                    .parse_comma_separated(|p| p.parse_identifier())
                    .map_err(syntax_error)?;
                parser.expect_token(&Token::RParen).map_err(syntax_error)?;
                columns.into_iter().map(|c| c.value).collect()
            } else {
                Vec::new()
            };
            parser.expect_keyword(Keyword::AS).map_err(syntax_error)?;
            let query = parser.parse_query().map_err(syntax_error)?;
            Ok(Statement::CreateView {
                name,
                columns,
                query,
                if_not_exists,
                at,
            })
        }
        ObjectKind::Function => {
            parser.expect_keyword(Keyword::AS).map_err(syntax_error)?;
            let class = parser.parse_literal_string().map_err(syntax_error)?;
            if parser.parse_keyword(Keyword::LANGUAGE) {
                parser.next_token();
            }
            Ok(Statement::CreateFunction {
                name,
                class,
                system,
                if_not_exists,
                at,
            })
        }
    }
}

fn parse_drop(parser: &mut Parser<'_>, at: Position) -> Result<Statement> {
    parser.next_token();
    let (kind, _) = object_kind(parser, "DROP")?;
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = object_name(parser)?;
    Ok(Statement::Drop {
        kind,
        name,
        if_exists,
        at,
    })
}

/// A table's name; of a qualified name (`catalog.db.t`) the last part, as Flink's default
/// catalog and database are the only ones.
fn object_name(parser: &mut Parser<'_>) -> Result<String> {
    let name: ObjectName = parser.parse_object_name(false).map_err(syntax_error)?;
    Ok(name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default())
}

/// The rest of a `CREATE TABLE name`: the column list, then `COMMENT`, `PARTITIONED BY`
/// and `WITH`.
fn parse_table(
    parser: &mut Parser<'_>,
    name: String,
    if_not_exists: bool,
    at: Position,
) -> Result<TableDefinition> {
    let mut table = TableDefinition {
        name,
        columns: Vec::new(),
        watermark: None,
        primary_key: Vec::new(),
        options: BTreeMap::new(),
        if_not_exists,
        at,
    };
    parser.expect_token(&Token::LParen).map_err(syntax_error)?;
    loop {
        let item = parser.peek_token();
        let item_at = position(&item);
        if parse_word(parser, "WATERMARK") {
            parser.expect_keyword(Keyword::FOR).map_err(syntax_error)?;
            let column = parser.parse_identifier().map_err(syntax_error)?.value;
            parser.expect_keyword(Keyword::AS).map_err(syntax_error)?;
            let expr = parser.parse_expr().map_err(syntax_error)?;
            if table.watermark.is_some() {
                return Err(SqlError::Invalid {
                    at: item_at,
                    message: "a table has at most one WATERMARK".into(),
                });
            }
            table.watermark = Some(WatermarkDefinition {
                column,
                expr,
                at: item_at,
            });
        } else if parser.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY])
            || (parser.parse_keyword(Keyword::CONSTRAINT)
                && parser.parse_identifier().is_ok()
                && parser.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]))
        {
            parser.expect_token(&Token::LParen).map_err(syntax_error)?;
            let key = parser
                .parse_comma_separated(|p| p.parse_identifier())
                .map_err(syntax_error)?;
            parser.expect_token(&Token::RParen).map_err(syntax_error)?;
            if !parser.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
                return Err(SqlError::Invalid {
                    at: item_at,
                    message: "Flink does not enforce primary keys: write PRIMARY KEY (..) NOT \
                              ENFORCED"
                        .into(),
                });
            }
            table.primary_key = key.into_iter().map(|i| i.value).collect();
        } else {
            let column = parser.parse_identifier().map_err(syntax_error)?.value;
            let kind = if parser.parse_keyword(Keyword::AS) {
                ColumnKind::Computed(Box::new(parser.parse_expr().map_err(syntax_error)?))
            } else {
                let ty = parse_data_type(parser).map_err(syntax_error)?;
                if parser.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
                    if !parser.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
                        return Err(SqlError::Invalid {
                            at: item_at,
                            message: "write PRIMARY KEY NOT ENFORCED".into(),
                        });
                    }
                    table.primary_key = vec![column.clone()];
                }
                if parser.parse_keyword(Keyword::METADATA) {
                    return Err(SqlError::Unsupported {
                        at: item_at,
                        what: format!("the metadata column '{column}'"),
                        supported: "physical and computed columns are".into(),
                    });
                }
                if let Some(without) = ty.ty.without_values() {
                    return Err(SqlError::Unsupported {
                        at: item_at,
                        what: format!("the column '{column}' of type {} ({without})", ty.ty),
                        supported: crate::types::SUPPORTED_TYPES.into(),
                    });
                }
                ColumnKind::Physical(ty)
            };
            if parser.parse_keyword(Keyword::COMMENT) {
                parser.parse_literal_string().map_err(syntax_error)?;
            }
            if table.columns.iter().any(|c| c.name == column) {
                return Err(SqlError::Invalid {
                    at: item_at,
                    message: format!("the column '{column}' is declared twice"),
                });
            }
            table.columns.push(ColumnDefinition {
                name: column,
                kind,
                at: item_at,
            });
        }
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen).map_err(syntax_error)?;
    if parser.parse_keyword(Keyword::COMMENT) {
        parser.parse_literal_string().map_err(syntax_error)?;
    }
    if parser.parse_keywords(&[Keyword::PARTITIONED, Keyword::BY]) {
        parser.expect_token(&Token::LParen).map_err(syntax_error)?;
        parser
            .parse_comma_separated(|p| p.parse_identifier())
            .map_err(syntax_error)?;
        parser.expect_token(&Token::RParen).map_err(syntax_error)?;
    }
    if parser.parse_keyword(Keyword::WITH) {
        parser.expect_token(&Token::LParen).map_err(syntax_error)?;
        loop {
            let key_at = position(&parser.peek_token());
            let key = option_text(parser)?;
            parser.expect_token(&Token::Eq).map_err(syntax_error)?;
            let value = option_text(parser)?;
            let key = current_option_name(&key).map_or(key, str::to_string);
            if table.options.insert(key.clone(), value).is_some() {
                return Err(SqlError::Invalid {
                    at: key_at,
                    message: format!("the option '{key}' is given twice"),
                });
            }
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        parser.expect_token(&Token::RParen).map_err(syntax_error)?;
    }
    if let Some(w) = &table.watermark
        && !table.columns.iter().any(|c| c.name == w.column)
    {
        return Err(SqlError::unknown(
            w.at,
            "column",
            &w.column,
            table.columns.iter().map(|c| c.name.as_str()),
        ));
    }
    Ok(table)
}

/// Consumes the next token if it is the word `word` (any case): for Flink's keywords that
/// `sqlparser` does not have.
fn parse_word(parser: &mut Parser<'_>, word: &str) -> bool {
    let is_word = matches!(&parser.peek_token().token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    if is_word {
        parser.next_token();
    }
    is_word
}

/// Where a token starts.
fn position(token: &sqlparser::tokenizer::TokenWithSpan) -> Position {
    Position::new(token.span.start.line.max(1), token.span.start.column.max(1))
}

/// A `sqlparser` error as a syntax error at the position its message ends with.
fn syntax_error(e: ParserError) -> SqlError {
    let text = match e {
        ParserError::TokenizerError(s) | ParserError::ParserError(s) => s,
        ParserError::RecursionLimitExceeded => "the statement nests too deeply".to_string(),
    };
    match text.rsplit_once(" at Line: ") {
        Some((message, place)) => {
            let mut numbers = place.split(", Column: ").map(|n| n.trim().parse::<u64>());
            match (numbers.next(), numbers.next()) {
                (Some(Ok(line)), Some(Ok(column))) => SqlError::Syntax {
                    at: Position::new(line, column),
                    message: message.to_string(),
                },
                _ => SqlError::Syntax {
                    at: Position::new(1, 1),
                    message: text.clone(),
                },
            }
        }
        None => SqlError::Syntax {
            at: Position::new(1, 1),
            message: text,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::split;

    fn one(text: &str) -> Result<Statement> {
        let statements = split(text)?;
        parse(&statements[0])
    }

    #[test]
    fn a_flink_create_table_parses_with_computed_columns_watermark_key_and_options() {
        let text = "CREATE TEMPORARY TABLE bid (\n\
                    auction BIGINT,\n\
                    price BIGINT NOT NULL,\n\
                    `dateTime` TIMESTAMP(3),\n\
                    extra ROW<a STRING, b ROW<c INT>>,\n\
                    day_ AS DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'),\n\
                    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND,\n\
                    PRIMARY KEY (auction) NOT ENFORCED\n\
                    ) WITH ('connector' = 'filesystem', 'path' = '/data/bid', 'format' = 'csv')";
        let Statement::CreateTable(t) = one(text).unwrap() else {
            panic!("not a table");
        };
        assert_eq!(t.name, "bid");
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["auction", "price", "dateTime", "extra", "day_"]);
        let ColumnKind::Physical(ty) = &t.columns[1].kind else {
            panic!("price is physical");
        };
        assert_eq!(ty.to_string(), "BIGINT NOT NULL");
        assert!(matches!(t.columns[4].kind, ColumnKind::Computed(_)));
        let w = t.watermark.unwrap();
        assert_eq!(w.column, "dateTime");
        assert_eq!(w.expr.to_string(), "`dateTime` - INTERVAL '4' SECOND");
        assert_eq!(t.primary_key, ["auction"]);
        assert_eq!(t.options["path"], "/data/bid");
        assert_eq!(t.columns[2].at, Position::new(4, 1));
    }

    #[test]
    fn set_show_describe_explain_and_queries_parse() {
        assert!(matches!(
            one("SET 'parallelism.default' = '2'").unwrap(),
            Statement::Set(Some((k, v))) if k == "parallelism.default" && v == "2"
        ));
        assert!(matches!(one("SET").unwrap(), Statement::Set(None)));
        assert!(matches!(
            one("show tables").unwrap(),
            Statement::Show(ObjectKind::Table)
        ));
        assert!(
            matches!(one("DESCRIBE bid").unwrap(), Statement::Describe { name, .. } if name == "bid")
        );
        assert!(matches!(
            one("EXPLAIN SELECT a FROM t").unwrap(),
            Statement::Explain(s) if matches!(*s, Statement::Query(..))
        ));
        assert!(matches!(
            one("INSERT INTO s SELECT * FROM t").unwrap(),
            Statement::Insert(..)
        ));
        assert!(matches!(
            one("CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'").unwrap(),
            Statement::CreateFunction { name, class, .. }
                if name == "count_char" && class.ends_with("CountChar")
        ));
        assert!(matches!(
            one("CREATE VIEW v (a, b) AS SELECT x, y FROM t").unwrap(),
            Statement::CreateView { columns, .. } if columns == ["a", "b"]
        ));
    }

    #[test]
    fn errors_name_line_and_column_in_the_script() {
        let statements = split("SET 'a' = 'b';\n\nCREATE TABLE t (a INT,\n  b INTEGRAL)").unwrap();
        let e = parse(&statements[1]).unwrap_err().to_string();
        assert!(e.starts_with("line 4, column 5: "), "{e}");
        assert!(e.contains("unknown type INTEGRAL"), "{e}");
        let statements = split("SELECT 1;\n  SELECT a FROM WHERE").unwrap();
        let e = parse(&statements[1]).unwrap_err().to_string();
        assert!(e.starts_with("line 2, column "), "{e}");
        let e = one("CREATE TABLE t (a INT, WATERMARK FOR ts AS ts)")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "line 1, column 24: column 'ts' not found");
        let e = one("CREATE TABLE t (a INT, PRIMARY KEY (a))")
            .unwrap_err()
            .to_string();
        assert!(e.contains("NOT ENFORCED"), "{e}");
        let e = one("GRANT SELECT ON t TO bob").unwrap_err().to_string();
        assert!(
            e.contains("is not supported; the statements are SET"),
            "{e}"
        );
    }
}

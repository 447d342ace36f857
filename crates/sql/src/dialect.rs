//! Flink's SQL dialect for `sqlparser`: what Flink's parser accepts that the generic one
//! does not, through the `Dialect` hooks.
//!
//! - Identifiers may be quoted with backticks (`` `time` ``), as in Flink;
//! - types are Flink's (`STRING`, `TIMESTAMP_LTZ(3)`, `ROW<..>`: [`crate::types`]), so a
//!   `CAST(x AS TIMESTAMP_LTZ(3))` parses;
//! - aggregates take `FILTER (WHERE ..)`; windows' `PARTITION BY` may follow `ORDER BY`;
//! - a window table function's table argument `TABLE name` (in
//!   `TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), ..))`) parses as the call `TABLE(name)`, which
//!   the planner reads back ([`table_argument`]), with its `PARTITION BY` columns, if any, as
//!   further arguments ([`table_partition`]).
//!
//! The DDL that has no `sqlparser` statement (`WATERMARK FOR`, computed columns, `WITH`
//! options as Flink writes them) is parsed by [`crate::statement`] on the same tokens.

use sqlparser::ast::{
    self, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    Ident, ObjectName,
};
use sqlparser::dialect::Dialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::types;

/// Flink SQL.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlinkDialect;

impl Dialect for FlinkDialect {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`' || ch == '"'
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_' || ch == '$'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_' || ch == '$'
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    fn supports_partition_by_after_order_by(&self) -> bool {
        true
    }

    fn supports_group_by_expr(&self) -> bool {
        true
    }

    /// `FOR SYSTEM_TIME AS OF t` after a table: a temporal or lookup join.
    fn supports_table_versioning(&self) -> bool {
        true
    }

    /// `TABLE name` where an expression starts (a table function's argument), and the
    /// literal `TIMESTAMP '2020-01-01 00:00:00'` (a `TIMESTAMP(3)`).
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let is_timestamp = matches!(&parser.peek_token().token, Token::Word(w) if w.keyword == Keyword::TIMESTAMP)
            && matches!(
                &parser.peek_nth_token(1).token,
                Token::SingleQuotedString(_)
            );
        if is_timestamp {
            parser.next_token();
            let span = parser.peek_token().span;
            return Some(parser.parse_literal_string().map(|text| {
                // Its precision is its fraction's digits, as Flink types it.
                let fraction = text.split_once('.').map_or(0, |(_, f)| f.trim().len());
                let precision = u8::try_from(fraction.min(9)).unwrap_or(9);
                let ty = types::DataType::nullable(types::SqlType::Timestamp(precision));
                Expr::TypedString(ast::TypedString {
                    data_type: to_sqlparser(&ty),
                    value: ast::Value::SingleQuotedString(text).with_span(span),
                    uses_odbc_syntax: false,
                })
            }));
        }
        let is_table = matches!(&parser.peek_token().token, Token::Word(w) if w.keyword == Keyword::TABLE)
            && matches!(&parser.peek_nth_token(1).token, Token::Word(_));
        if !is_table {
            return None;
        }
        parser.next_token();
        Some(parser.parse_object_name(false).and_then(|name| {
            let arg = Expr::CompoundIdentifier(
                name.0
                    .iter()
                    .filter_map(|p| p.as_ident().cloned())
                    .collect(),
            );
            let mut args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))];
            // `PARTITION BY col` or `PARTITION BY (col, ..)`: the columns after the table.
            if parser.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
                let columns = if parser.consume_token(&Token::LParen) {
                    let columns = parser.parse_comma_separated(Parser::parse_identifier)?;
                    parser.expect_token(&Token::RParen)?;
                    columns
                } else {
                    vec![parser.parse_identifier()?]
                };
                args.extend(
                    columns
                        .into_iter()
                        .map(|c| FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(c)))),
                );
            }
            Ok(Expr::Function(ast::Function {
                name: ObjectName::from(vec![Ident::new(TABLE_ARGUMENT)]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args,
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            }))
        }))
    }

    /// Flink's own type names; the others (`INT`, `DECIMAL(p, s)`, ...) as `sqlparser` has
    /// them.
    fn parse_data_type(&self, parser: &mut Parser) -> Option<Result<DataType, ParserError>> {
        let Token::Word(word) = parser.peek_token().token else {
            return None;
        };
        let flink_only = matches!(
            word.value.to_uppercase().as_str(),
            "TIMESTAMP_LTZ" | "ROW" | "STRING" | "BYTES" | "TIMESTAMP"
        );
        flink_only.then(|| types::parse_data_type(parser).map(|t| to_sqlparser(&t)))
    }
}

/// The name of the call a `TABLE name` argument parses as.
const TABLE_ARGUMENT: &str = "TABLE";

/// The table a `TABLE name` argument names (its last name part), if `expr` is one.
pub fn table_argument(expr: &Expr) -> Option<String> {
    let Expr::Function(f) = expr else {
        return None;
    };
    if f.name.to_string() != TABLE_ARGUMENT {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.first() {
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::CompoundIdentifier(parts)))) => {
            parts.last().map(|p| p.value.clone())
        }
        _ => None,
    }
}

/// The `PARTITION BY` columns of a `TABLE name PARTITION BY ..` argument (none without).
pub fn table_partition(expr: &Expr) -> Vec<Ident> {
    let Expr::Function(f) = expr else {
        return Vec::new();
    };
    let FunctionArguments::List(list) = &f.args else {
        return Vec::new();
    };
    list.args
        .iter()
        .skip(1)
        .filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(c))) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The `sqlparser` spelling of a Flink type, which [`crate::types::from_sqlparser`] reads
/// back: a custom type named as Flink prints the type.
fn to_sqlparser(ty: &types::DataType) -> DataType {
    DataType::Custom(ObjectName::from(vec![Ident::new(ty.to_string())]), vec![])
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::{SetExpr, Statement, TableFactor};

    /// Flink's window table functions parse: the table argument comes back by name.
    #[test]
    fn a_window_table_function_parses_with_its_table_argument() {
        let sql = "SELECT * FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), \
                   INTERVAL '2' SECOND, INTERVAL '10' SECOND))";
        let statements = sqlparser::parser::Parser::parse_sql(&FlinkDialect, sql).expect("parses");
        let Statement::Query(q) = &statements[0] else {
            panic!("a query");
        };
        let SetExpr::Select(select) = q.body.as_ref() else {
            panic!("a select");
        };
        let TableFactor::TableFunction {
            expr: Expr::Function(hop),
            ..
        } = &select.from[0].relation
        else {
            panic!("a table function: {:?}", select.from[0].relation);
        };
        assert_eq!(hop.name.to_string(), "HOP");
        let FunctionArguments::List(list) = &hop.args else {
            panic!("arguments");
        };
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(first)) = &list.args[0] else {
            panic!("an unnamed argument");
        };
        assert_eq!(table_argument(first).as_deref(), Some("bid"));
        assert_eq!(list.args.len(), 4);
    }
}

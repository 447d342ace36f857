//! Flink's SQL dialect for `sqlparser`: what Flink's parser accepts that the generic one
//! does not, through the `Dialect` hooks.
//!
//! - Identifiers may be quoted with backticks (`` `time` ``), as in Flink;
//! - types are Flink's (`STRING`, `TIMESTAMP_LTZ(3)`, `ROW<..>`: [`crate::types`]), so a
//!   `CAST(x AS TIMESTAMP_LTZ(3))` parses;
//! - aggregates take `FILTER (WHERE ..)`; windows' `PARTITION BY` may follow `ORDER BY`.
//!
//! The DDL that has no `sqlparser` statement (`WATERMARK FOR`, computed columns, `WITH`
//! options as Flink writes them) is parsed by [`crate::ddl`] on the same tokens.

use sqlparser::ast::{DataType, Ident, ObjectName};
use sqlparser::dialect::Dialect;
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

/// The `sqlparser` spelling of a Flink type, which [`crate::types::from_sqlparser`] reads
/// back: a custom type named as Flink prints the type.
fn to_sqlparser(ty: &types::DataType) -> DataType {
    DataType::Custom(ObjectName::from(vec![Ident::new(ty.to_string())]), vec![])
}

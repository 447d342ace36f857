//! Flink's SQL types: what a column holds, spelled and printed as Flink spells them.
//!
//! `STRING` is `VARCHAR(2147483647)`; `TIMESTAMP(p)` is a time without a zone and
//! `TIMESTAMP_LTZ(p)` (`TIMESTAMP(p) WITH LOCAL TIME ZONE`) an instant, shown in the
//! session's `table.local-time-zone` (see [`crate::zone`]); `ROW<..>` nests named fields.
//! The defaults of omitted precisions are Flink's: `DECIMAL` is `DECIMAL(10, 0)`, `TIMESTAMP`
//! is `TIMESTAMP(6)`.

use std::fmt;

use sqlparser::ast::{self, CharacterLength, ExactNumberInfo, TimezoneInfo};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// The length of `STRING`, Flink's `VARCHAR(2147483647)`.
pub const STRING_LENGTH: u32 = i32::MAX as u32;

/// A SQL type, without its nullability ([`DataType`] has both).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    /// The type of the literal `NULL`, which takes the type of what it meets.
    Null,
    /// `BOOLEAN`.
    Boolean,
    /// `TINYINT`: 8 bits.
    TinyInt,
    /// `SMALLINT`: 16 bits.
    SmallInt,
    /// `INT`: 32 bits.
    Int,
    /// `BIGINT`: 64 bits.
    BigInt,
    /// `FLOAT`: 32-bit floating point.
    Float,
    /// `DOUBLE`: 64-bit floating point.
    Double,
    /// `DECIMAL(precision, scale)`: exact, at most 38 digits.
    Decimal {
        /// Digits in all.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// `CHAR(n)`.
    Char(u32),
    /// `VARCHAR(n)`; `STRING` is `VARCHAR(2147483647)`.
    VarChar(u32),
    /// `BYTES` (`VARBINARY(2147483647)`).
    Bytes,
    /// `DATE`.
    Date,
    /// `TIME(p)`.
    Time(u8),
    /// `TIMESTAMP(p)`: a date and time without a time zone.
    Timestamp(u8),
    /// `TIMESTAMP_LTZ(p)`: an instant, shown in the session's time zone.
    TimestampLtz(u8),
    /// `ROW<name type, ...>`.
    Row(Vec<Field>),
    /// `ARRAY<t>`.
    Array(Box<DataType>),
    /// `MAP<k, v>`.
    Map(Box<DataType>, Box<DataType>),
    /// A day-time interval (`INTERVAL '4' SECOND`), held as milliseconds in a `BIGINT`
    /// value.
    Interval,
}

/// A field of a `ROW` type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
}

/// A type and whether it admits `NULL`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataType {
    /// The type.
    pub ty: SqlType,
    /// False for `NOT NULL`.
    pub nullable: bool,
}

impl DataType {
    /// `ty`, nullable.
    pub fn nullable(ty: SqlType) -> Self {
        DataType { ty, nullable: true }
    }

    /// `ty NOT NULL`.
    pub fn not_null(ty: SqlType) -> Self {
        DataType {
            ty,
            nullable: false,
        }
    }
}

/// The types Hummer holds values of, for errors (ends an `Unsupported` error's sentence).
pub const SUPPORTED_TYPES: &str = "the types are BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, \
    DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, DATE, TIMESTAMP(p), TIMESTAMP_LTZ(p) and \
    ROW<..> of them (not TIME, BYTES, ARRAY, MAP or MULTISET yet)";

/// See [`SqlType::into_column`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntoColumn {
    /// The value is of the column's type (or one it holds as it is).
    AsItIs,
    /// Cast to the column's type.
    Cast,
    /// Not implicitly: the query must cast it itself.
    Refused,
}

impl SqlType {
    /// `STRING`.
    pub const STRING: SqlType = SqlType::VarChar(STRING_LENGTH);

    /// True for `TIMESTAMP(p)` and `TIMESTAMP_LTZ(p)`: the types of a time attribute.
    pub fn is_time(&self) -> bool {
        matches!(self, SqlType::Timestamp(_) | SqlType::TimestampLtz(_))
    }

    /// True for the types that order and compare as numbers.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            SqlType::TinyInt
                | SqlType::SmallInt
                | SqlType::Int
                | SqlType::BigInt
                | SqlType::Float
                | SqlType::Double
                | SqlType::Decimal { .. }
        )
    }

    /// The numeric types in the order they widen: `TINYINT` 1, `SMALLINT`, `INT`, `BIGINT`,
    /// `DECIMAL`, `FLOAT`, `DOUBLE` 7; `None` for a type that is not a number.
    pub fn numeric_rank(&self) -> Option<u8> {
        Some(match self {
            SqlType::TinyInt => 1,
            SqlType::SmallInt => 2,
            SqlType::Int => 3,
            SqlType::BigInt => 4,
            SqlType::Decimal { .. } => 5,
            SqlType::Float => 6,
            SqlType::Double => 7,
            _ => return None,
        })
    }

    /// How a value of this type goes into a column of type `to` (an `INSERT`'s sink column),
    /// as Flink's implicit casts allow: as it is, cast, or not at all. A number widens (any
    /// `DECIMAL` into any other), a string of any length into any string, a time into another
    /// time; a number does not narrow (`BIGINT` into `INT`, `DOUBLE` into `FLOAT`) and a value
    /// does not change kind (a number into a string).
    pub fn into_column(&self, to: &SqlType) -> IntoColumn {
        let time = |t: &SqlType| t.is_time() || *t == SqlType::Date;
        match (self, to) {
            (from, to) if from == to => IntoColumn::AsItIs,
            (SqlType::Null, _) => IntoColumn::AsItIs,
            (from, to) if from.is_string() && to.is_string() => IntoColumn::AsItIs,
            (from, to) => match (from.numeric_rank(), to.numeric_rank()) {
                (Some(5), Some(5)) => IntoColumn::Cast,
                (Some(a), Some(b)) if a <= b => IntoColumn::Cast,
                (Some(_), Some(_)) => IntoColumn::Refused,
                _ if time(from) && to.is_time() => IntoColumn::Cast,
                // Nested and collection types are passed on as they are.
                _ if matches!(from, SqlType::Row(_)) && matches!(to, SqlType::Row(_)) => {
                    IntoColumn::AsItIs
                }
                _ => IntoColumn::Refused,
            },
        }
    }

    /// The part of this type Hummer holds no value of (`TIME`, `BYTES`, `ARRAY`, `MAP`, also
    /// inside a `ROW`), if any: a column or a cast of such a type is refused before anything
    /// runs, not when the first value comes.
    pub fn without_values(&self) -> Option<&SqlType> {
        match self {
            SqlType::Time(_) | SqlType::Bytes | SqlType::Array(_) | SqlType::Map(..) => Some(self),
            SqlType::Row(fields) => fields.iter().find_map(|f| f.ty.ty.without_values()),
            _ => None,
        }
    }

    /// True for `CHAR`, `VARCHAR` and `STRING`.
    pub fn is_string(&self) -> bool {
        matches!(self, SqlType::Char(_) | SqlType::VarChar(_))
    }

    /// True for the types a `WATERMARK` can be declared on.
    pub fn is_time_attribute_type(&self) -> bool {
        matches!(self, SqlType::Timestamp(3) | SqlType::TimestampLtz(3))
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Null => f.write_str("NULL"),
            SqlType::Boolean => f.write_str("BOOLEAN"),
            SqlType::TinyInt => f.write_str("TINYINT"),
            SqlType::SmallInt => f.write_str("SMALLINT"),
            SqlType::Int => f.write_str("INT"),
            SqlType::BigInt => f.write_str("BIGINT"),
            SqlType::Float => f.write_str("FLOAT"),
            SqlType::Double => f.write_str("DOUBLE"),
            SqlType::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})"),
            SqlType::Char(n) => write!(f, "CHAR({n})"),
            SqlType::VarChar(STRING_LENGTH) => f.write_str("STRING"),
            SqlType::VarChar(n) => write!(f, "VARCHAR({n})"),
            SqlType::Bytes => f.write_str("BYTES"),
            SqlType::Date => f.write_str("DATE"),
            SqlType::Time(p) => write!(f, "TIME({p})"),
            SqlType::Timestamp(p) => write!(f, "TIMESTAMP({p})"),
            SqlType::TimestampLtz(p) => write!(f, "TIMESTAMP_LTZ({p})"),
            SqlType::Row(fields) => {
                f.write_str("ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{}` {}", field.name, field.ty)?;
                }
                f.write_str(">")
            }
            SqlType::Array(t) => write!(f, "ARRAY<{t}>"),
            SqlType::Map(k, v) => write!(f, "MAP<{k}, {v}>"),
            SqlType::Interval => f.write_str("INTERVAL DAY TO SECOND(3)"),
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ty)?;
        if !self.nullable {
            f.write_str(" NOT NULL")?;
        }
        Ok(())
    }
}

/// Parses a type as Flink writes it, with an optional `NOT NULL` / `NULL` after it.
pub fn parse_data_type(parser: &mut Parser<'_>) -> Result<DataType, ParserError> {
    let mut closes = 0;
    let ty = parse_nested(parser, &mut closes)?;
    if closes > 0 {
        return parser.expected("a type", parser.peek_token());
    }
    Ok(ty)
}

/// A type; `closes` counts a `>` of `>>` that belongs to the enclosing type.
fn parse_nested(parser: &mut Parser<'_>, closes: &mut usize) -> Result<DataType, ParserError> {
    let ty = parse_sql_type(parser, closes)?;
    let nullable = if *closes == 0 && parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
        false
    } else {
        let _ = *closes == 0 && parser.parse_keyword(Keyword::NULL);
        true
    };
    Ok(DataType { ty, nullable })
}

fn parse_sql_type(parser: &mut Parser<'_>, closes: &mut usize) -> Result<SqlType, ParserError> {
    let token = parser.next_token();
    let Token::Word(word) = &token.token else {
        return parser.expected("a type", token);
    };
    let name = word.value.to_uppercase();
    Ok(match name.as_str() {
        "BOOLEAN" | "BOOL" => SqlType::Boolean,
        "TINYINT" => SqlType::TinyInt,
        "SMALLINT" => SqlType::SmallInt,
        "INT" | "INTEGER" => SqlType::Int,
        "BIGINT" => SqlType::BigInt,
        "FLOAT" | "REAL" => SqlType::Float,
        "DOUBLE" => {
            let _ = parser.parse_keyword(Keyword::PRECISION);
            SqlType::Double
        }
        "DECIMAL" | "DEC" | "NUMERIC" => {
            let (precision, scale) = match parser.parse_optional_precision_scale()? {
                (None, _) => (10, 0),
                (Some(p), s) => (p, s.unwrap_or(0)),
            };
            if !(1..=38).contains(&precision) || scale > precision {
                return Err(ParserError::ParserError(format!(
                    "DECIMAL({precision}, {scale}): the precision must be 1 to 38 and the \
                     scale at most the precision"
                )));
            }
            SqlType::Decimal {
                precision: precision as u8,
                scale: scale as u8,
            }
        }
        "CHAR" | "CHARACTER" => SqlType::Char(length(parser, 1)?),
        // Without a length, as long as a STRING (as Flink's planner takes a bare VARCHAR).
        "VARCHAR" => SqlType::VarChar(length(parser, u64::from(STRING_LENGTH))?),
        "STRING" => SqlType::STRING,
        "BYTES" | "VARBINARY" | "BINARY" => {
            let _ = parser.parse_optional_precision()?;
            SqlType::Bytes
        }
        "DATE" => SqlType::Date,
        "TIME" => {
            let p = precision(parser, 0, 9)?;
            let _ = parser.parse_keywords(&[Keyword::WITHOUT, Keyword::TIME, Keyword::ZONE]);
            SqlType::Time(p)
        }
        "TIMESTAMP" => {
            let p = precision(parser, 6, 9)?;
            if parser.parse_keywords(&[Keyword::WITH, Keyword::LOCAL, Keyword::TIME, Keyword::ZONE])
            {
                SqlType::TimestampLtz(p)
            } else {
                let _ = parser.parse_keywords(&[Keyword::WITHOUT, Keyword::TIME, Keyword::ZONE]);
                SqlType::Timestamp(p)
            }
        }
        "TIMESTAMP_LTZ" => SqlType::TimestampLtz(precision(parser, 6, 9)?),
        "ROW" => SqlType::Row(row_fields(parser, closes)?),
        "ARRAY" => {
            open_angle(parser)?;
            let element = parse_nested(parser, closes)?;
            close_angle(parser, closes)?;
            SqlType::Array(Box::new(element))
        }
        "MAP" => {
            open_angle(parser)?;
            let key = parse_nested(parser, closes)?;
            parser.expect_token(&Token::Comma)?;
            let value = parse_nested(parser, closes)?;
            close_angle(parser, closes)?;
            SqlType::Map(Box::new(key), Box::new(value))
        }
        _ => {
            return Err(ParserError::ParserError(format!(
                "unknown type {}; the types are BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, \
                 FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, BYTES, DATE, \
                 TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), ROW<..>, ARRAY<t>, MAP<k, v>{}",
                word.value, token.span.start
            )));
        }
    })
}

/// `ROW<a INT, b STRING>` or `ROW(a INT, b STRING)`.
fn row_fields(parser: &mut Parser<'_>, closes: &mut usize) -> Result<Vec<Field>, ParserError> {
    let angle = if parser.consume_token(&Token::LParen) {
        false
    } else {
        open_angle(parser)?;
        true
    };
    let mut fields = Vec::new();
    loop {
        let name = parser.parse_identifier()?.value;
        let ty = parse_nested(parser, closes)?;
        fields.push(Field { name, ty });
        if *closes > 0 || !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    if angle {
        close_angle(parser, closes)?;
    } else {
        parser.expect_token(&Token::RParen)?;
    }
    Ok(fields)
}

fn open_angle(parser: &mut Parser<'_>) -> Result<(), ParserError> {
    parser.expect_token(&Token::Lt).map(|_| ())
}

/// A `>`: one left over from a `>>`, or a `>` or `>>` token (a `>>` leaves one for the type
/// around this one).
fn close_angle(parser: &mut Parser<'_>, closes: &mut usize) -> Result<(), ParserError> {
    if *closes > 0 {
        *closes -= 1;
        return Ok(());
    }
    if parser.consume_token(&Token::Gt) {
        return Ok(());
    }
    if parser.consume_token(&Token::ShiftRight) {
        *closes += 1;
        return Ok(());
    }
    parser.expected(">", parser.peek_token())
}

/// An optional `(n)` length, at least 1.
fn length(parser: &mut Parser<'_>, default: u64) -> Result<u32, ParserError> {
    let n = parser.parse_optional_precision()?.unwrap_or(default);
    if n == 0 || n > u64::from(STRING_LENGTH) {
        return Err(ParserError::ParserError(format!(
            "a length of {n}: it must be 1 to {STRING_LENGTH}"
        )));
    }
    Ok(n as u32)
}

/// An optional `(p)` precision of fractional seconds, at most `max`.
fn precision(parser: &mut Parser<'_>, default: u64, max: u64) -> Result<u8, ParserError> {
    let p = parser.parse_optional_precision()?.unwrap_or(default);
    if p > max {
        return Err(ParserError::ParserError(format!(
            "a precision of {p}: it must be 0 to {max}"
        )));
    }
    Ok(p as u8)
}

/// A type as `sqlparser` parsed it (in a `CAST`, say), as Flink reads it; `None` for a type
/// Flink does not have.
pub fn from_sqlparser(ty: &ast::DataType) -> Option<DataType> {
    use ast::DataType as A;
    let sql = match ty {
        A::Custom(name, modifiers) if modifiers.is_empty() && name.0.len() == 1 => {
            let text = name.to_string();
            let mut parser = Parser::new(&crate::dialect::FlinkDialect)
                .try_with_sql(&text)
                .ok()?;
            return parse_data_type(&mut parser).ok();
        }
        A::Boolean | A::Bool => SqlType::Boolean,
        A::TinyInt(_) => SqlType::TinyInt,
        A::SmallInt(_) => SqlType::SmallInt,
        A::Int(_) | A::Integer(_) => SqlType::Int,
        A::BigInt(_) => SqlType::BigInt,
        A::Float(_) | A::Real => SqlType::Float,
        A::Double(_) | A::DoublePrecision => SqlType::Double,
        A::Decimal(info) | A::Numeric(info) | A::Dec(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (10, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, u64::try_from(*s).ok()?),
            };
            if !(1..=38).contains(&precision) || scale > precision {
                return None;
            }
            SqlType::Decimal {
                precision: precision as u8,
                scale: scale as u8,
            }
        }
        A::Char(len) | A::Character(len) => SqlType::Char(char_length(len.as_ref(), 1)?),
        A::Varchar(len) | A::CharacterVarying(len) | A::CharVarying(len) => {
            SqlType::VarChar(char_length(len.as_ref(), 1)?)
        }
        A::String(_) | A::Text => SqlType::STRING,
        A::Date => SqlType::Date,
        A::Time(p, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            SqlType::Time(p.unwrap_or(0).min(9) as u8)
        }
        _ => return None,
    };
    Some(DataType::nullable(sql))
}

fn char_length(len: Option<&CharacterLength>, default: u64) -> Option<u32> {
    match len {
        None => Some(default as u32),
        Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length).ok(),
        Some(CharacterLength::Max) => Some(STRING_LENGTH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::FlinkDialect;

    fn parse(text: &str) -> Result<DataType, ParserError> {
        let mut parser = Parser::new(&FlinkDialect).try_with_sql(text)?;
        parse_data_type(&mut parser)
    }

    #[test]
    fn flink_types_parse_and_print_as_flink_prints_them() {
        for (text, printed) in [
            ("INT", "INT"),
            ("BIGINT NOT NULL", "BIGINT NOT NULL"),
            // As Flink's planner (FlinkTypeSystem): a bare VARCHAR is as long as a STRING.
            ("varchar", "STRING"),
            ("VARCHAR(1)", "VARCHAR(1)"),
            ("STRING", "STRING"),
            ("VARCHAR(2147483647)", "STRING"),
            ("DECIMAL", "DECIMAL(10, 0)"),
            ("DECIMAL(23, 3)", "DECIMAL(23, 3)"),
            ("TIMESTAMP", "TIMESTAMP(6)"),
            ("TIMESTAMP(3)", "TIMESTAMP(3)"),
            ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"),
            ("TIMESTAMP_LTZ(3) NOT NULL", "TIMESTAMP_LTZ(3) NOT NULL"),
            ("DOUBLE PRECISION", "DOUBLE"),
            (
                "ROW<a INT, `b c` ROW<d STRING NOT NULL>>",
                "ROW<`a` INT, `b c` ROW<`d` STRING NOT NULL>>",
            ),
            (
                "ARRAY<MAP<STRING, ARRAY<INT>>>",
                "ARRAY<MAP<STRING, ARRAY<INT>>>",
            ),
            ("ROW(x BIGINT, y DOUBLE)", "ROW<`x` BIGINT, `y` DOUBLE>"),
        ] {
            let ty = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(ty.to_string(), printed, "{text}");
            assert_eq!(parse(printed).unwrap(), ty, "{printed} reparses");
        }
    }

    #[test]
    fn a_bad_type_is_refused_with_what_the_types_are() {
        let e = parse("INTEGRAL").unwrap_err().to_string();
        assert!(
            e.contains("unknown type INTEGRAL; the types are BOOLEAN"),
            "{e}"
        );
        assert!(parse("DECIMAL(40, 2)").is_err());
        assert!(parse("TIMESTAMP(12)").is_err());
        assert!(parse("ROW<a INT").is_err());
    }
}

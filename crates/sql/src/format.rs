//! Flink's `csv` format: a row as one line of fields, and back.
//!
//! Fields are separated by `csv.field-delimiter` (`,`); a field holding the delimiter, a
//! quote or a line break is quoted with `"` (a quote in it doubled). Reading, an empty
//! field of a non-string column is `NULL`, and of a string column the empty string (as
//! Flink's CSV format does without `csv.null-literal`); a field that is not of its column's
//! type is refused with the column named.

use crate::expr::cast;
use crate::schema::Schema;
use crate::types::SqlType;
use crate::value::{Row, Value, write_timestamp};

/// The options of the `csv` format.
#[derive(Clone, Debug)]
pub struct Csv {
    /// `csv.field-delimiter`.
    pub delimiter: char,
    /// `csv.null-literal`: a field that is `NULL` whatever its column's type.
    pub null_literal: Option<String>,
    /// `csv.ignore-parse-errors`: a bad line is skipped instead of failing the job.
    pub ignore_parse_errors: bool,
}

impl Default for Csv {
    fn default() -> Self {
        Csv {
            delimiter: ',',
            null_literal: None,
            ignore_parse_errors: false,
        }
    }
}

impl Csv {
    /// Splits a line into its fields (quotes removed).
    pub fn fields(&self, line: &str) -> Vec<String> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' if quoted => quoted = false,
                '"' if field.is_empty() => quoted = true,
                c if c == self.delimiter && !quoted => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        fields
    }

    /// The row of `line` for `schema`'s columns.
    pub fn decode(&self, line: &str, schema: &Schema) -> Result<Row, String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let fields = self.fields(line);
        if fields.len() != schema.columns.len() {
            return Err(format!(
                "{} fields where the table has {} columns",
                fields.len(),
                schema.columns.len()
            ));
        }
        fields
            .into_iter()
            .zip(&schema.columns)
            .map(|(field, column)| {
                if self.null_literal.as_deref() == Some(field.as_str())
                    || (field.is_empty() && !column.ty.ty.is_string())
                {
                    return Ok(Value::Null);
                }
                let value = match &column.ty.ty {
                    t if t.is_string() => Value::String(field),
                    t => cast(Value::String(field.clone()), t).map_err(|_| {
                        format!("column '{}' ({t}) cannot hold '{field}'", column.name)
                    })?,
                };
                Ok(value)
            })
            .collect()
    }

    /// Appends `row` as a line (without the line break).
    pub fn encode(&self, row: &[Value], types: &[SqlType], out: &mut String) {
        for (i, value) in row.iter().enumerate() {
            if i > 0 {
                out.push(self.delimiter);
            }
            let text = match (value, types.get(i)) {
                (Value::Null, _) => self.null_literal.clone().unwrap_or_default(),
                (
                    Value::Timestamp(ms) | Value::TimestampLtz(ms),
                    Some(SqlType::Timestamp(p) | SqlType::TimestampLtz(p)),
                ) => {
                    let mut t = String::new();
                    let _ = write_timestamp(&mut t, *ms, *p);
                    t
                }
                (v, _) => v.to_string(),
            };
            if text.contains([self.delimiter, '"', '\n', '\r']) {
                out.push('"');
                out.push_str(&text.replace('"', "\"\""));
                out.push('"');
            } else {
                out.push_str(&text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;
    use crate::types::DataType;
    use proptest::prelude::*;

    fn schema(types: &[SqlType]) -> Schema {
        Schema::new(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Column {
                    name: format!("c{i}"),
                    ty: DataType::nullable(t.clone()),
                })
                .collect(),
        )
    }

    #[test]
    fn fields_are_typed_and_bad_ones_named() {
        let s = schema(&[SqlType::BigInt, SqlType::STRING, SqlType::Double]);
        let csv = Csv::default();
        assert_eq!(
            csv.decode("7,\"a, \"\"b\"\"\",", &s).unwrap(),
            vec![
                Value::BigInt(7),
                Value::String("a, \"b\"".into()),
                Value::Null
            ]
        );
        assert_eq!(
            csv.decode("x,a,1", &s).unwrap_err(),
            "column 'c0' (BIGINT) cannot hold 'x'"
        );
        assert_eq!(
            csv.decode("1,a", &s).unwrap_err(),
            "2 fields where the table has 3 columns"
        );
    }

    proptest! {
        /// A row encoded and decoded is the same row, for strings with delimiters and quotes.
        #[test]
        fn rows_round_trip(a in any::<i64>(), s in "[a-z,\"' ]{0,10}", d in -1e9f64..1e9) {
            let types = [SqlType::BigInt, SqlType::STRING, SqlType::Double];
            let row = vec![Value::BigInt(a), Value::String(s), Value::Double(d)];
            let csv = Csv::default();
            let mut line = String::new();
            csv.encode(&row, &types, &mut line);
            prop_assert_eq!(csv.decode(&line, &schema(&types)).unwrap(), row);
        }
    }
}

//! Flink's `csv` format: a row as one line of fields, and back.
//!
//! Fields are separated by `csv.field-delimiter` (`,`); a field holding the delimiter, a
//! quote or a line break is quoted with `"` (a quote in it doubled). Reading, an empty
//! field of a non-string column is `NULL`, and of a string column the empty string (as
//! Flink's CSV format does without `csv.null-literal`); a field that is not of its column's
//! type is refused with the column named.

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
    /// `csv.ignore-parse-errors`: a field that is not of its column's type is `NULL`, a
    /// missing one too, and extra fields are ignored, instead of failing the job (Flink's
    /// "fields are set to null in case of errors").
    pub ignore_parse_errors: bool,
    /// `csv.allow-comments`: a line starting with `#` is skipped.
    pub allow_comments: bool,
}

impl Default for Csv {
    fn default() -> Self {
        Csv {
            delimiter: ',',
            null_literal: None,
            ignore_parse_errors: false,
            allow_comments: false,
        }
    }
}

impl Csv {
    /// The row of `line` for `schema`'s columns.
    pub fn decode(&self, line: &str, schema: &Schema) -> Result<Row, String> {
        self.decode_used(line, schema, None)
    }

    /// The row of `line` for `schema`'s columns, the columns `used` does not mark left
    /// `NULL` without being read (a query's projection pushed into the format, as Flink's
    /// csv format takes it). A field is sliced out of the line where it is not quoted, and
    /// a number is parsed from the slice: only a string column's value is allocated.
    pub fn decode_used(
        &self,
        line: &str,
        schema: &Schema,
        used: Option<&[bool]>,
    ) -> Result<Row, String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut row = Vec::with_capacity(schema.columns.len());
        let mut rest = Some(line);
        let mut count = 0;
        while let Some(text) = rest {
            let (field, after) = self.next_field(text);
            rest = after;
            let i = count;
            count += 1;
            let Some(column) = schema.columns.get(i) else {
                continue;
            };
            if used.is_some_and(|u| !u.get(i).copied().unwrap_or(true)) {
                row.push(Value::Null);
                continue;
            }
            if self.null_literal.as_deref() == Some(&*field)
                || (field.is_empty() && !column.ty.ty.is_string())
            {
                row.push(Value::Null);
                continue;
            }
            let fast = match &column.ty.ty {
                t if t.is_string() => Some(Value::String(field.clone().into_owned())),
                SqlType::BigInt => field.parse().ok().map(Value::BigInt),
                SqlType::Int => field.parse().ok().map(Value::Int),
                _ => None,
            };
            let value = match fast {
                Some(v) => v,
                None => {
                    let t = &column.ty.ty;
                    match super::field_value(&field, t) {
                        Some(v) => v,
                        None if self.ignore_parse_errors => Value::Null,
                        None => {
                            return Err(format!(
                                "column '{}' ({t}) cannot hold '{field}'",
                                column.name
                            ));
                        }
                    }
                }
            };
            row.push(value);
        }
        if self.ignore_parse_errors {
            row.resize(schema.columns.len(), Value::Null);
            return Ok(row);
        }
        if count != schema.columns.len() {
            return Err(format!(
                "{count} fields where the table has {} columns",
                schema.columns.len()
            ));
        }
        Ok(row)
    }

    /// The first field of `text` and the text after its delimiter (`None` at the line's
    /// end): a slice where it is not quoted, else unquoted into a string of its own.
    fn next_field<'a>(&self, text: &'a str) -> (std::borrow::Cow<'a, str>, Option<&'a str>) {
        if !text.starts_with('"') {
            let at = if self.delimiter.is_ascii() {
                memchr::memchr(self.delimiter as u8, text.as_bytes())
            } else {
                text.find(self.delimiter)
            };
            return match at {
                Some(at) => (
                    std::borrow::Cow::Borrowed(&text[..at]),
                    Some(&text[at + self.delimiter.len_utf8()..]),
                ),
                None => (std::borrow::Cow::Borrowed(text), None),
            };
        }
        let mut field = String::new();
        let mut chars = text.char_indices().skip(1).peekable();
        let mut quoted = true;
        while let Some((at, c)) = chars.next() {
            match c {
                '"' if quoted && chars.peek().is_some_and(|&(_, n)| n == '"') => {
                    field.push('"');
                    chars.next();
                }
                '"' if quoted => quoted = false,
                c if c == self.delimiter && !quoted => {
                    return (
                        std::borrow::Cow::Owned(field),
                        Some(&text[at + c.len_utf8()..]),
                    );
                }
                c => field.push(c),
            }
        }
        (std::borrow::Cow::Owned(field), None)
    }

    /// Whether `record` ends inside a quoted field (`1,"a` of `1,"a⏎b"`): the line break
    /// after it is part of the field, and the record goes on on the next line (RFC 4180, as
    /// Flink's csv format reads it). A quote inside an unquoted field is a character.
    pub fn ends_inside_quotes(&self, record: &str) -> bool {
        if memchr::memchr(b'"', record.as_bytes()).is_none() {
            return false;
        }
        let (mut quoted, mut field_start) = (false, true);
        let mut chars = record.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                if c == '"' && chars.next_if_eq(&'"').is_none() {
                    quoted = false;
                }
            } else if c == self.delimiter {
                field_start = true;
                continue;
            } else if c == '"' && field_start {
                quoted = true;
            }
            field_start = false;
        }
        quoted
    }

    /// Appends `row` as a line (without the line break). Each field is written in place and
    /// quoted afterwards only if it holds the delimiter, a quote or a line break.
    pub fn encode(&self, row: &[Value], types: &[SqlType], out: &mut String) {
        use std::fmt::Write as _;
        for (i, value) in row.iter().enumerate() {
            if i > 0 {
                out.push(self.delimiter);
            }
            if let Value::String(text) = value {
                self.push_field(out, text);
                continue;
            }
            let start = out.len();
            // Writing to a String does not fail.
            let _ = match (value, types.get(i)) {
                (Value::Null, _) => {
                    out.push_str(self.null_literal.as_deref().unwrap_or_default());
                    Ok(())
                }
                (Value::Timestamp(ms), Some(SqlType::Timestamp(p))) => {
                    write_timestamp(out, *ms, *p)
                }
                (Value::TimestampLtz(ms), Some(SqlType::TimestampLtz(p))) => {
                    super::write_instant(out, *ms, *p);
                    Ok(())
                }
                // Flink's csv format writes booleans as Jackson does.
                (Value::Boolean(b), _) => {
                    out.push_str(if *b { "true" } else { "false" });
                    Ok(())
                }
                (v, _) => write!(out, "{v}"),
            };
            if self.needs_quotes(&out[start..]) {
                let text = out.split_off(start);
                self.push_field(out, &text);
            }
        }
    }

    fn needs_quotes(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        // An ASCII delimiter (all but exotic ones) is one byte to look for: a byte search
        // instead of decoding every character (it was 15 % of q1).
        match u8::try_from(self.delimiter) {
            Ok(d) if d.is_ascii() => {
                memchr::memchr3(b'"', b'\n', b'\r', bytes).is_some()
                    || memchr::memchr(d, bytes).is_some()
            }
            _ => text.contains([self.delimiter, '"', '\n', '\r']),
        }
    }

    /// Appends `text` as a field, quoted (its quotes doubled) where it must be.
    fn push_field(&self, out: &mut String, text: &str) {
        if self.needs_quotes(text) {
            out.push('"');
            out.push_str(&text.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// With `csv.ignore-parse-errors` a field of the wrong type is NULL, a missing one too,
    /// and an extra one is ignored; the rest of the line is read.
    #[test]
    fn ignoring_parse_errors_makes_bad_fields_null() {
        let s = Schema::of_types(&[SqlType::STRING, SqlType::Int, SqlType::Timestamp(3)]);
        let csv = Csv {
            ignore_parse_errors: true,
            ..Csv::default()
        };
        let b = Value::String("b".into());
        assert_eq!(
            csv.decode("b,xx,2024-01-01 00:00:02", &s).unwrap(),
            vec![b.clone(), Value::Null, Value::Timestamp(1_704_067_202_000)]
        );
        assert_eq!(
            csv.decode("b,3", &s).unwrap(),
            vec![b.clone(), Value::Int(3), Value::Null]
        );
        assert_eq!(
            csv.decode("b,3,x,extra", &s).unwrap(),
            vec![b, Value::Int(3), Value::Null]
        );
    }

    /// A `TIMESTAMP_LTZ` as Flink's formats write it, with a `Z`, reads as without.
    #[test]
    fn a_local_time_zone_timestamp_reads_with_or_without_its_z() {
        let s = Schema::of_types(&[SqlType::TimestampLtz(3)]);
        let csv = Csv::default();
        for text in ["2024-01-01 00:00:03.000Z", "2024-01-01 00:00:03.000"] {
            assert_eq!(
                csv.decode(text, &s).unwrap(),
                csv.decode("2024-01-01 00:00:03", &s).unwrap(),
                "{text}"
            );
        }
        let t = Schema::of_types(&[SqlType::Timestamp(3)]);
        assert!(csv.decode("2024-01-01 00:00:03Z", &t).is_err());
    }

    #[test]
    fn fields_are_typed_and_bad_ones_named() {
        let s = Schema::of_types(&[SqlType::BigInt, SqlType::STRING, SqlType::Double]);
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
        fn a_record_with_line_breaks_round_trips(
            s in "[a-z,\"\n ]{0,12}",
            t in "[a-z\n]{0,4}",
        ) {
            let types = [SqlType::STRING, SqlType::STRING];
            let row = vec![Value::String(s), Value::String(t)];
            let csv = Csv::default();
            let mut text = String::new();
            csv.encode(&row, &types, &mut text);
            // Read line by line as a file's reader does, joining while a quote is open.
            let mut record: Option<String> = None;
            let mut rows = Vec::new();
            for line in text.split('\n') {
                let joined = match record.take() {
                    Some(open) => open + "\n" + line,
                    None => line.to_string(),
                };
                if csv.ends_inside_quotes(&joined) {
                    record = Some(joined);
                } else {
                    rows.push(csv.decode(&joined, &Schema::of_types(&types)).unwrap());
                }
            }
            prop_assert!(record.is_none());
            prop_assert_eq!(rows, vec![row]);
        }

        #[test]
        fn rows_round_trip(
            a in any::<i64>(),
            s in "[a-z,;|\t¦\"' é]{0,10}",
            d in -1e9f64..1e9,
            delimiter in prop_oneof![Just(','), Just(';'), Just('\t'), Just('¦')],
        ) {
            let types = [SqlType::BigInt, SqlType::STRING, SqlType::Double];
            let row = vec![Value::BigInt(a), Value::String(s), Value::Double(d)];
            let csv = Csv { delimiter, ..Csv::default() };
            let mut line = String::new();
            csv.encode(&row, &types, &mut line);
            prop_assert_eq!(csv.decode(&line, &Schema::of_types(&types)).unwrap(), row);
        }
    }
}

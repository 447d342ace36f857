//! Flink's `json` and `debezium-json` formats: a row as a JSON object keyed by column name,
//! and a change as Debezium's envelope around one.
//!
//! Writing, numbers and booleans are bare, `NULL` is `null`, a `ROW` a nested object, and
//! every other value the string `CAST(v AS STRING)` gives (timestamps as
//! `yyyy-MM-dd HH:mm:ss.SSS`, Flink's `'json.timestamp-format.standard' = 'SQL'`). Reading,
//! a field the object lacks is `NULL` (Flink's `'json.fail-on-missing-field' = 'false'`),
//! fields the table does not have are ignored, and a value that is not of its column's type
//! is refused naming the column.

use serde_json::Value as Json;

use crate::changelog::{Change, RowKind};
use crate::expr::cast;
use crate::schema::Schema;
use crate::types::{DataType, SqlType};
use crate::value::{Row, Value};

/// The row of the JSON object `text` for `schema`'s columns; `lenient` (the table's
/// `json.ignore-parse-errors`), a field that is not of its column's type is `NULL`, as
/// Flink's JSON format sets it.
pub fn decode(text: &str, schema: &Schema, lenient: bool) -> Result<Row, String> {
    let object: Json = serde_json::from_str(text).map_err(|e| format!("it is not JSON ({e})"))?;
    let Json::Object(fields) = object else {
        return Err("it is not a JSON object".into());
    };
    if lenient {
        return Ok(schema
            .columns
            .iter()
            .map(|c| {
                fields
                    .get(&c.name)
                    .and_then(|v| value(v, &c.ty).ok())
                    .unwrap_or(Value::Null)
            })
            .collect());
    }
    row(&fields, schema)
}

/// The change of the Debezium envelope `text` (`{"before":..,"after":..,"op":..}`, or the
/// same under `"payload"`): `op` `c` or `r` inserts `after`, `u` updates `before` to `after`
/// (the old row returned beside the new), `d` deletes `before`, as Flink's `debezium-json`
/// reads them.
pub fn decode_debezium(text: &str, schema: &Schema) -> Result<(RowKind, Row, Option<Row>), String> {
    let object: Json = serde_json::from_str(text).map_err(|e| format!("it is not JSON ({e})"))?;
    let envelope = match object.get("payload") {
        Some(payload) if payload.get("op").is_some() => payload,
        _ => &object,
    };
    let part = |name: &str| -> Result<Option<Row>, String> {
        match envelope.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Object(fields)) => row(fields, schema)
                .map(Some)
                .map_err(|e| format!("'{name}': {e}")),
            Some(other) => Err(format!("'{name}' is not a JSON object but {other}")),
        }
    };
    let missing = |name: &str, op: &str| {
        format!(
            "the '{name}' row of an '{op}' change is null (a Postgres source table needs \
             REPLICA IDENTITY FULL for updates and deletes)"
        )
    };
    let op = envelope.get("op").and_then(Json::as_str);
    match op {
        Some(op @ ("c" | "r")) => Ok((
            RowKind::Insert,
            part("after")?.ok_or_else(|| missing("after", op))?,
            None,
        )),
        Some("u") => {
            let after = part("after")?.ok_or_else(|| missing("after", "u"))?;
            let before = part("before")?.ok_or_else(|| missing("before", "u"))?;
            Ok((RowKind::UpdateAfter, after, Some(before)))
        }
        Some("d") => Ok((
            RowKind::Delete,
            part("before")?.ok_or_else(|| missing("before", "d"))?,
            None,
        )),
        Some(other) => Err(format!(
            "the operation '{other}' is none of 'c', 'r', 'u' and 'd'"
        )),
        None => Err("it has no \"op\" (not a Debezium change)".into()),
    }
}

/// The row of a JSON object's fields for `schema`'s columns.
fn row(fields: &serde_json::Map<String, Json>, schema: &Schema) -> Result<Row, String> {
    schema
        .columns
        .iter()
        .map(|c| {
            fields
                .get(&c.name)
                .map_or(Ok(Value::Null), |v| value(v, &c.ty))
                .map_err(|e| format!("column '{}' ({}): {e}", c.name, c.ty.ty))
        })
        .collect()
}

/// A JSON value as a value of type `ty`.
fn value(json: &Json, ty: &DataType) -> Result<Value, String> {
    let bad = || format!("cannot hold {json}");
    match (json, &ty.ty) {
        (Json::Null, _) => Ok(Value::Null),
        (Json::Object(fields), SqlType::Row(declared)) => declared
            .iter()
            .map(|f| {
                fields
                    .get(&f.name)
                    .map_or(Ok(Value::Null), |v| value(v, &f.ty))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Row),
        (Json::Object(_) | Json::Array(_), _) | (_, SqlType::Row(_)) => Err(bad()),
        (Json::Bool(b), _) => cast(Value::Boolean(*b), &ty.ty).map_err(|_| bad()),
        (Json::Number(n), SqlType::Float | SqlType::Double) => {
            n.as_f64().map(Value::Double).ok_or_else(bad)
        }
        (Json::Number(n), _) => {
            let parsed = match n.as_i64() {
                Some(i) => Value::BigInt(i),
                None if matches!(ty.ty, SqlType::Decimal { .. }) => Value::String(n.to_string()),
                None => n.as_f64().map(Value::Double).ok_or_else(bad)?,
            };
            cast(parsed, &ty.ty).map_err(|_| bad())
        }
        (Json::String(s), SqlType::Char(_) | SqlType::VarChar(_)) => Ok(Value::String(s.clone())),
        (Json::String(s), _) => super::field_value(s, &ty.ty).ok_or_else(bad),
    }
}

/// Appends `row` as a JSON object with `names` as its keys.
pub fn encode(row: &[Value], names: &[String], types: &[SqlType], out: &mut String) {
    out.push('{');
    for (i, (name, value)) in names.iter().zip(row).enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(name, out);
        out.push(':');
        json_value(value, types.get(i), out);
    }
    out.push('}');
}

/// Appends `change` as Flink's `debezium-json` writes it: an insert or the new row of an
/// update as `{"before":null,"after":{..},"op":"c"}`, a delete or the old row of an update
/// as `{"before":{..},"after":null,"op":"d"}`.
pub fn encode_debezium(change: &Change, names: &[String], types: &[SqlType], out: &mut String) {
    let mut object = String::new();
    encode(&change.row, names, types, &mut object);
    if change.kind.retracts() {
        out.push_str(&format!(
            "{{\"before\":{object},\"after\":null,\"op\":\"d\"}}"
        ));
    } else {
        out.push_str(&format!(
            "{{\"before\":null,\"after\":{object},\"op\":\"c\"}}"
        ));
    }
}

/// A value of type `ty` in JSON: numbers and booleans bare, `NULL` as `null`, a `ROW` as an
/// object of its fields (as Flink's json format nests it), everything else as the string
/// `CAST(v AS STRING)` gives.
fn json_value(value: &Value, ty: Option<&SqlType>, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Row(values) => {
            let fields = match ty {
                Some(SqlType::Row(fields)) => fields.as_slice(),
                _ => &[],
            };
            out.push('{');
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let field = fields.get(i);
                match field {
                    Some(f) => string(&f.name, out),
                    None => string(&format!("f{i}"), out),
                }
                out.push(':');
                json_value(value, field.map(|f| &f.ty.ty), out);
            }
            out.push('}');
        }
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(_) | Value::BigInt(_) | Value::Decimal(..) => out.push_str(&value.to_string()),
        Value::Double(d) if d.is_finite() => out.push_str(&value.to_string()),
        // An instant as it is in UTC with a `Z`, whatever the session's zone (as Flink's).
        Value::TimestampLtz(ms) => {
            let mut text = String::new();
            super::write_instant(&mut text, *ms, 3);
            string(&text, out)
        }
        other => string(&other.to_string(), out),
    }
}

/// `s` as a JSON string.
fn string(s: &str, out: &mut String) {
    out.push('"');
    // Runs of characters that need no escape are copied whole: a byte below 0x80 is a whole
    // character in UTF-8, so every escaped byte is a character boundary.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        match escaped {
            "" => out.push_str(&format!("\\u{b:04x}")),
            e => out.push_str(e),
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `json.ignore-parse-errors`: the others read, a field of the wrong type is NULL.
    #[test]
    fn a_field_that_does_not_decode_is_null_when_errors_are_ignored() {
        let s = Schema::of_types(&[SqlType::STRING, SqlType::Int]);
        assert_eq!(
            decode(r#"{"c0": "b", "c1": "xx"}"#, &s, true).unwrap(),
            vec![Value::String("b".into()), Value::Null]
        );
        assert!(decode(r#"{"c0": "b", "c1": "xx"}"#, &s, false).is_err());
        assert!(
            decode("[1]", &s, true).is_err(),
            "not an object: the line is skipped"
        );
    }

    #[test]
    fn missing_fields_are_null_and_bad_ones_named() {
        let s = Schema::of_types(&[SqlType::BigInt, SqlType::STRING, SqlType::Timestamp(3)]);
        assert_eq!(
            decode(
                r#"{"c0": 7, "other": 1, "c2": "2024-01-02 03:04:05.006"}"#,
                &s,
                false
            )
            .unwrap(),
            vec![
                Value::BigInt(7),
                Value::Null,
                Value::Timestamp(1_704_164_645_006)
            ]
        );
        let err = decode(r#"{"c0": "x"}"#, &s, false).unwrap_err();
        assert!(err.contains("'c0'") && err.contains("\"x\""), "{err}");
        assert!(
            decode("[1]", &s, false)
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(decode("{", &s, false).unwrap_err().contains("not JSON"));
    }

    proptest! {
        /// A row encoded and decoded is the same row, strings with quotes and escapes too.
        #[test]
        fn rows_round_trip(
            a in any::<i64>(),
            s in prop_oneof!["[a-z,\"'\\\\\n\t\r\u{1}\u{1f}é漢 ]{0,10}", any::<String>()],
            d in -1e9f64..1e9,
            b in any::<bool>(),
            t in 0i64..4_000_000_000_000,
        ) {
            let field = |name: &str, ty| crate::types::Field {
                name: name.into(),
                ty: DataType::nullable(ty),
            };
            let nested = SqlType::Row(vec![field("f", SqlType::BigInt), field("g", SqlType::STRING)]);
            let types = [
                SqlType::BigInt, SqlType::STRING, SqlType::Double, SqlType::Boolean,
                SqlType::Timestamp(3), nested,
            ];
            let row = vec![
                Value::BigInt(a), Value::String(s.clone()), Value::Double(d), Value::Boolean(b),
                Value::Timestamp(t), Value::Row(vec![Value::BigInt(a), Value::String(s)]),
            ];
            let names: Vec<String> = (0..types.len()).map(|i| format!("c{i}")).collect();
            let mut text = String::new();
            encode(&row, &names, &types, &mut text);
            prop_assert!(text.contains(&format!("\"c5\":{{\"f\":{a},\"g\":")), "{}", text);
            prop_assert_eq!(decode(&text, &Schema::of_types(&types), false).unwrap(), row);
        }
    }
}

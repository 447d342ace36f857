//! Flink's `JSON_VALUE`, `JSON_QUERY` and `JSON_EXISTS` over text holding JSON, with SQL/JSON
//! paths in lax mode: `$`, then `.key`, `."key"`, `['key']` and `[index]` steps.
//!
//! As Flink's defaults: a path that finds nothing, or text that is not JSON, gives `NULL`
//! (`FALSE` for `JSON_EXISTS`); `JSON_VALUE` gives a scalar as text (and `NULL` for an object
//! or an array), `JSON_QUERY` an object or array as JSON text (and `NULL` for a scalar).

use serde_json::Value as Json;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A member of an object.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// A parsed path: its steps from the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPath(pub Vec<Step>);

impl JsonPath {
    /// Parses `$.a.b[0]['c d']` (an optional `lax ` in front); what is wrong, if it is not one.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let text = text.trim();
        let text = text.strip_prefix("lax ").unwrap_or(text).trim_start();
        if text.starts_with("strict ") {
            return Err("is in strict mode, which Hummer does not take (lax is)".into());
        }
        let chars: Vec<char> = text.chars().collect();
        if chars.first() != Some(&'$') {
            return Err("does not start with '$'".into());
        }
        let mut steps = Vec::new();
        let mut i = 1;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let (key, next) = if chars.get(i) == Some(&'"') {
                        quoted(&chars, i, '"')?
                    } else {
                        let start = i;
                        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                            i += 1;
                        }
                        if i == start {
                            return Err(format!("has no key after '.' at {start}"));
                        }
                        (chars[start..i].iter().collect(), i)
                    };
                    steps.push(Step::Key(key));
                    i = next;
                }
                '[' => {
                    i += 1;
                    if matches!(chars.get(i), Some('\'' | '"')) {
                        let (key, next) = quoted(&chars, i, chars[i])?;
                        steps.push(Step::Key(key));
                        i = next;
                    } else {
                        let start = i;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                        let digits: String = chars[start..i].iter().collect();
                        let index = digits.parse().map_err(|_| {
                            format!("has no index or quoted key after '[' at {start}")
                        })?;
                        steps.push(Step::Index(index));
                    }
                    if chars.get(i) != Some(&']') {
                        return Err(format!("has no ']' at {i}"));
                    }
                    i += 1;
                }
                c => return Err(format!("has '{c}' at {i}, where '.' or '[' is expected")),
            }
        }
        Ok(JsonPath(steps))
    }

    /// What the path finds in `json`, if anything.
    pub fn find<'a>(&self, json: &'a Json) -> Option<&'a Json> {
        self.0.iter().try_fold(json, |at, step| match step {
            Step::Key(k) => at.get(k),
            Step::Index(i) => at.get(*i),
        })
    }
}

/// The text between the quote at `chars[at]` and its closing one (a doubled or backslashed
/// quote stands for itself), and the position after it.
fn quoted(chars: &[char], at: usize, quote: char) -> Result<(String, usize), String> {
    let mut key = String::new();
    let mut i = at + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                key.push(chars[i + 1]);
                i += 2;
            }
            c if c == quote => return Ok((key, i + 1)),
            c => {
                key.push(c);
                i += 1;
            }
        }
    }
    Err(format!("has a quote at {at} that is not closed"))
}

/// What a JSON function computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonFunction {
    /// `JSON_VALUE`: a scalar, as text.
    Value,
    /// `JSON_QUERY`: an object or array, as JSON text.
    Query,
    /// `JSON_EXISTS`: whether the path finds anything.
    Exists,
}

/// The outcome of `function` with `path` on `text`: text, or a boolean for `JSON_EXISTS`;
/// `None` for `NULL`.
pub fn apply(function: JsonFunction, path: &JsonPath, text: &str) -> Option<Result<String, bool>> {
    let json: Option<Json> = serde_json::from_str(text).ok();
    let found = json.as_ref().and_then(|j| path.find(j));
    match function {
        JsonFunction::Exists => Some(Err(found.is_some())),
        JsonFunction::Value => match found? {
            Json::Null | Json::Object(_) | Json::Array(_) => None,
            Json::String(s) => Some(Ok(s.clone())),
            other => Some(Ok(other.to_string())),
        },
        JsonFunction::Query => match found? {
            v @ (Json::Object(_) | Json::Array(_)) => Some(Ok(v.to_string())),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_find_as_flinks_lax_mode() {
        let doc = r#"{"a": {"b": [10, {"c d": "x"}], "n": null, "t": true}, "s": "hi"}"#;
        let run = |f, p: &str| apply(f, &JsonPath::parse(p).expect("a path"), doc);
        assert_eq!(run(JsonFunction::Value, "$.s"), Some(Ok("hi".into())));
        assert_eq!(run(JsonFunction::Value, "$.a.b[0]"), Some(Ok("10".into())));
        assert_eq!(
            run(JsonFunction::Value, "$.a.b[1]['c d']"),
            Some(Ok("x".into()))
        );
        assert_eq!(
            run(JsonFunction::Value, "lax $.a.t"),
            Some(Ok("true".into()))
        );
        assert_eq!(run(JsonFunction::Value, "$.a.n"), None);
        assert_eq!(run(JsonFunction::Value, "$.a"), None);
        assert_eq!(run(JsonFunction::Value, "$.missing"), None);
        assert_eq!(
            run(JsonFunction::Query, "$.a.b"),
            Some(Ok(r#"[10,{"c d":"x"}]"#.into()))
        );
        assert_eq!(run(JsonFunction::Query, "$.s"), None);
        assert_eq!(run(JsonFunction::Exists, "$.a.n"), Some(Err(true)));
        assert_eq!(run(JsonFunction::Exists, "$.z"), Some(Err(false)));
        assert_eq!(
            apply(
                JsonFunction::Value,
                &JsonPath::parse("$.a").expect("a path"),
                "not json"
            ),
            None
        );
        assert!(JsonPath::parse("a.b").is_err());
        assert!(JsonPath::parse("$.a[").is_err());
        assert!(JsonPath::parse("strict $.a").is_err());
    }
}

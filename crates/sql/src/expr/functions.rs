//! The built-in scalar functions, with Flink's semantics: each is `NULL` where an argument
//! is `NULL` (unless said otherwise), strings count characters (not bytes) from 1.

use super::{Compare, EvalError, as_f64, rescale};
use crate::value::{Value, civil_from_days, days_from_civil};

/// Where `TRIM` trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimSide {
    /// `BOTH` (the default).
    Both,
    /// `LEADING`.
    Leading,
    /// `TRAILING`.
    Trailing,
}

/// A built-in function.
#[derive(Clone, Debug)]
pub enum Function {
    /// `UPPER(s)`.
    Upper,
    /// `LOWER(s)`.
    Lower,
    /// `CHAR_LENGTH(s)`, `CHARACTER_LENGTH(s)`.
    CharLength,
    /// `CONCAT(a, b, ..)`: `NULL` if any is.
    Concat,
    /// `CONCAT_WS(sep, a, b, ..)`: skips `NULL`s.
    ConcatWs,
    /// `SUBSTRING(s FROM start [FOR length])`, `SUBSTR(s, start[, length])`.
    Substring,
    /// `TRIM([side] [chars] FROM s)`; the arguments are `s` and the characters.
    Trim(TrimSide),
    /// `REPLACE(s, from, to)`.
    Replace,
    /// `POSITION(needle IN s)`: from 1, 0 if absent.
    Position,
    /// `s LIKE pattern` with the pattern compiled; the argument is `s`.
    Like(LikePattern),
    /// `ABS(n)`.
    Abs,
    /// `NULLIF(a, b)`: `NULL` if `a = b`, else `a`.
    NullIf,
    /// `POWER(a, b)`.
    Power,
    /// `SQRT(n)`.
    Sqrt,
    /// `LN(n)`.
    Ln,
    /// `ROUND(n[, digits])` on a decimal of this scale (`None`: a double).
    Round(Option<u8>),
    /// `TO_TIMESTAMP_LTZ(n, precision)`: `n` seconds (precision 0) or milliseconds (3)
    /// since the epoch, as an instant.
    ToTimestampLtz(u8),
    /// `DATE_FORMAT(time, 'pattern')`: the time in a Java `SimpleDateFormat` pattern.
    DateFormat(Vec<DatePiece>),
    /// `HOUR`, `MINUTE`, `SECOND` of a time: a `BIGINT`.
    TimeField(TimeField),
    /// `FLOOR(t TO unit)`: the start of the unit `t` is in, of `t`'s type.
    FloorTime(TimeField),
    /// `CEIL(t TO unit)`: `t` if it starts a unit, else the start of the next.
    CeilTime(TimeField),
    /// `FLOOR(n)`: the largest whole number not above `n`, of `n`'s type.
    Floor,
    /// `CEIL(n)`, `CEILING(n)`: the smallest whole number not below `n`.
    Ceil,
    /// `REGEXP_EXTRACT(s, regex [, group])`: the group (0, the whole match, by default)
    /// of the first match, `NULL` where there is none; the regex compiled once.
    RegexpExtract(regex::Regex),
    /// `SPLIT_INDEX(s, separator, i)`: the `i`-th (from 0) of the parts of `s` between
    /// separators, `NULL` out of range.
    SplitIndex,
    /// Nexmark's `count_char(s, c)` (class `com.github.nexmark.flink.udf.CountChar`): how
    /// often the first character of `c` occurs in `s` (0 for a `NULL` `s`).
    CountChar,
    /// `PROCTIME()`: the processing time, a `TIMESTAMP_LTZ(3)` (the column it computes is a
    /// processing-time attribute).
    ProcTime,
    /// A day-time interval as text (`CAST(INTERVAL .. AS STRING)`): `+3 00:00:00.000`.
    IntervalText,
    /// `LTRIM(s)`, `RTRIM(s)`: `s` without its leading (trailing) spaces.
    TrimSpaces {
        /// Leading spaces go.
        leading: bool,
    },
    /// `LPAD(s, n, pad)`, `RPAD(s, n, pad)`: `s` padded (or cut) to `n` characters with
    /// `pad` repeated on the left (right); `NULL` for a negative `n` or an empty `pad`.
    Pad {
        /// The padding goes on the left.
        left: bool,
    },
    /// `REPEAT(s, n)`: `s` `n` times (empty for `n` below 1).
    Repeat,
    /// `REVERSE(s)`.
    Reverse,
    /// `LEFT(s, n)`, `RIGHT(s, n)`: the first (last) `n` characters (empty for `n` below 0).
    Side {
        /// The first characters, not the last.
        left: bool,
    },
    /// `INITCAP(s)`: each word (a run of letters and digits) capitalized, the rest lower
    /// case.
    InitCap,
    /// `REGEXP_REPLACE(s, regex, replacement)`: every match replaced (`$1` names a group);
    /// the regex compiled once.
    RegexpReplace(regex::Regex),
    /// `GREATEST(a, ..)`, `LEAST(a, ..)` of one type: `NULL` if any is.
    Extreme {
        /// The greatest, not the least.
        greatest: bool,
    },
    /// `SIGN(n)`: -1, 0 or 1, of `n`'s type.
    Sign,
    /// `EXP(n)`.
    Exp,
    /// `LOG10(n)`, `LOG2(n)`.
    Log(f64),
    /// `FROM_UNIXTIME(seconds [, pattern])`: the time as text (`yyyy-MM-dd HH:mm:ss` by
    /// default) in the session's time zone (UTC).
    FromUnixtime(Vec<DatePiece>),
    /// A function written in Rust and registered on the session (it sees `NULL`s itself).
    Udf(super::udf::Udf),
    /// `TO_TIMESTAMP(s [, pattern])`: the text read by a Java date pattern as a
    /// `TIMESTAMP(3)`, `NULL` where it does not follow it; no pattern (empty): Flink's default,
    /// `yyyy-MM-dd HH:mm:ss` with any fraction of a second.
    ToTimestamp(Vec<DatePiece>),
    /// `TO_DATE(s [, pattern])`: the text read by a Java date pattern (`yyyy-MM-dd` by
    /// default) as a `DATE`, `NULL` where it does not follow it.
    ToDate(Vec<DatePiece>),
    /// `UNIX_TIMESTAMP()`: the seconds since the epoch now; `UNIX_TIMESTAMP(s [, pattern])`:
    /// those of the text read by the pattern, `NULL` where it does not follow it.
    UnixTimestamp(Option<Vec<DatePiece>>),
    /// `CURRENT_TIMESTAMP`, `NOW()`: the wall-clock time, a `TIMESTAMP_LTZ(3)`, evaluated per
    /// row (as Flink in streaming); `LOCALTIMESTAMP` (`local`): a `TIMESTAMP(3)` in UTC.
    Now {
        /// A `TIMESTAMP` rather than a `TIMESTAMP_LTZ`.
        local: bool,
    },
    /// `CURRENT_DATE`: today's date (in UTC, the session's zone).
    Today,
    /// `TIMESTAMPADD(unit, n, t)`: `t` moved by `n` units (months keep their day where the
    /// month has it).
    TimestampAdd(TimeField),
    /// `TIMESTAMPDIFF(unit, from, to)`: the whole units from `from` to `to`, an `INT`.
    TimestampDiff(TimeField),
    /// `TRUNCATE(n [, digits])`: `n` cut toward zero to `digits` decimals (tens, for negative
    /// digits); on a decimal of this scale, as [`Function::Round`].
    Truncate(Option<u8>),
    /// Java `Math` functions of doubles (`SIN`, `ATAN2`, `LOG`, `PI()`, ..).
    Math(super::math::Math),
    /// `RAND()`, `RAND_INTEGER(n)`, `UUID()`: a new value each row.
    Random(super::math::Random),
    /// `MD5`, `SHA2`, `TO_BASE64`, `FROM_BASE64`, `HEX`, `BIN`.
    Codec(super::codec::Codec),
    /// `LOCATE(needle, s [, from])` (`INSTR(s, needle)` with its arguments swapped): the
    /// position (from 1) of `needle` in `s` at or after `from`, 0 if absent.
    Locate,
    /// `ASCII(s)`: the code of the first character (0 for an empty string).
    Ascii,
    /// `CHR(n)`: the character of code `n` (modulo 255 above 255, as Flink's).
    Chr,
    /// `a IS DISTINCT FROM b` (`true`: `IS NOT DISTINCT FROM`): `NULL` equals `NULL`.
    Distinct(bool),
    /// `JSON_VALUE`, `JSON_QUERY`, `JSON_EXISTS` with a literal path, parsed once.
    Json(super::json_path::JsonFunction, super::json_path::JsonPath),
}

impl Function {
    /// The function on `args`.
    pub fn call(&self, args: &[Value]) -> Result<Value, EvalError> {
        let nulls = !matches!(
            self,
            Function::ConcatWs
                | Function::NullIf
                | Function::CountChar
                | Function::Udf(_)
                | Function::Distinct(_)
        ) && args.iter().any(Value::is_null);
        if nulls {
            return Ok(Value::Null);
        }
        let text = |i: usize| match args.get(i) {
            Some(Value::String(s)) => Ok(s.as_str()),
            other => Err(EvalError(format!(
                "expected a string argument, got {other:?}"
            ))),
        };
        let int = |i: usize| match args.get(i) {
            Some(Value::Int(n)) => Ok(i64::from(*n)),
            Some(Value::BigInt(n)) => Ok(*n),
            other => Err(EvalError(format!(
                "expected an integer argument, got {other:?}"
            ))),
        };
        Ok(match self {
            Function::Upper => Value::String(text(0)?.to_uppercase()),
            Function::Lower => Value::String(text(0)?.to_lowercase()),
            Function::CharLength => Value::Int(text(0)?.chars().count() as i32),
            Function::Concat => {
                let mut out = String::new();
                for a in args {
                    out.push_str(&a.to_string());
                }
                Value::String(out)
            }
            Function::ConcatWs => match args.first() {
                Some(Value::String(sep)) => {
                    let parts: Vec<String> = args[1..]
                        .iter()
                        .filter(|a| !a.is_null())
                        .map(Value::to_string)
                        .collect();
                    Value::String(parts.join(sep))
                }
                _ => Value::Null,
            },
            Function::Substring => {
                let s = text(0)?;
                let start = int(1)?;
                let length = if args.len() > 2 { Some(int(2)?) } else { None };
                substring(s, start, length).map_or(Value::Null, Value::String)
            }
            Function::Trim(side) => {
                let s = text(0)?;
                let chars: Vec<char> = match args.get(1) {
                    Some(Value::String(c)) => c.chars().collect(),
                    _ => vec![' '],
                };
                let trimmed = match side {
                    TrimSide::Both => s.trim_matches(|c| chars.contains(&c)),
                    TrimSide::Leading => s.trim_start_matches(|c| chars.contains(&c)),
                    TrimSide::Trailing => s.trim_end_matches(|c| chars.contains(&c)),
                };
                Value::String(trimmed.to_string())
            }
            Function::Replace => {
                let (s, from, to) = (text(0)?, text(1)?, text(2)?);
                if from.is_empty() {
                    Value::String(s.to_string())
                } else {
                    Value::String(s.replace(from, to))
                }
            }
            Function::Position => {
                let (needle, haystack) = (text(0)?, text(1)?);
                let at = haystack
                    .find(needle)
                    .map_or(0, |byte| haystack[..byte].chars().count() + 1);
                Value::Int(at as i32)
            }
            Function::Like(pattern) => Value::Boolean(pattern.matches(text(0)?)),
            Function::DateFormat(pattern) => match args[0].wall_millis() {
                Some(t) => Value::String(format_time(t, pattern)),
                None => Value::Null,
            },
            Function::TimeField(field) => match args[0].wall_millis() {
                Some(t) => Value::BigInt(field.of(t)),
                None => Value::Null,
            },
            Function::RegexpExtract(regex) => {
                let group = if args.len() > 2 { int(2)? } else { 0 };
                let found = usize::try_from(group)
                    .ok()
                    .and_then(|g| regex.captures(text(0).ok()?)?.get(g));
                found.map_or(Value::Null, |m| Value::String(m.as_str().to_string()))
            }
            Function::SplitIndex => {
                let (s, separator, i) = (text(0)?, text(1)?, int(2)?);
                let part = if s.is_empty() || separator.is_empty() {
                    None
                } else {
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| s.split(separator).nth(i))
                };
                part.map_or(Value::Null, |p| Value::String(p.to_string()))
            }
            Function::Udf(udf) => udf.call(args)?,
            // Without a pattern, Flink's default: `yyyy-MM-dd HH:mm:ss` with any fraction.
            Function::ToTimestamp(pattern) if pattern.is_empty() => {
                crate::value::parse_timestamp(text(0)?).map_or(Value::Null, Value::Timestamp)
            }
            Function::ToTimestamp(pattern) => {
                super::calendar::parse(text(0)?, pattern).map_or(Value::Null, Value::Timestamp)
            }
            // Without a pattern, Flink's default: the date, any time after it dropped.
            Function::ToDate(pattern) if pattern.is_empty() => {
                crate::value::parse_date(text(0)?).map_or(Value::Null, Value::Date)
            }
            Function::ToDate(pattern) => {
                super::calendar::parse(text(0)?, pattern).map_or(Value::Null, date_of)
            }
            Function::UnixTimestamp(None) => Value::BigInt(now_millis() / 1000),
            // As Flink's: the start of the text parsed, `Long.MIN_VALUE` where it does not.
            Function::UnixTimestamp(Some(pattern)) => Value::BigInt(
                super::calendar::parse_prefix(text(0)?, pattern)
                    .map_or(i64::MIN, |ms| crate::zone::from_local(ms).div_euclid(1000)),
            ),
            Function::Now { local: false } => Value::TimestampLtz(now_millis()),
            Function::Now { local: true } => Value::Timestamp(crate::zone::to_local(now_millis())),
            Function::Today => date_of(crate::zone::to_local(now_millis())),
            Function::TimestampAdd(unit) => {
                let n = int(0)?;
                let moved = |t: i64| {
                    super::calendar::add(t, n, *unit)
                        .ok_or_else(|| EvalError(format!("TIMESTAMPADD of {n} {unit:?} overflows")))
                };
                match &args[1] {
                    Value::Timestamp(t) => Value::Timestamp(moved(*t)?),
                    // An instant moves by the time a day-time unit is (across a change of
                    // the clocks too, as Flink's), by months on the wall clock.
                    Value::TimestampLtz(t) if super::calendar::fixed_millis(*unit).is_some() => {
                        Value::TimestampLtz(moved(*t)?)
                    }
                    Value::TimestampLtz(t) => Value::TimestampLtz(crate::zone::from_local(moved(
                        crate::zone::to_local(*t),
                    )?)),
                    Value::Date(_) => date_of(moved(args[1].time_millis().unwrap_or_default())?),
                    other => {
                        return Err(EvalError(format!(
                            "TIMESTAMPADD of {other:?}, which is not a time"
                        )));
                    }
                }
            }
            // Instants differ by the time between them in day-time units, by wall-clock months.
            Function::TimestampDiff(unit) => {
                match if super::calendar::fixed_millis(*unit).is_some() {
                    (args[0].time_millis(), args[1].time_millis())
                } else {
                    (args[0].wall_millis(), args[1].wall_millis())
                } {
                    (Some(from), Some(to)) => {
                        let units = super::calendar::diff(from, to, *unit);
                        Value::Int(i32::try_from(units).map_err(|_| {
                            EvalError(format!(
                                "TIMESTAMPDIFF of {units} {unit:?} overflows an INT"
                            ))
                        })?)
                    }
                    _ => Value::Null,
                }
            }
            Function::ProcTime => Value::TimestampLtz(now_millis()),
            Function::IntervalText => match args[0] {
                Value::BigInt(ms) => Value::String(crate::value::interval_text(ms)),
                _ => Value::Null,
            },
            Function::Truncate(scale) => {
                let digits = if args.len() > 1 { int(1)? } else { 0 };
                match (&args[0], scale) {
                    (Value::Decimal(d, s), Some(to)) => {
                        let kept = u8::try_from(digits.clamp(0, i64::from(*s))).unwrap_or(0);
                        let cut = d / 10i128.pow(u32::from(s - kept));
                        rescale(cut_to_tens(cut, digits), kept, *to)
                            .map_or(Value::Null, |r| Value::Decimal(r, *to))
                    }
                    (Value::Int(n), _) => Value::Int(cut_to_tens(i128::from(*n), digits) as i32),
                    (Value::BigInt(n), _) => {
                        Value::BigInt(cut_to_tens(i128::from(*n), digits) as i64)
                    }
                    (v, _) => {
                        let factor = 10f64.powi(digits as i32);
                        Value::Double((as_f64(v) * factor).trunc() / factor)
                    }
                }
            }
            Function::Math(f) => {
                let xs: Vec<f64> = args.iter().map(as_f64).collect();
                Value::Double(f.apply(&xs))
            }
            Function::Random(super::math::Random::Double) => Value::Double(fastrand::f64()),
            Function::Random(super::math::Random::Integer) => {
                let n = int(0)?;
                if n <= 0 {
                    return Err(EvalError(format!(
                        "RAND_INTEGER's bound must be positive, not {n}"
                    )));
                }
                Value::Int(fastrand::i64(0..n) as i32)
            }
            Function::Random(super::math::Random::Uuid) => Value::String(super::math::uuid()),
            Function::Codec(codec) => {
                let out = match &args[0] {
                    Value::String(s) => codec.of_text(s),
                    Value::Int(n) => codec.of_integer(i64::from(*n)),
                    Value::BigInt(n) => codec.of_integer(*n),
                    other => codec.of_text(&other.to_string()),
                };
                out.map_or(Value::Null, Value::String)
            }
            Function::Locate => {
                let (needle, haystack) = (text(0)?, text(1)?);
                let from = if args.len() > 2 { int(2)? } else { 1 };
                let start = usize::try_from(from - 1).ok();
                let found = start.and_then(|start| {
                    let byte = haystack.char_indices().nth(start).map(|(b, _)| b)?;
                    let at = haystack[byte..].find(needle)?;
                    Some(haystack[..byte + at].chars().count() + 1)
                });
                Value::Int(found.unwrap_or(0) as i32)
            }
            Function::Ascii => Value::Int(text(0)?.chars().next().map_or(0, |c| c as i32)),
            // Flink's: the character of the code's low byte, nothing for a negative code.
            Function::Chr => match int(0)? {
                n if n < 0 => Value::String(String::new()),
                n => Value::String(char::from((n & 0xFF) as u8).to_string()),
            },
            Function::Json(function, path) => {
                match super::json_path::apply(*function, path, text(0)?) {
                    None => Value::Null,
                    Some(Ok(text)) => Value::String(text),
                    Some(Err(found)) => Value::Boolean(found),
                }
            }
            Function::Distinct(not) => {
                let same = match (&args[0], &args[1]) {
                    (Value::Null, Value::Null) => true,
                    (Value::Null, _) | (_, Value::Null) => false,
                    (a, b) => super::compare(Compare::Eq, a, b),
                };
                Value::Boolean(same == *not)
            }
            Function::CountChar => {
                let c = match args.get(1) {
                    Some(Value::String(c)) => c.chars().next(),
                    _ => None,
                };
                let count = match (args.first(), c) {
                    (Some(Value::String(s)), Some(c)) => s.chars().filter(|&x| x == c).count(),
                    _ => 0,
                };
                Value::BigInt(count as i64)
            }
            Function::FloorTime(unit) | Function::CeilTime(unit) => {
                let round = |t: i64| match self {
                    Function::CeilTime(_) => unit.ceil(t),
                    _ => unit.floor(t),
                };
                match &args[0] {
                    Value::Timestamp(t) => round(*t).map_or(Value::Null, Value::Timestamp),
                    Value::TimestampLtz(t) => round(crate::zone::to_local(*t))
                        .map_or(Value::Null, |w| {
                            Value::TimestampLtz(crate::zone::from_local(w))
                        }),
                    Value::Date(_) => args[0]
                        .time_millis()
                        .and_then(round)
                        .map_or(Value::Null, date_of),
                    _ => Value::Null,
                }
            }
            Function::Floor | Function::Ceil => {
                let up = matches!(self, Function::Ceil);
                match args[0] {
                    Value::Double(d) => Value::Double(if up { d.ceil() } else { d.floor() }),
                    Value::Decimal(d, s) => {
                        let unit = 10i128.pow(u32::from(s));
                        let whole = if up {
                            -(-d).div_euclid(unit)
                        } else {
                            d.div_euclid(unit)
                        };
                        Value::Decimal(whole, 0)
                    }
                    ref whole => whole.clone(),
                }
            }
            Function::Abs => match args[0] {
                Value::Int(n) => Value::Int(n.wrapping_abs()),
                Value::BigInt(n) => Value::BigInt(n.wrapping_abs()),
                Value::Double(d) => Value::Double(d.abs()),
                Value::Decimal(d, s) => Value::Decimal(d.abs(), s),
                _ => Value::Null,
            },
            Function::NullIf => {
                if !args[0].is_null() && !args[1].is_null() && args[0] == args[1] {
                    Value::Null
                } else {
                    args[0].clone()
                }
            }
            Function::Power => Value::Double(as_f64(&args[0]).powf(as_f64(&args[1]))),
            Function::TrimSpaces { leading: true } => {
                Value::String(text(0)?.trim_start_matches(' ').to_string())
            }
            Function::TrimSpaces { leading: false } => {
                Value::String(text(0)?.trim_end_matches(' ').to_string())
            }
            Function::Pad { left } => {
                let (s, n, pad) = (text(0)?, int(1)?, text(2)?);
                match usize::try_from(n) {
                    Err(_) => Value::Null,
                    Ok(n) if pad.is_empty() && s.chars().count() < n => Value::Null,
                    Ok(n) => Value::String(padded(s, n, pad, *left)),
                }
            }
            Function::Repeat => {
                let n = usize::try_from(int(1)?).unwrap_or(0);
                Value::String(text(0)?.repeat(n))
            }
            Function::Reverse => Value::String(text(0)?.chars().rev().collect()),
            Function::Side { left } => {
                let (s, n) = (text(0)?, usize::try_from(int(1)?).unwrap_or(0));
                let chars = s.chars().count();
                Value::String(if *left {
                    s.chars().take(n).collect()
                } else {
                    s.chars().skip(chars.saturating_sub(n)).collect()
                })
            }
            Function::InitCap => Value::String(initcap(text(0)?)),
            Function::RegexpReplace(regex) => {
                let (s, replacement) = (text(0)?, text(2)?);
                Value::String(regex.replace_all(s, replacement).into_owned())
            }
            Function::Extreme { greatest } => {
                let pick = args.iter().reduce(|a, b| match (*greatest, b > a) {
                    (true, true) | (false, false) => b,
                    _ => a,
                });
                pick.cloned().unwrap_or(Value::Null)
            }
            Function::Sign => match &args[0] {
                Value::Int(n) => Value::Int(n.signum()),
                Value::BigInt(n) => Value::BigInt(n.signum()),
                Value::Decimal(d, s) => Value::Decimal(d.signum() * 10i128.pow(u32::from(*s)), *s),
                v => Value::Double(match as_f64(v) {
                    x if x > 0.0 => 1.0,
                    x if x < 0.0 => -1.0,
                    x => x,
                }),
            },
            Function::Exp => Value::Double(as_f64(&args[0]).exp()),
            // As Java's Math.log10 (exact at powers of ten) and log2.
            Function::Log(base) => {
                let x = as_f64(&args[0]);
                Value::Double(if *base == 10.0 {
                    x.log10()
                } else if *base == 2.0 {
                    x.log2()
                } else {
                    x.ln() / base.ln()
                })
            }
            Function::FromUnixtime(pattern) => {
                let seconds = int(0)?;
                let instant = seconds.saturating_mul(1000);
                Value::String(format_time(crate::zone::to_local(instant), pattern))
            }
            Function::Sqrt => Value::Double(as_f64(&args[0]).sqrt()),
            Function::Ln => Value::Double(as_f64(&args[0]).ln()),
            Function::ToTimestampLtz(precision) => {
                let unit = if *precision == 0 { 1000.0 } else { 1.0 };
                let ms = match args[0] {
                    Value::Int(n) => i64::from(n).saturating_mul(unit as i64),
                    Value::BigInt(n) => n.saturating_mul(unit as i64),
                    ref v => (as_f64(v) * unit) as i64,
                };
                Value::TimestampLtz(ms)
            }
            Function::Round(scale) => {
                let digits = if args.len() > 1 { int(1)? } else { 0 };
                match (&args[0], scale) {
                    (Value::Decimal(d, s), Some(to)) => {
                        let kept = u8::try_from(digits.clamp(0, i64::from(*s))).unwrap_or(0);
                        let rounded = rescale(*d, *s, kept)
                            .map(|r| round_to_tens(r, digits))
                            .and_then(|r| rescale(r, kept, *to));
                        rounded.map_or(Value::Null, |r| Value::Decimal(r, *to))
                    }
                    // Integers keep their type; negative digits round to tens, hundreds, ..
                    (Value::Int(n), _) => Value::Int(round_to_tens(i128::from(*n), digits) as i32),
                    (Value::BigInt(n), _) => {
                        Value::BigInt(round_to_tens(i128::from(*n), digits) as i64)
                    }
                    (v, _) => Value::Double(round_double(as_f64(v), digits)),
                }
            }
        })
    }
}

/// `x` rounded half away from zero to `digits` decimals (tens for negative ones) as the
/// decimal it prints as, as Flink's `ROUND` of a `DOUBLE` (`BigDecimal.valueOf(x)`, `HALF_UP`):
/// `ROUND(1.005, 2)` is 1.01, though the double nearest 1.005 is below it.
fn round_double(x: f64, digits: i64) -> f64 {
    let text = format!("{}", x.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let scale = fraction.len() as i64;
    let mantissa: Option<i128> = format!("{whole}{fraction}").parse().ok();
    let shift = scale - digits;
    let (Some(mantissa), true) = (mantissa, x.is_finite() && (1..=36).contains(&shift)) else {
        if !x.is_finite() || shift <= 0 {
            return x; // already at most `digits` decimals
        }
        let factor = 10f64.powi(digits.clamp(-300, 300) as i32);
        return (x * factor).round() / factor;
    };
    let divisor = 10i128.pow(shift as u32);
    let mut kept = mantissa / divisor;
    if (mantissa % divisor) * 2 >= divisor {
        kept += 1;
    }
    let rounded: f64 = format!("{kept}e{}", -digits).parse().unwrap_or(x);
    if x < 0.0 { -rounded } else { rounded }
}

/// `n` (a whole number) rounded half away from zero to `-digits` tens where `digits` is
/// negative (`ROUND(1250, -2)` is 1300); as it is otherwise.
fn round_to_tens(n: i128, digits: i64) -> i128 {
    if digits >= 0 {
        return n;
    }
    match u32::try_from(-digits)
        .ok()
        .and_then(|p| 10i128.checked_pow(p))
    {
        Some(factor) => crate::expr::round_div(n, factor).saturating_mul(factor),
        None => 0,
    }
}

/// `n` (a whole number) cut toward zero to `-digits` tens where `digits` is negative
/// (`TRUNCATE(1290, -2)` is 1200); as it is otherwise.
fn cut_to_tens(n: i128, digits: i64) -> i128 {
    if digits >= 0 {
        return n;
    }
    match u32::try_from(-digits)
        .ok()
        .and_then(|p| 10i128.checked_pow(p))
    {
        Some(factor) => n / factor * factor,
        None => 0,
    }
}

/// A field of a time (`EXTRACT(field FROM t)`, `HOUR(t)`, ..), or the unit a time is
/// rounded to (`FLOOR(t TO unit)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeField {
    /// The year.
    Year,
    /// 1 to 4.
    Quarter,
    /// 1 to 12.
    Month,
    /// The ISO week of the year, 1 to 53 (weeks start on Monday).
    Week,
    /// The day of the month, 1 to 31.
    Day,
    /// 1 (Sunday) to 7 (Saturday), as Flink's `DAYOFWEEK`.
    DayOfWeek,
    /// 1 to 366.
    DayOfYear,
    /// 0 to 23.
    Hour,
    /// 0 to 59.
    Minute,
    /// 0 to 59.
    Second,
    /// 0 to 999 (within the second).
    Millisecond,
}

impl TimeField {
    /// The field of the time `t` (milliseconds since 1970-01-01 00:00:00).
    pub fn of(self, t: i64) -> i64 {
        let days = t.div_euclid(86_400_000);
        let ms_of_day = t.rem_euclid(86_400_000);
        let (y, m, d) = civil_from_days(days);
        match self {
            TimeField::Year => y,
            TimeField::Quarter => i64::from((m - 1) / 3 + 1),
            TimeField::Month => i64::from(m),
            TimeField::Day => i64::from(d),
            TimeField::DayOfWeek => (days + 4).rem_euclid(7) + 1,
            TimeField::DayOfYear => days - days_from_civil(y, 1, 1) + 1,
            TimeField::Week => {
                // ISO 8601: the week with the year's first Thursday is week 1.
                let weekday = (days + 3).rem_euclid(7); // Monday 0
                let thursday = days - weekday + 3;
                let (ty, _, _) = civil_from_days(thursday);
                (thursday - days_from_civil(ty, 1, 1)) / 7 + 1
            }
            TimeField::Hour => ms_of_day / 3_600_000,
            TimeField::Minute => ms_of_day / 60_000 % 60,
            TimeField::Second => ms_of_day / 1_000 % 60,
            TimeField::Millisecond => ms_of_day % 1_000,
        }
    }

    /// The start of the unit (this field's) that `t` is in: `FLOOR(t TO unit)`; `None` for a
    /// field that is not a unit of time.
    pub fn floor(self, t: i64) -> Option<i64> {
        let fixed = |unit: i64| Some(t.div_euclid(unit) * unit);
        let days = t.div_euclid(86_400_000);
        let (y, m, _) = civil_from_days(days);
        let day_ms = |d: i64| Some(d * 86_400_000);
        match self {
            TimeField::Millisecond => Some(t),
            TimeField::Second => fixed(1_000),
            TimeField::Minute => fixed(60_000),
            TimeField::Hour => fixed(3_600_000),
            TimeField::Day => fixed(86_400_000),
            // Weeks start on Sunday, as Flink's (Calcite's `julianDateFloor`); 1970-01-01
            // was a Thursday.
            TimeField::Week => day_ms(days - (days + 4).rem_euclid(7)),
            TimeField::Month => day_ms(days_from_civil(y, m, 1)),
            TimeField::Quarter => day_ms(days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
            TimeField::Year => day_ms(days_from_civil(y, 1, 1)),
            TimeField::DayOfWeek | TimeField::DayOfYear => None,
        }
    }

    /// `CEIL(t TO unit)`: `t` if it starts a unit, else the start of the next.
    pub fn ceil(self, t: i64) -> Option<i64> {
        let floor = self.floor(t)?;
        if floor == t {
            return Some(t);
        }
        // The next unit starts after the end of this one: floor of a time past its end.
        let past = match self {
            TimeField::Millisecond => 1,
            TimeField::Second => 1_000,
            TimeField::Minute => 60_000,
            TimeField::Hour => 3_600_000,
            TimeField::Day => 86_400_000,
            TimeField::Week => 7 * 86_400_000,
            TimeField::Month => 31 * 86_400_000,
            TimeField::Quarter => 92 * 86_400_000,
            TimeField::Year => 366 * 86_400_000,
            TimeField::DayOfWeek | TimeField::DayOfYear => return None,
        };
        self.floor(floor + past)
    }
}

/// The `DATE` of a time (milliseconds since 1970-01-01 00:00:00): its day.
fn date_of(ms: i64) -> Value {
    i32::try_from(ms.div_euclid(crate::value::DAY_MS)).map_or(Value::Null, Value::Date)
}

/// The wall-clock time in milliseconds since the epoch.
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A piece of a `DATE_FORMAT` pattern: a field of the time, so many digits wide, or text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatePiece {
    /// `yyyy`: the year (`yy`: its last two digits).
    Year(usize),
    /// `MM`: the month, 1 to 12.
    Month(usize),
    /// `dd`: the day of the month.
    Day(usize),
    /// `HH`: the hour, 0 to 23.
    Hour(usize),
    /// `mm`: the minute.
    Minute(usize),
    /// `ss`: the second.
    Second(usize),
    /// `SSS`: the milliseconds.
    Millis(usize),
    /// `EEE`: the day of the week's name, abbreviated (`Mon`; `EEEE`: `Monday`).
    DayName(usize),
    /// `hh`: the hour on a 12-hour clock, 1 to 12.
    Hour12(usize),
    /// `a`: `AM` or `PM`.
    AmPm,
    /// Text as it is.
    Text(String),
}

/// A Java `SimpleDateFormat` pattern's pieces: the letters `y M d H m s S`, text in single
/// quotes (`''` is a quote) and any other character that is not a letter. Another letter is
/// refused with what it is.
pub fn date_pattern(pattern: &str) -> Result<Vec<DatePiece>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let piece = match c {
            'y' => DatePiece::Year(run),
            'M' => DatePiece::Month(run),
            'd' => DatePiece::Day(run),
            'H' => DatePiece::Hour(run),
            'm' => DatePiece::Minute(run),
            's' => DatePiece::Second(run),
            'S' => DatePiece::Millis(run),
            'E' => DatePiece::DayName(run),
            'h' => DatePiece::Hour12(run),
            'a' => DatePiece::AmPm,
            '\'' => {
                let mut text = String::new();
                let mut j = i + 1;
                loop {
                    match (chars.get(j), chars.get(j + 1)) {
                        (Some('\''), Some('\'')) => {
                            text.push('\'');
                            j += 2;
                        }
                        (Some('\''), _) => break,
                        (Some(&x), _) => {
                            text.push(x);
                            j += 1;
                        }
                        (None, _) => return Err("has a quote that is not closed".into()),
                    }
                }
                // `''` outside text is one quote.
                pieces.push(DatePiece::Text(if j == i + 1 { "'".into() } else { text }));
                i = j + 1;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                return Err(format!(
                    "has the letter '{c}', which Hummer does not format (it formats y, M, d, \
                     H, h, m, s, S, E and a)"
                ));
            }
            c => DatePiece::Text(c.to_string()),
        };
        pieces.push(piece);
        i += run.max(1);
    }
    Ok(pieces)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The days of the week from Monday.
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Milliseconds since 1970-01-01 00:00 as `pattern` shows them (UTC).
pub fn format_time(ms: i64, pattern: &[DatePiece]) -> String {
    let mut out = String::with_capacity(24);
    let days = ms.div_euclid(86_400_000);
    let ms_of_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = crate::value::civil_from_days(days);
    let (month, day) = (i64::from(month), i64::from(day));
    for piece in pattern {
        let (value, width) = match piece {
            DatePiece::Year(2) => (year.rem_euclid(100), 2),
            DatePiece::Year(w) => (year, *w),
            DatePiece::Month(w) if *w >= 3 => {
                let name = MONTHS[(month - 1).clamp(0, 11) as usize];
                out.push_str(if *w == 3 { &name[..3] } else { name });
                continue;
            }
            DatePiece::Month(w) => (month, *w),
            DatePiece::DayName(w) => {
                // 1970-01-01 was a Thursday.
                let name = DAYS[(days + 3).rem_euclid(7) as usize];
                out.push_str(if *w <= 3 { &name[..3] } else { name });
                continue;
            }
            DatePiece::Hour12(w) => ((ms_of_day / 3_600_000 + 11) % 12 + 1, *w),
            DatePiece::AmPm => {
                out.push_str(if ms_of_day < 43_200_000 { "AM" } else { "PM" });
                continue;
            }
            DatePiece::Day(w) => (day, *w),
            DatePiece::Hour(w) => (ms_of_day / 3_600_000, *w),
            DatePiece::Minute(w) => (ms_of_day / 60_000 % 60, *w),
            DatePiece::Second(w) => (ms_of_day / 1_000 % 60, *w),
            // `S` is a fraction of the second, as java.time's: `SS` its first two digits,
            // `SSSSSS` the milliseconds then zeros.
            DatePiece::Millis(w) if *w > 3 => {
                push_padded(&mut out, ms_of_day % 1_000, 3);
                out.extend(std::iter::repeat_n('0', *w - 3));
                continue;
            }
            DatePiece::Millis(w) => (ms_of_day % 1_000 / 10i64.pow(3 - *w as u32), *w),
            DatePiece::Text(t) => {
                out.push_str(t);
                continue;
            }
        };
        push_padded(&mut out, value, width);
    }
    out
}

/// Appends `value` with at least `width` digits (zeros in front; a minus sign before them).
fn push_padded(out: &mut String, value: i64, width: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    for _ in digits.len() - at..width {
        out.push('0');
    }
    // ASCII digits.
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Flink's `SUBSTRING`: characters from `start` (1-based; 0 is taken as 1, a negative start
/// counts from the end, and one before the first character gives nothing), `length` of them
/// (all without one); `None` (`NULL`) for a negative length.
fn substring(s: &str, start: i64, length: Option<i64>) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let from = match start {
        0 => 0,
        s if s > 0 => s - 1,
        s => n + s,
    };
    let to = match length {
        Some(l) if l < 0 => return None,
        Some(l) => from.saturating_add(l).min(n),
        None => n,
    };
    if from < 0 || from >= n || to <= from {
        return Some(String::new());
    }
    Some(chars[from as usize..to as usize].iter().collect())
}

/// `s` padded with `pad` repeated, on the left or right, to `n` characters; cut to `n` if
/// longer.
fn padded(s: &str, n: usize, pad: &str, left: bool) -> String {
    let len = s.chars().count();
    if len >= n {
        return s.chars().take(n).collect();
    }
    let fill: String = pad.chars().cycle().take(n - len).collect();
    if left {
        fill + s
    } else {
        let mut out = s.to_string();
        out.push_str(&fill);
        out
    }
}

/// Each run of letters and digits with its first character upper case and the others lower,
/// a character at a time as Java's `Character.toTitleCase` (`ß` has no one-character upper
/// case, so it stays `ß`, where `UPPER` gives `SS`).
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if in_word {
                out.extend(c.to_lowercase());
            } else {
                let mut upper = c.to_uppercase();
                match (upper.next(), upper.next()) {
                    (Some(u), None) => out.push(u),
                    _ => out.push(c),
                }
            }
            in_word = true;
        } else {
            out.push(c);
            in_word = false;
        }
    }
    out
}

/// A `LIKE` pattern: `%` any characters, `_` one, `escape` before either to match it as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LikePattern {
    parts: Vec<LikePart>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LikePart {
    Char(char),
    One,
    Any,
}

impl LikePattern {
    /// Compiles `pattern`; `escape` is the escape character, if any. An escape that is not
    /// before `%`, `_` or itself is refused.
    pub fn new(pattern: &str, escape: Option<char>) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if Some(c) == escape {
                match chars.next() {
                    Some(e) if e == '%' || e == '_' || Some(e) == escape => {
                        parts.push(LikePart::Char(e))
                    }
                    _ => {
                        return Err(format!(
                            "the LIKE pattern '{pattern}' has an escape that escapes nothing"
                        ));
                    }
                }
            } else {
                parts.push(match c {
                    '%' => LikePart::Any,
                    '_' => LikePart::One,
                    c => LikePart::Char(c),
                });
            }
        }
        Ok(LikePattern { parts })
    }

    /// Whether `s` matches the whole pattern.
    pub fn matches(&self, s: &str) -> bool {
        let text: Vec<char> = s.chars().collect();
        // Greedy matching with one backtrack point per `%` (the classic wildcard algorithm).
        let (mut t, mut p) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.parts.get(p) {
                Some(LikePart::Char(c)) if *c == text[t] => {
                    t += 1;
                    p += 1;
                }
                Some(LikePart::One) => {
                    t += 1;
                    p += 1;
                }
                Some(LikePart::Any) => {
                    star = Some((p, t));
                    p += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        p = sp + 1;
                        t = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        self.parts[p..].iter().all(|part| *part == LikePart::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ROUND` of a `DOUBLE` rounds the decimal it prints as, half away from zero, as
    /// Flink's (`BigDecimal.valueOf(x)`, `HALF_UP`).
    #[test]
    fn a_double_rounds_as_the_decimal_it_prints_as() {
        for (x, digits, expected) in [
            (1.005, 2, 1.01),
            (0.285, 2, 0.29),
            (1.015, 2, 1.02),
            (-1.005, 2, -1.01),
            (2.5, 0, 3.0),
            (1234.5, -2, 1200.0),
            (1250.0, -2, 1300.0),
            (0.1234, 6, 0.1234),
            (1e300, 2, 1e300),
        ] {
            assert_eq!(round_double(x, digits), expected, "ROUND({x}, {digits})");
        }
        assert!(round_double(f64::NAN, 2).is_nan());
    }
    use proptest::prelude::*;

    fn s(text: &str) -> Value {
        Value::String(text.into())
    }

    proptest! {
        /// DATE_FORMAT with Flink's default pattern prints a timestamp as CAST to STRING
        /// does (`value::write_timestamp`, itself checked against the civil calendar).
        #[test]
        fn date_format_agrees_with_the_timestamp_printing(ms in -5_000_000_000_000i64..5_000_000_000_000) {
            let pattern = date_pattern("yyyy-MM-dd HH:mm:ss.SSS").expect("a pattern");
            let mut expected = String::new();
            crate::value::write_timestamp(&mut expected, ms, 3).expect("writes");
            prop_assert_eq!(format_time(ms, &pattern), expected);
        }

        /// SPLIT_INDEX is the i-th part between separators, as a brute-force scan finds it.
        #[test]
        fn split_index_is_the_ith_part(text in "[a/]{0,12}", i in -1i64..8) {
            let got = Function::SplitIndex.call(&[s(&text), s("/"), Value::BigInt(i)]).expect("calls");
            let mut parts = vec![String::new()];
            for c in text.chars() {
                if c == '/' { parts.push(String::new()) } else if let Some(p) = parts.last_mut() { p.push(c) }
            }
            let expected = if text.is_empty() || i < 0 {
                None
            } else {
                parts.get(i as usize).cloned()
            };
            prop_assert_eq!(got, expected.map_or(Value::Null, Value::String));
        }
    }

    #[test]
    fn date_format_takes_java_letters_and_quoted_text() {
        let p = date_pattern("yy/M/d 'at' HH'h' ''").expect("a pattern");
        // 2023-01-02 03:04:05.006 UTC
        assert_eq!(format_time(1_672_628_645_006, &p), "23/1/2 at 03h '");
        assert!(date_pattern("yyyy-MM-dd z").unwrap_err().contains("'z'"));
        assert_eq!(
            format_time(
                1_672_628_645_006,
                &date_pattern("EEEE, MMM d h a").expect("a pattern")
            ),
            "Monday, Jan 2 3 AM"
        );
        assert!(date_pattern("'open").is_err());
    }

    #[test]
    fn round_with_negative_digits_rounds_to_tens_in_every_numeric_type() {
        let round = |v: Value, digits: i32, scale: Option<u8>| {
            Function::Round(scale)
                .call(&[v, Value::Int(digits)])
                .unwrap()
        };
        assert_eq!(round(Value::Int(1250), -2, None), Value::Int(1300));
        assert_eq!(round(Value::Int(-1250), -2, None), Value::Int(-1300));
        assert_eq!(round(Value::BigInt(1049), -2, None), Value::BigInt(1000));
        assert_eq!(round(Value::BigInt(7), -40, None), Value::BigInt(0));
        assert_eq!(round(Value::Int(1234), 1, None), Value::Int(1234));
        // 1250.5 as DECIMAL(5, 1), to DECIMAL(5, 0).
        assert_eq!(
            round(Value::Decimal(12505, 1), -2, Some(0)),
            Value::Decimal(1300, 0)
        );
        assert_eq!(
            round(Value::Double(1250.5), -2, None),
            Value::Double(1300.0)
        );
    }

    #[test]
    fn regexp_extract_split_index_count_char_and_hour_as_flink() {
        let re = |p: &str| Function::RegexpExtract(regex::Regex::new(p).expect("compiles"));
        let url = s("https://x.com/a?channel_id=42&b=1");
        let extract = re("(&|^|\\?)channel_id=([^&]*)");
        assert_eq!(
            extract.call(&[url.clone(), s(""), Value::Int(2)]).unwrap(),
            s("42")
        );
        assert_eq!(
            extract.call(&[url.clone(), s(""), Value::Int(0)]).unwrap(),
            s("?channel_id=42")
        );
        assert_eq!(
            extract.call(&[url.clone(), s(""), Value::Int(5)]).unwrap(),
            Value::Null
        );
        assert_eq!(re("zzz").call(&[url, s("")]).unwrap(), Value::Null);
        // Without a group, the whole match (Flink's default group is 0).
        assert_eq!(
            re("o(t)h").call(&[s("foothebar"), s("")]).unwrap(),
            s("oth")
        );
        assert_eq!(
            Function::CountChar.call(&[s("acccb"), s("c")]).unwrap(),
            Value::BigInt(3)
        );
        assert_eq!(
            Function::CountChar.call(&[Value::Null, s("c")]).unwrap(),
            Value::BigInt(0)
        );
        let hour = Function::TimeField(TimeField::Hour);
        assert_eq!(
            hour.call(&[Value::Timestamp(1_672_628_645_006)]).unwrap(),
            Value::BigInt(3)
        );
        assert_eq!(
            hour.call(&[Value::Timestamp(-1)]).unwrap(),
            Value::BigInt(23)
        );
        let minute = Function::TimeField(TimeField::Minute);
        assert_eq!(
            minute
                .call(&[Value::TimestampLtz(1_672_628_645_006)])
                .unwrap(),
            Value::BigInt(4)
        );
    }

    /// The reference: a LIKE pattern as a regular expression.
    fn like_by_regex(pattern: &str, s: &str) -> bool {
        let mut re = String::from("^");
        for c in pattern.chars() {
            match c {
                '%' => re.push_str(".*"),
                '_' => re.push('.'),
                c => re.push_str(&regex_escape(c)),
            }
        }
        re.push('$');
        regex_lite_match(&re, s)
    }

    fn regex_escape(c: char) -> String {
        if c.is_alphanumeric() {
            c.to_string()
        } else {
            format!("\\{c}")
        }
    }

    /// A tiny backtracking matcher for `^...$` with `.`, `.*` and literals (the reference
    /// must not share the tested algorithm).
    fn regex_lite_match(re: &str, s: &str) -> bool {
        fn go(p: &[char], t: &[char]) -> bool {
            match p {
                [] => t.is_empty(),
                ['.', '*', rest @ ..] => (0..=t.len()).any(|k| go(rest, &t[k..])),
                ['\\', c, rest @ ..] => t.first() == Some(c) && go(rest, &t[1..]),
                ['.', rest @ ..] => !t.is_empty() && go(rest, &t[1..]),
                [c, rest @ ..] => t.first() == Some(c) && go(rest, &t[1..]),
            }
        }
        let p: Vec<char> = re
            .trim_start_matches('^')
            .trim_end_matches('$')
            .chars()
            .collect();
        let t: Vec<char> = s.chars().collect();
        go(&p, &t)
    }

    proptest! {
        #[test]
        fn like_matches_as_a_regular_expression_would(
            pattern in "[ab%_]{0,6}",
            s in "[abc]{0,8}",
        ) {
            let compiled = LikePattern::new(&pattern, None).unwrap();
            prop_assert_eq!(compiled.matches(&s), like_by_regex(&pattern, &s));
        }

        #[test]
        fn substring_takes_the_characters_flink_takes(
            s in "[a-zé]{0,8}", start in -10i64..10, length in proptest::option::of(0i64..10),
        ) {
            let chars: Vec<char> = s.chars().collect();
            let n = chars.len() as i64;
            // A negative start before the first character gives nothing (Flink's
            // `substringSQL`).
            let from = if start > 0 { start - 1 } else if start == 0 { 0 } else { n + start };
            let expected: String = chars
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    let i = *i as i64;
                    from >= 0 && i >= from && length.is_none_or(|l| i < from + l)
                })
                .map(|(_, c)| *c)
                .collect();
            prop_assert_eq!(substring(&s, start, length).unwrap(), expected);
        }
    }

    #[test]
    fn string_and_math_functions_as_flinks() {
        let s = |t: &str| Value::String(t.into());
        let call = |f: Function, args: &[Value]| f.call(args).unwrap();
        assert_eq!(
            call(Function::TrimSpaces { leading: true }, &[s("  a b ")]),
            s("a b ")
        );
        assert_eq!(
            call(Function::TrimSpaces { leading: false }, &[s("  a b ")]),
            s("  a b")
        );
        let (lpad, rpad) = (Function::Pad { left: true }, Function::Pad { left: false });
        assert_eq!(
            call(lpad.clone(), &[s("hi"), Value::Int(5), s("ab")]),
            s("abahi")
        );
        assert_eq!(
            call(rpad.clone(), &[s("hi"), Value::Int(5), s("ab")]),
            s("hiaba")
        );
        assert_eq!(
            call(lpad.clone(), &[s("hello"), Value::Int(2), s("x")]),
            s("he")
        );
        assert_eq!(
            call(lpad.clone(), &[s("hi"), Value::Int(-1), s("x")]),
            Value::Null
        );
        assert_eq!(call(rpad, &[s("hi"), Value::Int(4), s("")]), Value::Null);
        assert_eq!(
            call(Function::Repeat, &[s("ab"), Value::Int(3)]),
            s("ababab")
        );
        assert_eq!(call(Function::Repeat, &[s("ab"), Value::Int(-3)]), s(""));
        assert_eq!(call(Function::Reverse, &[s("héllo")]), s("olléh"));
        let (left, right) = (
            Function::Side { left: true },
            Function::Side { left: false },
        );
        assert_eq!(call(left.clone(), &[s("hello"), Value::Int(2)]), s("he"));
        assert_eq!(call(right.clone(), &[s("hello"), Value::Int(2)]), s("lo"));
        assert_eq!(call(right, &[s("hello"), Value::Int(9)]), s("hello"));
        assert_eq!(call(left, &[s("hello"), Value::Int(-1)]), s(""));
        assert_eq!(
            call(Function::InitCap, &[s("hELLO wORLD-x1y")]),
            s("Hello World-X1y")
        );
        assert_eq!(
            call(Function::InitCap, &[s("ßtraße éclair")]),
            s("ßtraße Éclair")
        );
        let replace = Function::RegexpReplace(regex::Regex::new("(o)").unwrap());
        assert_eq!(call(replace, &[s("foo"), s(""), s("[$1]")]), s("f[o][o]"));
        let greatest = Function::Extreme { greatest: true };
        let least = Function::Extreme { greatest: false };
        let nums = [Value::BigInt(3), Value::BigInt(9), Value::BigInt(-2)];
        assert_eq!(call(greatest.clone(), &nums), Value::BigInt(9));
        assert_eq!(call(least, &nums), Value::BigInt(-2));
        assert_eq!(
            call(greatest, &[Value::BigInt(1), Value::Null]),
            Value::Null
        );
        assert_eq!(call(Function::Sign, &[Value::Int(-7)]), Value::Int(-1));
        assert_eq!(
            call(Function::Sign, &[Value::Decimal(-250, 2)]),
            Value::Decimal(-100, 2)
        );
        assert_eq!(
            call(Function::Log(10.0), &[Value::Int(1000)]),
            Value::Double(3.0)
        );
        let pattern = date_pattern("yyyy-MM-dd HH:mm:ss").unwrap();
        assert_eq!(
            call(
                Function::FromUnixtime(pattern),
                &[Value::BigInt(1_672_628_645)]
            ),
            s("2023-01-02 03:04:05")
        );
        // SUBSTRING: a start before the first character gives nothing, a negative length NULL.
        let sub = |args: &[Value]| call(Function::Substring, args);
        assert_eq!(sub(&[s("hello"), Value::Int(-10), Value::Int(2)]), s(""));
        assert_eq!(sub(&[s("hello"), Value::Int(-3), Value::Int(2)]), s("ll"));
        assert_eq!(
            sub(&[s("hello"), Value::Int(2), Value::Int(-1)]),
            Value::Null
        );
    }

    #[test]
    fn functions_follow_flinks_null_and_string_rules() {
        let s = |t: &str| Value::String(t.into());
        assert_eq!(Function::Upper.call(&[s("abé")]).unwrap(), s("ABÉ"));
        assert_eq!(
            Function::CharLength.call(&[s("héllo")]).unwrap(),
            Value::Int(5)
        );
        assert!(
            Function::Concat
                .call(&[s("a"), Value::Null])
                .unwrap()
                .is_null()
        );
        assert_eq!(
            Function::ConcatWs
                .call(&[s("-"), s("a"), Value::Null, s("b")])
                .unwrap(),
            s("a-b")
        );
        assert_eq!(
            Function::Position.call(&[s("lo"), s("héllo")]).unwrap(),
            Value::Int(4)
        );
        assert_eq!(
            Function::Trim(TrimSide::Leading)
                .call(&[s("xxaxx"), s("x")])
                .unwrap(),
            s("axx")
        );
        assert_eq!(
            Function::NullIf
                .call(&[Value::Int(1), Value::BigInt(1)])
                .unwrap(),
            Value::Null
        );
        assert_eq!(
            Function::Round(Some(1))
                .call(&[Value::Decimal(1255, 2), Value::Int(1)])
                .unwrap(),
            Value::Decimal(126, 1)
        );
        assert!(LikePattern::new("a!", Some('!')).is_err());
        assert!(
            LikePattern::new("100!%", Some('!'))
                .unwrap()
                .matches("100%")
        );
    }

    /// Known dates: 2024-02-29 13:45:30.250 was a Thursday, in ISO week 9, day 60 of its
    /// year; 2021-01-03 (a Sunday) is in ISO week 53 of 2020.
    #[test]
    fn fields_of_known_dates() {
        let leap = 1_709_214_330_250i64;
        let fields = [
            (TimeField::Year, 2024),
            (TimeField::Quarter, 1),
            (TimeField::Month, 2),
            (TimeField::Week, 9),
            (TimeField::Day, 29),
            (TimeField::DayOfWeek, 5),
            (TimeField::DayOfYear, 60),
            (TimeField::Hour, 13),
            (TimeField::Minute, 45),
            (TimeField::Second, 30),
            (TimeField::Millisecond, 250),
        ];
        for (field, value) in fields {
            assert_eq!(field.of(leap), value, "{field:?}");
        }
        let sunday = 1_609_632_000_000i64;
        assert_eq!(TimeField::Week.of(sunday), 53);
        assert_eq!(TimeField::DayOfWeek.of(sunday), 1);
        assert_eq!(
            TimeField::Month.floor(leap),
            Some(1_706_745_600_000),
            "2024-02-01"
        );
        assert_eq!(
            TimeField::Quarter.ceil(leap),
            Some(1_711_929_600_000),
            "2024-04-01"
        );
        assert_eq!(
            TimeField::Week.floor(leap),
            Some(1_708_819_200_000),
            "Sunday 2024-02-25"
        );
        let sunday = 1_709_424_000_000; // 2024-03-03 00:00
        assert_eq!(TimeField::Week.floor(sunday), Some(sunday));
        assert_eq!(
            TimeField::Week.floor(sunday + 2 * 86_400_000 + 1),
            Some(sunday)
        );
        assert_eq!(
            TimeField::Week.ceil(sunday + 1),
            Some(sunday + 7 * 86_400_000)
        );
    }

    proptest! {
        /// FLOOR(t TO unit) is the start of the unit `t` is in: not after `t`, a unit start
        /// (its own floor), and the field of every coarser unit is `t`'s; CEIL is `t` or the
        /// next start.
        #[test]
        fn floor_and_ceil_bound_a_time_by_unit_starts(t in -4_000_000_000_000i64..4_000_000_000_000) {
            use TimeField::*;
            for unit in [Millisecond, Second, Minute, Hour, Day, Week, Month, Quarter, Year] {
                let f = unit.floor(t).unwrap();
                prop_assert!(f <= t);
                prop_assert_eq!(unit.floor(f), Some(f));
                let c = unit.ceil(t).unwrap();
                prop_assert!(c >= t);
                prop_assert_eq!(unit.floor(c), Some(c));
                prop_assert!(c == t || unit.floor(c - 1) == Some(f), "{:?}: no start between", unit);
                if unit != Week {
                    prop_assert_eq!(Year.of(f), Year.of(t));
                }
                if matches!(unit, Day | Hour | Minute | Second) {
                    prop_assert_eq!(Day.of(f), Day.of(t));
                    prop_assert_eq!(Month.of(f), Month.of(t));
                }
            }
        }
    }
}

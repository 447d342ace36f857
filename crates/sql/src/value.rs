//! A SQL value as a row carries it, with Flink's printing (`CAST(x AS STRING)`, the `print`
//! connector, CSV) and its ordering and equality (a `GROUP BY` key, a join key).
//!
//! The integer types up to `INT` are held as `Int`, `FLOAT` and `DOUBLE` as `Double`, and a
//! `DECIMAL` as its unscaled digits with its scale; the column's [`SqlType`](crate::types::SqlType) says which one
//! it is. Times are milliseconds: `TIMESTAMP` since 1970-01-01 00:00 of no zone,
//! `TIMESTAMP_LTZ` since the epoch.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// One value.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub enum Value {
    /// `NULL`, of any type.
    #[default]
    Null,
    /// `BOOLEAN`.
    Boolean(bool),
    /// `TINYINT`, `SMALLINT`, `INT`.
    Int(i32),
    /// `BIGINT`.
    BigInt(i64),
    /// `FLOAT`, `DOUBLE`.
    Double(f64),
    /// `DECIMAL(p, s)`: the digits without the point, and `s`.
    Decimal(i128, u8),
    /// `CHAR`, `VARCHAR`, `STRING`.
    String(String),
    /// `TIMESTAMP(p)`: milliseconds since 1970-01-01 00:00:00 (no zone).
    Timestamp(i64),
    /// `TIMESTAMP_LTZ(p)`: milliseconds since the epoch.
    TimestampLtz(i64),
    /// `ROW<..>`.
    Row(Vec<Value>),
    /// `DATE`: days since 1970-01-01 (last, so that earlier values keep their encoding).
    Date(i32),
}

/// A row of values, in the order of its schema's columns.
pub type Row = Vec<Value>;

impl Value {
    /// True for `NULL`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The milliseconds of a `TIMESTAMP` or `TIMESTAMP_LTZ` value, or of a `DATE`'s midnight
    /// (`None` for any other).
    pub fn time_millis(&self) -> Option<i64> {
        match *self {
            Value::Timestamp(t) | Value::TimestampLtz(t) => Some(t),
            Value::Date(d) => Some(i64::from(d) * DAY_MS),
            _ => None,
        }
    }

    /// A time's wall clock as milliseconds: a `TIMESTAMP`'s and a `DATE`'s own, a
    /// `TIMESTAMP_LTZ`'s in the session's zone (what its calendar fields are read from).
    pub fn wall_millis(&self) -> Option<i64> {
        match *self {
            Value::TimestampLtz(t) => Some(crate::zone::to_local(t)),
            _ => self.time_millis(),
        }
    }

    /// The value as a number of its kind, for comparisons across numeric kinds.
    fn numeric(&self) -> Option<Numeric> {
        match *self {
            Value::Int(i) => Some(Numeric::Exact(i128::from(i), 0)),
            Value::BigInt(i) => Some(Numeric::Exact(i128::from(i), 0)),
            Value::Decimal(d, s) => {
                // Without trailing zeros: one form per number, so its double is one too.
                let (mut d, mut s) = (d, s);
                while s > 0 && d % 10 == 0 {
                    d /= 10;
                    s -= 1;
                }
                Some(Numeric::Exact(d, s))
            }
            Value::Double(f) => Some(Numeric::Approx(f)),
            _ => None,
        }
    }
}

/// A number for comparing values of different numeric kinds.
enum Numeric {
    Exact(i128, u8),
    Approx(f64),
}

impl Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        match (self, other) {
            (Numeric::Exact(a, sa), Numeric::Exact(b, sb)) => {
                let (a, b) = align(*a, *sa, *b, *sb);
                a.cmp(&b)
            }
            (a, b) => a.as_f64().total_cmp(&b.as_f64()),
        }
    }

    fn as_f64(&self) -> f64 {
        match *self {
            Numeric::Exact(d, s) => d as f64 / 10f64.powi(i32::from(s)),
            Numeric::Approx(f) => f,
        }
    }
}

/// Two decimals' digits at the larger of their scales.
pub fn align(a: i128, sa: u8, b: i128, sb: u8) -> (i128, i128) {
    match sa.cmp(&sb) {
        Ordering::Equal => (a, b),
        Ordering::Less => (a.saturating_mul(10i128.pow(u32::from(sb - sa))), b),
        Ordering::Greater => (a, b.saturating_mul(10i128.pow(u32::from(sa - sb)))),
    }
}

/// SQL's order of values of one type (numbers of different kinds compare by value); `NULL`
/// sorts first, as Flink's `ORDER BY .. ASC` does.
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        // The common cases first: two values of one kind that compare as they are.
        match (self, other) {
            (Value::BigInt(a), Value::BigInt(b)) => return a.cmp(b),
            (Value::Int(a), Value::Int(b)) => return a.cmp(b),
            (Value::String(a), Value::String(b)) => return a.cmp(b),
            _ => {}
        }
        if let (Some(a), Some(b)) = (self.numeric(), other.numeric()) {
            return a.cmp(&b);
        }
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Boolean(a), Value::Boolean(b)) => a.cmp(b),
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b))
            | (Value::TimestampLtz(a), Value::TimestampLtz(b)) => a.cmp(b),
            (Value::Row(a), Value::Row(b)) => a.cmp(b),
            (Value::Date(a), Value::Date(b)) => a.cmp(b),
            // Values of different types are not compared by a checked plan; order them by kind.
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl Value {
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Boolean(_) => 1,
            Value::Int(_) | Value::BigInt(_) | Value::Double(_) | Value::Decimal(..) => 2,
            Value::String(_) => 3,
            Value::Timestamp(_) => 4,
            Value::TimestampLtz(_) => 5,
            Value::Row(_) => 6,
            Value::Date(_) => 7,
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Equality as grouping sees it: `NULL` equals `NULL` (one group), numbers equal by value.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::BigInt(a), Value::BigInt(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Timestamp(a), Value::Timestamp(b))
            | (Value::TimestampLtz(a), Value::TimestampLtz(b)) => a == b,
            (Value::Null, Value::Null) => true,
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => 0u8.hash(state),
            Value::Boolean(b) => b.hash(state),
            // Equal numbers of any kind hash alike: by their value as a double (equal
            // values have equal doubles; unequal ones may collide). An integer's double is
            // the one its `numeric()` gives, without the detour through `i128`.
            Value::Int(i) => hash_number(f64::from(*i), state),
            Value::BigInt(i) => hash_number(*i as f64, state),
            Value::Decimal(..) | Value::Double(_) => {
                hash_number(self.numeric().map_or(0.0, |n| n.as_f64()), state)
            }
            Value::String(s) => s.hash(state),
            Value::Timestamp(t) | Value::TimestampLtz(t) => t.hash(state),
            Value::Row(r) => r.hash(state),
            Value::Date(d) => d.hash(state),
        }
    }
}

/// Hashes a number by its double, with one zero and one NaN.
fn hash_number<H: Hasher>(f: f64, state: &mut H) {
    let f = if f == 0.0 || f.is_nan() { f.abs() } else { f };
    f.to_bits().hash(state)
}

/// As Flink prints a value (`CAST(x AS STRING)`, the `print` connector); `NULL` prints as
/// `NULL`. A `TIMESTAMP_LTZ` prints in UTC here; the session's zone is applied by the plan.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Boolean(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::BigInt(i) => write!(f, "{i}"),
            Value::Double(d) => write_double(f, *d),
            Value::Decimal(d, s) => write_decimal(f, *d, *s),
            Value::String(s) => f.write_str(s),
            Value::Timestamp(ms) => write_timestamp(f, *ms, 3),
            Value::TimestampLtz(ms) => write_timestamp(f, crate::zone::to_local(*ms), 3),
            Value::Date(days) => write_date(f, *days),
            Value::Row(values) => {
                f.write_str("(")?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// A double as Java prints it: `1.0`, `0.5`, `1.0E10`, `NaN`, `Infinity`.
fn write_double(f: &mut fmt::Formatter<'_>, d: f64) -> fmt::Result {
    if d.is_nan() {
        return f.write_str("NaN");
    }
    if d.is_infinite() {
        return f.write_str(if d > 0.0 { "Infinity" } else { "-Infinity" });
    }
    let magnitude = d.abs();
    if magnitude != 0.0 && !(1e-3..1e7).contains(&magnitude) {
        // Java's scientific form: a mantissa with at least one decimal, `E`, the exponent.
        let text = format!("{d:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        return write!(f, "{mantissa}E{exponent}");
    }
    if d.fract() == 0.0 {
        write!(f, "{d:.1}")
    } else {
        write!(f, "{d}")
    }
}

/// Digits with the point `scale` places from the right: `-0.50` for (-50, 2).
fn write_decimal(f: &mut fmt::Formatter<'_>, digits: i128, scale: u8) -> fmt::Result {
    if scale == 0 {
        return write!(f, "{digits}");
    }
    let sign = if digits < 0 { "-" } else { "" };
    let text = digits.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let text = format!("{text:0>width$}", width = scale + 1);
    let (whole, fraction) = text.split_at(text.len() - scale);
    write!(f, "{sign}{whole}.{fraction}")
}

/// `yyyy-MM-dd HH:mm:ss.SSS` (with `precision` fraction digits, 3 at most here).
pub fn write_timestamp(f: &mut impl fmt::Write, millis: i64, precision: u8) -> fmt::Result {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, ms) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    write!(f, "{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}")?;
    match precision {
        0 => Ok(()),
        1 => write!(f, ".{}", ms / 100),
        2 => write!(f, ".{:02}", ms / 10),
        _ => write!(f, ".{ms:03}"),
    }
}

/// The milliseconds of a day.
pub const DAY_MS: i64 = 86_400_000;

/// A day-time interval of `millis` as Flink shows one: `+3 00:00:00.000`, `-0 01:30:00.000`.
pub fn interval_text(millis: i64) -> String {
    let sign = if millis < 0 { '-' } else { '+' };
    let ms = millis.unsigned_abs();
    let day = DAY_MS as u64;
    format!(
        "{sign}{} {:02}:{:02}:{:02}.{:03}",
        ms / day,
        ms % day / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// A day number as `yyyy-MM-dd`.
pub fn write_date(f: &mut impl fmt::Write, days: i32) -> fmt::Result {
    let (y, m, d) = civil_from_days(i64::from(days));
    write!(f, "{y:04}-{m:02}-{d:02}")
}

/// Reads `yyyy-MM-dd` (a time after it dropped) as a day number; `None` if it is not a date.
pub fn parse_date(text: &str) -> Option<i32> {
    // A time after the date is allowed and dropped, as Flink's `parseDate` takes
    // `2017-12-12 09:30:00.0`.
    let ms = parse_timestamp(text.trim())?;
    i32::try_from(ms.div_euclid(DAY_MS)).ok()
}

/// The civil date of a day number (days since 1970-01-01), proleptic Gregorian.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The day number (days since 1970-01-01) of a civil date, proleptic Gregorian.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Reads `yyyy-MM-dd HH:mm:ss[.fff]` (or with `T`, or a date alone) as milliseconds; `None` if
/// it is not one.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let mut parts = date.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=days_in_month(y, m)).contains(&d) {
        return None;
    }
    let mut millis = days_from_civil(y, m, d) * 86_400_000;
    if let Some(time) = time {
        let (hms, fraction) = match time.split_once('.') {
            Some((hms, f)) => (hms, Some(f)),
            None => (time, None),
        };
        let mut hms = hms.split(':');
        let h: i64 = hms.next()?.parse().ok()?;
        let min: i64 = hms.next()?.parse().ok()?;
        let s: i64 = hms.next().map_or(Some(0), |s| s.parse().ok())?;
        if hms.next().is_some() || h > 23 || min > 59 || s > 59 {
            return None;
        }
        millis += ((h * 60 + min) * 60 + s) * 1000;
        if let Some(fraction) = fraction {
            if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
            millis += digits.parse::<i64>().ok()?;
        }
    }
    Some(millis)
}

/// The days of month `m` (1 to 12) of year `y`, proleptic Gregorian.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Day-time intervals show as Flink's `+d hh:mm:ss.SSS`.
    #[test]
    fn intervals_show_as_flinks() {
        assert_eq!(interval_text(3 * DAY_MS), "+3 00:00:00.000");
        assert_eq!(interval_text(90 * 60_000), "+0 01:30:00.000");
        assert_eq!(interval_text(-(DAY_MS + 7_200_001)), "-1 02:00:00.001");
    }
    use proptest::prelude::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash(v: &Value) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn values_print_as_flink_prints_them() {
        for (v, text) in [
            (Value::Double(1.0), "1.0"),
            (Value::Double(0.5), "0.5"),
            (Value::Double(1e10), "1.0E10"),
            (Value::Double(1.5e-5), "1.5E-5"),
            (Value::Double(f64::NAN), "NaN"),
            (Value::Decimal(-50, 2), "-0.50"),
            (Value::Decimal(12345, 3), "12.345"),
            (Value::Decimal(7, 0), "7"),
            (Value::Boolean(true), "TRUE"),
            (Value::Null, "NULL"),
            (
                Value::Timestamp(1_672_531_200_123),
                "2023-01-01 00:00:00.123",
            ),
            (Value::Timestamp(-1), "1969-12-31 23:59:59.999"),
            (
                Value::Row(vec![Value::Int(1), Value::String("a".into())]),
                "(1, a)",
            ),
        ] {
            assert_eq!(v.to_string(), text);
        }
    }

    #[test]
    fn numbers_of_different_kinds_compare_and_group_by_value() {
        let same = [
            Value::Int(2),
            Value::BigInt(2),
            Value::Decimal(200, 2),
            Value::Double(2.0),
        ];
        for a in &same {
            for b in &same {
                assert_eq!(a, b);
                assert_eq!(hash(a), hash(b), "{a:?} {b:?}");
            }
        }
        assert!(Value::Decimal(199, 2) < Value::Int(2));
        assert!(Value::Null < Value::Int(i32::MIN));
    }

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Boolean),
            (-3i32..3).prop_map(Value::Int),
            (-3i64..3).prop_map(Value::BigInt),
            (-3i64..3).prop_map(|n| Value::Double(n as f64)),
            (-30i128..30, 0u8..2).prop_map(|(d, s)| Value::Decimal(d, s)),
            "[ab]{0,2}".prop_map(Value::String),
            (-3i64..3).prop_map(Value::Timestamp),
            (-3i64..3).prop_map(Value::TimestampLtz),
        ]
    }

    proptest! {
        /// A timestamp printed and read back is the same instant, and the days agree with a
        /// day-by-day walk from the epoch.
        #[test]
        fn timestamps_round_trip(ms in -20_000_000_000_000i64..20_000_000_000_000) {
            let mut text = String::new();
            write_timestamp(&mut text, ms, 3).unwrap();
            prop_assert_eq!(parse_timestamp(&text), Some(ms));
        }

        #[test]
        fn civil_days_invert(days in -1_000_000i64..1_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
            prop_assert_eq!(days_from_civil(y, m, d), days);
            let (y2, m2, d2) = civil_from_days(days + 1);
            let next = if d < days_in_month(y, m) { (y, m, d + 1) } else if m < 12 { (y, m + 1, 1) } else { (y + 1, 1, 1) };
            prop_assert_eq!((y2, m2, d2), next);
        }

        /// The fast paths of `==` and `cmp` agree with the general order: equality is
        /// exactly `cmp` giving `Equal`, and the order is antisymmetric, for values of any
        /// two kinds.
        #[test]
        fn equality_is_the_orders(a in any_value(), b in any_value()) {
            prop_assert_eq!(a == b, a.cmp(&b) == Ordering::Equal);
            prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
            if a == b {
                prop_assert_eq!(hash(&a), hash(&b));
            }
        }

        /// An integer hashes as the equal decimal does, past 2^53 too (where doubles skip
        /// integers).
        #[test]
        fn integers_hash_as_their_decimals(n in any::<i64>(), i in any::<i32>()) {
            prop_assert_eq!(hash(&Value::BigInt(n)), hash(&Value::Decimal(i128::from(n), 0)));
            prop_assert_eq!(hash(&Value::Int(i)), hash(&Value::Decimal(i128::from(i), 0)));
        }

        /// Equal values hash alike, for any mix of numeric kinds and scales.
        #[test]
        fn equal_numbers_hash_alike(n in -1_000_000i64..1_000_000, s in 0u8..4, more in 0u8..4) {
            let a = Value::Decimal(i128::from(n), s);
            let b = Value::Decimal(i128::from(n) * 10i128.pow(u32::from(more)), s + more);
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(hash(&a), hash(&b));
            if s == 0 {
                prop_assert_eq!(hash(&a), hash(&Value::BigInt(n)));
                prop_assert_eq!(hash(&a), hash(&Value::Double(n as f64)));
            }
        }
    }
}

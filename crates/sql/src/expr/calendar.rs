//! Calendar arithmetic on times (milliseconds since 1970-01-01 00:00:00), as Flink's
//! `TIMESTAMPADD`, `TIMESTAMPDIFF`, `TO_TIMESTAMP` and `UNIX_TIMESTAMP` do it: months added
//! with the day kept where the month has it (else its last day), whole months between two
//! times as Calcite's `subtractMonths` (which Flink calls), and text read by a Java date
//! pattern.

use super::functions::{DatePiece, TimeField};
use crate::value::{civil_from_days, days_from_civil, days_in_month};

const DAY: i64 = 86_400_000;

/// The milliseconds of one `unit` where it has a fixed length (not months, quarters, years).
pub fn fixed_millis(unit: TimeField) -> Option<i64> {
    Some(match unit {
        TimeField::Week => 7 * DAY,
        TimeField::Day | TimeField::DayOfWeek | TimeField::DayOfYear => DAY,
        TimeField::Hour => 3_600_000,
        TimeField::Minute => 60_000,
        TimeField::Second => 1_000,
        TimeField::Millisecond => 1,
        TimeField::Month | TimeField::Quarter | TimeField::Year => return None,
    })
}

/// The months in one `unit` of months (a month, a quarter, a year).
fn months_in(unit: TimeField) -> i64 {
    match unit {
        TimeField::Quarter => 3,
        TimeField::Year => 12,
        _ => 1,
    }
}

/// `t` plus `n` months: the same day and time of day, or the month's last day where it is
/// shorter (Jan 31 + 1 month = Feb 28 or 29); `None` past the years a time can hold.
pub fn add_months(t: i64, n: i64) -> Option<i64> {
    let (days, ms) = (t.div_euclid(DAY), t.rem_euclid(DAY));
    let (y, m, d) = civil_from_days(days);
    let months = y
        .checked_mul(12)?
        .checked_add(i64::from(m) - 1)?
        .checked_add(n)?;
    let (y, m) = (months.div_euclid(12), (months.rem_euclid(12) + 1) as u32);
    if !(-9_999..=9_999).contains(&y) {
        return None;
    }
    let d = d.min(days_in_month(y, m));
    days_from_civil(y, m, d).checked_mul(DAY)?.checked_add(ms)
}

/// `t` plus `n` of `unit`; `None` on overflow.
pub fn add(t: i64, n: i64, unit: TimeField) -> Option<i64> {
    match fixed_millis(unit) {
        Some(ms) => t.checked_add(n.checked_mul(ms)?),
        None => add_months(t, n.checked_mul(months_in(unit))?),
    }
}

/// Whole months from the day `from` to the day `to` (negative if `to` is before `from`).
fn months_between_days(to: i64, from: i64) -> i64 {
    if to < from {
        return -months_between_days(from, to);
    }
    // No month has more than 31 days: the estimate is at most the answer.
    let mut m = (to - from) / 31;
    loop {
        let at = |k: i64| add_months(from * DAY, k).map_or(i64::MAX, |t| t.div_euclid(DAY));
        if at(m) >= to || at(m + 1) > to {
            return m;
        }
        m += 1;
    }
}

/// `TIMESTAMPDIFF(unit, from, to)`: the whole units from `from` to `to`, rounded toward zero.
pub fn diff(from: i64, to: i64, unit: TimeField) -> i64 {
    if let Some(ms) = fixed_millis(unit) {
        return (to - from) / ms;
    }
    let (to_day, to_ms) = (to.div_euclid(DAY), to.rem_euclid(DAY));
    let (from_day, from_ms) = (from.div_euclid(DAY), from.rem_euclid(DAY));
    let mut months = months_between_days(to_day, from_day);
    // As Calcite's: a month not reached before its time of day is not counted (forward
    // only, as Flink computes it).
    let reached = add_months(from_day * DAY, months).map(|t| t.div_euclid(DAY));
    if reached == Some(to_day) && to_ms < from_ms {
        months -= 1;
    }
    months / months_in(unit)
}

/// `text` read by a Java date `pattern` (fields `y M d H m s S`, other text as it is);
/// fields missing from the pattern are the start of their unit (1970-01-01 00:00:00.000).
/// `None` if the text does not follow the pattern.
pub fn parse(text: &str, pattern: &[DatePiece]) -> Option<i64> {
    parse_start(text, pattern, true)
}

/// [`parse`] of the start of `text` only, what follows the pattern ignored (Java's
/// `SimpleDateFormat.parse`, which `UNIX_TIMESTAMP` uses).
pub fn parse_prefix(text: &str, pattern: &[DatePiece]) -> Option<i64> {
    parse_start(text, pattern, false)
}

fn parse_start(text: &str, pattern: &[DatePiece], whole: bool) -> Option<i64> {
    let text = text.as_bytes();
    let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut ms) = (1970i64, 1i64, 1i64, 0, 0, 0, 0);
    let mut at = 0;
    for (i, piece) in pattern.iter().enumerate() {
        let width = match piece {
            DatePiece::Text(t) => {
                let t = t.as_bytes();
                if text.get(at..at + t.len()) != Some(t) {
                    return None;
                }
                at += t.len();
                continue;
            }
            // Names are not read back.
            DatePiece::DayName(_) | DatePiece::AmPm | DatePiece::Month(3..) => return None,
            DatePiece::Year(w)
            | DatePiece::Month(w)
            | DatePiece::Hour12(w)
            | DatePiece::Day(w)
            | DatePiece::Hour(w)
            | DatePiece::Minute(w)
            | DatePiece::Second(w)
            | DatePiece::Millis(w) => *w,
        };
        // Digits up to the next non-digit, or exactly the width where a field follows
        // without text between (`yyyyMMdd`).
        let adjacent = !matches!(pattern.get(i + 1), None | Some(DatePiece::Text(_)));
        let digits = text[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        let n = if adjacent { width.min(digits) } else { digits };
        if n == 0 {
            return None;
        }
        let value: i64 = std::str::from_utf8(&text[at..at + n]).ok()?.parse().ok()?;
        at += n;
        match piece {
            DatePiece::Year(2) if n <= 2 => y = 2000 + value,
            DatePiece::Year(_) => y = value,
            DatePiece::Month(_) => mo = value,
            DatePiece::Day(_) => d = value,
            DatePiece::Hour(_) => h = value,
            DatePiece::Minute(_) => mi = value,
            DatePiece::Second(_) => s = value,
            // A fraction of the second, as java.time reads `S`: `.12` is 120 ms (digits past
            // the millisecond are dropped).
            DatePiece::Millis(_) => {
                ms = if n <= 3 {
                    value * 10i64.pow(3 - n as u32)
                } else {
                    value / 10i64.pow((n - 3).min(18) as u32)
                }
            }
            DatePiece::Hour12(_) => h = value % 12,
            _ => {}
        }
    }
    if (whole && at != text.len())
        || !(1..=12).contains(&mo)
        || !(1..=i64::from(days_in_month(y, mo as u32))).contains(&d)
        || h > 23
        || mi > 59
        || s > 59
        || ms > 999
    {
        return None;
    }
    let day = days_from_civil(y, mo as u32, d as u32);
    Some(day * DAY + ((h * 60 + mi) * 60 + s) * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::functions::date_pattern;
    use crate::value::parse_timestamp;

    fn t(text: &str) -> i64 {
        parse_timestamp(text).expect("a timestamp")
    }

    #[test]
    fn months_are_added_with_the_day_kept_or_the_months_last() {
        assert_eq!(
            add_months(t("2024-01-31 10:00:00"), 1),
            Some(t("2024-02-29 10:00:00"))
        );
        assert_eq!(
            add_months(t("2023-03-31 00:00:00"), -1),
            Some(t("2023-02-28 00:00:00"))
        );
        assert_eq!(
            add(t("2020-05-05 00:00:00"), 2, TimeField::Year),
            Some(t("2022-05-05 00:00:00"))
        );
        assert_eq!(
            add(t("2020-05-05 00:00:00"), -3, TimeField::Hour),
            Some(t("2020-05-04 21:00:00"))
        );
    }

    #[test]
    fn diff_counts_whole_units_toward_zero() {
        let (a, b) = (t("2020-01-31 12:00:00"), t("2020-02-29 11:00:00"));
        assert_eq!(diff(a, b, TimeField::Month), 0);
        assert_eq!(diff(a, t("2020-02-29 12:00:00"), TimeField::Month), 1);
        assert_eq!(diff(b, a, TimeField::Month), -1);
        assert_eq!(
            diff(
                t("2019-01-01 00:00:00"),
                t("2021-06-30 00:00:00"),
                TimeField::Year
            ),
            2
        );
        assert_eq!(diff(a, b, TimeField::Day), 28);
        assert_eq!(diff(b, a, TimeField::Hour), -695);
        // Against a brute-force count of whole months over many pairs of days.
        for (i, j) in [(0, 59), (30, 31), (31, 88), (58, 400), (365, 10), (1000, 3)] {
            let (from, to) = (i * DAY, j * DAY);
            let brute = if to >= from {
                (0..)
                    .take_while(|&k| add_months(from, k).is_some_and(|x| x <= to))
                    .count() as i64
                    - 1
            } else {
                -((0..)
                    .take_while(|&k| add_months(to, k).is_some_and(|x| x <= from))
                    .count() as i64
                    - 1)
            };
            assert_eq!(diff(from, to, TimeField::Month), brute, "{i} {j}");
        }
    }

    #[test]
    fn text_is_read_by_a_pattern() {
        let p = |s: &str| date_pattern(s).expect("a pattern");
        assert_eq!(
            parse("2021/03/04 05:06", &p("yyyy/MM/dd HH:mm")),
            Some(t("2021-03-04 05:06:00"))
        );
        assert_eq!(
            parse("20210304", &p("yyyyMMdd")),
            Some(t("2021-03-04 00:00:00"))
        );
        assert_eq!(
            parse("2021-03-04 05:06:07.089", &p("yyyy-MM-dd HH:mm:ss.SSS")),
            Some(t("2021-03-04 05:06:07.089"))
        );
        assert_eq!(parse("2021-02-30", &p("yyyy-MM-dd")), None);
        assert_eq!(parse("2021-02-03x", &p("yyyy-MM-dd")), None);
        assert_eq!(parse("abc", &p("yyyy-MM-dd")), None);
    }
}

//! The harness's canonical line format: fields joined by `,`, strings quoted (RFC 4180) only
//! when they hold `,`, `"`, CR or LF, timestamps as `YYYY-MM-DD HH:MM:SS.sss` (UTC), DECIMAL
//! values with exactly three decimals.

use std::fmt::Write;

use crate::types::Timestamp;

/// Appends a string field, quoted only if it needs to be.
pub fn string(out: &mut String, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push('"');
        for c in s.chars() {
            if c == '"' {
                out.push('"');
            }
            out.push(c);
        }
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// Appends an auction's columns after its id (`itemName, description, initialBid, reserve,
/// dateTime, expires, seller, category, extra`) to `out`.
pub fn append_auction_columns(out: &mut String, a: &crate::nexmark::model::Auction) {
    string(out, &a.item_name);
    out.push(',');
    string(out, &a.description);
    out.push_str(&format!(",{},{},", a.initial_bid, a.reserve));
    timestamp(out, a.date_time);
    out.push(',');
    timestamp(out, a.expires);
    out.push_str(&format!(",{},{},", a.seller, a.category));
    string(out, &a.extra);
}

/// A bid's seven columns (`auction, bidder, price, channel, url, dateTime, extra`): the row of
/// every query that outputs whole bids.
pub fn bid_row(b: &crate::nexmark::model::Bid) -> String {
    let mut line = String::with_capacity(
        64 + b.channel.len() + b.url.len() + b.extra.len(), // numbers, time, commas
    );
    append_bid_row(&mut line, b);
    line
}

/// Appends a bid's row ([`bid_row`]) to `out`; returns where its last column, `extra`,
/// starts in `out` (quoted if it needed to be, see [`unquote`]).
pub fn append_bid_row(out: &mut String, b: &crate::nexmark::model::Bid) -> usize {
    append_bid_fields(
        out,
        &BidFields {
            auction: b.auction,
            bidder: b.bidder,
            price: b.price,
            channel: &b.channel,
            url: &b.url,
            date_time: b.date_time,
            extra: &b.extra,
        },
    )
}

/// A bid's columns, borrowed from wherever they are kept.
pub struct BidFields<'a> {
    /// Auction id.
    pub auction: u64,
    /// Bidding person's id.
    pub bidder: u64,
    /// Price.
    pub price: u64,
    /// Channel.
    pub channel: &'a str,
    /// URL.
    pub url: &'a str,
    /// Event time, epoch milliseconds.
    pub date_time: Timestamp,
    /// Extra.
    pub extra: &'a str,
}

/// Appends the row of a bid's columns ([`bid_row`]); returns where `extra` starts.
pub fn append_bid_fields(out: &mut String, b: &BidFields<'_>) -> usize {
    let mut digits = itoa::Buffer::new();
    for n in [b.auction, b.bidder, b.price] {
        out.push_str(digits.format(n));
        out.push(',');
    }
    string(out, b.channel);
    out.push(',');
    string(out, b.url);
    out.push(',');
    timestamp(out, b.date_time);
    out.push(',');
    let extra_at = out.len();
    string(out, b.extra);
    extra_at
}

/// A string field as [`string`] wrote it, back as it was.
///
/// ```
/// use hummer::jobs::nexmark::format::{string, unquote};
/// let mut s = String::new();
/// string(&mut s, "say \"a, b\"");
/// assert_eq!(s, "\"say \"\"a, b\"\"\"");
/// assert_eq!(unquote(&s), "say \"a, b\"");
/// assert_eq!(unquote("plain"), "plain");
/// ```
pub fn unquote(field: &str) -> std::borrow::Cow<'_, str> {
    match field.strip_prefix('"').and_then(|f| f.strip_suffix('"')) {
        Some(inner) => std::borrow::Cow::Owned(inner.replace("\"\"", "\"")),
        None => std::borrow::Cow::Borrowed(field),
    }
}

/// `key, count, start, end` of a count per key and window (q11's sessions, q12's windows).
pub fn count_in_window(
    key: u64,
    count: u64,
    window: &crate::operators::window::TimeWindow,
) -> String {
    let mut line = format!("{key},{count},");
    timestamp(&mut line, window.start);
    line.push(',');
    timestamp(&mut line, window.end);
    line
}

/// Appends a timestamp (epoch milliseconds) as `YYYY-MM-DD HH:MM:SS.sss` in UTC.
///
/// ```
/// let mut s = String::new();
/// hummer::jobs::nexmark::format::timestamp(&mut s, 1_672_531_210_005);
/// assert_eq!(s, "2023-01-01 00:00:10.005");
/// ```
pub fn timestamp(out: &mut String, ms: Timestamp) {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1_000 % 60,
        rem % 1_000
    );
}

/// Appends the UTC day of a timestamp as `YYYY-MM-DD`.
pub fn day(out: &mut String, ms: Timestamp) {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
}

/// Appends the UTC time of day of a timestamp as `HH:MM`.
pub fn hour_minute(out: &mut String, ms: Timestamp) {
    let rem = ms.rem_euclid(86_400_000);
    let _ = write!(out, "{:02}:{:02}", rem / 3_600_000, rem / 60_000 % 60);
}

/// The UTC hour of day of a timestamp.
pub fn hour(ms: Timestamp) -> i64 {
    ms.rem_euclid(86_400_000) / 3_600_000
}

/// Appends a value in thousandths as a DECIMAL with three decimals (`90800` → `90.800`).
pub fn decimal3(out: &mut String, thousandths: i128) {
    let sign = if thousandths < 0 { "-" } else { "" };
    let v = thousandths.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:03}", v / 1_000, v % 1_000);
}

/// The civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_decimals_print_as_the_harness_does() {
        let mut s = String::new();
        timestamp(&mut s, 0);
        s.push('|');
        timestamp(&mut s, 951_782_400_000 + 86_399_999); // 2000-02-29 23:59:59.999
        s.push('|');
        decimal3(&mut s, 908 * 100);
        s.push('|');
        decimal3(&mut s, 7);
        s.push('|');
        string(&mut s, "a,\"b\"");
        assert_eq!(
            s,
            "1970-01-01 00:00:00.000|2000-02-29 23:59:59.999|90.800|0.007|\"a,\"\"b\"\"\""
        );
    }
}

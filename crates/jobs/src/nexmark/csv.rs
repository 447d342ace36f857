//! Reading the harness's CSV rows: RFC 4180 fields (quoted only when needed), the columns of
//! `persons`, `auctions` and `bids` in the harness's order.

use std::borrow::Cow;

use crate::nexmark::model::{Auction, Bid, BidColumns, Person};

/// Splits a CSV line into its fields; `Err` names what is wrong with it.
pub fn fields(line: &str) -> Result<Vec<Cow<'_, str>>, String> {
    let mut out = Vec::with_capacity(10);
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'"') {
            let mut value = String::new();
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err("a quoted field is not closed".into()),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                        value.push('"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => {
                        let start = i;
                        while i < bytes.len() && bytes[i] != b'"' {
                            i += 1;
                        }
                        value.push_str(&line[start..i]);
                    }
                }
            }
            out.push(Cow::Owned(value));
            match bytes.get(i) {
                None => return Ok(out),
                Some(b',') => i += 1,
                Some(_) => return Err(format!("text after a quoted field at byte {i}")),
            }
        } else {
            let start = i;
            while i < bytes.len() && bytes[i] != b',' {
                i += 1;
            }
            out.push(Cow::Borrowed(&line[start..i]));
            if i == bytes.len() {
                return Ok(out);
            }
            i += 1;
        }
    }
}

fn int<T: std::str::FromStr>(f: &[Cow<'_, str>], i: usize, name: &str) -> Result<T, String> {
    f[i].parse()
        .map_err(|_| format!("column {} ({name}) is not an integer: {:?}", i + 1, f[i]))
}

/// The `N` fields of a row of `table`. A row without quotes (all the generator writes) is
/// split in place in one pass over its bytes, without allocating.
fn columns<'a, const N: usize>(line: &'a str, table: &str) -> Result<[Cow<'a, str>; N], String> {
    let count_error = |n: usize| format!("{n} columns, a {table} row has {N}");
    let bytes = line.as_bytes();
    let mut ends = [0usize; N];
    let mut found = 0;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b',' => {
                if found == N - 1 {
                    // Too many columns: count them as the field reader does (a quoted
                    // field further on may hold commas).
                    return Err(match fields(line) {
                        Ok(f) => count_error(f.len()),
                        Err(e) => e,
                    });
                }
                ends[found] = i;
                found += 1;
            }
            b'"' => {
                let f = fields(line)?;
                let n = f.len();
                return f.try_into().map_err(|_| count_error(n));
            }
            _ => {}
        }
    }
    if found != N - 1 {
        return Err(count_error(found + 1));
    }
    ends[N - 1] = bytes.len();
    // Every end is at a comma or the line's end: char boundaries of an ASCII byte.
    Ok(std::array::from_fn(|i| {
        let start = if i == 0 { 0 } else { ends[i - 1] + 1 };
        Cow::Borrowed(&line[start..ends[i]])
    }))
}

/// A `persons` row.
pub fn person(line: &str) -> Result<Person, String> {
    let f = columns::<8>(line, "persons")?;
    Ok(Person {
        id: int(&f, 0, "id")?,
        name: f[1].to_string(),
        email_address: f[2].to_string(),
        credit_card: f[3].to_string(),
        city: f[4].to_string(),
        state: f[5].to_string(),
        date_time: int(&f, 6, "dateTime")?,
        extra: f[7].to_string(),
    })
}

/// An `auctions` row.
pub fn auction(line: &str) -> Result<Auction, String> {
    let f = columns::<10>(line, "auctions")?;
    Ok(Auction {
        id: int(&f, 0, "id")?,
        item_name: f[1].to_string(),
        description: f[2].to_string(),
        initial_bid: int(&f, 3, "initialBid")?,
        reserve: int(&f, 4, "reserve")?,
        date_time: int(&f, 5, "dateTime")?,
        expires: int(&f, 6, "expires")?,
        seller: int(&f, 7, "seller")?,
        category: int(&f, 8, "category")?,
        extra: f[9].to_string(),
    })
}

/// A `bids` row, only `wanted` of its text columns (the others empty).
pub fn bid(line: &str, wanted: BidColumns) -> Result<Bid, String> {
    let f = columns::<7>(line, "bids")?;
    let text = |i: usize, read: bool| {
        if read {
            f[i].to_string()
        } else {
            String::new()
        }
    };
    Ok(Bid {
        auction: int(&f, 0, "auction")?,
        bidder: int(&f, 1, "bidder")?,
        price: int(&f, 2, "price")?,
        channel: text(3, wanted.channel),
        url: text(4, wanted.url),
        date_time: int(&f, 5, "dateTime")?,
        extra: text(6, wanted.extra),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn quote(s: &str) -> String {
        let mut out = String::new();
        crate::nexmark::format::string(&mut out, s);
        out
    }

    proptest! {
        /// Round trip against the writer: any fields, quoted where needed, come back.
        #[test]
        fn fields_round_trip(values in proptest::collection::vec("[a-z,\"\\n ]{0,8}", 1..8)) {
            let line = values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",");
            let got: Vec<String> = fields(&line).unwrap().into_iter().map(|c| c.into_owned()).collect();
            prop_assert_eq!(got, values);
        }

        #[test]
        fn arbitrary_lines_never_panic(line in ".{0,40}") {
            let _ = bid(&line, BidColumns::ALL);
            let _ = person(&line);
        }

        /// The one-pass splitter agrees with the general field reader on any row, quoted
        /// or not, of any number of columns.
        #[test]
        fn columns_agree_with_fields(values in proptest::collection::vec("[a-z0-9,\"]{0,6}", 1..10)) {
            let line = values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",");
            let all = fields(&line).unwrap();
            match columns::<7>(&line, "bids") {
                Ok(got) => prop_assert_eq!(got.to_vec(), all),
                Err(e) => {
                    prop_assert_ne!(all.len(), 7);
                    prop_assert!(e.contains(&format!("{} columns", all.len())), "{}", e);
                }
            }
        }

        /// A pruned bid is the full one with the left-out text columns empty.
        #[test]
        fn pruned_bids_keep_the_rest(
            channel in any::<bool>(), url in any::<bool>(), extra in any::<bool>(),
            text in "[a-z,\"]{0,6}",
        ) {
            let line = format!("1,2,3,{},u{},5,{}", quote(&text), text.len(), quote("e,x"));
            let columns = BidColumns { channel, url, extra };
            let mut want = bid(&line, BidColumns::ALL).unwrap();
            want.prune(columns);
            prop_assert_eq!(bid(&line, columns).unwrap(), want);
        }
    }

    #[test]
    fn a_bad_row_says_what_is_wrong() {
        assert!(
            bid("1,2,x,c,u,5,e", BidColumns::ALL)
                .unwrap_err()
                .contains("price")
        );
        assert!(
            bid("1,2", BidColumns::ALL)
                .unwrap_err()
                .contains("2 columns")
        );
        assert!(
            bid("1,2,3,c,u,5,e,8", BidColumns::NUMBERS)
                .unwrap_err()
                .contains("8 columns")
        );
        assert!(fields("\"open").unwrap_err().contains("not closed"));
    }
}

//! q21, add channel id: bids whose channel is one of four known ones (id `0`-`3`) or whose
//! URL has a `channel_id` parameter (`(&|^)channel_id=([^&]*)`, its value as the id):
//! `auction, bidder, price, channel, channel_id`.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     auction, bidder, price, channel,
//!     CASE
//!         WHEN lower(channel) = 'apple' THEN '0'
//!         WHEN lower(channel) = 'google' THEN '1'
//!         WHEN lower(channel) = 'facebook' THEN '2'
//!         WHEN lower(channel) = 'baidu' THEN '3'
//!         ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
//!         END
//!     AS channel_id FROM bid
//!     where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
//!           lower(channel) in ('apple', 'google', 'facebook', 'baidu');
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};

/// The value of the first `channel_id=` parameter at the start of `url` or after a `&`.
fn channel_id(url: &str) -> Option<&str> {
    const KEY: &str = "channel_id=";
    let start = if url.starts_with(KEY) {
        KEY.len()
    } else {
        url.find("&channel_id=")? + 1 + KEY.len()
    };
    let rest = &url[start..];
    Some(rest.split('&').next().unwrap_or(rest))
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS.with_channel().with_url())
        .flat_map(|b: Bid| {
            let known = match b.channel.to_lowercase().as_str() {
                "apple" => Some("0"),
                "google" => Some("1"),
                "facebook" => Some("2"),
                "baidu" => Some("3"),
                _ => None,
            };
            let id = known.or_else(|| channel_id(&b.url))?;
            let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
            format::string(&mut line, &b.channel);
            line.push(',');
            format::string(&mut line, id);
            Some(line)
        })
}

#[cfg(test)]
mod tests {
    use super::channel_id;

    #[test]
    fn channel_ids_follow_the_regular_expression() {
        assert_eq!(channel_id("channel_id=7&x=1"), Some("7"));
        assert_eq!(
            channel_id("https://a/b?x=1&channel_id=AB12&y"),
            Some("AB12")
        );
        assert_eq!(channel_id("https://a/b?xchannel_id=1"), None);
        assert_eq!(channel_id("https://a/b?x=1&channel_id="), Some(""));
    }
}

//! The three Nexmark tables' rows, with the columns of the harness's CSV files.

use serde::{Deserialize, Serialize};

use crate::types::Timestamp;

/// A person (`persons` table): id, name, emailAddress, creditCard, city, state, dateTime,
/// extra.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    /// Person id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email_address: String,
    /// Credit card number.
    pub credit_card: String,
    /// City.
    pub city: String,
    /// US state (upper case).
    pub state: String,
    /// Event time, epoch milliseconds.
    pub date_time: Timestamp,
    /// Padding.
    pub extra: String,
}

/// An auction (`auctions` table): id, itemName, description, initialBid, reserve, dateTime,
/// expires, seller, category, extra.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Auction {
    /// Auction id.
    pub id: u64,
    /// Item name.
    pub item_name: String,
    /// Description.
    pub description: String,
    /// Initial bid.
    pub initial_bid: u64,
    /// Reserve price.
    pub reserve: u64,
    /// Event time, epoch milliseconds.
    pub date_time: Timestamp,
    /// When the auction ends, epoch milliseconds.
    pub expires: Timestamp,
    /// The selling person's id.
    pub seller: u64,
    /// Category id.
    pub category: u64,
    /// Padding.
    pub extra: String,
}

/// A bid (`bids` table): auction, bidder, price, channel, url, dateTime, extra.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bid {
    /// Auction id.
    pub auction: u64,
    /// Bidding person's id.
    pub bidder: u64,
    /// Price.
    pub price: u64,
    /// Channel.
    pub channel: String,
    /// URL.
    pub url: String,
    /// Event time, epoch milliseconds.
    pub date_time: Timestamp,
    /// Padding.
    pub extra: String,
}

/// The text columns of a bid that a query reads; the others are left empty. The CSV reader
/// does not copy them and the generator drops them at the source, as a SQL planner prunes
/// the columns a query does not use: a bid's url and channel are over half its bytes, and
/// copying and freeing them was a third of a simple query's time.
///
/// ```
/// use hummer::jobs::nexmark::model::{Bid, BidColumns};
/// let mut bid = Bid { channel: "Google".into(), url: "https://x".into(), extra: "e".into(),
///                     auction: 1, bidder: 2, price: 3, date_time: 4 };
/// bid.prune(BidColumns::NUMBERS.with_extra());
/// assert_eq!((bid.channel.as_str(), bid.url.as_str(), bid.extra.as_str()), ("", "", "e"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BidColumns {
    /// `channel`.
    pub channel: bool,
    /// `url`.
    pub url: bool,
    /// `extra`.
    pub extra: bool,
}

impl BidColumns {
    /// Every column.
    pub const ALL: BidColumns = BidColumns {
        channel: true,
        url: true,
        extra: true,
    };
    /// The numeric columns only (auction, bidder, price, dateTime).
    pub const NUMBERS: BidColumns = BidColumns {
        channel: false,
        url: false,
        extra: false,
    };
    /// These and `channel`.
    pub const fn with_channel(self) -> BidColumns {
        BidColumns {
            channel: true,
            ..self
        }
    }
    /// These and `url`.
    pub const fn with_url(self) -> BidColumns {
        BidColumns { url: true, ..self }
    }
    /// These and `extra`.
    pub const fn with_extra(self) -> BidColumns {
        BidColumns {
            extra: true,
            ..self
        }
    }
}

impl Bid {
    /// Empties the text columns that `columns` leaves out.
    pub fn prune(&mut self, columns: BidColumns) {
        if !columns.channel {
            self.channel = String::new();
        }
        if !columns.url {
            self.url = String::new();
        }
        if !columns.extra {
            self.extra = String::new();
        }
    }
}

impl From<nexmark::event::Person> for Person {
    fn from(p: nexmark::event::Person) -> Self {
        Person {
            id: p.id as u64,
            name: p.name,
            email_address: p.email_address,
            credit_card: p.credit_card,
            city: p.city,
            state: p.state,
            date_time: p.date_time as Timestamp,
            extra: p.extra,
        }
    }
}

impl From<nexmark::event::Auction> for Auction {
    fn from(a: nexmark::event::Auction) -> Self {
        Auction {
            id: a.id as u64,
            item_name: a.item_name,
            description: a.description,
            initial_bid: a.initial_bid as u64,
            reserve: a.reserve as u64,
            date_time: a.date_time as Timestamp,
            expires: a.expires as Timestamp,
            seller: a.seller as u64,
            category: a.category as u64,
            extra: a.extra,
        }
    }
}

impl From<nexmark::event::Bid> for Bid {
    fn from(b: nexmark::event::Bid) -> Self {
        Bid {
            auction: b.auction as u64,
            bidder: b.bidder as u64,
            price: b.price as u64,
            channel: b.channel,
            url: b.url,
            date_time: b.date_time as Timestamp,
            extra: b.extra,
        }
    }
}

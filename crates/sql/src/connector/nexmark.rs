//! The `nexmark` connector: Nexmark's events generated in the job, as the upstream
//! `ddl_gen.sql` declares the table (`nexmark/nexmark`): `event_type` (0 person, 1 auction,
//! 2 bid), then `person`, `auction` and `bid`, each a `ROW` of the event's fields (`NULL` but
//! for the event's own).
//!
//! The events are those of Hummer's Nexmark generator with the harness's configuration, so
//! event `n` is the same here, in `hummer nexmark` and in the harness's CSV files. Subtask
//! `s` of `p` generates events `s, s + p, ...` of the first `events.num` (unbounded without
//! it); its position is checkpointed. Options: `events.num`, and the rate and proportion
//! options of upstream's DDL, which are accepted (the events come as fast as the job takes
//! them, in the generator's fixed proportions 1:3:46).

use hummer_connectors::{Source, SourceContext, SourceReader, SourceStatus};
use hummer_jobs::nexmark::generator::config;
use hummer_jobs::nexmark::model::{Auction, Bid, Person};
use hummer_types::error::Result;
use nexmark::EventGenerator;
use nexmark::event::Event;

use super::subtask_rows::SubtaskRows;
use crate::error::SqlError;
use crate::lower::Calc;
use crate::schema::Schema;
use crate::statement::TableDefinition;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The columns of the table, and the fields of its rows, in order.
const COLUMNS: [(&str, &[&str]); 4] = [
    ("event_type", &[]),
    (
        "person",
        &[
            "id",
            "name",
            "emailAddress",
            "creditCard",
            "city",
            "state",
            "dateTime",
            "extra",
        ],
    ),
    (
        "auction",
        &[
            "id",
            "itemName",
            "description",
            "initialBid",
            "reserve",
            "dateTime",
            "expires",
            "seller",
            "category",
            "extra",
        ],
    ),
    (
        "bid",
        &[
            "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
        ],
    ),
];

/// The events of a `nexmark` table.
#[derive(Clone, Debug)]
pub struct NexmarkEvents {
    /// The table's name, for errors.
    pub table: String,
    /// How many events (`None`: unbounded).
    pub events: Option<u64>,
    /// The table's computed columns, appended to the event's.
    pub computed: Option<Calc>,
}

impl NexmarkEvents {
    /// The source of `table`, whose physical columns (`physical`) must be upstream's.
    pub fn of(
        table: &TableDefinition,
        physical: &Schema,
        computed: Option<Calc>,
    ) -> crate::error::Result<Self> {
        let expected = || {
            COLUMNS
                .iter()
                .map(|(c, fields)| {
                    if fields.is_empty() {
                        format!("{c} INT")
                    } else {
                        format!("{c} ROW<{}>", fields.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let matches = physical.columns.len() == COLUMNS.len()
            && physical
                .columns
                .iter()
                .zip(COLUMNS)
                .all(|(c, (name, fields))| {
                    c.name.eq_ignore_ascii_case(name)
                        && match &c.ty.ty {
                            SqlType::Row(declared) => {
                                declared.len() == fields.len()
                                    && declared
                                        .iter()
                                        .zip(fields.iter())
                                        .all(|(d, f)| d.name.eq_ignore_ascii_case(f))
                            }
                            _ => fields.is_empty(),
                        }
                });
        if !matches {
            return Err(SqlError::Invalid {
                at: table.at,
                message: format!(
                    "the 'nexmark' table '{}' has the physical columns of upstream's \
                     ddl_gen.sql: {}",
                    table.name,
                    expected()
                ),
            });
        }
        let events = match table.options.get("events.num") {
            None => None,
            Some(n) => match n.trim().parse::<u64>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => {
                    return Err(SqlError::Invalid {
                        at: table.at,
                        message: format!(
                            "'events.num' of table '{}' is '{n}', not a number of events",
                            table.name
                        ),
                    });
                }
            },
        };
        Ok(NexmarkEvents {
            table: table.name.clone(),
            events,
            computed,
        })
    }
}

fn s(v: String) -> Value {
    Value::String(v)
}

/// An event as the table's row.
fn row(event: Event) -> Row {
    let (kind, person, auction, bid) = match event {
        Event::Person(p) => {
            let p = Person::from(p);
            let fields = vec![
                Value::BigInt(p.id as i64),
                s(p.name),
                s(p.email_address),
                s(p.credit_card),
                s(p.city),
                s(p.state),
                Value::Timestamp(p.date_time),
                s(p.extra),
            ];
            (0, Value::Row(fields), Value::Null, Value::Null)
        }
        Event::Auction(a) => {
            let a = Auction::from(a);
            let fields = vec![
                Value::BigInt(a.id as i64),
                s(a.item_name),
                s(a.description),
                Value::BigInt(a.initial_bid as i64),
                Value::BigInt(a.reserve as i64),
                Value::Timestamp(a.date_time),
                Value::Timestamp(a.expires),
                Value::BigInt(a.seller as i64),
                Value::BigInt(a.category as i64),
                s(a.extra),
            ];
            (1, Value::Null, Value::Row(fields), Value::Null)
        }
        Event::Bid(b) => {
            let b = Bid::from(b);
            let fields = vec![
                Value::BigInt(b.auction as i64),
                Value::BigInt(b.bidder as i64),
                Value::BigInt(b.price as i64),
                s(b.channel),
                s(b.url),
                Value::Timestamp(b.date_time),
                s(b.extra),
            ];
            (2, Value::Null, Value::Null, Value::Row(fields))
        }
    };
    vec![Value::Int(kind), person, auction, bid]
}

impl Source<Row> for NexmarkEvents {
    fn name(&self) -> String {
        format!("Nexmark events: {}", self.table)
    }
    fn is_bounded(&self) -> bool {
        self.events.is_some()
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<Row>>> {
        let rows = SubtaskRows::new(
            ctx,
            self.events,
            self.computed.clone(),
            format!("the nexmark table '{}'", self.table),
        );
        Ok(Box::new(NexmarkEventsReader {
            generator: EventGenerator::new(config())
                .with_offset(rows.next)
                .with_step(rows.step),
            rows,
        }))
    }
}

/// The events of one subtask.
struct NexmarkEventsReader {
    generator: EventGenerator,
    rows: SubtaskRows,
}

impl SourceReader<Row> for NexmarkEventsReader {
    fn poll_next(&mut self, out: &mut Vec<Row>, max: usize) -> Result<SourceStatus> {
        for _ in 0..max {
            if self.rows.take().is_none() {
                break;
            }
            if let Some(event) = self.generator.next() {
                self.rows.push(out, row(event))?;
            }
        }
        Ok(self.rows.status())
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        Some(self.rows.position())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        self.rows.restore(position)?;
        self.generator = EventGenerator::new(config())
            .with_offset(self.rows.next)
            .with_step(self.rows.step);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events split over readers, one restored from a position mid-way, are the first N
    /// events of the plain generator, each once.
    #[test]
    fn readers_share_the_events_and_resume_from_a_position() {
        let source = NexmarkEvents {
            table: "datagen".into(),
            events: Some(500),
            computed: None,
        };
        let mut all = Vec::new();
        for subtask in 0..3 {
            let ctx = SourceContext::standalone(subtask, 3);
            let mut reader = source.create_reader(&ctx).expect("a reader");
            let mut rows = Vec::new();
            reader.poll_next(&mut rows, 40).expect("a poll");
            let position = reader.snapshot_position().expect("a position");
            let mut resumed = source.create_reader(&ctx).expect("a reader");
            resumed.restore_position(&position).expect("a restore");
            while resumed.poll_next(&mut rows, 40).expect("a poll") != SourceStatus::Finished {}
            all.extend(rows);
        }
        let mut expected: Vec<Row> = EventGenerator::new(config()).take(500).map(row).collect();
        let key = |r: &Row| format!("{r:?}");
        all.sort_by_key(key);
        expected.sort_by_key(key);
        assert_eq!(all, expected);
        assert!(
            all.iter().any(|r| r[0] == Value::Int(0)) && all.iter().any(|r| r[0] == Value::Int(2))
        );
    }
}

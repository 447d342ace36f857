//! Flink SQL on Hummer: a script of Flink SQL statements, run as Hummer jobs.
//!
//! A script is split into statements ([`script`]), each parsed by `sqlparser` in Flink's
//! dialect ([`dialect`]) with Flink's types ([`types`]). Every error before a job runs names
//! the line and column it is about ([`error`]). A [`session::Session`] runs the statements
//! one after the other: the DDL builds its [`catalog`], `SET` its options, and results print
//! as Flink's client prints them ([`tableau`]).
//!
//! Layer 11 of 12: above `jobs`, below the `hummer` facade (the layers are listed in
//! `tests/layering.rs`). The planner ([`plan`]) lowers queries onto Hummer's own operators
//! ([`lower`]); the connectors ([`connector`]) read and write tables in their formats
//! ([`mod@format`]); functions written in Rust are registered on the session ([`expr::udf`]).

#![warn(missing_docs)]

pub mod catalog;
pub mod changelog;
pub mod connector;
pub mod dialect;
pub mod error;
pub mod expr;
pub mod format;
pub mod lower;
pub mod plan;
pub mod schema;
pub mod script;
pub mod session;
pub mod statement;
pub mod tableau;
pub mod types;
pub mod value;
pub mod zone;

pub use error::{Position, Result, SqlError};
pub use session::{LiveResult, Outcome, Session};

//! The bound every record type satisfies.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A record that can flow through a Hummer job.
///
/// Records are moved between threads in batches (`Send`), copied where a stream fans out or is
/// broadcast (`Clone`), and serialised when they cross a process boundary in cluster mode
/// (`Serialize` / `DeserializeOwned`). The trait is implemented for every type that meets these
/// bounds; derive `Clone`, `Serialize` and `Deserialize` on your own record types.
pub trait Data: Clone + Send + Serialize + DeserializeOwned + 'static {}

impl<T: Clone + Send + Serialize + DeserializeOwned + 'static> Data for T {}

/// A key of a keyed stream: hashed to a key group, compared for equality.
pub trait Key: Data + std::hash::Hash + Eq {}

impl<T: Data + std::hash::Hash + Eq> Key for T {}

/// What picks a record's key (Flink's `KeySelector`): a function of the record that moves to
/// the thread of the operator that calls it.
pub trait KeySelector<T, K>: Fn(&T) -> K + Send + 'static {}

impl<T, K, F: Fn(&T) -> K + Send + 'static> KeySelector<T, K> for F {}

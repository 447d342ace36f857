//! Task files of incremental checkpoints, read with the chains of deltas they build on.
//!
//! A checkpoint's task file holds one piece of state per stateful operator of the task. A
//! piece may be a delta on the same task's piece in an earlier checkpoint (its header names
//! that checkpoint, [`delta_base`]), which may itself be a delta, back to a full snapshot.
//! [`read_task`] puts the whole chain in place of such a piece, oldest first, so that an
//! operator restoring the pieces in order ends with exactly the state that was snapshotted.
//! A savepoint stores its task files in this resolved form, so it needs no other checkpoint.
//!
//! A piece may also be a reference to a shared state file ([`crate::shared`]); the
//! checkpoint's task file then lists the whole chain of files itself, and reading it reads
//! them, in that order.

use std::collections::HashMap;

use crate::error::{HummerError, Result};
use crate::shared::StateRef;
use crate::state::snapshot::delta_base;
use crate::state::task_state::TaskSnapshot;
use crate::store::CompletedCheckpoint;

/// Decodes task file `name` of `checkpoint` as it is stored.
pub fn decode_task(checkpoint: &CompletedCheckpoint, name: &str) -> Result<TaskSnapshot> {
    let bytes = checkpoint.read(name)?;
    postcard::from_bytes(&bytes).map_err(|e| HummerError::BadInput {
        input: checkpoint.dir.join(name).display().to_string(),
        reason: format!("undecodable task snapshot: {e}"),
    })
}

/// Task file `name` of `checkpoint` with every reference read and every delta's chain
/// resolved: where an operator's
/// first piece in the file is a delta, the pieces it builds on (read from the same task's
/// file of each base checkpoint) come before it, oldest first.
pub fn read_task(checkpoint: &CompletedCheckpoint, name: &str) -> Result<TaskSnapshot> {
    let mut task = read_task_as_listed(checkpoint, name)?;
    for (_, piece) in &mut task.operators {
        if let Some(reference) = StateRef::decode(piece) {
            *piece = checkpoint.read_shared(&reference?)?;
        }
    }
    Ok(task)
}

/// [`read_task`] with references to shared state files left as they are (they list their
/// chains themselves); only deltas of earlier builds are resolved.
pub fn read_task_as_listed(checkpoint: &CompletedCheckpoint, name: &str) -> Result<TaskSnapshot> {
    let stored = decode_task(checkpoint, name)?;
    let mut resolved = TaskSnapshot {
        operators: Vec::with_capacity(stored.operators.len()),
        ..TaskSnapshot::new(stored.checkpoint, stored.max_parallelism)
    };
    resolved.sources = stored.sources;
    // The task files of base checkpoints, read once each.
    let mut bases: HashMap<u64, TaskSnapshot> = HashMap::new();
    for (node, bytes) in stored.operators {
        let first = !resolved.operators.iter().any(|(n, _)| *n == node);
        if first {
            let mut chain = Vec::new();
            let mut base = delta_base(&bytes);
            while let Some(id) = base {
                let piece = take_piece(checkpoint, &mut bases, id, name, node)?;
                base = delta_base(&piece);
                chain.push(piece);
            }
            resolved
                .operators
                .extend(chain.into_iter().rev().map(|piece| (node, piece)));
        }
        resolved.operators.push((node, bytes));
    }
    Ok(resolved)
}

/// Takes the state of operator `node` out of task file `name` of base checkpoint `id`.
fn take_piece(
    checkpoint: &CompletedCheckpoint,
    bases: &mut HashMap<u64, TaskSnapshot>,
    id: u64,
    name: &str,
    node: usize,
) -> Result<Vec<u8>> {
    let missing = |reason: String| HummerError::BadInput {
        input: checkpoint.dir.join(name).display().to_string(),
        reason,
    };
    let holder = checkpoint.base(id).ok_or_else(|| {
        missing(format!(
            "the state of operator {node} is a delta on checkpoint {id}, which this \
             checkpoint does not list among its bases"
        ))
    })?;
    let task = match bases.entry(id) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(decode_task(holder, name)?),
    };
    task.operators
        .iter_mut()
        .find(|(n, _)| *n == node)
        .map(|(_, bytes)| std::mem::take(bytes))
        .ok_or_else(|| {
            missing(format!(
                "the state of operator {node} is a delta on checkpoint {id}, whose {name} has \
                 no state of that operator"
            ))
        })
}

//! Identifiers shared by the graph, the runtime and checkpoints.

/// Identifier of a stream graph node (an operator): its index in the stream graph. It is the
/// operator's identity in checkpoints and savepoints.
pub type NodeId = usize;

/// Identifier of a checkpoint: 1, 2, ... in the order they are triggered; 0 means none.
pub type CheckpointId = u64;

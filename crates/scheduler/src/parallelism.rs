//! Choosing each vertex's parallelism in a cluster.
//!
//! A vertex whose operators set a parallelism keeps it. Every other vertex gets the job's total
//! parallelism, capped by the free slots of the cluster and kept within the vertex's bounds
//! (`set_parallelism_bounds`, source limits, the number of key groups). Slots are shared
//! between vertices (subtask *i* of every vertex runs in slot *i*), so "sharing the free slots
//! evenly" means every unset vertex may use all of them: none is ever given more than the
//! job's total or the free slots, and a vertex whose lower bound does not fit is an error that
//! names it.

use serde::{Deserialize, Serialize};

use crate::PlacementError;

/// What a vertex asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VertexRequest {
    /// The vertex's name.
    pub name: String,
    /// Parallelism set by the program, if any.
    pub explicit: Option<usize>,
    /// Lower bound.
    pub min: usize,
    /// Upper bound.
    pub max: usize,
}

/// Parallelism per vertex, or why the job does not fit.
pub fn decide(
    vertices: &[VertexRequest],
    total: usize,
    free_slots: usize,
) -> Result<Vec<usize>, PlacementError> {
    let limit = total.min(free_slots);
    vertices
        .iter()
        .map(|v| match v.explicit {
            Some(p) if p > free_slots => Err(PlacementError::ParallelismAboveFreeSlots {
                vertex: v.name.clone(),
                parallelism: p,
                free: free_slots,
            }),
            Some(p) => Ok(p),
            None => {
                let p = limit.min(v.max);
                if p < v.min.max(1) {
                    Err(PlacementError::BelowMinimumParallelism {
                        vertex: v.name.clone(),
                        min: v.min.max(1),
                        limit,
                        total,
                        free: free_slots,
                    })
                } else {
                    Ok(p)
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(explicit: Option<usize>, min: usize, max: usize) -> VertexRequest {
        VertexRequest {
            name: "v".into(),
            explicit,
            min,
            max,
        }
    }

    #[test]
    fn unset_vertices_get_the_total_within_free_slots_and_bounds() {
        let got = decide(&[v(None, 1, 128), v(Some(2), 1, 128), v(None, 1, 3)], 6, 4).unwrap();
        assert_eq!(got, vec![4, 2, 3]);
        let err = decide(&[v(None, 5, 128)], 6, 4).unwrap_err();
        assert!(err.to_string().contains("at least 5"), "{err}");
        let err = decide(&[v(Some(8), 1, 128)], 6, 4).unwrap_err();
        assert!(err.to_string().contains("set to parallelism 8"), "{err}");
    }

    proptest! {
        #[test]
        fn never_above_total_free_slots_or_bounds(
            total in 1usize..16, free in 0usize..16,
            bounds in proptest::collection::vec((1usize..8, 1usize..16), 1..6),
        ) {
            let vs: Vec<VertexRequest> = bounds.iter().map(|&(lo, hi)| v(None, lo, hi.max(lo))).collect();
            if let Ok(ps) = decide(&vs, total, free) {
                for (p, r) in ps.iter().zip(&vs) {
                    prop_assert!(*p <= total && *p <= free && *p <= r.max && *p >= r.min);
                }
            }
        }
    }
}

//! Sub-plan reuse: within one query, a table is read once however often the query names it,
//! and the same aggregation of the same rows is computed once, its result read by every
//! place that needs it. Flink's planner does the same by default
//! (`table.optimizer.reuse-source-enabled`, `table.optimizer.reuse-sub-plan-enabled`): Nexmark
//! q5 counts bids per auction and hop window twice, and q7 reads the bids twice. The same
//! options turn either off.
//!
//! The planner builds streams as it goes, so reuse is a memo of what it built: a value made
//! for a key is handed out again for the same key while the outermost query is planned. A key
//! says everything the value depends on (the input's stream-graph node, the expressions, the
//! operator's settings), so equal keys mean equal results.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;

use hummer_api::StreamExecutionEnvironment;

/// What a query reuses: Flink's `table.optimizer.reuse-source-enabled` and
/// `table.optimizer.reuse-sub-plan-enabled`, both on by default (sources are reused only
/// when sub-plans are, as in Flink).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reuse {
    /// A table named twice is read once.
    pub sources: bool,
    /// The same operator over the same input is computed once.
    pub sub_plans: bool,
}

impl Default for Reuse {
    fn default() -> Self {
        Reuse {
            sources: true,
            sub_plans: true,
        }
    }
}

/// What is reused: a table's scan, or another part of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// A table's scan.
    Source,
    /// An operator and what is below it.
    SubPlan,
}

impl Reuse {
    fn covers(&self, part: Part) -> bool {
        match part {
            Part::Source => self.sources && self.sub_plans,
            Part::SubPlan => self.sub_plans,
        }
    }
}

/// What has been built for one environment.
struct Memo {
    env: StreamExecutionEnvironment,
    reuse: Reuse,
    built: HashMap<String, Box<dyn Any>>,
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Runs `plan` with reuse on `env`: nested calls for the same environment share what the
/// outermost one built; a call for another environment (a planning for the schema only)
/// gets a memo of its own until it returns. Restored after, also on a panic.
pub fn in_scope<R>(env: &StreamExecutionEnvironment, reuse: Reuse, plan: impl FnOnce() -> R) -> R {
    let nested = MEMO.with(|m| m.borrow().as_ref().is_some_and(|m| m.env.same_as(env)));
    if nested {
        return plan();
    }
    struct Restore(Option<Option<Memo>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                MEMO.with(|m| *m.borrow_mut() = previous);
            }
        }
    }
    let fresh = Memo {
        env: env.clone(),
        reuse,
        built: HashMap::new(),
    };
    let previous = MEMO.with(|m| m.replace(Some(fresh)));
    let _restore = Restore(Some(previous));
    plan()
}

/// The value built for `key` (a `part` of the plan) in this scope, or the one `build` makes
/// (remembered for the next ask). Outside [`in_scope`], where that part is not reused, or for
/// a key built with another type, it just builds.
pub fn reused<T: Clone + 'static, E>(
    part: Part,
    key: String,
    build: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let key = format!("{part:?} {key}");
    let found = MEMO.with(|m| {
        m.borrow()
            .as_ref()
            .filter(|m| m.reuse.covers(part))
            .and_then(|m| m.built.get(&key))
            .and_then(|v| v.downcast_ref::<T>())
            .cloned()
    });
    if let Some(found) = found {
        return Ok(found);
    }
    let made = build()?;
    MEMO.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut().filter(|m| m.reuse.covers(part)) {
            m.built.insert(key, Box::new(made.clone()));
        }
    });
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_built_once_per_scope_and_each_environment_has_its_own() {
        let env = StreamExecutionEnvironment::local();
        let mut builds = 0;
        let mut build = |k: &str| {
            reused(Part::SubPlan, k.to_string(), || {
                builds += 1;
                Ok::<_, ()>(builds)
            })
            .unwrap()
        };
        let on = Reuse::default();
        let (first, again, other) = in_scope(&env, on, || {
            let first = build("a");
            let again = in_scope(&env, on, || build("a"));
            let other = in_scope(&StreamExecutionEnvironment::local(), on, || build("a"));
            (first, again, other)
        });
        assert_eq!((first, again, other), (1, 1, 2));
        // Outside a scope, or with reuse off, nothing is remembered.
        assert_eq!((build("a"), build("a")), (3, 4));
        let off = Reuse {
            sources: true,
            sub_plans: false,
        };
        assert_eq!(in_scope(&env, off, || (build("a"), build("a"))), (5, 6));
    }
}

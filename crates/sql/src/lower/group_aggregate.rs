//! `GroupAggregate`: a `GROUP BY` without a window, as Flink's `GroupAggFunction` runs it.
//!
//! Its input rows are the group key's columns followed by the aggregates' inputs (computed by
//! the `Calc` before it); it keeps per key one accumulator per aggregate and the number of
//! rows in the group, in keyed state the runtime checkpoints. Every input change updates the
//! key's accumulators (a retraction takes its row back out) and emits what changed: `+I` for
//! a new group, `-U` then `+U` for a group whose result changed (nothing when it did not),
//! `-D` for a group whose last row was retracted.

use hummer_types::error::Result;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::per_key::KeyedChanges;
use crate::changelog::{Change, RowKind};
use crate::expr::{Arith, EvalError, arith};
use crate::types::SqlType;
use crate::value::{Row, Value};

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggKind {
    /// `COUNT(*)`: rows.
    CountStar,
    /// `COUNT(x)`: rows where `x` is not `NULL`.
    Count,
    /// `SUM(x)`.
    Sum,
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `AVG(x)`, in `x`'s type (an integer average is truncated, as Flink's).
    Avg,
    /// `FIRST_VALUE(x)`: the first value that is not `NULL`.
    FirstValue,
    /// `LAST_VALUE(x)`: the last value that is not `NULL`.
    LastValue,
    /// `LISTAGG(x [, separator])`: the values that are not `NULL` in arrival order, joined by
    /// the separator (`,` by default).
    ListAgg,
    /// `VAR_POP`, `VAR_SAMP` (`VARIANCE`), `STDDEV_POP`, `STDDEV_SAMP` (`STDDEV`), in `x`'s
    /// type's arithmetic, as Flink reduces them: `(SUM(x*x) - SUM(x)*SUM(x)/n) / n` (`n - 1`
    /// for a sample, `NULL` for one value), and its square root.
    Spread(Spread),
    /// `LAG(x [, offset [, default]]) OVER (..)`: `x` of the row `offset` rows before (1 by
    /// default), `NULL` values included; the default (or `NULL`) where there is none.
    Lag(usize),
}

/// Which measure of spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    /// Of a sample (divided by `n - 1`) rather than the population (by `n`).
    pub sample: bool,
    /// The standard deviation (the variance's square root) rather than the variance.
    pub root: bool,
}

/// One aggregate of a `GROUP BY`: which function, over which input column, counting each
/// distinct value once or not, for the rows where the filter column is `TRUE` (if any).
#[derive(Clone, Debug)]
pub struct AggCall {
    /// The function.
    pub kind: AggKind,
    /// The input column of its argument (none for `COUNT(*)`).
    pub arg: Option<usize>,
    /// `COUNT(DISTINCT x)`, `SUM(DISTINCT x)`, ...
    pub distinct: bool,
    /// The input column of its `FILTER (WHERE ..)`, if any.
    pub filter: Option<usize>,
    /// The result's type (the argument's for SUM, MIN, MAX and AVG).
    pub ty: SqlType,
    /// A literal argument besides the value: `LISTAGG`'s separator, `LAG`'s default.
    pub parameter: Option<Value>,
}

/// The state of one aggregate of one group.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Acc {
    /// Rows counted (net of retractions).
    Count(i64),
    /// A sum and the number of values in it (`NULL` when none).
    Sum(Value, i64),
    /// Every value with its multiplicity: MIN and MAX survive retractions, DISTINCT counts
    /// each value once.
    Values(BTreeMap<Value, i64>),
    /// The least (MIN) or greatest (MAX) value so far, over an input that only adds rows:
    /// one value instead of them all.
    Extreme(Value),
    /// SUM or AVG of DISTINCT values: each value with its multiplicity, and the sum of the
    /// distinct ones, changed as a value first comes and last goes (not summed again per
    /// row).
    DistinctSum(BTreeMap<Value, i64>, Value),
    /// FIRST_VALUE or LAST_VALUE over an input that only adds rows: the one value kept.
    Kept(Value),
    /// FIRST_VALUE, LAST_VALUE or LISTAGG: the values in arrival order (a retraction takes
    /// the earliest equal one out).
    Ordered(Vec<Value>),
    /// LAG's latest values, the current row's last (as many as its offset reaches).
    Recent(std::collections::VecDeque<Value>),
    /// A spread's values counted, summed and their squares summed.
    Moments {
        /// Values (net of retractions).
        n: i64,
        /// Their sum (`NULL` when none).
        sum: Value,
        /// The sum of their squares.
        squares: Value,
    },
    /// COUNT(DISTINCT x): every value with its multiplicity, in a hash table (no order is
    /// needed to count them, and a look-up costs one hash instead of a tree's comparisons).
    Distinct(DistinctValues),
    /// The COUNT(DISTINCT x) calls over one `x` with different filters, in the first of them:
    /// see [`SharedDistinct`].
    SharedDistinct(SharedDistinct),
    /// A COUNT(DISTINCT x) counted in an earlier call's [`Acc::SharedDistinct`].
    CountedInShared,
}

/// The COUNT(DISTINCT x) calls of a `GROUP BY` over one `x` (with different `FILTER`s, as
/// q15 and q16 count bidders per price range) counted in one table, as Flink's distinct
/// aggregates share one map per argument: every value once, with one multiplicity per call,
/// so that a row costs one look-up instead of one per call.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SharedDistinct {
    /// Each value with its multiplicity per call (in the order of [`DistinctGroup::calls`]);
    /// a value whose multiplicities are all 0 is taken out.
    values: std::collections::HashMap<Value, Box<[i64]>, foldhash::fast::RandomState>,
    /// Per call, the values whose multiplicity for it is positive: its result.
    counts: Vec<i64>,
}

impl SharedDistinct {
    fn new(calls: usize) -> SharedDistinct {
        SharedDistinct {
            values: Default::default(),
            counts: vec![0; calls],
        }
    }

    /// Adds `sign` times `n` to `v`'s multiplicity for the calls whose bit `mask` sets.
    fn add(&mut self, v: &Value, mask: u64, n: i64) {
        let calls = self.counts.len();
        let multiplicities = match self.values.get_mut(v) {
            Some(m) => m,
            None => self
                .values
                .entry(v.clone())
                .or_insert_with(|| vec![0; calls].into_boxed_slice()),
        };
        for (slot, (m, count)) in multiplicities.iter_mut().zip(&mut self.counts).enumerate() {
            if mask & (1 << slot) == 0 {
                continue;
            }
            let before = *m;
            *m += n;
            match (before > 0, *m > 0) {
                (false, true) => *count += 1,
                (true, false) => *count -= 1,
                _ => {}
            }
        }
        if multiplicities.iter().all(|m| *m == 0) {
            self.values.remove(v);
        }
    }

    /// Adds `other`'s multiplicities to these (session windows that merge).
    fn absorb(&mut self, other: SharedDistinct) {
        for (v, multiplicities) in other.values {
            for (slot, m) in multiplicities.iter().enumerate() {
                if *m != 0 {
                    self.add(&v, 1 << slot, *m);
                }
            }
        }
    }
}

/// COUNT(DISTINCT x) calls over one argument column that share one [`SharedDistinct`], held
/// by the first of them.
#[derive(Clone, Debug)]
struct DistinctGroup {
    /// The argument's input column.
    arg: usize,
    /// The calls, by index: at least two, at most 64 (one bit each in a mask).
    calls: Vec<usize>,
}

/// Groups the COUNT(DISTINCT x) calls of `calls` by `x`; a call alone with its `x` keeps a
/// table of its own.
fn distinct_groups(calls: &[AggCall]) -> Vec<DistinctGroup> {
    let mut groups: Vec<DistinctGroup> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let (AggKind::Count | AggKind::CountStar, true, Some(arg)) =
            (call.kind, call.distinct, call.arg)
        else {
            continue;
        };
        match groups
            .iter_mut()
            .find(|g| g.arg == arg && g.calls.len() < 64)
        {
            Some(group) => group.calls.push(i),
            None => groups.push(DistinctGroup {
                arg,
                calls: vec![i],
            }),
        }
    }
    groups.retain(|g| g.calls.len() > 1);
    groups
}

/// The values of a COUNT(DISTINCT x) with their multiplicities.
pub type DistinctValues = std::collections::HashMap<Value, i64, foldhash::fast::RandomState>;

/// A map from values to their multiplicities: the tree of MIN, MAX and DISTINCT sums, the
/// hash table of COUNT(DISTINCT).
trait Multiplicities {
    fn get_mut(&mut self, v: &Value) -> Option<&mut i64>;
    fn insert(&mut self, v: Value, n: i64);
    fn remove(&mut self, v: &Value);

    /// Adds `sign` to `v`'s multiplicity; returns it before and after (a value whose
    /// multiplicity reaches 0 is taken out). Clones `v` only for a new value.
    fn add(&mut self, v: &Value, sign: i64) -> (i64, i64) {
        match self.get_mut(v) {
            Some(n) => {
                let before = *n;
                *n += sign;
                let after = *n;
                if after == 0 {
                    self.remove(v);
                }
                (before, after)
            }
            None => {
                self.insert(v.clone(), sign);
                (0, sign)
            }
        }
    }

    /// Adds `other`'s multiplicities to these (session windows that merge).
    fn absorb(&mut self, other: impl IntoIterator<Item = (Value, i64)>) {
        for (v, n) in other {
            self.add(&v, n);
        }
    }
}

impl Multiplicities for BTreeMap<Value, i64> {
    fn get_mut(&mut self, v: &Value) -> Option<&mut i64> {
        BTreeMap::get_mut(self, v)
    }
    fn insert(&mut self, v: Value, n: i64) {
        BTreeMap::insert(self, v, n);
    }
    fn remove(&mut self, v: &Value) {
        BTreeMap::remove(self, v);
    }
}

impl Multiplicities for DistinctValues {
    fn get_mut(&mut self, v: &Value) -> Option<&mut i64> {
        std::collections::HashMap::get_mut(self, v)
    }
    fn insert(&mut self, v: Value, n: i64) {
        std::collections::HashMap::insert(self, v, n);
    }
    fn remove(&mut self, v: &Value) {
        std::collections::HashMap::remove(self, v);
    }
}

/// The state of one group: its aggregates and its rows (net of retractions).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupState {
    /// One accumulator per aggregate call.
    pub accs: Vec<Acc>,
    /// Rows in the group.
    pub rows: i64,
}

/// A `GROUP BY`'s aggregation: `keys` leading key columns, then the calls.
#[derive(Clone, Debug)]
pub struct GroupAggregate {
    /// How many leading input columns are the group key.
    keys: usize,
    /// The aggregates.
    calls: Vec<AggCall>,
    /// The input only adds rows (no retraction comes): MIN and MAX keep one value.
    append_only: bool,
    /// The COUNT(DISTINCT x) calls that share a table.
    shared: Vec<DistinctGroup>,
    /// Per call counted in a shared table: the group's first call and the call's place in it.
    counted_in: Vec<Option<(usize, usize)>>,
}

fn failed(call: &AggCall, e: EvalError) -> hummer_types::error::HummerError {
    hummer_types::error::HummerError::BadInput {
        input: format!("the aggregate {:?} over {}", call.kind, call.ty),
        reason: e.to_string(),
    }
}

/// A spread from its moments, in `call`'s type's arithmetic (Calcite's reduction, as Flink
/// computes it): `NULL` without values, or for a sample of one.
fn spread_of(
    call: &AggCall,
    spread: Spread,
    n: i64,
    sum: &Value,
    squares: &Value,
) -> Result<Value> {
    if n <= 0 || (spread.sample && n == 1) {
        return Ok(Value::Null);
    }
    let ty = &call.ty;
    let op = |op, a: Value, b: Value| arith(op, a, b, ty).map_err(|e| failed(call, e));
    let mean_square = op(
        Arith::Divide,
        op(Arith::Multiply, sum.clone(), sum.clone())?,
        count_in(n, ty),
    )?;
    let divisor = count_in(if spread.sample { n - 1 } else { n }, ty);
    let variance = op(
        Arith::Divide,
        op(Arith::Subtract, squares.clone(), mean_square)?,
        divisor,
    )?;
    if !spread.root {
        return Ok(variance);
    }
    let root = crate::expr::as_f64(&variance).sqrt();
    crate::expr::cast(Value::Double(root), ty).map_err(|e| failed(call, e))
}

/// `sum + v` in `call`'s type (`v` alone where `sum` is `NULL`).
fn add_to(call: &AggCall, sum: &Value, v: Value) -> Result<Value> {
    if sum.is_null() {
        return Ok(v);
    }
    arith(Arith::Add, sum.clone(), v, &call.ty).map_err(|e| failed(call, e))
}

impl GroupAggregate {
    /// The aggregation of `calls` over rows whose `keys` leading columns are the group key;
    /// `append_only` if no retraction comes (MIN and MAX then keep one value).
    pub fn new(keys: usize, calls: Vec<AggCall>, append_only: bool) -> GroupAggregate {
        let shared = distinct_groups(&calls);
        let mut counted_in = vec![None; calls.len()];
        for group in &shared {
            for (slot, &call) in group.calls.iter().enumerate() {
                counted_in[call] = Some((group.calls[0], slot));
            }
        }
        GroupAggregate {
            keys,
            calls,
            append_only,
            shared,
            counted_in,
        }
    }

    /// The aggregates.
    pub fn calls(&self) -> &[AggCall] {
        &self.calls
    }

    /// A group without rows.
    pub fn new_state(&self) -> GroupState {
        GroupState {
            accs: self
                .calls
                .iter()
                .zip(&self.counted_in)
                .map(|(c, counted_in)| match (c.kind, c.distinct, counted_in) {
                    (_, _, Some((first, 0))) => Acc::SharedDistinct(SharedDistinct::new(
                        self.shared
                            .iter()
                            .find(|g| g.calls[0] == *first)
                            .map_or(1, |g| g.calls.len()),
                    )),
                    (_, _, Some(_)) => Acc::CountedInShared,
                    (AggKind::FirstValue | AggKind::LastValue, _, _) if self.append_only => {
                        Acc::Kept(Value::Null)
                    }
                    (AggKind::FirstValue | AggKind::LastValue | AggKind::ListAgg, _, _) => {
                        Acc::Ordered(Vec::new())
                    }
                    (AggKind::Lag(_), _, _) => Acc::Recent(Default::default()),
                    (AggKind::Spread(_), _, _) => Acc::Moments {
                        n: 0,
                        sum: Value::Null,
                        squares: Value::Null,
                    },
                    (AggKind::Min | AggKind::Max, false, _) if self.append_only => {
                        Acc::Extreme(Value::Null)
                    }
                    (AggKind::Sum | AggKind::Avg, true, _) => {
                        Acc::DistinctSum(BTreeMap::new(), Value::Null)
                    }
                    (AggKind::Count | AggKind::CountStar, true, _) => {
                        Acc::Distinct(DistinctValues::default())
                    }
                    (AggKind::Min | AggKind::Max, _, _) => Acc::Values(BTreeMap::new()),
                    (AggKind::Sum | AggKind::Avg, false, _) => Acc::Sum(Value::Null, 0),
                    (AggKind::CountStar | AggKind::Count, false, _) => Acc::Count(0),
                })
                .collect(),
            rows: 0,
        }
    }

    /// Folds `row` (of key and inputs) into `state`; `sign` is +1 or -1 (a retraction).
    pub fn fold(&self, state: &mut GroupState, row: &[Value], sign: i64) -> Result<()> {
        state.rows += sign;
        for (call, acc) in self.calls.iter().zip(&mut state.accs) {
            if let Some(f) = call.filter
                && !matches!(row[f], Value::Boolean(true))
            {
                continue;
            }
            let value = call.arg.map(|a| &row[a]);
            // LAG sees every row, its NULLs too, and no retraction (it is not of a frame).
            if let (Acc::Recent(recent), AggKind::Lag(offset)) = (&mut *acc, call.kind) {
                if sign > 0 {
                    recent.push_back(value.cloned().unwrap_or_default());
                    while recent.len() > offset + 1 {
                        recent.pop_front();
                    }
                }
                continue;
            }
            if value.is_some_and(Value::is_null) {
                continue;
            }
            // One value kept for an input that only adds rows cannot take a row back.
            if sign < 0 && matches!(acc, Acc::Extreme(_) | Acc::Kept(_)) {
                return Err(failed(
                    call,
                    EvalError(
                        "a retraction reached an aggregate of an input that only adds rows".into(),
                    ),
                ));
            }
            match acc {
                Acc::Count(n) => *n += sign,
                Acc::Sum(sum, n) => {
                    let v = value.cloned().unwrap_or(Value::Null);
                    let v = if sign < 0 {
                        arith(Arith::Subtract, zero(&call.ty), v, &call.ty)
                    } else {
                        Ok(v)
                    }
                    .map_err(|e| failed(call, e))?;
                    *sum = add_to(call, sum, v)?;
                    *n += sign;
                }
                Acc::Extreme(extreme) => {
                    let v = value.unwrap_or(&Value::Null);
                    let better = match call.kind {
                        AggKind::Min => *v < *extreme,
                        _ => *v > *extreme,
                    };
                    if extreme.is_null() || better {
                        *extreme = v.clone();
                    }
                }
                Acc::Kept(kept) => {
                    if call.kind == AggKind::LastValue || kept.is_null() {
                        *kept = value.cloned().unwrap_or(Value::Null);
                    }
                }
                // Taken before (LAG's rows).
                Acc::Recent(_) => {}
                Acc::Moments { n, sum, squares } => {
                    let v = value.cloned().unwrap_or(Value::Null);
                    let square = arith(Arith::Multiply, v.clone(), v.clone(), &call.ty)
                        .map_err(|e| failed(call, e))?;
                    let (v, square) = if sign < 0 {
                        let negate = |x: Value| {
                            arith(Arith::Subtract, zero(&call.ty), x, &call.ty)
                                .map_err(|e| failed(call, e))
                        };
                        (negate(v)?, negate(square)?)
                    } else {
                        (v, square)
                    };
                    *sum = add_to(call, sum, v)?;
                    *squares = add_to(call, squares, square)?;
                    *n += sign;
                }
                Acc::Ordered(values) => {
                    let v = value.cloned().unwrap_or(Value::Null);
                    if sign > 0 {
                        values.push(v);
                    } else if let Some(i) = values.iter().position(|x| *x == v) {
                        values.remove(i);
                    }
                }
                Acc::Values(values) => {
                    values.add(value.unwrap_or(&Value::Null), sign);
                }
                Acc::Distinct(values) => {
                    values.add(value.unwrap_or(&Value::Null), sign);
                }
                // Counted below, once per group of calls.
                Acc::SharedDistinct(_) | Acc::CountedInShared => {}
                Acc::DistinctSum(values, sum) => {
                    let v = value.cloned().unwrap_or(Value::Null);
                    let (before, after) = values.add(&v, sign);
                    if before <= 0 && after > 0 {
                        *sum = add_to(call, sum, v)?;
                    } else if before > 0 && after <= 0 {
                        *sum = if values.is_empty() {
                            Value::Null
                        } else {
                            let minus = arith(Arith::Subtract, zero(&call.ty), v, &call.ty)
                                .map_err(|e| failed(call, e))?;
                            add_to(call, sum, minus)?
                        };
                    }
                }
            }
        }
        for group in &self.shared {
            let v = &row[group.arg];
            if v.is_null() {
                continue;
            }
            let mut mask = 0u64;
            for (slot, &call) in group.calls.iter().enumerate() {
                if self.calls[call]
                    .filter
                    .is_none_or(|f| matches!(row[f], Value::Boolean(true)))
                {
                    mask |= 1 << slot;
                }
            }
            if let (true, Some(Acc::SharedDistinct(shared))) =
                (mask != 0, state.accs.get_mut(group.calls[0]))
            {
                shared.add(v, mask, sign);
            }
        }
        Ok(())
    }

    /// One group's state made of two (session windows that merge): the sums of counts and
    /// sums, the union of value multiplicities.
    pub fn merge(&self, mut a: GroupState, b: GroupState) -> GroupState {
        a.rows += b.rows;
        for (call, (x, y)) in self.calls.iter().zip(a.accs.iter_mut().zip(b.accs)) {
            match (x, y) {
                (Acc::Count(n), Acc::Count(m)) => *n += m,
                (Acc::Sum(s, n), Acc::Sum(t, m)) => {
                    if s.is_null() {
                        *s = t;
                    } else if !t.is_null() {
                        // A sum of two sums of the same type: its overflow wraps or is
                        // NULL as the type's arithmetic says; an error keeps the first.
                        if let Ok(v) = arith(Arith::Add, s.clone(), t, &call.ty) {
                            *s = v;
                        }
                    }
                    *n += m;
                }
                (Acc::Extreme(x), Acc::Extreme(y)) => {
                    let better = match call.kind {
                        AggKind::Min => y < *x,
                        _ => y > *x,
                    };
                    if x.is_null() || (!y.is_null() && better) {
                        *x = y;
                    }
                }
                (Acc::Values(v), Acc::Values(w)) => v.absorb(w),
                (Acc::Distinct(v), Acc::Distinct(w)) => v.absorb(w),
                (Acc::SharedDistinct(v), Acc::SharedDistinct(w)) => v.absorb(w),
                (Acc::DistinctSum(v, sum), Acc::DistinctSum(w, _)) => {
                    v.absorb(w);
                    // Summed again once: merges are rare (sessions that meet).
                    *sum = Value::Null;
                    for value in v.iter().filter(|(_, n)| **n > 0).map(|(value, _)| value) {
                        if let Ok(s) = add_to(call, sum, value.clone()) {
                            *sum = s;
                        }
                    }
                }
                (Acc::Kept(x), Acc::Kept(y))
                    if x.is_null() || (call.kind == AggKind::LastValue && !y.is_null()) =>
                {
                    *x = y;
                }
                (Acc::Ordered(v), Acc::Ordered(w)) => v.extend(w),
                (Acc::Recent(v), Acc::Recent(w)) => v.extend(w),
                (
                    Acc::Moments { n, sum, squares },
                    Acc::Moments {
                        n: m,
                        sum: s2,
                        squares: q2,
                    },
                ) => {
                    *n += m;
                    for (x, y) in [(sum, s2), (squares, q2)] {
                        if let Ok(v) = add_to(call, x, y.clone()) {
                            *x = v;
                        }
                    }
                }
                // Accumulators of one call are of one kind (`new_state` makes them).
                _ => {}
            }
        }
        a
    }

    /// The aggregates' results.
    pub fn results(&self, state: &GroupState) -> Result<Vec<Value>> {
        self.calls
            .iter()
            .zip(&state.accs)
            .zip(&self.counted_in)
            .map(|((call, acc), counted_in)| {
                Ok(match (call.kind, acc) {
                    (_, Acc::Count(n)) => Value::BigInt(*n),
                    (_, Acc::Distinct(v)) => Value::BigInt(v.len() as i64),
                    (_, Acc::SharedDistinct(_) | Acc::CountedInShared) => {
                        let (first, slot) = counted_in.unwrap_or_default();
                        match state.accs.get(first) {
                            Some(Acc::SharedDistinct(shared)) => {
                                Value::BigInt(shared.counts.get(slot).copied().unwrap_or(0))
                            }
                            _ => Value::BigInt(0),
                        }
                    }
                    (_, Acc::Kept(v)) => v.clone(),
                    (kind, Acc::Recent(v)) => {
                        let offset = match kind {
                            AggKind::Lag(offset) => offset,
                            _ => 0,
                        };
                        match v.len().checked_sub(offset + 1) {
                            Some(i) => v[i].clone(),
                            None => call.parameter.clone().unwrap_or_default(),
                        }
                    }
                    (kind, Acc::Moments { n, sum, squares }) => match kind {
                        AggKind::Spread(spread) => spread_of(call, spread, *n, sum, squares)?,
                        _ => Value::Null,
                    },
                    (AggKind::FirstValue, Acc::Ordered(v)) => {
                        v.first().cloned().unwrap_or_default()
                    }
                    (AggKind::LastValue, Acc::Ordered(v)) => v.last().cloned().unwrap_or_default(),
                    (_, Acc::Ordered(v)) if v.is_empty() => Value::Null,
                    (_, Acc::Ordered(v)) => {
                        let separator = match &call.parameter {
                            Some(Value::String(s)) => s.as_str(),
                            _ => ",",
                        };
                        let parts: Vec<String> = v.iter().map(Value::to_string).collect();
                        Value::String(parts.join(separator))
                    }
                    (_, Acc::Extreme(v)) => v.clone(),
                    (AggKind::Avg, Acc::Sum(sum, n)) if *n > 0 => {
                        arith(Arith::Divide, sum.clone(), count_in(*n, &call.ty), &call.ty)
                            .map_err(|e| failed(call, e))?
                    }
                    (_, Acc::Sum(sum, n)) if *n > 0 => sum.clone(),
                    (_, Acc::Sum(..)) => Value::Null,
                    (AggKind::Min, Acc::Values(v)) => {
                        v.keys().next().cloned().unwrap_or(Value::Null)
                    }
                    (AggKind::Max, Acc::Values(v)) => {
                        v.keys().next_back().cloned().unwrap_or(Value::Null)
                    }
                    (AggKind::Count | AggKind::CountStar, Acc::Values(v)) => {
                        Value::BigInt(v.len() as i64)
                    }
                    (_, Acc::DistinctSum(v, _)) if v.is_empty() => Value::Null,
                    (AggKind::Avg, Acc::DistinctSum(v, sum)) => {
                        let n = count_in(v.len() as i64, &call.ty);
                        arith(Arith::Divide, sum.clone(), n, &call.ty)
                            .map_err(|e| failed(call, e))?
                    }
                    (_, Acc::DistinctSum(_, sum)) => sum.clone(),
                    (
                        AggKind::Sum
                        | AggKind::Avg
                        | AggKind::FirstValue
                        | AggKind::LastValue
                        | AggKind::ListAgg
                        | AggKind::Spread(_)
                        | AggKind::Lag(_),
                        Acc::Values(v),
                    ) => {
                        let mut sum = Value::Null;
                        for value in v.keys() {
                            sum = if sum.is_null() {
                                value.clone()
                            } else {
                                arith(Arith::Add, sum, value.clone(), &call.ty)
                                    .map_err(|e| failed(call, e))?
                            };
                        }
                        if call.kind == AggKind::Avg && !v.is_empty() {
                            let n = count_in(v.len() as i64, &call.ty);
                            arith(Arith::Divide, sum, n, &call.ty).map_err(|e| failed(call, e))?
                        } else {
                            sum
                        }
                    }
                })
            })
            .collect()
    }

    /// The result row of the group `key` over no rows: `COUNT` 0, the others NULL (a global
    /// aggregate's, or an empty grouping set's, in batch mode).
    pub fn result_of_no_rows(&self, key: &[Value]) -> Result<Row> {
        self.output(key, &self.new_state())
    }

    /// The group's output row: its key, then its results.
    fn output(&self, key: &[Value], state: &GroupState) -> Result<Row> {
        let mut row = key.to_vec();
        row.extend(self.results(state)?);
        Ok(row)
    }

    /// Applies one input change to the group's `state` (`None`: no rows yet) and appends
    /// the changes of the group's result to `out`.
    pub fn apply(
        &self,
        state: &mut Option<GroupState>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let key = &change.row[..self.keys];
        let before = match state {
            Some(s) => Some(self.output(key, s)?),
            None if change.kind.retracts() => return Ok(()), // nothing to take back
            None => None,
        };
        let s = state.get_or_insert_with(|| self.new_state());
        let sign = if change.kind.retracts() { -1 } else { 1 };
        self.fold(s, &change.row, sign)?;
        let after = if s.rows <= 0 {
            *state = None;
            None
        } else {
            Some(self.output(key, s)?)
        };
        changed(before, after, out);
        Ok(())
    }
}

/// Appends the change of a group's result row from `before` to `after` (`None`: no row):
/// `+I`, `-D`, or `-U` and `+U` if it changed.
fn changed(before: Option<Row>, after: Option<Row>, out: &mut Vec<Change>) {
    match (before, after) {
        (None, Some(after)) => out.push(Change::insert(after)),
        (Some(before), None) => out.push(Change {
            kind: RowKind::Delete,
            row: before,
        }),
        (Some(before), Some(after)) if before != after => {
            out.push(Change {
                kind: RowKind::UpdateBefore,
                row: before,
            });
            out.push(Change {
                kind: RowKind::UpdateAfter,
                row: after,
            });
        }
        _ => {}
    }
}

impl KeyedChanges for GroupAggregate {
    type State = GroupState;
    const TABLE: &'static str = "groups";

    fn key(&self, row: &[Value]) -> Row {
        row[..self.keys].to_vec()
    }

    fn apply(
        &self,
        state: &mut Option<GroupState>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        GroupAggregate::apply(self, state, change, out)
    }

    /// Folds the whole bundle, then compares the group's result before and after it: the
    /// result is computed twice per key and bundle, not twice per change.
    fn apply_bundle(
        &self,
        state: &mut Option<GroupState>,
        bundle: Vec<Change>,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let Some(first) = bundle.first() else {
            return Ok(());
        };
        let key = first.row[..self.keys].to_vec();
        let before = match state {
            Some(s) => Some(self.output(&key, s)?),
            None => None,
        };
        for change in bundle {
            if state.is_none() && change.kind.retracts() {
                continue; // nothing to take back
            }
            let s = state.get_or_insert_with(|| self.new_state());
            let sign = if change.kind.retracts() { -1 } else { 1 };
            self.fold(s, &change.row, sign)?;
            if s.rows <= 0 {
                *state = None;
            }
        }
        let after = match state {
            Some(s) => Some(self.output(&key, s)?),
            None => None,
        };
        changed(before, after, out);
        Ok(())
    }
}

/// Zero in a numeric type (a retraction subtracts from it).
fn zero(ty: &SqlType) -> Value {
    match ty {
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int => Value::Int(0),
        SqlType::BigInt => Value::BigInt(0),
        SqlType::Decimal { scale, .. } => Value::Decimal(0, *scale),
        _ => Value::Double(0.0),
    }
}

/// A count as a value of the average's type (the divisor).
fn count_in(n: i64, ty: &SqlType) -> Value {
    match ty {
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int => Value::Int(n as i32),
        SqlType::BigInt => Value::BigInt(n),
        SqlType::Decimal { .. } => Value::Decimal(i128::from(n), 0),
        _ => Value::Double(n as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn agg() -> GroupAggregate {
        let call = |kind, arg, distinct, filter| AggCall {
            kind,
            arg,
            distinct,
            filter,
            ty: SqlType::BigInt,
            parameter: None,
        };
        // Input: key, value, value < 50, value is odd.
        GroupAggregate::new(
            1,
            vec![
                call(AggKind::CountStar, None, false, None),
                call(AggKind::Sum, Some(1), false, None),
                call(AggKind::Min, Some(1), false, None),
                call(AggKind::Max, Some(1), false, None),
                call(AggKind::Count, Some(1), true, None),
                call(AggKind::CountStar, None, false, Some(2)),
                call(AggKind::Avg, Some(1), false, None),
                call(AggKind::Sum, Some(1), true, None),
                call(AggKind::Avg, Some(1), true, None),
                call(AggKind::Count, Some(1), true, Some(2)),
                call(AggKind::Count, Some(0), true, Some(3)),
                call(AggKind::Count, Some(1), true, Some(3)),
            ],
            false,
        )
    }

    proptest! {
        /// Any sequence of inserts and retractions of rows the group holds, applied as the
        /// emitted changelog says, gives per key what the aggregates compute on the rows
        /// left (brute force), and no group without rows. Over inserts only, the aggregation
        /// told its input only adds rows (MIN and MAX keep one value) gives the same. Applied
        /// in bundles (a mini-batch: every `bundle` changes, each key's changes at once), the
        /// same, with at most one update (two changes) per key and bundle.
        #[test]
        fn the_changelog_matches_a_brute_force_aggregation(
            ops in proptest::collection::vec((0i64..3, 0i64..100, any::<bool>()), 0..200),
            append_only in any::<bool>(),
            bundle in proptest::option::of(1usize..10),
        ) {
            let agg = GroupAggregate { append_only, ..agg() };
            prop_assert_eq!(agg.shared.len(), 1, "the two filtered counts of column 1 share");
            let mut states: HashMap<i64, Option<GroupState>> = HashMap::new();
            let mut held: HashMap<i64, Vec<i64>> = HashMap::new();
            let mut table: HashMap<Row, i64> = HashMap::new();
            let mut bundles: HashMap<i64, Vec<Change>> = HashMap::new();
            let apply_bundles = |bundles: &mut HashMap<i64, Vec<Change>>,
                                     states: &mut HashMap<i64, Option<GroupState>>,
                                     table: &mut HashMap<Row, i64>| {
                for (key, bundle) in bundles.drain() {
                    let mut out = Vec::new();
                    agg.apply_bundle(states.entry(key).or_default(), bundle, &mut out).unwrap();
                    assert!(out.len() <= 2, "one update per key and bundle: {out:?}");
                    for c in out {
                        *table.entry(c.row).or_default() += if c.kind.retracts() { -1 } else { 1 };
                    }
                }
            };
            for (i, (key, value, retract)) in ops.into_iter().enumerate() {
                let retract = retract && !append_only;
                let rows = held.entry(key).or_default();
                let (kind, value) = match rows.iter().position(|&v| v == value) {
                    Some(i) if retract => (RowKind::Delete, rows.swap_remove(i)),
                    _ => { rows.push(value); (RowKind::Insert, value) }
                };
                let row = vec![
                    Value::BigInt(key),
                    Value::BigInt(value),
                    Value::Boolean(value < 50),
                    Value::Boolean(value % 2 == 1),
                ];
                if let Some(size) = bundle {
                    bundles.entry(key).or_default().push(Change { kind, row });
                    if (i + 1) % size == 0 {
                        apply_bundles(&mut bundles, &mut states, &mut table);
                    }
                    continue;
                }
                let mut out = Vec::new();
                agg.apply(states.entry(key).or_default(), Change { kind, row }, &mut out).unwrap();
                for c in out {
                    *table.entry(c.row).or_default() += if c.kind.retracts() { -1 } else { 1 };
                }
            }
            apply_bundles(&mut bundles, &mut states, &mut table);
            table.retain(|_, n| *n != 0);
            let mut expected: HashMap<Row, i64> = HashMap::new();
            for (key, values) in held.iter().filter(|(_, v)| !v.is_empty()) {
                let n = values.len() as i64;
                let sum: i64 = values.iter().sum();
                let mut distinct = values.clone();
                distinct.sort_unstable();
                distinct.dedup();
                let row = vec![
                    Value::BigInt(*key),
                    Value::BigInt(n),
                    Value::BigInt(sum),
                    Value::BigInt(*values.iter().min().unwrap()),
                    Value::BigInt(*values.iter().max().unwrap()),
                    Value::BigInt(distinct.len() as i64),
                    Value::BigInt(values.iter().filter(|&&v| v < 50).count() as i64),
                    Value::BigInt(sum / n),
                    Value::BigInt(distinct.iter().sum()),
                    Value::BigInt(distinct.iter().sum::<i64>() / distinct.len() as i64),
                    Value::BigInt(distinct.iter().filter(|&&v| v < 50).count() as i64),
                    Value::BigInt(i64::from(values.iter().any(|v| v % 2 == 1))),
                    Value::BigInt(distinct.iter().filter(|&&v| v % 2 == 1).count() as i64),
                ];
                expected.insert(row, 1);
            }
            prop_assert_eq!(table, expected);
        }
    }
}

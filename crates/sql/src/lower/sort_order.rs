//! `SortOrder`: how one sort key orders rows, written once for every operator that sorts
//! (the rank of a Top-N, the batch sort, the event-time sort).
//!
//! Its direction, and where `NULL`s go: by default first ascending and last descending
//! (Flink's default), or as `NULLS FIRST` / `NULLS LAST` says, whatever the direction.

use std::cmp::Ordering;

use crate::value::Value;

/// The order of one sort key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortOrder {
    /// `DESC`.
    pub descending: bool,
    /// `NULL`s before every value.
    pub nulls_first: bool,
}

impl SortOrder {
    /// The order `DESC` (or not) says, `NULL`s where `nulls_first` says or by default.
    pub fn new(descending: bool, nulls_first: Option<bool>) -> Self {
        SortOrder {
            descending,
            nulls_first: nulls_first.unwrap_or(!descending),
        }
    }

    /// Ascending, `NULL`s first.
    pub const ASC: SortOrder = SortOrder {
        descending: false,
        nulls_first: true,
    };

    /// How `x` and `y` of this key order.
    pub fn compare(&self, x: &Value, y: &Value) -> Ordering {
        match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if self.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if self.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) if self.descending => y.cmp(x),
            (false, false) => x.cmp(y),
        }
    }
}

/// How the sort keys `a` and `b` order, key by key in `orders`' order.
pub fn compare_keys(a: &[Value], b: &[Value], orders: &[SortOrder]) -> Ordering {
    a.iter()
        .zip(b)
        .zip(orders)
        .map(|((x, y), order)| order.compare(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NULLs go first ascending and last descending by default, and where NULLS FIRST/LAST
    /// says otherwise; values order by direction.
    #[test]
    fn nulls_go_where_the_order_says() {
        let (null, one, two) = (Value::Null, Value::BigInt(1), Value::BigInt(2));
        let sorted = |order: SortOrder| {
            let mut v = vec![two.clone(), null.clone(), one.clone()];
            v.sort_by(|x, y| order.compare(x, y));
            v
        };
        assert_eq!(
            sorted(SortOrder::new(false, None)),
            [null.clone(), one.clone(), two.clone()]
        );
        assert_eq!(
            sorted(SortOrder::new(true, None)),
            [two.clone(), one.clone(), null.clone()]
        );
        assert_eq!(
            sorted(SortOrder::new(false, Some(false))),
            [one.clone(), two.clone(), null.clone()]
        );
        assert_eq!(sorted(SortOrder::new(true, Some(true))), [null, two, one]);
    }
}

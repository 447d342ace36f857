//! Prefetching the heap data of table entries a few entries ahead of their encoding.
//!
//! A snapshot encodes one entry of a table after the other. The entries sit side by side in the
//! table, so reading them in order is cheap, but each of their strings, byte strings and
//! vectors lives somewhere else on the heap, placed when the record arrived. Encoding such an
//! entry waits on one cache miss per string: a profile of q18 (latest bid per bidder and
//! auction, three strings per bid) spent four fifths of its snapshot time copying strings.
//!
//! A walk of a value as serde shows it asks the CPU to fetch the first cache lines of what its
//! strings and byte strings point to, and of the elements of its sequences and maps, without
//! reading any of it, so that it costs no wait itself. Data behind data takes more than one
//! walk: q19's entry is a key's list of windows, each window's top ten a list of bids, each
//! bid's row a string, three pointers deep. So a walk has a depth: at depth 0 it reads what
//! sits inside the value (structs, tuples, enums, options) and prefetches what it points to;
//! at depth `d` it also reads the elements of its sequences and maps (which a walk one depth
//! shallower fetched a while before) and walks each at depth `d - 1`.
//! [`in_order_with_prefetch`] walks an entry at depth 0 [`STAGES`]` * `[`AHEAD`] entries
//! before it encodes it, at depth 1 [`AHEAD`] entries later, and so on, so that every level
//! has arrived by the time the next one reads it and the misses of several entries overlap
//! instead of following one another.
//!
//! A walk reads only the elements it goes into: the first of a sequence at depth 0 (for its
//! address), at most [`MAX_ELEMENTS`] deeper, and then ends the sequence's iteration, so that a
//! large set inside an entry (q16's sets of ids, written as deltas) is not iterated whole at
//! every checkpoint. Nothing a walk does changes what is written.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Serializer};

/// Entries between one walk of an entry and the next (or its encoding).
pub(crate) const AHEAD: usize = 8;
/// Walks per entry, of depths 0 to `STAGES - 1`.
pub(crate) const STAGES: usize = 3;

/// Cache lines prefetched of one string or byte string, at most.
const LINES: usize = 8;
/// Cache lines prefetched of a sequence's or map's elements, at most.
const ELEMENT_LINES: usize = 16;
/// Elements of one sequence or map a walk goes into, at most.
const MAX_ELEMENTS: usize = 64;
const LINE: usize = 64;

/// Asks the CPU to fetch the cache line at `p` (a hint: it never faults, whatever `p` is).
#[inline(always)]
fn fetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that does not read memory architecturally and never
    // faults, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches `lines` lines from `p`.
#[inline(always)]
fn fetch_lines(p: *const u8, lines: usize) {
    for i in 0..lines {
        fetch_line(p.wrapping_add(i * LINE));
    }
}

/// Walks `value` at `depth` (see the module doc): prefetches what it points to, reading what
/// `depth` earlier walks have fetched.
#[inline]
pub(crate) fn prefetch<T: Serialize + ?Sized>(value: &T, depth: u8) {
    let _ = value.serialize(Prefetcher { depth });
}

/// Calls `each` on every item of `items`, in order, after walking the value (`value_of`) of
/// each at depths 0 to `STAGES - 1`, [`AHEAD`] items apart, the last walk [`AHEAD`] items
/// before `each`. The first error ends it.
pub(crate) fn in_order_with_prefetch<I, V, E>(
    items: impl Iterator<Item = I>,
    value_of: impl Fn(&I) -> &V,
    mut each: impl FnMut(I) -> Result<(), E>,
) -> Result<(), E>
where
    V: Serialize + ?Sized,
{
    const RING: usize = STAGES * AHEAD;
    let mut ring: [Option<I>; RING] = std::array::from_fn(|_| None);
    let mut at = 0;
    for item in items {
        prefetch(value_of(&item), 0);
        // The item that came in `AHEAD * depth` items ago.
        for depth in 1..STAGES {
            if let Some(earlier) = &ring[(at + RING - AHEAD * depth) % RING] {
                prefetch(value_of(earlier), depth as u8);
            }
        }
        if let Some(due) = ring[at].replace(item) {
            each(due)?;
        }
        at = (at + 1) % RING;
    }
    for i in 0..RING {
        if let Some(due) = ring[(at + i) % RING].take() {
            each(due)?;
        }
    }
    Ok(())
}

/// The walk's error: only a value's own `Serialize` can raise it, and it ends the walk.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("prefetch walk stopped")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

/// Serializer methods for values that point to nothing: they do nothing.
macro_rules! nothing_behind {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(
            fn $method(self, _: $ty) -> Result<(), Stop> {
                Ok(())
            }
        )*
    };
}

/// The compound serializers of kinds whose fields sit inside the value (after an optional
/// field name): each field is walked by the same [`Prefetcher`]. A field's walk that stopped
/// (a sequence it ended early) does not stop its siblings'.
macro_rules! descend_fields {
    ($($kind:ident :: $method:ident ($($name:ty)?)),* $(,)?) => {
        $(
            impl ser::$kind for Prefetcher {
                type Ok = ();
                type Error = Stop;
                fn $method<T: ?Sized + Serialize>(
                    &mut self,
                    $(_: $name,)?
                    value: &T,
                ) -> Result<(), Stop> {
                    let _ = value.serialize(*self);
                    Ok(())
                }
                fn end(self) -> Result<(), Stop> {
                    Ok(())
                }
            }
        )*
    };
}

/// The serde serializer that prefetches instead of writing, at a depth (see the module doc).
#[derive(Clone, Copy)]
struct Prefetcher {
    depth: u8,
}

impl Prefetcher {
    /// The walk of what sits one level further down.
    fn deeper(&self) -> Prefetcher {
        Prefetcher {
            depth: self.depth.saturating_sub(1),
        }
    }
}

/// A sequence or map. At depth 0 the walk prefetches the first lines of its elements (from the
/// first element's address, as many as the length says they take) and reads none of them;
/// deeper, it reads its first [`MAX_ELEMENTS`] elements (fetched by a shallower walk earlier)
/// and walks each one depth shallower. Either way it then ends the iteration: the error it
/// returns ends the sequence's `Serialize` and nothing else.
struct Elements {
    walk: Prefetcher,
    len: Option<usize>,
    seen: usize,
}

impl Elements {
    #[inline(always)]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        self.seen += 1;
        if self.walk.depth == 0 {
            // Sequences and maps of serde's std impls that know their length keep their
            // elements side by side (a `Vec`, a slice, an array); for others this fetches a
            // little that is not needed.
            let bytes = std::mem::size_of_val(value) * self.len.unwrap_or(1);
            let first = value as *const T as *const u8;
            fetch_lines(first, bytes.div_ceil(LINE).min(ELEMENT_LINES));
            return Err(Stop);
        }
        self.walk_deeper(value)
    }

    /// Walks an element (or a map's value) one depth shallower; then ends the iteration if
    /// it has gone into [`MAX_ELEMENTS`] elements.
    fn walk_deeper<T: ?Sized + Serialize>(&self, value: &T) -> Result<(), Stop> {
        let _ = value.serialize(self.walk.deeper());
        if self.seen < MAX_ELEMENTS {
            Ok(())
        } else {
            Err(Stop)
        }
    }
}

impl Serializer for Prefetcher {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Elements;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Elements;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    nothing_behind!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
    );
    #[inline(always)]
    fn serialize_str(self, v: &str) -> Result<(), Stop> {
        self.serialize_bytes(v.as_bytes())
    }
    #[inline(always)]
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Stop> {
        fetch_lines(v.as_ptr(), v.len().div_ceil(LINE).min(LINES));
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Elements, Stop> {
        Ok(Elements {
            walk: self,
            len,
            seen: 0,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Elements, Stop> {
        self.serialize_seq(len)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Stop> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Stop> {
        Ok(self)
    }
    fn collect_str<T: ?Sized + fmt::Display>(self, _: &T) -> Result<(), Stop> {
        // Displaying it would read it.
        Ok(())
    }
}

impl ser::SerializeSeq for Elements {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

/// A map's keys count as its elements; a value is walked (deeper than depth 0) beside its key.
impl ser::SerializeMap for Elements {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Stop> {
        if self.walk.depth == 0 {
            return self.element(key);
        }
        // The key's walk; the stop after the last element comes with its value.
        self.seen += 1;
        let _ = key.serialize(self.walk.deeper());
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        if self.walk.depth == 0 {
            return Err(Stop);
        }
        self.walk_deeper(value)
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

// Tuples, structs and their variants sit inside the value: their fields are walked with the
// same depth.
descend_fields!(
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeTupleVariant::serialize_field(),
    SerializeStruct::serialize_field(&'static str),
    SerializeStructVariant::serialize_field(&'static str),
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every item is handed on exactly once, in order, whatever the count around the
        /// ring's size, and the first error stops it there.
        #[test]
        fn items_are_handed_on_in_order_once_each(
            items in proptest::collection::vec(any::<(u32, String)>(), 0..40),
            fail_at in proptest::option::of(0usize..40),
        ) {
            let mut seen = Vec::new();
            let result = in_order_with_prefetch(items.iter().enumerate(), |(_, v)| *v, |(i, v)| {
                if Some(i) == fail_at {
                    return Err(i);
                }
                seen.push(v.clone());
                Ok(())
            });
            match fail_at.filter(|f| *f < items.len()) {
                Some(f) => {
                    prop_assert_eq!(result, Err(f));
                    prop_assert_eq!(&seen[..], &items[..f]);
                }
                None => {
                    prop_assert_eq!(result, Ok(()));
                    prop_assert_eq!(seen, items);
                }
            }
        }
    }

    /// The walk goes through every shape serde has, at every depth, without failing.
    #[test]
    fn the_walk_takes_any_shape() {
        #[derive(Serialize)]
        enum Shape {
            Unit,
            Tuple(u8, String),
            Struct { a: Vec<String>, b: Option<Box<str>> },
        }
        let values = vec![
            Shape::Unit,
            Shape::Tuple(1, "x".repeat(1000)),
            Shape::Struct {
                a: vec!["y".into(); 3],
                b: Some("z".into()),
            },
        ];
        let map = std::collections::BTreeMap::from([(1, vec!["a"]), (2, vec!["b"])]);
        let scalars = (1u64, 2.5f64, 'c', (), [7u8; 3], b"bytes".as_slice());
        for depth in 0..=STAGES as u8 {
            prefetch(&values, depth);
            prefetch(&map, depth);
            prefetch(&scalars, depth);
            prefetch("", depth);
        }
    }

    /// A sequence whose iteration counts the elements it hands out.
    struct Counted<'a> {
        items: Vec<u64>,
        iterated: &'a Cell<usize>,
    }

    impl Serialize for Counted<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let count = || self.iterated.set(self.iterated.get() + 1);
            s.collect_seq(self.items.iter().inspect(|_| count()))
        }
    }

    /// A field that notes that it was walked.
    struct Visited<'a>(&'a Cell<bool>);

    impl Serialize for Visited<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.set(true);
            s.serialize_unit()
        }
    }

    #[derive(Serialize)]
    struct Entry<'a> {
        big: Counted<'a>,
        after: Visited<'a>,
        nested: Vec<Counted<'a>>,
    }

    use std::cell::Cell;

    /// A walk iterates a sequence only as far as it goes into it (its first element at depth 0,
    /// at most `MAX_ELEMENTS` deeper), goes one level further into nested sequences per
    /// depth, and a sequence it cut short does not keep the fields after it from being walked.
    #[test]
    fn a_walk_iterates_only_the_elements_it_goes_into() {
        for depth in 0..STAGES as u8 {
            let big = Cell::new(0);
            let after = Cell::new(false);
            let inner: Vec<Cell<usize>> = (0..100).map(|_| Cell::new(0)).collect();
            let entry = Entry {
                big: Counted {
                    items: (0..10_000).collect(),
                    iterated: &big,
                },
                after: Visited(&after),
                nested: inner
                    .iter()
                    .map(|iterated| Counted {
                        items: (0..100).collect(),
                        iterated,
                    })
                    .collect(),
            };
            prefetch(&entry, depth);
            let walked = |cell: &Cell<usize>| cell.get();
            assert!(after.get(), "depth {depth}: a field after a cut sequence");
            match depth {
                0 => {
                    assert_eq!(big.get(), 1);
                    assert!(inner.iter().all(|c| walked(c) == 0));
                }
                1 => {
                    assert_eq!(big.get(), MAX_ELEMENTS);
                    let (into, past) = inner.split_at(MAX_ELEMENTS);
                    assert!(into.iter().all(|c| walked(c) == 1), "depth 1");
                    assert!(past.iter().all(|c| walked(c) == 0), "depth 1");
                }
                _ => {
                    assert_eq!(big.get(), MAX_ELEMENTS);
                    let (into, past) = inner.split_at(MAX_ELEMENTS);
                    assert!(into.iter().all(|c| walked(c) == MAX_ELEMENTS), "depth 2");
                    assert!(past.iter().all(|c| walked(c) == 0), "depth 2");
                }
            }
        }
    }
}

//! Prefetching the heap data of table entries a few entries ahead of their encoding.
//!
//! A snapshot encodes one entry of a table after the other. The entries sit side by side in the
//! table, so reading them in order is cheap, but each of their strings, byte strings and
//! vectors lives somewhere else on the heap, placed when the record arrived. Encoding such an
//! entry waits on one cache miss per string: a profile of q18 (latest bid per bidder and
//! auction, three strings per bid) spent four fifths of its snapshot time copying strings.
//!
//! [`prefetch`] walks a value as serde shows it and asks the CPU to fetch the first cache lines
//! of what its strings and byte strings point to, and of the elements of its sequences and
//! maps, without reading any of it, so that it costs no wait itself. [`in_order_with_prefetch`]
//! does that `2 * AHEAD` entries before it hands an entry on to be encoded, so that the misses
//! of several entries overlap instead of following one another.
//!
//! That walk descends into structs, tuples, enums and options (which sit inside the entry) but
//! not into the elements of sequences and maps: reading those would wait on the very misses the
//! prefetch is meant to hide. [`prefetch_deep`], run [`AHEAD`] entries before the encoding, when
//! the elements should have arrived, walks each element the same way, so that a window's list
//! of rows has the rows' strings fetched too. Neither changes anything that is written.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Serializer};

/// Entries between the one prefetched and the one encoded.
pub(crate) const AHEAD: usize = 8;

/// Cache lines prefetched of one string or byte string, at most.
const LINES: usize = 4;
/// Cache lines prefetched of a sequence's or map's elements, at most.
const ELEMENT_LINES: usize = 16;
/// Elements of one sequence or map the deep walk goes into, at most.
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

/// Prefetches the first lines of `bytes`.
#[inline(always)]
fn fetch(bytes: &[u8]) {
    let lines = bytes.len().div_ceil(LINE).min(LINES);
    for i in 0..lines {
        fetch_line(bytes.as_ptr().wrapping_add(i * LINE));
    }
}

/// Asks the CPU to fetch the heap data `value` points to (see the module doc).
#[inline]
pub(crate) fn prefetch<T: Serialize + ?Sized>(value: &T) {
    let _ = value.serialize(Prefetcher::<false>);
}

/// As [`prefetch`], and for the elements of its sequences and maps (which a [`prefetch`] of
/// it should have fetched a while before) what they point to.
#[inline]
pub(crate) fn prefetch_deep<T: Serialize + ?Sized>(value: &T) {
    let _ = value.serialize(Prefetcher::<true>);
}

/// Calls `each` on every item of `items`, in order: [`prefetch`] runs on the value
/// (`value_of`) of the item `2 * AHEAD` places further on, and [`prefetch_deep`] on that of
/// the item [`AHEAD`] places further on. The first error ends it.
pub(crate) fn in_order_with_prefetch<I, V, E>(
    items: impl Iterator<Item = I>,
    value_of: impl Fn(&I) -> &V,
    mut each: impl FnMut(I) -> Result<(), E>,
) -> Result<(), E>
where
    V: Serialize + ?Sized,
{
    const RING: usize = 2 * AHEAD;
    let mut ring: [Option<I>; RING] = std::array::from_fn(|_| None);
    let mut at = 0;
    for item in items {
        prefetch(value_of(&item));
        if let Some(halfway) = &ring[(at + AHEAD) % RING] {
            prefetch_deep(value_of(halfway));
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
/// field name): each field is walked by the same [`Prefetcher`].
macro_rules! descend_fields {
    ($($kind:ident :: $method:ident ($($name:ty)?)),* $(,)?) => {
        $(
            impl<const DEEP: bool> ser::$kind for Prefetcher<DEEP> {
                type Ok = ();
                type Error = Stop;
                fn $method<T: ?Sized + Serialize>(
                    &mut self,
                    $(_: $name,)?
                    value: &T,
                ) -> Result<(), Stop> {
                    value.serialize(*self)
                }
                fn end(self) -> Result<(), Stop> {
                    Ok(())
                }
            }
        )*
    };
}

/// The serde serializer that prefetches instead of writing.
#[derive(Clone, Copy)]
struct Prefetcher<const DEEP: bool>;

/// A sequence or map. The shallow walk prefetches the first lines of its elements (from the
/// first element's address, as many as the length says they take) and reads none of them; the
/// deep walk reads its elements (prefetched by a shallow walk earlier) and walks each
/// shallowly.
struct Elements<const DEEP: bool> {
    len: Option<usize>,
    seen: usize,
}

impl<const DEEP: bool> Elements<DEEP> {
    #[inline(always)]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) {
        self.seen += 1;
        if DEEP {
            if self.seen <= MAX_ELEMENTS {
                let _ = value.serialize(Prefetcher::<false>);
            }
        } else if self.seen == 1 {
            // Sequences and maps of serde's std impls that know their length keep their
            // elements side by side (a `Vec`, a slice, an array); for others this fetches a
            // little that is not needed.
            let bytes = std::mem::size_of_val(value) * self.len.unwrap_or(1);
            let first = value as *const T as *const u8;
            for i in 0..bytes.div_ceil(LINE).min(ELEMENT_LINES) {
                fetch_line(first.wrapping_add(i * LINE));
            }
        }
    }
}

impl<const DEEP: bool> Serializer for Prefetcher<DEEP> {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Elements<DEEP>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Elements<DEEP>;
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
        fetch(v.as_bytes());
        Ok(())
    }
    #[inline(always)]
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Stop> {
        fetch(v);
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
    fn serialize_seq(self, len: Option<usize>) -> Result<Elements<DEEP>, Stop> {
        Ok(Elements { len, seen: 0 })
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
    fn serialize_map(self, len: Option<usize>) -> Result<Elements<DEEP>, Stop> {
        Ok(Elements { len, seen: 0 })
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

impl<const DEEP: bool> ser::SerializeSeq for Elements<DEEP> {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value);
        Ok(())
    }
    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl<const DEEP: bool> ser::SerializeMap for Elements<DEEP> {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Stop> {
        self.element(key);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        if DEEP && self.seen <= MAX_ELEMENTS {
            let _ = value.serialize(Prefetcher::<false>);
        }
        Ok(())
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

    /// The walk goes through every shape serde has to its end, without reading elements.
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
        fn walks<T: Serialize + ?Sized>(value: &T) -> bool {
            value.serialize(Prefetcher::<false>).is_ok()
                && value.serialize(Prefetcher::<true>).is_ok()
        }
        assert!(walks(&values));
        assert!(walks(&std::collections::BTreeMap::from([
            (1, "a"),
            (2, "b")
        ])));
        assert!(walks(&(
            1u64,
            2.5f64,
            'c',
            (),
            [7u8; 3],
            b"bytes".as_slice()
        )));
        assert!(walks(""));
    }
}

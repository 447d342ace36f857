//! Words: the key type of WordCount and the tokenizer that produces it.
//!
//! Word definition (the same as `../shared/bench`): lowercase ASCII, split on every run of
//! characters outside `[a-z0-9]` (after lowercasing), drop empty tokens. Non-ASCII bytes are
//! separators.
//!
//! The tokenizer classifies a line 64 bytes at a time into a bitmask of word bytes (SWAR: eight
//! bytes per 64-bit operation, no `unsafe`), then walks the mask with `trailing_zeros`, so its
//! cost does not depend on branch prediction at every byte. A word of up to 16 bytes is packed
//! and lowercased in registers into a [`Word`] that lives inline: tokenizing allocates nothing
//! per word, and hashing or comparing a word is two 64-bit operations.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest word stored inline.
const INLINE: usize = 16;

/// A short string key: up to 16 bytes inline (zero-padded), longer ones on the heap.
///
/// Invariant: a string is stored inline if and only if it has at most 16 bytes and no NUL
/// byte, so equal strings always have equal representations and the derived equality is
/// string equality.
///
/// ```
/// use hummer::jobs::words::Word;
/// let short = Word::from("beginning");
/// let long = Word::from("honorificabilitudinitatibus");
/// assert_eq!(short.as_str(), "beginning");
/// assert_eq!(long.to_string(), "honorificabilitudinitatibus");
/// assert!(short < long);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Word(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Inline(Packed),
    Heap(Box<str>),
}

/// `KEEP[n]`: a mask of the low `n` bytes of a `u128`.
const KEEP: [u128; INLINE + 1] = {
    let mut masks = [0u128; INLINE + 1];
    let mut n = 1;
    while n <= INLINE {
        masks[n] = (masks[n - 1] << 8) | 0xff;
        n += 1;
    }
    masks
};

/// The inline bytes, 8-byte aligned so that they load and compare as two aligned words.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
struct Packed([u8; INLINE]);

impl Word {
    /// Packs a word whose bytes are known to be `[a-z0-9]` after lowercasing: `raw` holds the
    /// word in its low `len` bytes (little-endian); the other bytes are ignored.
    #[inline(always)]
    fn pack(raw: u128, len: usize) -> Word {
        debug_assert!((1..=INLINE).contains(&len));
        let keep = KEEP[len];
        // For ASCII letters and digits, setting bit 5 lowercases letters and keeps digits.
        let lower = (raw | 0x2020_2020_2020_2020_2020_2020_2020_2020) & keep;
        Word(Repr::Inline(Packed(lower.to_le_bytes())))
    }

    /// The word's text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline(Packed(bytes)) => {
                let len = INLINE - (u128::from_le_bytes(*bytes).leading_zeros() / 8) as usize;
                // Inline words come from `&str` or from the tokenizer (ASCII): valid UTF-8.
                std::str::from_utf8(&bytes[..len]).unwrap_or_default()
            }
            Repr::Heap(s) => s,
        }
    }
}

impl From<&str> for Word {
    fn from(s: &str) -> Self {
        if s.len() <= INLINE && !s.as_bytes().contains(&0) {
            let mut bytes = [0u8; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Word(Repr::Inline(Packed(bytes)))
        } else {
            Word(Repr::Heap(s.into()))
        }
    }
}

impl Hash for Word {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::Inline(Packed(bytes)) => state.write_u128(u128::from_le_bytes(*bytes)),
            Repr::Heap(s) => {
                state.write(s.as_bytes());
                state.write_u8(0xff);
            }
        }
    }
}

impl PartialOrd for Word {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Word {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for Word {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Word::from(s.as_ref()))
    }
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// High bit of each byte set where the byte (of an ASCII-cleared `x7`) is in `lo..=hi`.
#[inline(always)]
fn in_range(x7: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = x7.wrapping_add(ONES * (0x80 - lo as u64));
    let above_hi = x7.wrapping_add(ONES * (0x7f - hi as u64));
    at_least_lo & !above_hi & HIGH
}

/// Bit `i` set where byte `i` of `x` is an ASCII letter or digit.
#[inline(always)]
fn word_bits8(x: u64) -> u64 {
    let ascii = !x & HIGH;
    let x7 = x & LOW7;
    let digit = in_range(x7, b'0', b'9');
    let alpha = in_range(x7 | (ONES * 0x20), b'a', b'z');
    let flags = (digit | alpha) & ascii;
    // Gather the high bit of every byte into the low 8 bits.
    ((flags >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Bitmask of word bytes of `block` (at most 64 bytes; missing bytes count as separators).
#[inline]
fn classify(block: &[u8]) -> u64 {
    let mut mask = 0u64;
    let mut chunks = block.chunks_exact(8);
    let mut shift = 0;
    for chunk in &mut chunks {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        mask |= word_bits8(u64::from_le_bytes(eight)) << shift;
        shift += 8;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut eight = [0u8; 8];
        eight[..rest.len()].copy_from_slice(rest);
        mask |= word_bits8(u64::from_le_bytes(eight)) << shift;
    }
    mask
}

/// The 16 bytes of `window` (exactly 16 long) as a little-endian `u128`.
#[inline(always)]
fn load16(window: &[u8]) -> u128 {
    let mut b = [0u8; INLINE];
    b.copy_from_slice(window);
    u128::from_le_bytes(b)
}

/// The words of a line, as an owning iterator (usable directly as a `flat_map` function:
/// `.flat_map(Words::new)`).
///
/// ```
/// use hummer::jobs::words::Words;
/// let words: Vec<String> = Words::new("Ge1:1 In the BEGINNING, God's".to_string())
///     .map(|w| w.to_string())
///     .collect();
/// assert_eq!(words, ["ge1", "1", "in", "the", "beginning", "god", "s"]);
/// ```
pub struct Words {
    line: String,
    /// Start of the current 64-byte block.
    block: usize,
    /// Word bytes of the current block not yet returned.
    mask: u64,
}

impl Words {
    /// The words of `line`.
    pub fn new(line: String) -> Self {
        let mask = classify(&line.as_bytes()[..line.len().min(64)]);
        Words {
            line,
            block: 0,
            mask,
        }
    }
}

/// Word bytes of the 64-byte block at `start` (0 past the end).
#[inline]
fn block_mask(bytes: &[u8], start: usize) -> u64 {
    if start < bytes.len() {
        classify(&bytes[start..bytes.len().min(start + 64)])
    } else {
        0
    }
}

/// Builds a word longer than 16 bytes (rare: kept out of the hot path).
#[cold]
#[inline(never)]
fn long_word(bytes: &[u8], start: usize, end: usize) -> Word {
    let text: String = bytes[start..end]
        .iter()
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect();
    Word(Repr::Heap(text.into()))
}

/// Builds the word at `start..end` of `bytes` (ASCII letters and digits only).
#[inline(always)]
fn word_at(bytes: &[u8], start: usize, end: usize) -> Word {
    let len = end - start;
    if len > INLINE {
        return long_word(bytes, start, end);
    }
    let raw = if let Some(window) = bytes.get(start..start + INLINE) {
        load16(window)
    } else if end >= INLINE {
        // Near the end of the line: load the 16 bytes that end with the word and shift the
        // word down to byte 0.
        load16(&bytes[end - INLINE..end]) >> (8 * (INLINE - len))
    } else {
        let mut b = [0u8; INLINE];
        b[..len].copy_from_slice(&bytes[start..end]);
        u128::from_le_bytes(b)
    };
    Word::pack(raw, len)
}

/// Finds the next word at or after the current position: advances `block` and `mask` past
/// it and returns its `start..end`.
#[inline(always)]
fn next_word(bytes: &[u8], block: &mut usize, mask: &mut u64) -> Option<(usize, usize)> {
    while *mask == 0 {
        if *block + 64 >= bytes.len() {
            return None;
        }
        *block += 64;
        *mask = block_mask(bytes, *block);
    }
    let offset = mask.trailing_zeros() as usize;
    let start = *block + offset;
    let stop = offset + (*mask >> offset).trailing_ones() as usize;
    if stop < 64 {
        *mask &= !0u64 << stop;
        return Some((start, *block + stop));
    }
    // The word runs to the end of the block: follow it into the next blocks.
    loop {
        if *block + 64 >= bytes.len() {
            *mask = 0;
            return Some((start, bytes.len()));
        }
        *block += 64;
        *mask = block_mask(bytes, *block);
        let ones = mask.trailing_ones() as usize;
        if ones < 64 {
            *mask &= !0u64 << ones;
            return Some((start, *block + ones));
        }
    }
}

impl Iterator for Words {
    type Item = Word;

    #[inline]
    fn next(&mut self) -> Option<Word> {
        let bytes = self.line.as_bytes();
        let (start, end) = next_word(bytes, &mut self.block, &mut self.mask)?;
        Some(word_at(bytes, start, end))
    }

    /// Internal iteration (used by `for_each`, and so by `flat_map`): the scan state stays in
    /// registers for the whole line.
    #[inline]
    fn fold<B, F: FnMut(B, Word) -> B>(self, init: B, mut f: F) -> B {
        let bytes = self.line.as_bytes();
        let (mut block, mut mask) = (self.block, self.mask);
        let mut acc = init;
        while let Some((start, end)) = next_word(bytes, &mut block, &mut mask) {
            acc = f(acc, word_at(bytes, start, end));
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference definition, written the plain way.
    fn reference(line: &str) -> Vec<String> {
        line.to_ascii_lowercase()
            .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    proptest! {
        #[test]
        fn tokenizer_matches_reference(line in "\\PC{0,200}") {
            let got: Vec<String> = Words::new(line.clone()).map(|w| w.to_string()).collect();
            prop_assert_eq!(got, reference(&line));
        }

        #[test]
        fn tokenizer_matches_reference_on_ascii_runs(line in "([a-zA-Z0-9]{0,70}[ ,.:;\\-]{0,3}){0,6}") {
            let got: Vec<String> = Words::new(line.clone()).map(|w| w.to_string()).collect();
            prop_assert_eq!(got, reference(&line));
        }

        #[test]
        fn word_equality_and_hash_follow_the_text(a in "[a-z0-9\\x00]{0,24}", b in "[a-z0-9\\x00]{0,24}") {
            use crate::state::key_groups::key_hash;
            let (wa, wb) = (Word::from(a.as_str()), Word::from(b.as_str()));
            prop_assert_eq!(wa == wb, a == b);
            prop_assert_eq!(wa.cmp(&wb), a.cmp(&b));
            prop_assert_eq!(wa.as_str(), a.as_str());
            if a == b {
                prop_assert_eq!(key_hash(&wa), key_hash(&wb));
            }
        }

        #[test]
        fn tokenized_words_equal_words_from_text(line in "[a-zA-Z ]{0,100}") {
            for w in Words::new(line.clone()) {
                let again = Word::from(w.as_str());
                prop_assert!(w == again);
            }
        }

        #[test]
        fn serde_round_trip(s in "\\PC{0,30}") {
            let w = Word::from(s.as_str());
            let json = serde_json::to_string(&w).unwrap();
            let back: Word = serde_json::from_str(&json).unwrap();
            prop_assert!(w == back);
        }
    }

    #[test]
    fn classify_marks_letters_and_digits_only() {
        let line = b"aZ09 -_`{@[/:\xc3\xa9z";
        let mask = classify(line);
        let expected: u64 = line
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_ascii_alphanumeric())
            .map(|(i, _)| 1u64 << i)
            .sum();
        assert_eq!(mask, expected);
    }
}

//! WordCount: the job of the Hummer paper's evaluation, and the tokenizer it uses.
//!
//! Word definition (the same as `../shared/bench`): lowercase ASCII, split on every run of
//! characters outside `[a-z0-9]` (after lowercasing), drop empty tokens. Non-ASCII bytes are
//! separators.
//!
//! A [`Word`] is a [`compact_str::CompactString`]: words of up to 24 bytes live inline, so
//! tokenizing allocates nothing per word.

use std::fmt;

use crate::api::DataStream;

/// A word: a small string stored inline up to 24 bytes.
pub type Word = compact_str::CompactString;

/// Byte -> lowercase word byte, or 0 for a separator.
const WORD_BYTE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = match c {
            b'a'..=b'z' | b'0'..=b'9' => c,
            b'A'..=b'Z' => c + 32,
            _ => 0,
        };
        b += 1;
    }
    table
};

/// The words of a line, as an owning iterator (usable directly as a `flat_map` function:
/// `.flat_map(Words::new)`).
///
/// ```
/// use hummer::jobs::wordcount::Words;
/// let words: Vec<String> = Words::new("Ge1:1 In the BEGINNING, God's".to_string())
///     .map(|w| w.to_string())
///     .collect();
/// assert_eq!(words, ["ge1", "1", "in", "the", "beginning", "god", "s"]);
/// ```
pub struct Words {
    line: String,
    pos: usize,
}

impl Words {
    /// The words of `line`.
    pub fn new(line: String) -> Self {
        Words { line, pos: 0 }
    }
}

impl Iterator for Words {
    type Item = Word;

    #[inline]
    fn next(&mut self) -> Option<Word> {
        let bytes = self.line.as_bytes();
        let mut i = self.pos;
        while i < bytes.len() && WORD_BYTE[bytes[i] as usize] == 0 {
            i += 1;
        }
        if i == bytes.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        let mut buf = [0u8; 64];
        let mut n = 0;
        while i < bytes.len() {
            let c = WORD_BYTE[bytes[i] as usize];
            if c == 0 {
                break;
            }
            if n < buf.len() {
                buf[n] = c;
            }
            n += 1;
            i += 1;
        }
        self.pos = i;
        if n <= buf.len() {
            // Only [a-z0-9] bytes were stored: always valid UTF-8.
            let text = std::str::from_utf8(&buf[..n]).unwrap_or_default();
            Some(Word::new(text))
        } else {
            Some(Word::new(self.line[start..i].to_ascii_lowercase()))
        }
    }
}

/// The WordCount pipeline: lines -> words -> `(word, count)`.
///
/// In batch mode the count is pre-aggregated inside the tokenizer's chain (a combiner) and
/// each word's final count is emitted once; in streaming mode every word emits its updated
/// count.
pub fn word_counts(lines: &DataStream<String>) -> DataStream<(Word, u64)> {
    lines
        .flat_map(Words::new)
        .name("Tokenize")
        .key_by(|w: &Word| w.clone())
        .count()
        .name("Count")
}

/// A `word<TAB>count` line of WordCount's output.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CountLine(pub Word, pub u64);

impl fmt::Display for CountLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\t{}", self.0, self.1)
    }
}

/// The `k` most frequent words seen, most frequent first (ties by word).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TopWords {
    k: usize,
    words: Vec<(Word, u64)>,
}

impl TopWords {
    /// A ranking of capacity `k` holding one word.
    pub fn single(k: usize, word: Word, count: u64) -> Self {
        TopWords {
            k,
            words: vec![(word, count)],
        }
    }

    /// Merges two rankings. A word present in both keeps its larger count (streaming counts
    /// only grow), so the merge is associative and commutative.
    pub fn merge(mut self, other: TopWords) -> TopWords {
        for (word, count) in other.words {
            match self.words.iter_mut().find(|(w, _)| *w == word) {
                Some(entry) => entry.1 = entry.1.max(count),
                None => self.words.push((word, count)),
            }
        }
        self.words
            .sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        self.k = self.k.max(other.k);
        self.words.truncate(self.k);
        self
    }

    /// The ranking, most frequent first.
    pub fn words(&self) -> &[(Word, u64)] {
        &self.words
    }
}

/// The `k` most frequent words of a count stream, computed by the engine (a keyed reduce on
/// one key, pre-aggregated per subtask in batch mode).
pub fn top_words(counts: &DataStream<(Word, u64)>, k: usize) -> DataStream<TopWords> {
    counts
        .map(move |(w, c): (Word, u64)| TopWords::single(k, w, c))
        .name("Rank")
        .key_by(|_: &TopWords| ())
        .reduce(TopWords::merge)
        .name("TopK")
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
        fn tokenizer_matches_reference(line in "\\PC{0,80}") {
            let got: Vec<String> = Words::new(line.clone()).map(|w| w.to_string()).collect();
            prop_assert_eq!(got, reference(&line));
        }

        #[test]
        fn long_words_are_kept_whole(word in "[a-zA-Z0-9]{60,200}") {
            let got: Vec<String> = Words::new(format!(" {word}.")).map(|w| w.to_string()).collect();
            prop_assert_eq!(got, vec![word.to_ascii_lowercase()]);
        }
    }

    #[test]
    fn top_words_merge_keeps_largest_counts() {
        let a = TopWords::single(2, "a".into(), 5).merge(TopWords::single(2, "b".into(), 7));
        let b = TopWords::single(2, "a".into(), 9).merge(TopWords::single(2, "c".into(), 1));
        let top = a.merge(b);
        assert_eq!(top.words(), &[(Word::from("a"), 9), (Word::from("b"), 7)]);
    }
}

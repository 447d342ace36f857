//! WordCount: the job of the Hummer paper's evaluation.
//!
//! Lines are split into [`Word`]s by [`Words`] (see [`crate::jobs::words`] for the word
//! definition), keyed by word and counted.

use std::fmt;

use crate::api::DataStream;
pub use crate::jobs::words::{Word, Words};

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
    #[test]
    fn top_words_merge_keeps_largest_counts() {
        let a = TopWords::single(2, "a".into(), 5).merge(TopWords::single(2, "b".into(), 7));
        let b = TopWords::single(2, "a".into(), 9).merge(TopWords::single(2, "c".into(), 1));
        let top = a.merge(b);
        assert_eq!(top.words(), &[(Word::from("a"), 9), (Word::from("b"), 7)]);
    }
}

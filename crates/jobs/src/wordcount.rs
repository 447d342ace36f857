//! WordCount: the job of the Hummer paper's evaluation.
//!
//! Lines are split into [`Word`]s by [`Words`] (see [`crate::words`] for the word
//! definition), keyed by word and counted.

use std::fmt;

use crate::api::DataStream;
use crate::error::Result;
use crate::operators::{Batch, Collector, Operator};
pub use crate::words::{Word, Words};

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
        // Three plain writes: no format-string interpretation or padding per line (streaming
        // WordCount writes a line per word occurrence).
        f.write_str(self.0.as_str())?;
        f.write_str("\t")?;
        f.write_str(itoa::Buffer::new().format(self.1))
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

    /// Whether `(word, count)` would enter a full ranking (it ranks before the last word).
    fn would_enter(&self, word: &Word, count: u64) -> bool {
        match self.words.last() {
            Some((last_word, last)) if self.words.len() >= self.k => {
                count > *last || (count == *last && word < last_word)
            }
            _ => true,
        }
    }

    /// Takes `word`'s (grown) count into the ranking; true if the ranking changed.
    fn offer(&mut self, word: Word, count: u64) -> bool {
        if !self.would_enter(&word, count) {
            return false;
        }
        let mut at = match self.words.iter().position(|(w, _)| *w == word) {
            Some(i) if self.words[i].1 >= count => return false,
            Some(i) => {
                self.words[i].1 = count;
                i
            }
            None => {
                self.words.push((word, count));
                self.words.len() - 1
            }
        };
        // The entry only moved up (its count grew): bubble it to its place.
        let before = |a: &(Word, u64), b: &(Word, u64)| a.1 > b.1 || (a.1 == b.1 && a.0 < b.0);
        while at > 0 && before(&self.words[at], &self.words[at - 1]) {
            self.words.swap(at, at - 1);
            at -= 1;
        }
        self.words.truncate(self.k);
        true
    }
}

/// Ranks the counts of one subtask: keeps its `k` most frequent words and emits the ranking
/// after a batch that changed it. A count that cannot enter the ranking costs one comparison,
/// so the ranking of a streaming job (a count per word occurrence) is cheap; since a word's
/// counts all reach the same subtask and only grow, merging the subtasks' rankings gives the
/// job's. The ranking is not checkpointed: the merged ranking downstream is, and a restored
/// subtask's rankings merge into it.
struct RankCounts {
    top: TopWords,
}

impl Operator for RankCounts {
    type In = ((Word, u64),);
    type Out = TopWords;

    fn process(
        &mut self,
        batch: Batch<'_, (Word, u64)>,
        out: &mut Collector<'_, TopWords>,
    ) -> Result<()> {
        let mut changed = false;
        for (word, count) in batch.into_records().drain(..) {
            changed |= self.top.offer(word, count);
        }
        if changed {
            out.collect(self.top.clone());
        }
        Ok(())
    }
}

/// The `k` most frequent words of a count stream, computed by the engine: each subtask ranks
/// its counts, and a keyed reduce on one key merges the rankings.
pub fn top_words(counts: &DataStream<(Word, u64)>, k: usize) -> DataStream<TopWords> {
    counts
        .transform("Rank", move |_| {
            Ok(RankCounts {
                top: TopWords {
                    k,
                    words: Vec::with_capacity(k + 1),
                },
            })
        })
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

    proptest::proptest! {
        /// Offering a stream of growing counts keeps exactly the ranking that merging every
        /// count one by one gives.
        #[test]
        fn offered_counts_rank_as_merged_ones(words in proptest::collection::vec(0u8..12, 0..300), k in 1usize..5) {
            let mut counts = std::collections::HashMap::new();
            let mut offered = TopWords { k, words: Vec::new() };
            let mut merged = TopWords { k, words: Vec::new() };
            for w in words {
                let word = Word::from(format!("w{w}").as_str());
                let c = counts.entry(w).or_insert(0u64);
                *c += 1;
                offered.offer(word.clone(), *c);
                merged = merged.merge(TopWords::single(k, word, *c));
            }
            proptest::prop_assert_eq!(offered.words(), merged.words());
        }
    }
}

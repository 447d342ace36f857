//! One immutable file of entries sorted by key (a *run*), as a spill or a merge writes it,
//! with what stays in memory to read it: the first key of every block (the index), a bloom
//! filter of its keys, and one bit per entry saying it was taken out since.
//!
//! A block is a sequence of entries `[key length u32][value length u32][key][value]`, about
//! [`BLOCK_BYTES`] long. A look-up of a key that is not in the file costs a filter probe
//! (about one false positive in a hundred); one that is costs one block read.

use std::fs::File;
use std::hash::BuildHasher;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The size a block is cut at.
pub const BLOCK_BYTES: usize = 16 << 10;

/// Filter bits per key: about 1.5 % false positives with [`HASHES`] probes in one block.
const BITS_PER_KEY: usize = 10;
const HASHES: u32 = 7;

/// The hash of a key as the filter uses it (fixed, so that it stays the same for a file).
/// A look-up computes it once for all the runs it probes ([`RunFile::get_hashed`]).
pub fn key_hash(key: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed_d15c).hash_one(key)
}

/// A blocked bloom filter over the keys of one file: a key's bits all lie in one 512-bit
/// block (a cache line), chosen by the hash's high half; so a probe costs one cache miss
/// and no division, where bits spread over the whole filter cost up to seven misses and a
/// 64-bit modulo each. A table probes every run's filter for every key that is not in
/// memory (q18 at 100 M events: 22 M new keys, up to 32 runs each).
#[derive(Clone)]
struct Filter {
    blocks: Vec<[u64; 8]>,
}

impl Filter {
    fn new(keys: usize) -> Filter {
        Filter {
            blocks: vec![[0; 8]; (keys * BITS_PER_KEY).div_ceil(512).max(1)],
        }
    }

    /// The block of a hash, and its bit positions within it (double hashing).
    #[inline]
    fn place(&self, hash: u64) -> (usize, impl Iterator<Item = usize> + use<>) {
        let block = (((hash >> 32) * self.blocks.len() as u64) >> 32) as usize;
        let mixed = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let (a, b) = (mixed as u32, ((mixed >> 32) as u32) | 1);
        let bits = (0..HASHES).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) & 511) as usize);
        (block, bits)
    }

    fn insert(&mut self, hash: u64) {
        let (block, bits) = self.place(hash);
        let block = &mut self.blocks[block];
        for p in bits {
            block[p / 64] |= 1 << (p % 64);
        }
    }

    #[inline]
    fn may_contain(&self, hash: u64) -> bool {
        let (block, mut bits) = self.place(hash);
        let block = &self.blocks[block];
        bits.all(|p| block[p / 64] & (1 << (p % 64)) != 0)
    }
}

/// A block's place: its first key, where it starts and ends in the file, and the ordinal of
/// its first entry in the file.
#[derive(Clone)]
struct Block {
    first_key: Box<[u8]>,
    offset: u64,
    len: u32,
    first_entry: u64,
}

/// An open run.
pub struct RunFile {
    file: File,
    path: PathBuf,
    blocks: Vec<Block>,
    filter: Filter,
    /// One bit per entry: taken out of the file since it was written.
    removed: Vec<u64>,
    /// The greatest stamp of its entries (see [`RunFile::newest`]).
    newest: u32,
    entries: u64,
    live: u64,
    bytes: u64,
}

/// An entry of a run: its ordinal in the file, key and value.
pub struct Entry {
    /// Its place in the file (what [`RunFile::remove`] takes).
    pub ordinal: u64,
    /// The encoded key.
    pub key: Vec<u8>,
    /// The encoded value.
    pub value: Vec<u8>,
}

impl RunFile {
    /// Writes `count` entries (sorted by key, each key once) to a new file at `path`.
    pub fn write(
        path: &Path,
        count: usize,
        entries: impl Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>>,
    ) -> std::io::Result<RunFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut filter = Filter::new(count);
        let mut blocks: Vec<Block> = Vec::new();
        let (mut offset, mut block_start, mut ordinal) = (0u64, 0u64, 0u64);
        let mut newest = 0;
        for entry in entries {
            let (key, value) = entry?;
            newest = newest.max(stamp(&value));
            if blocks.is_empty() || offset - block_start >= BLOCK_BYTES as u64 {
                if let Some(last) = blocks.last_mut() {
                    last.len = (offset - block_start) as u32;
                }
                block_start = offset;
                blocks.push(Block {
                    first_key: key.clone().into_boxed_slice(),
                    offset,
                    len: 0,
                    first_entry: ordinal,
                });
            }
            filter.insert(key_hash(&key));
            out.write_all(&entry_header(&key, &value))?;
            out.write_all(&key)?;
            out.write_all(&value)?;
            offset += (ENTRY_HEADER + key.len() + value.len()) as u64;
            ordinal += 1;
        }
        if let Some(last) = blocks.last_mut() {
            last.len = (offset - block_start) as u32;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        Ok(RunFile {
            file,
            path: path.to_path_buf(),
            blocks,
            filter,
            removed: vec![0; (ordinal as usize).div_ceil(64)],
            newest,
            entries: ordinal,
            live: ordinal,
            bytes: offset,
        })
    }

    /// The greatest stamp of the file's entries: a value starts with a little-endian `u32`
    /// stamp (the disk tier's epoch of the entry's last change), so that a reader looking for
    /// entries stamped after some point may pass over a file with none.
    pub fn newest(&self) -> u32 {
        self.newest
    }

    /// Entries not taken out.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A copy to read the file from another thread, as it is now (what is taken out of this
    /// one later is not taken out of the copy).
    pub fn reader(&self) -> std::io::Result<RunFile> {
        Ok(RunFile {
            file: self.file.try_clone()?,
            path: self.path.clone(),
            blocks: self.blocks.clone(),
            filter: self.filter.clone(),
            removed: self.removed.clone(),
            newest: self.newest,
            entries: self.entries,
            live: self.live,
            bytes: self.bytes,
        })
    }

    /// Bytes of the file.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of what is not taken out, about.
    pub fn live_bytes(&self) -> u64 {
        self.bytes * self.live / self.entries.max(1)
    }

    fn is_removed(&self, ordinal: u64) -> bool {
        self.removed[(ordinal / 64) as usize] & (1 << (ordinal % 64)) != 0
    }

    /// Marks an entry taken out.
    pub fn remove(&mut self, ordinal: u64) {
        if !self.is_removed(ordinal) {
            self.removed[(ordinal / 64) as usize] |= 1 << (ordinal % 64);
            self.live -= 1;
        }
    }

    /// The live entry of `key`, if the file holds one.
    pub fn get(&self, key: &[u8]) -> std::io::Result<Option<Entry>> {
        self.get_hashed(key, key_hash(key))
    }

    /// [`RunFile::get`] of a key whose [`key_hash`] is `hash`.
    pub fn get_hashed(&self, key: &[u8], hash: u64) -> std::io::Result<Option<Entry>> {
        if self.live == 0 || !self.filter.may_contain(hash) {
            return Ok(None);
        }
        let i = self.blocks.partition_point(|b| &*b.first_key <= key);
        let Some(block) = i.checked_sub(1).map(|i| &self.blocks[i]) else {
            return Ok(None);
        };
        let bytes = self.read_block(block)?;
        let found = Entries::new(&bytes, block.first_entry).find(|e| e.key == key);
        Ok(found
            .filter(|e| !self.is_removed(e.ordinal))
            .map(|e| Entry {
                ordinal: e.ordinal,
                key: e.key.to_vec(),
                value: e.value.to_vec(),
            }))
    }

    fn read_block(&self, block: &Block) -> std::io::Result<Vec<u8>> {
        let mut bytes = vec![0; block.len as usize];
        self.file.read_exact_at(&mut bytes, block.offset)?;
        Ok(bytes)
    }

    /// Every live entry, in key order, read a block at a time.
    pub fn entries(&self) -> impl Iterator<Item = std::io::Result<Entry>> + '_ {
        self.blocks
            .iter()
            .flat_map(|block| self.block_entries(block))
    }

    /// Shows every live entry's key and value to `f`, in key order, a block at a time and
    /// without a copy of each; the first error (of a read or of `f`) ends it.
    pub fn for_each_live(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for block in &self.blocks {
            let bytes = self.read_block(block)?;
            for e in Entries::new(&bytes, block.first_entry) {
                if !self.is_removed(e.ordinal) {
                    f(e.key, e.value)?;
                }
            }
        }
        Ok(())
    }

    /// [`RunFile::entries`] of a run given up: its file may be deleted already (an open file
    /// stays readable), and no more than a block of it is in memory at a time.
    pub fn into_entries(self) -> impl Iterator<Item = std::io::Result<Entry>> {
        (0..self.blocks.len()).flat_map(move |i| self.block_entries(&self.blocks[i]))
    }

    /// The live entries of one block.
    fn block_entries(&self, block: &Block) -> Vec<std::io::Result<Entry>> {
        match self.read_block(block) {
            Ok(bytes) => Entries::new(&bytes, block.first_entry)
                .filter(|e| !self.is_removed(e.ordinal))
                .map(|e| {
                    Ok(Entry {
                        ordinal: e.ordinal,
                        key: e.key.to_vec(),
                        value: e.value.to_vec(),
                    })
                })
                .collect(),
            Err(e) => vec![Err(e)],
        }
    }

    /// Deletes the file; the run stays readable.
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The bytes before an entry's key and value: their lengths.
const ENTRY_HEADER: usize = 8;

/// An entry's header: the lengths of its key and value, little-endian `u32`s.
fn entry_header(key: &[u8], value: &[u8]) -> [u8; ENTRY_HEADER] {
    let mut header = [0; ENTRY_HEADER];
    header[..4].copy_from_slice(&(key.len() as u32).to_le_bytes());
    header[4..].copy_from_slice(&(value.len() as u32).to_le_bytes());
    header
}

/// Appends an entry as a block of a run holds it.
pub fn append_entry(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(&entry_header(key, value));
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// The entry at the head of `bytes`, laid out as [`append_entry`] writes it: its key, its
/// value and the bytes after it (`None`: the bytes end inside it).
pub fn split_entry(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (k, rest) = bytes.split_first_chunk::<4>()?;
    let (v, rest) = rest.split_first_chunk::<4>()?;
    let (k, v) = (
        u32::from_le_bytes(*k) as usize,
        u32::from_le_bytes(*v) as usize,
    );
    let key = rest.get(..k)?;
    let value = rest.get(k..k.checked_add(v)?)?;
    Some((key, value, rest.get(k + v..)?))
}

/// The stamp a value starts with (see [`RunFile::newest`]); 0 for a value too short to have
/// one.
pub fn stamp(value: &[u8]) -> u32 {
    value
        .first_chunk::<4>()
        .map_or(0, |s| u32::from_le_bytes(*s))
}

/// Writes the live entries of `runs` (each sorted, no key live in two) as one run at
/// `path`, in key order.
pub fn merge(path: &Path, runs: &[RunFile]) -> std::io::Result<RunFile> {
    let count = runs.iter().map(|r| r.live() as usize).sum();
    let mut heads: Vec<_> = runs.iter().map(|r| r.entries().peekable()).collect();
    let merged = std::iter::from_fn(|| {
        // The least key of the heads; an error first.
        let peeked: Vec<_> = heads.iter_mut().map(|h| h.peek()).collect();
        let mut least: Option<usize> = None;
        for (i, p) in peeked.iter().enumerate() {
            match p {
                None => {}
                Some(Err(_)) => {
                    least = Some(i);
                    break;
                }
                Some(Ok(e)) => {
                    if let Some(Some(Ok(best))) = least.map(|l| peeked[l])
                        && e.key >= best.key
                    {
                        continue;
                    }
                    least = Some(i);
                }
            }
        }
        drop(peeked);
        heads[least?].next().map(|e| e.map(|e| (e.key, e.value)))
    });
    RunFile::write(path, count, merged)
}

/// The entries of one block, borrowed.
struct Entries<'a> {
    bytes: &'a [u8],
    ordinal: u64,
}

struct Borrowed<'a> {
    ordinal: u64,
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Entries<'a> {
    fn new(bytes: &'a [u8], first: u64) -> Self {
        Entries {
            bytes,
            ordinal: first,
        }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Borrowed<'a>;

    fn next(&mut self) -> Option<Borrowed<'a>> {
        let (key, value, rest) = split_entry(self.bytes)?;
        self.bytes = rest;
        let ordinal = self.ordinal;
        self.ordinal += 1;
        Some(Borrowed {
            ordinal,
            key,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The filter holds every key it was given, and lets through about 1.5 % of the others
    /// (each key's bits in one block).
    #[test]
    fn the_filter_has_no_false_negatives_and_few_false_positives() {
        for keys in [1usize, 100, 10_000, 200_000] {
            let mut filter = Filter::new(keys);
            for k in 0..keys as u64 {
                filter.insert(key_hash(&k.to_le_bytes()));
            }
            for k in 0..keys as u64 {
                assert!(
                    filter.may_contain(key_hash(&k.to_le_bytes())),
                    "key {k} of {keys}"
                );
            }
            let others = 100_000u64;
            let passed = (0..others)
                .filter(|k| filter.may_contain(key_hash(&(k + (1 << 40)).to_le_bytes())))
                .count();
            let rate = passed as f64 / others as f64;
            assert!(
                rate < 0.03,
                "{keys} keys: {:.2} % false positives",
                rate * 100.0
            );
        }
    }

    proptest! {
        /// A run finds every key it was written with and no other, skips what was taken
        /// out, and lists its live entries in key order.
        #[test]
        fn a_run_is_a_sorted_map(
            entries in proptest::collection::btree_map(
                proptest::collection::vec(any::<u8>(), 0..12),
                proptest::collection::vec(any::<u8>(), 0..3000),
                0..80,
            ),
            probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..20),
            removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
        ) {
            let dir = tempfile::tempdir().expect("a directory");
            let path = dir.path().join("run");
            let iter = entries.iter().map(|(k, v)| Ok((k.clone(), v.clone())));
            let mut run = RunFile::write(&path, entries.len(), iter).expect("written");
            let mut live: BTreeMap<Vec<u8>, Vec<u8>> = entries.clone();
            if !entries.is_empty() {
                for i in removed {
                    let key = entries.keys().nth(i.index(entries.len())).expect("a key");
                    if let Some(e) = run.get(key).expect("read") {
                        run.remove(e.ordinal);
                        live.remove(key);
                    }
                }
            }
            for key in entries.keys().chain(&probes) {
                let got = run.get(key).expect("read").map(|e| e.value);
                prop_assert_eq!(got.as_ref(), live.get(key));
            }
            let listed: Vec<(Vec<u8>, Vec<u8>)> = run
                .entries()
                .map(|e| e.map(|e| (e.key, e.value)))
                .collect::<std::io::Result<_>>()
                .expect("read");
            prop_assert_eq!(listed, live.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(run.live() as usize, run.entries().count());
        }
    }
}

//! Where checkpoint files live: a directory of the local filesystem, or a prefix in an object
//! store (S3 and S3-compatible stores such as MinIO, Google Cloud Storage, Azure, or
//! `memory://` for tests) through the `object_store` crate.
//!
//! A location is written like a path: `/var/lib/hummer/checkpoints` or
//! `s3://bucket/checkpoints`. Object store credentials and endpoints come from the usual
//! environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT` for an S3-compatible server, `AWS_ALLOW_HTTP=true` for one without TLS).
//!
//! Object stores have no directories and no rename, so a "directory" is a key prefix and the
//! store completes a checkpoint by writing its metadata object last (see `store`). The calls
//! are blocking: each runs the object store's future on a runtime of its own, from a helper
//! thread, so that they work from plain threads and from inside the JobManager's async tasks
//! alike.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object_store::path::Path as ObjectPath;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, PutPayloadMut, UpdateVersion,
};

use crate::error::{HummerError, Result, internal};

/// A directory-like location for checkpoint files.
#[derive(Clone)]
pub enum Storage {
    /// A local directory.
    Local(PathBuf),
    /// A prefix in an object store.
    Object {
        /// The store.
        store: Arc<dyn ObjectStore>,
        /// The prefix within it.
        prefix: ObjectPath,
        /// The location as the user wrote it (`s3://bucket/prefix`).
        url: String,
    },
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.location().display().to_string())
    }
}

/// Whether `location` names an object store (`scheme://...`) rather than a local path.
pub fn is_url(location: &Path) -> bool {
    location
        .to_str()
        .and_then(|s| s.split_once("://"))
        .is_some_and(|(scheme, _)| {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("object-store")
                .enable_all()
                .build()
        })
        .as_ref()
        .map_err(|e| internal!("cannot start the object store runtime: {e}"))
}

/// Runs an object store future to completion from any thread.
fn block_on<T: Send>(fut: impl std::future::Future<Output = T> + Send) -> Result<T> {
    let rt = runtime()?;
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(fut))
            .join()
            .map_err(|_| internal!("an object store call panicked"))
    })
}

/// Files from this size on go to an object store in parts (S3 takes at most 5 GB in one put).
const MULTIPART_MIN: usize = 64 << 20;
/// The size of one part of a multipart upload.
const PART: usize = 16 << 20;
/// Parts of one upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// Uploads `parts`, one after the other, as object `path` in parts of [`PART`] bytes; an
/// upload that fails is aborted, so no part is left behind.
async fn put_multipart(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    parts: &[&[u8]],
) -> std::result::Result<(), object_store::Error> {
    let upload = store.put_multipart(path).await?;
    let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, PART);
    for part in parts {
        for chunk in part.chunks(PART) {
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                let _ = writer.abort().await;
                return Err(e);
            }
            writer.write(chunk);
        }
    }
    writer.finish().await.map(|_| ())
}

/// What [`Storage::list`] lists: the sub-locations of a location, or its files.
#[derive(Clone, Copy)]
enum Listing {
    Dirs,
    Files,
}

impl Storage {
    /// The storage at `location` (a path, or an object store URL).
    pub fn open(location: &Path) -> Result<Storage> {
        if !is_url(location) {
            return Ok(Storage::Local(location.to_path_buf()));
        }
        let text = location.to_string_lossy().trim_end_matches('/').to_string();
        let bad = |reason: String| HummerError::BadInput {
            input: text.clone(),
            reason,
        };
        let url = url::Url::parse(&text).map_err(|e| bad(format!("not a URL: {e}")))?;
        let options: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| {
                k.starts_with("AWS_") || k.starts_with("GOOGLE_") || k.starts_with("AZURE_")
            })
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        crate::types::crypto::install_process_default();
        let (store, prefix) = object_store::parse_url_opts(&url, options)
            .map_err(|e| bad(format!("cannot open the object store: {e}")))?;
        Ok(Storage::Object {
            store: Arc::from(store),
            prefix,
            url: text,
        })
    }

    /// The location as a path-like value (for messages and to hand to another process).
    pub fn location(&self) -> PathBuf {
        match self {
            Storage::Local(dir) => dir.clone(),
            Storage::Object { url, .. } => PathBuf::from(url),
        }
    }

    /// The sub-location `name`.
    pub fn child(&self, name: &str) -> Storage {
        match self {
            Storage::Local(dir) => Storage::Local(dir.join(name)),
            Storage::Object { store, prefix, url } => Storage::Object {
                store: store.clone(),
                prefix: prefix.clone().join(name),
                url: format!("{url}/{name}"),
            },
        }
    }

    fn io_error(&self, action: &'static str, name: &str, e: impl std::fmt::Display) -> HummerError {
        HummerError::Io {
            action,
            path: self.location().join(name),
            source: std::io::Error::other(e.to_string()),
        }
    }

    /// Creates the location if it has to exist before files are written (a local directory).
    pub fn create(&self) -> Result<()> {
        match self {
            Storage::Local(dir) => std::fs::create_dir_all(dir)
                .map_err(|e| HummerError::io("cannot create checkpoint directory", dir, e)),
            Storage::Object { .. } => Ok(()),
        }
    }

    /// Whether the location exists (an object store prefix always does).
    pub fn exists(&self) -> bool {
        match self {
            Storage::Local(dir) => dir.is_dir(),
            Storage::Object { .. } => true,
        }
    }

    /// Writes file `name`.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.write_parts(name, &[bytes])
    }

    /// Writes file `name` from `parts`, one after the other (a local file is written part by
    /// part, without joining them in memory first, and past the page cache when large: see
    /// `direct_write`).
    pub fn write_parts(&self, name: &str, parts: &[&[u8]]) -> Result<()> {
        match self {
            Storage::Local(dir) => {
                let path = dir.join(name);
                crate::direct_write::write_parts(&path, parts)
                    .map_err(|e| HummerError::io("cannot write checkpoint file", &path, e))
            }
            Storage::Object { store, prefix, .. } => {
                let path = prefix.clone().join(name);
                let total: usize = parts.iter().map(|p| p.len()).sum();
                let written = if total >= MULTIPART_MIN {
                    block_on(put_multipart(store.as_ref(), &path, parts))?
                } else {
                    let mut payload = PutPayloadMut::new();
                    parts.iter().for_each(|p| payload.extend_from_slice(p));
                    block_on(store.put(&path, payload.freeze()))?.map(|_| ())
                };
                written.map_err(|e| self.io_error("cannot write checkpoint file", name, e))
            }
        }
    }

    /// Removes file `name` (a file that is not there is fine).
    pub fn remove(&self, name: &str) -> Result<()> {
        match self {
            Storage::Local(dir) => {
                let path = dir.join(name);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(HummerError::io("cannot remove checkpoint file", &path, e))
                    }
                    _ => Ok(()),
                }
            }
            Storage::Object { store, prefix, .. } => {
                let path = prefix.clone().join(name);
                match block_on(store.delete(&path))? {
                    Err(object_store::Error::NotFound { .. }) | Ok(()) => Ok(()),
                    Err(e) => Err(self.io_error("cannot remove checkpoint file", name, e)),
                }
            }
        }
    }

    /// Reads file `name`.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        match self {
            Storage::Local(dir) => {
                let path = dir.join(name);
                std::fs::read(&path)
                    .map_err(|e| HummerError::io("cannot read checkpoint file", &path, e))
            }
            Storage::Object { store, prefix, .. } => {
                let path = prefix.clone().join(name);
                block_on(async {
                    let got = store.get(&path).await?;
                    got.bytes().await
                })?
                .map(|b| b.to_vec())
                .map_err(|e| self.io_error("cannot read checkpoint file", name, e))
            }
        }
    }

    /// The length of file `name`.
    pub fn len_of(&self, name: &str) -> Result<u64> {
        match self {
            Storage::Local(dir) => {
                let path = dir.join(name);
                std::fs::metadata(&path)
                    .map(|m| m.len())
                    .map_err(|e| HummerError::io("cannot read checkpoint file", &path, e))
            }
            Storage::Object { store, prefix, .. } => {
                let path = prefix.clone().join(name);
                block_on(store.head(&path))?
                    .map(|meta| meta.size)
                    .map_err(|e| self.io_error("cannot read checkpoint file", name, e))
            }
        }
    }

    /// The length and CRC-32 of file `name`, read a chunk at a time (a file of gigabytes is
    /// never in memory whole).
    pub fn crc32(&self, name: &str) -> Result<(u64, u32)> {
        let mut hasher = crc32fast::Hasher::new();
        let mut len = 0u64;
        match self {
            Storage::Local(dir) => {
                use std::io::Read;
                let path = dir.join(name);
                let failed = |e| HummerError::io("cannot read checkpoint file", &path, e);
                let mut file = std::fs::File::open(&path).map_err(failed)?;
                let mut chunk = vec![0u8; 1 << 20];
                loop {
                    let n = file.read(&mut chunk).map_err(failed)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&chunk[..n]);
                    len += n as u64;
                }
            }
            Storage::Object { store, prefix, .. } => {
                use futures::StreamExt;
                let path = prefix.clone().join(name);
                block_on(async {
                    let mut stream = store.get(&path).await?.into_stream();
                    while let Some(chunk) = stream.next().await {
                        let chunk = chunk?;
                        hasher.update(&chunk);
                        len += chunk.len() as u64;
                    }
                    Ok::<_, object_store::Error>(())
                })?
                .map_err(|e| self.io_error("cannot read checkpoint file", name, e))?;
            }
        }
        Ok((len, hasher.finalize()))
    }

    /// Writes file `name` whole or not at all, and durably: a local file is written aside,
    /// synced and renamed into place (an object store's put is atomic by itself).
    pub fn write_durably(&self, name: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Storage::Local(dir) => write_atomically(&dir.join(name), bytes, true),
            Storage::Object { .. } => self.write(name, bytes),
        }
    }

    /// Reads file `name` of an object store with its version (ETag), for a conditional write
    /// back ([`Storage::put_if`]); `None` if there is no such file.
    pub fn read_versioned(&self, name: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let Storage::Object { store, prefix, .. } = self else {
            return match std::fs::read(self.location().join(name)) {
                Ok(bytes) => Ok(Some((bytes, None))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(HummerError::io(
                    "cannot read",
                    self.location().join(name),
                    e,
                )),
            };
        };
        let path = prefix.clone().join(name);
        let got = block_on(async {
            let got = store.get(&path).await?;
            let e_tag = got.meta.e_tag.clone();
            Ok::<_, object_store::Error>((got.bytes().await?.to_vec(), e_tag))
        })?;
        match got {
            Ok(found) => Ok(Some(found)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.io_error("cannot read", name, e)),
        }
    }

    /// Writes file `name` of an object store only if it is still as read: the version
    /// `e_tag`, or absent for `None` (a conditional put). `false` if another writer changed
    /// it first. (A local directory has no conditional write: its users lock instead.)
    pub fn put_if(&self, name: &str, bytes: &[u8], e_tag: Option<String>) -> Result<bool> {
        let Storage::Object { store, prefix, .. } = self else {
            return Err(internal!("conditional writes need an object store"));
        };
        let path = prefix.clone().join(name);
        let mode = match e_tag {
            Some(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
            None => PutMode::Create,
        };
        let options = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let payload = PutPayload::from(bytes.to_vec());
        match block_on(store.put_opts(&path, payload, options))? {
            Ok(_) => Ok(true),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(e) => Err(self.io_error("cannot write", name, e)),
        }
    }

    /// Names of the sub-locations ("directories") directly below this one.
    pub fn list_dirs(&self) -> Result<Vec<String>> {
        self.list(Listing::Dirs)
    }

    /// Names of the files directly in this location.
    pub fn list_files(&self) -> Result<Vec<String>> {
        self.list(Listing::Files)
    }

    /// Names of the sub-locations or of the files directly in this location.
    fn list(&self, what: Listing) -> Result<Vec<String>> {
        let context = match what {
            Listing::Dirs => "cannot list checkpoints",
            Listing::Files => "cannot list checkpoint files",
        };
        match self {
            Storage::Local(dir) => {
                let entries =
                    std::fs::read_dir(dir).map_err(|e| HummerError::io(context, dir, e))?;
                Ok(entries
                    .flatten()
                    .filter(|e| match what {
                        Listing::Dirs => e.path().is_dir(),
                        Listing::Files => e.path().is_file(),
                    })
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect())
            }
            Storage::Object { store, prefix, .. } => {
                let listed = block_on(store.list_with_delimiter(Some(prefix)))?
                    .map_err(|e| self.io_error(context, "", e))?;
                let names = match what {
                    Listing::Dirs => listed.common_prefixes.iter().collect::<Vec<_>>(),
                    Listing::Files => listed.objects.iter().map(|o| &o.location).collect(),
                };
                Ok(names
                    .into_iter()
                    .filter_map(|p| p.filename().map(str::to_string))
                    .collect())
            }
        }
    }

    /// Removes the location and everything in it (nothing there is fine).
    pub fn remove_all(&self) -> Result<()> {
        match self {
            Storage::Local(dir) => match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(HummerError::io(
                    "cannot remove checkpoint directory",
                    dir,
                    e,
                )),
                _ => Ok(()),
            },
            Storage::Object { store, prefix, .. } => {
                use futures::TryStreamExt;
                block_on(async {
                    let objects: Vec<_> = store.list(Some(prefix)).try_collect().await?;
                    for o in objects {
                        store.delete(&o.location).await?;
                    }
                    Ok::<_, object_store::Error>(())
                })?
                .map_err(|e| self.io_error("cannot remove checkpoint", "", e))
            }
        }
    }

    /// Makes `self` (a checkpoint being written) visible as `to`: a local directory is renamed
    /// atomically; an object store prefix is written in place, so there is nothing to move.
    pub fn rename_to(&self, to: &Storage) -> Result<()> {
        match (self, to) {
            (Storage::Local(from), Storage::Local(to)) => std::fs::rename(from, to)
                .map_err(|e| HummerError::io("cannot complete checkpoint", to, e)),
            _ => Ok(()),
        }
    }

    /// Whether completing a checkpoint needs a rename (a local directory does).
    pub fn renames(&self) -> bool {
        matches!(self, Storage::Local(_))
    }
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one: written to a
/// temporary file beside it, renamed over it; with `durable`, the file and the directory are
/// synced too (a lease is not: a sync can wait seconds behind a large write, longer than a
/// lease, and a lease lost in a host crash just lapses).
pub fn write_atomically(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let fail = |e| HummerError::io("cannot write", path, e);
    let mut file = std::fs::File::create(&tmp).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    if durable {
        file.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)?;
    if durable && let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        assert!(is_url(Path::new("s3://bucket/prefix")));
        assert!(is_url(Path::new("memory://")));
        assert!(!is_url(Path::new("/var/tmp/checkpoints")));
        assert!(!is_url(Path::new("relative/dir")));
        assert!(!is_url(Path::new("odd:/name")));
    }

    #[test]
    fn an_object_store_prefix_holds_files_and_sub_locations() {
        let root = Storage::open(Path::new("memory:///checkpoints")).unwrap();
        let chk = root.child("chk-1");
        chk.write("a", b"alpha").unwrap();
        chk.write("b", b"beta").unwrap();
        root.child("chk-2").write("a", b"x").unwrap();
        let mut dirs = root.list_dirs().unwrap();
        dirs.sort();
        assert_eq!(dirs, vec!["chk-1", "chk-2"]);
        let mut files = chk.list_files().unwrap();
        files.sort();
        assert_eq!(files, vec!["a", "b"]);
        assert_eq!(chk.read("b").unwrap(), b"beta");
        chk.remove_all().unwrap();
        assert_eq!(root.list_dirs().unwrap(), vec!["chk-2"]);
        assert!(chk.read("a").is_err());
        assert_eq!(
            root.child("chk-2").location(),
            PathBuf::from("memory:///checkpoints/chk-2")
        );
    }

    #[test]
    fn a_bad_url_is_refused_with_its_text() {
        let err = Storage::open(Path::new("nosuchscheme://x/y"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("nosuchscheme://x/y"), "{err}");
    }
}

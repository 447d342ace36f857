//! Consumer-group offsets: committing a source's offsets to the broker when a checkpoint
//! completes (for lag monitoring by the usual Kafka tools: the job's own position is its
//! checkpoint, not this), and reading them back for `StartingOffsets::Committed`.
//!
//! The client library has no consumer groups, so the three requests needed are written here
//! by hand, in their simplest versions every broker still serves: FindCoordinator v0,
//! OffsetCommit v2 (a "simple consumer" commit: generation -1, no member) and OffsetFetch v1.

use std::collections::BTreeMap;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::Result;
use crate::kafka::client::{KafkaConfig, block_on_within};

const FIND_COORDINATOR: i16 = 10;
const OFFSET_COMMIT: i16 = 8;
const OFFSET_FETCH: i16 = 9;

/// Offsets per topic and partition.
pub(crate) type Offsets = BTreeMap<String, BTreeMap<i32, i64>>;

/// Writes Kafka's primitive types (big-endian).
#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn i16(&mut self, v: i16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.i16(s.len().min(i16::MAX as usize) as i16);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn null_string(&mut self) -> &mut Self {
        self.i16(-1)
    }
}

/// Reads Kafka's primitive types; every read checks the length.
struct Decoder<'a>(&'a [u8]);

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        if self.0.len() < n {
            return Err("the broker's answer is cut short".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn i16(&mut self) -> std::result::Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> std::result::Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> std::result::Result<i64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.i16()?;
        if n < 0 {
            return Ok(String::new());
        }
        let b = self.take(n as usize)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }
    fn count(&mut self) -> std::result::Result<usize, String> {
        Ok(self.i32()?.max(0) as usize)
    }
}

/// One request on a fresh connection; the answer's body (after the correlation id).
async fn request(
    address: &str,
    api_key: i16,
    api_version: i16,
    body: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let mut header = Encoder::default();
    header.i16(api_key).i16(api_version).i32(1).string("hummer");
    let size = (header.0.len() + body.len()) as i32;
    let mut stream = TcpStream::connect(address)
        .await
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let mut frame = size.to_be_bytes().to_vec();
    frame.extend_from_slice(&header.0);
    frame.extend_from_slice(body);
    stream
        .write_all(&frame)
        .await
        .map_err(|e| format!("cannot write to {address}: {e}"))?;
    let mut len = [0u8; 4];
    stream
        .read_exact(&mut len)
        .await
        .map_err(|e| format!("no answer from {address}: {e}"))?;
    let len = i32::from_be_bytes(len);
    if !(4..=64 << 20).contains(&len) {
        return Err(format!("{address} answered a frame of {len} bytes"));
    }
    let mut answer = vec![0u8; len as usize];
    stream
        .read_exact(&mut answer)
        .await
        .map_err(|e| format!("no answer from {address}: {e}"))?;
    Ok(answer.split_off(4))
}

/// The address of the group's coordinator.
async fn coordinator(brokers: &[String], group: &str) -> std::result::Result<String, String> {
    let mut last = String::from("no bootstrap servers");
    for broker in brokers {
        let mut body = Encoder::default();
        body.string(group);
        match request(broker, FIND_COORDINATOR, 0, &body.0).await {
            Ok(answer) => {
                let mut d = Decoder(&answer);
                let error = d.i16()?;
                let _node = d.i32()?;
                let host = d.string()?;
                let port = d.i32()?;
                if error != 0 {
                    return Err(format!("FindCoordinator: error code {error}"));
                }
                return Ok(format!("{host}:{port}"));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Sends `body` as request `api_key` (version `api_version`) to `group`'s coordinator and reads
/// the answer with `read`, within the request timeout.
fn group_request<T: Send + 'static>(
    config: &KafkaConfig,
    group: &str,
    api_key: i16,
    api_version: i16,
    body: Encoder,
    read: impl FnOnce(&mut Decoder<'_>) -> std::result::Result<T, String> + Send + 'static,
) -> Result<T> {
    let brokers = config.bootstrap_servers.clone();
    let group = group.to_string();
    let target = format!("consumer group '{group}' on {}", config.brokers());
    block_on_within(config.request_timeout()?, &target, async move {
        let address = coordinator(&brokers, &group).await?;
        let answer = request(&address, api_key, api_version, &body.0).await?;
        read(&mut Decoder(&answer))
    })
}

/// Commits `offsets` (the next offset to read per partition) for `group`.
pub(crate) fn commit(config: &KafkaConfig, group: &str, offsets: &Offsets) -> Result<()> {
    let mut body = Encoder::default();
    body.string(group).i32(-1).string("").i64(-1);
    body.i32(offsets.len() as i32);
    for (topic, partitions) in offsets {
        body.string(topic).i32(partitions.len() as i32);
        for (&p, &offset) in partitions {
            body.i32(p).i64(offset).null_string();
        }
    }
    group_request(config, group, OFFSET_COMMIT, 2, body, |d| {
        for _ in 0..d.count()? {
            let topic = d.string()?;
            for _ in 0..d.count()? {
                let p = d.i32()?;
                let error = d.i16()?;
                if error != 0 {
                    return Err(format!(
                        "OffsetCommit of topic '{topic}' partition {p}: error code {error}"
                    ));
                }
            }
        }
        Ok(())
    })
}

/// The offsets `group` committed for these partitions (those it has).
pub(crate) fn fetch(
    config: &KafkaConfig,
    group: &str,
    partitions: &BTreeMap<String, Vec<i32>>,
) -> Result<Offsets> {
    let mut body = Encoder::default();
    body.string(group).i32(partitions.len() as i32);
    for (topic, ps) in partitions {
        body.string(topic).i32(ps.len() as i32);
        for &p in ps {
            body.i32(p);
        }
    }
    group_request(config, group, OFFSET_FETCH, 1, body, |d| {
        let mut out = Offsets::new();
        for _ in 0..d.count()? {
            let topic = d.string()?;
            for _ in 0..d.count()? {
                let p = d.i32()?;
                let offset = d.i64()?;
                let _metadata = d.string()?;
                let error = d.i16()?;
                if error == 0 && offset >= 0 {
                    out.entry(topic.clone()).or_default().insert(p, offset);
                }
            }
        }
        Ok(out)
    })
}

//! The job protocol between hare-send and hare-recv (version [`PROTOCOL_VERSION`]).
//!
//! A *control channel* (the first bidirectional QUIC stream, or the first TCP connection)
//! carries length-prefixed JSON messages: a 4-byte big-endian length, then that many bytes of
//! one [`ToReceiver`] or [`ToSender`] object. Frames above [`MAX_FRAME`] are a protocol error,
//! so a peer cannot make the other side buffer more than that. Data travels on separate
//! channels (QUIC unidirectional streams, or more TCP connections) that start with a fixed
//! [`DataHeader`]. The full description is in `docs/TRANSFER.md`.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Default UDP / TCP port.
pub const DEFAULT_PORT: u16 = 5210;
/// Time a data channel has to send its header.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Grace after a timed bulk job's announced duration before the receiver gives up on it
/// (and, in reverse mode, the receiving hare-send).
pub const DURATION_GRACE: std::time::Duration = std::time::Duration::from_secs(30);
/// A receiver's job that receives no data for this long is ended (checked at each report
/// tick); said to a second sender of a busy name, so that it knows when the name frees.
pub const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

use crate::error::{Result, TransferError};

/// Version of the job protocol; a receiver refuses other versions with a clear reason.
pub const PROTOCOL_VERSION: u32 = 1;
/// ALPN of hare's QUIC connections (`hare/1`).
pub const ALPN: &[u8] = b"hare/1";
/// Largest control frame accepted (a manifest of [`MAX_FILES`] long names fits).
pub const MAX_FRAME: usize = 4 << 20;
/// Most files in one job.
pub const MAX_FILES: usize = 10_000;
/// Most parallel streams of a bulk job.
pub const MAX_STREAMS: u16 = 128;
/// Longest token accepted, in bytes.
pub const MAX_TOKEN: usize = 1024;
/// Most times one file may be sent again within a job ([`ToReceiver::FileRetry`]).
pub const MAX_RETRIES: u32 = 100;

/// QUIC application close codes (also used as process-level reasons in logs). The close reason
/// text says which limit or deadline applied.
pub mod close {
    /// The job completed.
    pub const DONE: u32 = 0;
    /// The receiver refused the job (reason sent on the control stream first).
    pub const REFUSED: u32 = 1;
    /// The sender stopped (Ctrl-C) before the job completed.
    pub const INTERRUPTED: u32 = 2;
    /// The peer broke the protocol.
    pub const PROTOCOL: u32 = 3;
    /// The receiver is shutting down or has no free job slot.
    pub const BUSY: u32 = 4;
    /// The peer let a deadline pass: no hello in time, no data for too long, or a control
    /// stream it did not read.
    pub const TIMEOUT: u32 = 5;
    /// The receiver gave the job up for a reason of its own (a local error).
    pub const ABORTED: u32 = 6;
    /// Stream reset code (not a connection close code; numbered apart from them so that a
    /// log line is never ambiguous) of a timed bulk job (`-T`) whose time is up: the sender
    /// discarded what it had queued; the receiver ends the stream normally.
    pub const TIME_UP: u32 = 7;
}

/// The job the sender asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Job {
    /// Memory-to-memory bulk data, like nuttcp: a size, or a duration.
    Bulk {
        /// Total payload bytes over all streams (`-n`), if bounded by size.
        bytes: Option<u64>,
        /// Seconds to send (`-T`), if bounded by time.
        seconds: Option<f64>,
        /// Parallel streams (`-P`).
        streams: u16,
    },
    /// Files, each on its own stream.
    Files {
        /// The manifest.
        files: Vec<FileEntry>,
        /// Continue partial files the receiver holds, after checking their prefix.
        resume: bool,
        /// Overwrite files that exist under the final name.
        force: bool,
        /// Empty directories to create (relative names, checked like file names).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dirs: Vec<String>,
        /// Symbolic links to create as links (`--links`), after `dirs`; a receiver that does
        /// not list [`feature::LINKS`] in its welcome ignores them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        links: Vec<LinkEntry>,
        /// Which files that exist on the receiver need not be sent (rsync's quick check and
        /// its options); every other existing file is replaced, as rsync and scp do. Absent
        /// (older senders, and `--force`): existing files are refused unless `force`. A
        /// receiver that does not list [`feature::SKIP`] ignores it (and refuses them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skip: Option<SkipRule>,
        /// A directory beneath the receiver's `--dir` that the job's names are relative to
        /// (`hare-send f HOST:PORT:DEST`), checked like a name and created with its parents;
        /// only to receivers that list [`feature::DEST`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dest: Option<String>,
    },
}

/// How a receiver decides that a file it already has need not be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipRule {
    /// Same size and modification time (to the nanosecond) as the sender's: rsync's quick
    /// check, its default. A file sent without a time (`--no-times`) never matches.
    Quick,
    /// Same size and BLAKE3 digest (`--checksum`, as rsync's `-c`): the sender hashes every
    /// file before the hello, the receiver every existing file of the same size.
    Checksum,
    /// Any file that exists (`--ignore-existing`, as rsync's option of that name).
    IgnoreExisting,
    /// A file whose copy on the receiver is newer, or passes the quick check (`--update`, as
    /// rsync's `-u`).
    Update,
}

/// One file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative name with `/` separators (checked by the receiver, see [`crate::names`]).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits of the source (`st_mode & 0o777`; set-user-ID, set-group-ID and sticky
    /// bits are never sent nor applied). Absent: the receiver's default for a new file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Apply the receiver's umask to `mode` (`--no-perms`, like rsync without `-p`), instead of
    /// keeping it exactly (rsync `-p`/`-a`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apply_umask: bool,
    /// Modification time of the source, nanoseconds since the Unix epoch (absent with
    /// `--no-times`: the file gets the time it is written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<i64>,
    /// Hex BLAKE3 of the whole file, sent with `--checksum` ([`SkipRule::Checksum`]) only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
}

impl FileEntry {
    /// A file of `size` bytes named `name`, without metadata.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        Self {
            name: name.into(),
            size,
            mode: None,
            apply_umask: false,
            mtime_ns: None,
            blake3: None,
        }
    }
}

/// Messages from the sender to the receiver on the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToReceiver {
    /// First message: who, the token and the job.
    Hello {
        /// [`PROTOCOL_VERSION`] of the sender.
        version: u32,
        /// Sender software, e.g. `hare-send 0.1.0`.
        software: String,
        /// The token, when the sender has one.
        token: Option<String>,
        /// The job.
        job: Job,
        /// Connection receive window the sender asks the receiver to grant, bytes.
        window: u64,
        /// The controller the sender uses (for the receiver's report).
        controller: String,
        /// The sender's report interval (`-i`), seconds: the receiver reports on the same
        /// interval (like nuttcp's server), so that the sender can print its intervals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interval_s: Option<f64>,
        /// Reverse mode (`-r`): the receiver sends the bulk job back over this connection
        /// (hellos that carry it are of version [`REVERSE_VERSION`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reverse: Option<Reverse>,
        /// The sender ends a bulk job with [`ToReceiver::BulkEnd`] when the receiver lists
        /// [`feature::BULK_END`] (absent, false, from older senders).
        #[serde(default, skip_serializing_if = "is_false")]
        ends_bulk: bool,
    },
    /// The bulk job's data is all sent and every data channel ended: `bytes` of payload over
    /// all streams. Over kernel TCP the end of a data stream does not tell a sender that
    /// finished from one whose process died (its kernel closes the socket the same way), so
    /// the receiver takes the job as complete only with this message, on either transport
    /// (only to receivers that list [`feature::BULK_END`], from senders whose hello says
    /// `ends_bulk`).
    BulkEnd {
        /// Payload bytes the sender handed to the transport, all streams.
        bytes: u64,
        /// The user stopped the sender before the job's size or time (Ctrl-C): the data
        /// ended early on purpose (absent, false, otherwise).
        #[serde(default, skip_serializing_if = "is_false")]
        stopped: bool,
    },
    /// Ask for the receiver's byte count (answered by [`ToSender::Progress`]).
    ProgressRequest {
        /// Echoed back.
        seq: u64,
    },
    /// A file's data has been sent completely; its BLAKE3 digest over the whole file.
    FileDone {
        /// Index in the manifest.
        index: u32,
        /// Hex BLAKE3 of the whole file.
        blake3: String,
    },
    /// The sender will not send a file (it changed, vanished or could not be read).
    FileAbandoned {
        /// Index in the manifest.
        index: u32,
        /// Why.
        reason: String,
        /// No data channel was opened for the file and none will be (it could not be opened
        /// or read at all): the receiver fails it at once instead of waiting for one. Absent
        /// (false) when the abandoned attempt had a channel, which then ends with a reset.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unsent: bool,
    },
    /// The file changed while it was read: the receiver discards what it has of this attempt
    /// and answers [`ToSender::FileRestart`], then takes a new data channel for the file, from
    /// offset 0, with this size and metadata (only to receivers that list
    /// [`feature::RETRY`]).
    FileRetry {
        /// Index in the manifest.
        index: u32,
        /// Why the last attempt was given up.
        reason: String,
        /// The file's size now.
        size: u64,
        /// Permission bits now (as in [`FileEntry::mode`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<u32>,
        /// Modification time now (as in [`FileEntry::mtime_ns`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mtime_ns: Option<i64>,
        /// The number the new attempt's data channel carries ([`DataHeader::attempt`]);
        /// absent from senders that do not number attempts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u16>,
    },
}

/// How the receiver plans to take one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePlan {
    /// Index in the manifest.
    pub index: u32,
    /// Bytes the receiver already holds (resume); the sender starts there if the prefix digest
    /// matches its own, else at 0.
    pub have: u64,
    /// Hex BLAKE3 of the first `have` bytes the receiver holds (when `have > 0`).
    pub have_blake3: Option<String>,
    /// The receiver has the file already (the job's [`SkipRule`]) and takes no data channel
    /// for it: why, e.g. `up to date`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
}

/// Messages from the receiver to the sender on the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToSender {
    /// The job is accepted.
    Welcome {
        /// [`PROTOCOL_VERSION`] of the receiver.
        version: u32,
        /// Receiver software.
        software: String,
        /// The connection receive window granted (bytes).
        window: u64,
        /// Per-file plans (file jobs).
        files: Vec<FilePlan>,
        /// TCP mode: the session the data connections must name (hex).
        session: Option<String>,
        /// What this receiver understands beyond version 1 ([`feature`]); absent from older
        /// receivers.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
        /// The verdict on each link of the job (made when the job was accepted).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        links: Vec<LinkResult>,
    },
    /// The job is refused; the receiver closes after this.
    Refuse {
        /// Why, for the user.
        reason: String,
    },
    /// Answer to [`ToReceiver::ProgressRequest`]: payload bytes received so far.
    Progress {
        /// The request's sequence number.
        seq: u64,
        /// Payload bytes received (all streams, excluding headers and resumed prefixes).
        bytes: u64,
    },
    /// One of the receiver's report intervals, sent at its end: the payload bytes that arrived
    /// (in any order) between `start_s` and `end_s` on the receiver's clock (seconds since its
    /// welcome). The sender prints these, keyed by `index`, as its own interval bytes.
    Interval {
        /// 1 for the first interval, then 2, 3, ...
        index: u64,
        /// Start, receiver seconds since the welcome.
        start_s: f64,
        /// End, receiver seconds since the welcome.
        end_s: f64,
        /// Payload bytes received in the interval.
        bytes: u64,
        /// The same bytes by bulk stream (stream number order; empty for file jobs and from
        /// older receivers). They add up to `bytes`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        streams: Vec<u64>,
    },
    /// The verdict on one file.
    FileResult {
        /// Index in the manifest.
        index: u32,
        /// True when the file is complete, verified and renamed to its final name.
        ok: bool,
        /// Why it failed.
        reason: Option<String>,
        /// The kind of failure (absent from older receivers, and when it succeeded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<FailCode>,
    },
    /// The whole job is finished (all streams ended, all files judged).
    Done {
        /// Payload bytes received.
        bytes: u64,
        /// Seconds from the welcome to the last byte.
        seconds: f64,
        /// CPU use of the receiving process over the job, percent of one core.
        cpu_pct: Option<f64>,
        /// Payload bytes received by bulk stream (stream number order; empty for file jobs).
        /// They add up to `bytes`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        streams: Vec<u64>,
    },
    /// Reverse mode: hare-send, which receives, asks the remote sender to stop (Ctrl-C); it
    /// ends its streams and the job ends with a summary, like a stop in the other direction.
    StopSending {
        /// Why, for the remote sender's log.
        reason: String,
    },
    /// Answer to [`ToReceiver::FileRetry`]: the last attempt is discarded, the file's new data
    /// channel may come.
    FileRestart {
        /// Index in the manifest.
        index: u32,
    },
}

pub use crate::fail_code::FailCode;

/// Kinds of data channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// A bulk stream (payload is discarded).
    Bulk = 0,
    /// A file stream.
    File = 1,
}

/// The fixed 32-byte header that opens every data channel: magic `HARE`, version byte,
/// kind byte, two reserved bytes, the index (file index or stream number) as big-endian u32,
/// the file offset at which the payload starts as big-endian u64, and (TCP only, zeros on
/// QUIC) the 12 first bytes of the session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// Bulk or file.
    pub kind: DataKind,
    /// File index in the manifest, or stream number for bulk.
    pub index: u32,
    /// File offset of the first payload byte.
    pub offset: u64,
    /// TCP session id prefix (zeros on QUIC).
    pub session: [u8; 12],
    /// Which attempt at a file the channel carries: 0 the first, then the number a
    /// [`ToReceiver::FileRetry`] gave (bytes 6 and 7, which were reserved: zero from senders
    /// before retries were numbered). A receiver drops a channel of an attempt it already
    /// discarded, which can arrive after the retry.
    pub attempt: u16,
}

impl DataHeader {
    /// Encoded length.
    pub const LEN: usize = 32;
    const MAGIC: &'static [u8; 4] = b"HARE";

    /// Encode.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(Self::MAGIC);
        b[4] = PROTOCOL_VERSION as u8;
        b[5] = self.kind as u8;
        b[6..8].copy_from_slice(&self.attempt.to_be_bytes());
        b[8..12].copy_from_slice(&self.index.to_be_bytes());
        b[12..20].copy_from_slice(&self.offset.to_be_bytes());
        b[20..32].copy_from_slice(&self.session);
        b
    }

    /// Decode, checking magic, version and kind.
    pub fn decode(b: &[u8; Self::LEN]) -> Result<Self> {
        if &b[..4] != Self::MAGIC {
            return Err(TransferError::Protocol(
                "data channel does not start with the HARE magic".into(),
            ));
        }
        if u32::from(b[4]) != PROTOCOL_VERSION {
            return Err(TransferError::Protocol(format!(
                "data channel of protocol version {}, expected {PROTOCOL_VERSION}",
                b[4]
            )));
        }
        let kind = match b[5] {
            0 => DataKind::Bulk,
            1 => DataKind::File,
            k => {
                return Err(TransferError::Protocol(format!(
                    "unknown data channel kind {k}"
                )))
            }
        };
        let mut index = [0u8; 4];
        index.copy_from_slice(&b[8..12]);
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&b[12..20]);
        let mut session = [0u8; 12];
        session.copy_from_slice(&b[20..32]);
        Ok(Self {
            kind,
            index: u32::from_be_bytes(index),
            offset: u64::from_be_bytes(offset),
            session,
            attempt: u16::from_be_bytes([b[6], b[7]]),
        })
    }
}

/// Write one control frame.
pub async fn write_frame<W, T>(w: &mut W, msg: &T) -> Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let body = serde_json::to_vec(msg)
        .map_err(|e| TransferError::Protocol(format!("cannot encode a message: {e}")))?;
    if body.len() > MAX_FRAME {
        return Err(TransferError::Protocol(format!(
            "message of {} bytes exceeds the {MAX_FRAME}-byte frame limit (too many files?)",
            body.len()
        )));
    }
    let len = (body.len() as u32).to_be_bytes();
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&len);
    buf.extend_from_slice(&body);
    w.write_all(&buf)
        .await
        .map_err(|e| TransferError::io("writing to the control channel", e))?;
    w.flush()
        .await
        .map_err(|e| TransferError::io("flushing the control channel", e))
}

/// Read one control frame; `Ok(None)` when the channel ended cleanly between frames.
pub async fn read_frame<R, T>(r: &mut R) -> Result<Option<T>>
where
    R: AsyncRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    let mut len = [0u8; 4];
    // Read the first byte separately to tell a clean end from a cut frame.
    match r.read(&mut len[..1]).await {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(TransferError::io("reading the control channel", e)),
    }
    r.read_exact(&mut len[1..])
        .await
        .map_err(|e| cut_frame(e, "its length"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(TransferError::Protocol(format!(
            "control frame of {len} bytes exceeds the {MAX_FRAME}-byte limit"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .await
        .map_err(|e| cut_frame(e, "its body"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| TransferError::Protocol(format!("bad control message: {e}")))
}

/// A read error inside a frame: a stream that ends there broke the framing (a protocol
/// error, close code 3); anything else is the connection's own error.
fn cut_frame(e: std::io::Error, what: &str) -> TransferError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return TransferError::Protocol(format!(
            "the control stream ended inside a frame ({what} cut short)"
        ));
    }
    TransferError::io("reading the control channel", e)
}

/// Version of a hello that asks for reverse mode. A receiver that knows reverse mode accepts
/// this and [`PROTOCOL_VERSION`]; an older one refuses the hello by its version, so an old
/// peer answers a reverse request with a clear refusal instead of waiting for data that
/// never comes. Data channels keep [`PROTOCOL_VERSION`] in their header either way.
pub const REVERSE_VERSION: u32 = 2;

/// What a reverse hello asks of the remote sender, beyond its bulk [`Job`] (whose size or
/// duration and streams it honours as hare-send would).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reverse {
    /// `-R`: rate limit over all streams, bit/s (absent or 0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
}

/// Reverse mode, after the welcome: what the remote sender (hare-recv) tells hare-send, which
/// receives, beyond the data. Both travel on the control channel; in the other direction
/// hare-send sends the receiver's usual [`ToSender::Interval`] and [`ToSender::Done`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum FromRemoteSender {
    /// First message after the welcome: the controller that sends (fixed by hare-recv's own
    /// `--cc` when it accepted the connection).
    Start {
        /// Its label, e.g. `cubic@linux-6`.
        controller: String,
        /// Its kernel profile, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
    },
    /// Last message: the sending side's summary (packets, losses, RTT, congestion window,
    /// slow-start exit, its CPU), sent once it has the receiver's `done`.
    Report {
        /// The summary as the sending side printed it.
        summary: hare_report::Summary,
        /// Payload the sender handed to the transport (more than was delivered when a timed
        /// job discarded what was queued at its end).
        written: u64,
    },
}

/// Optional parts of the protocol a receiver announces in its welcome (`features`). A sender
/// uses one only when the receiver listed it, so version-1 peers of either age interoperate.
pub mod feature {
    /// Symbolic links in file jobs (`links` in the job, `links` verdicts in the welcome).
    pub const LINKS: &str = "links";
    /// Changed files sent again within the job (`file-retry`, `file-restart`).
    pub const RETRY: &str = "retry";
    /// The sender's `bulk-end` at the end of a bulk job.
    pub const BULK_END: &str = "bulk-end";
    /// File jobs' `skip` rule (files the receiver has are not sent; others replaced).
    pub const SKIP: &str = "skip";
    /// File jobs' `dest`, a directory beneath the receiver's `--dir`.
    pub const DEST: &str = "dest";
}

/// For `skip_serializing_if`: a false flag is left out of the message.
fn is_false(b: &bool) -> bool {
    !*b
}

/// A symbolic link of a file job (`--links`): its name (checked like a file name) and its
/// target, as the link holds it (never resolved by either side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkEntry {
    /// Relative name with `/` separators.
    pub name: String,
    /// The link's target text, exactly as `readlink(2)` gave it.
    pub target: String,
    /// Modification time of the link itself, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<i64>,
}

/// How the receiver took one link of the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkResult {
    /// Index in the job's `links`.
    pub index: u32,
    /// Why it was not made (absent when it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_has_fixed_layout() {
        let h = DataHeader {
            kind: DataKind::File,
            index: 0x0102_0304,
            offset: 0x1122_3344_5566_7788,
            session: [9; 12],
            attempt: 0x0203,
        };
        let b = h.encode();
        assert_eq!(&b[..8], b"HARE\x01\x01\x02\x03");
        assert_eq!(&b[8..12], &[1, 2, 3, 4]);
        assert_eq!(
            &b[12..20],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(DataHeader::decode(&b).ok(), Some(h));
    }

    #[test]
    fn header_rejects_bad_magic_version_kind() {
        let good = DataHeader {
            kind: DataKind::Bulk,
            index: 0,
            offset: 0,
            session: [0; 12],
            attempt: 0,
        }
        .encode();
        let mut b = good;
        b[0] = b'X';
        assert!(DataHeader::decode(&b).is_err());
        let mut b = good;
        b[4] = 2;
        assert!(DataHeader::decode(&b).is_err());
        let mut b = good;
        b[5] = 7;
        assert!(DataHeader::decode(&b).is_err());
    }

    #[tokio::test]
    async fn frames_round_trip_and_oversize_is_refused() {
        let msg = ToSender::Progress { seq: 3, bytes: 42 };
        let mut buf = Vec::new();
        write_frame(&mut buf, &msg).await.expect("write to a Vec");
        assert_eq!(&buf[..4], &(buf.len() as u32 - 4).to_be_bytes());
        let mut r = &buf[..];
        let back: Option<ToSender> = read_frame(&mut r).await.expect("read back");
        assert_eq!(back, Some(msg));
        let none: Option<ToSender> = read_frame(&mut r).await.expect("clean end");
        assert_eq!(none, None);

        let mut huge = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        let mut r = &huge[..];
        let res: Result<Option<ToSender>> = read_frame(&mut r).await;
        assert!(matches!(res, Err(TransferError::Protocol(_))));
    }

    #[test]
    fn failure_codes_travel_and_unknown_ones_read_as_other() {
        let m = ToSender::FileResult {
            index: 1,
            ok: false,
            reason: Some("x".into()),
            code: Some(FailCode::DiskFull),
        };
        let text = serde_json::to_string(&m).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"type":"file-result","index":1,"ok":false,"reason":"x","code":"disk-full"}"#
        );
        let newer =
            r#"{"type":"file-result","index":1,"ok":false,"reason":"x","code":"cosmic-ray"}"#;
        let back: Option<ToSender> = serde_json::from_str(newer).ok();
        assert!(matches!(
            back,
            Some(ToSender::FileResult {
                code: Some(FailCode::Other),
                ..
            })
        ));
        let older = r#"{"type":"file-result","index":1,"ok":true,"reason":null}"#;
        let back: Option<ToSender> = serde_json::from_str(older).ok();
        assert!(matches!(
            back,
            Some(ToSender::FileResult { code: None, .. })
        ));
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(FailCode::of_io(&enospc), FailCode::DiskFull);
        let eacces = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(FailCode::of_io(&eacces), FailCode::Permission);
    }

    #[test]
    fn bulk_end_travels_and_a_hello_says_whether_its_sender_sends_it() {
        let end = ToReceiver::BulkEnd {
            bytes: 12_345,
            stopped: false,
        };
        let text = serde_json::to_string(&end).unwrap_or_default();
        assert_eq!(text, r#"{"type":"bulk-end","bytes":12345}"#);
        let back: Option<ToReceiver> = serde_json::from_str(&text).ok();
        assert_eq!(back, Some(end));
        let stopped = r#"{"type":"bulk-end","bytes":1,"stopped":true}"#;
        let back: Option<ToReceiver> = serde_json::from_str(stopped).ok();
        assert_eq!(
            back,
            Some(ToReceiver::BulkEnd {
                bytes: 1,
                stopped: true
            })
        );
        let hello = ToReceiver::Hello {
            version: PROTOCOL_VERSION,
            software: "s".into(),
            token: None,
            job: Job::Bulk {
                bytes: None,
                seconds: Some(1.0),
                streams: 1,
            },
            window: 1,
            controller: "c".into(),
            interval_s: None,
            reverse: None,
            ends_bulk: true,
        };
        let text = serde_json::to_string(&hello).unwrap_or_default();
        assert!(text.ends_with(r#""ends_bulk":true}"#), "{text}");
        // An older sender's hello has no flag: it does not send bulk-end.
        let old = text.replace(r#","ends_bulk":true"#, "");
        let back: Option<ToReceiver> = serde_json::from_str(&old).ok();
        assert!(
            matches!(
                back,
                Some(ToReceiver::Hello {
                    ends_bulk: false,
                    ..
                })
            ),
            "{old}"
        );
    }

    #[test]
    fn reverse_hellos_travel_and_older_hellos_still_read() {
        let hello = ToReceiver::Hello {
            version: REVERSE_VERSION,
            software: "s".into(),
            token: None,
            job: Job::Bulk {
                bytes: Some(1),
                seconds: None,
                streams: 1,
            },
            window: 1,
            controller: "c".into(),
            interval_s: None,
            reverse: Some(Reverse { rate_bps: Some(8) }),
            ends_bulk: false,
        };
        let text = serde_json::to_string(&hello).unwrap_or_default();
        assert!(text.ends_with(r#""reverse":{"rate_bps":8}}"#), "{text}");
        let back: Option<ToReceiver> = serde_json::from_str(&text).ok();
        assert_eq!(back, Some(hello));
        let older = r#"{"type":"hello","version":1,"software":"s","token":null,
            "job":{"kind":"bulk","bytes":1,"seconds":null,"streams":1},"window":1,
            "controller":"c"}"#;
        let back: Option<ToReceiver> = serde_json::from_str(older).ok();
        assert!(matches!(
            back,
            Some(ToReceiver::Hello { reverse: None, .. })
        ));
        let stop = ToSender::StopSending { reason: "x".into() };
        assert_eq!(
            serde_json::to_string(&stop).ok().as_deref(),
            Some(r#"{"type":"stop-sending","reason":"x"}"#)
        );
        let start = FromRemoteSender::Start {
            controller: "cubic@linux-6".into(),
            profile: None,
        };
        assert_eq!(
            serde_json::to_string(&start).ok().as_deref(),
            Some(r#"{"type":"start","controller":"cubic@linux-6"}"#)
        );
    }

    #[test]
    fn new_fields_are_optional_both_ways() {
        // An older receiver's welcome: no features, no link verdicts.
        let old = r#"{"type":"welcome","version":1,"software":"hare-recv 0.0.9","window":1,"files":[],"session":null}"#;
        let back: Option<ToSender> = serde_json::from_str(old).ok();
        assert!(matches!(
            back,
            Some(ToSender::Welcome { features, links, .. }) if features.is_empty() && links.is_empty()
        ));
        // A field this version does not know is ignored, as older receivers ignore `links`.
        let newer = r#"{"kind":"files","files":[],"resume":false,"force":false,"later":[1]}"#;
        assert!(serde_json::from_str::<Job>(newer).is_ok());
        // Without links the job reads as before.
        let j = Job::Files {
            files: Vec::new(),
            resume: false,
            force: false,
            dirs: Vec::new(),
            links: Vec::new(),
            skip: None,
            dest: None,
        };
        assert_eq!(
            serde_json::to_string(&j).ok().as_deref(),
            Some(r#"{"kind":"files","files":[],"resume":false,"force":false}"#)
        );
        let r = ToReceiver::FileRetry {
            index: 1,
            reason: "changed".into(),
            size: 5,
            mode: None,
            mtime_ns: None,
            attempt: None,
        };
        assert_eq!(
            serde_json::to_string(&r).ok().as_deref(),
            Some(r#"{"type":"file-retry","index":1,"reason":"changed","size":5}"#)
        );
    }

    #[test]
    fn messages_have_stable_json() {
        let m = ToReceiver::FileDone {
            index: 2,
            blake3: "ab".into(),
        };
        assert_eq!(
            serde_json::to_string(&m).ok().as_deref(),
            Some(r#"{"type":"file-done","index":2,"blake3":"ab"}"#)
        );
        let j = Job::Bulk {
            bytes: Some(1024),
            seconds: None,
            streams: 1,
        };
        assert_eq!(
            serde_json::to_string(&j).ok().as_deref(),
            Some(r#"{"kind":"bulk","bytes":1024,"seconds":null,"streams":1}"#)
        );
    }
}

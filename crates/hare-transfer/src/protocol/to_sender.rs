//! Messages to the sender on the control channel: the welcome or refusal, intervals, verdicts
//! and the final word; and, in reverse mode, what the remote sender tells hare-send.

use serde::{Deserialize, Serialize};

use super::job::LinkResult;
use super::FailCode;

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
    /// A file the job sends as ranges (several connections), resumed: the pieces beyond
    /// `have` the receiver already holds, each with its digest. The sender need not send a
    /// piece whose digest is that of its own bytes there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub have_ranges: Vec<HaveRange>,
}

/// A piece of a file the receiver holds beyond its in-order prefix ([`FilePlan`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaveRange {
    /// Where it starts.
    pub offset: u64,
    /// Its length.
    pub len: u64,
    /// Hex BLAKE3 of its bytes.
    pub blake3: String,
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
        /// The session the job's further channels must name (hex): its data connections over
        /// kernel TCP, its further connections (`join`) over QUIC.
        session: Option<String>,
        /// What this receiver understands beyond version 1 ([`feature`]); absent from older
        /// receivers.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
        /// The verdict on each link of the job (made when the job was accepted).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        links: Vec<LinkResult>,
    },
    /// A further connection joined its job ([`ToReceiver::Join`]): data streams may follow.
    Joined {
        /// This connection's number within the job.
        connection: u16,
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
    /// A bulk stream of a job over several connections broke with its connection (lost to
    /// the path: a timeout or a reset): the sender continues it on another connection, a
    /// stream whose header names the stream, offset `received` and attempt `attempt` (feature
    /// [`feature::BULK_MOVES`](super::feature::BULK_MOVES)). Said again after a move of the
    /// control channel; the sender acts on each attempt once.
    BulkLost {
        /// The bulk stream's number.
        stream: u32,
        /// Payload bytes of the stream the receiver has, all its attempts together.
        received: u64,
        /// How many times the stream was lost so far (1 the first time).
        attempt: u16,
    },
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

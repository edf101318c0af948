//! Messages to the receiver on the control channel: the hello, then the sender's requests
//! and verdicts while the job runs.

use serde::{Deserialize, Serialize};

use super::job::Job;

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
        /// The sender fixed its window (`-w SIZE`): the receiver grants `window` at once, as
        /// nuttcp's `-w` sets both ends, instead of growing its own towards it (`-w auto`).
        /// Absent (false) from older senders.
        #[serde(default, skip_serializing_if = "is_false")]
        fixed_window: bool,
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
        /// The job travels over several connections (`--connections`, QUIC only): how many
        /// and how files are cut into ranges. Absent: one connection. A receiver that does
        /// not list [`feature::CONNECTIONS`] ignores it (the sender then uses one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        striping: Option<Striping>,
    },
    /// The first frame on a further connection of a job (instead of a hello): the session the
    /// job's welcome named, and this connection's number (1, 2, ...). Accepted only from the
    /// sender that holds the job (the same certificate, if it showed one).
    Join {
        /// The job's session, hex, from its welcome.
        session: String,
        /// This connection's number within the job (the first connection is 0).
        connection: u16,
        /// The token of the job's hello, if it had one: a join must show it too.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// The job's control channel continues on this stream: the stream a further connection
    /// joined on, after the job's first connection was lost (feature
    /// [`feature::TAKE_OVER`]). The sender then repeats what it had said of the files still
    /// without a verdict; the receiver repeats its verdicts and the restarts still pending.
    TakeOver {
        /// The connection whose join stream this is.
        connection: u16,
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

/// How a job is spread over several connections (`--connections`, `--chunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Striping {
    /// Connections in all, the first included (2 or more).
    pub connections: u16,
    /// Largest range of a file sent on one stream, bytes; a file with more to send than this
    /// travels as ranges ([`crate::protocol::DataKind::Range`]).
    pub chunk: u64,
    /// The sender continues a bulk stream whose connection was lost on another one when the
    /// receiver says [`ToSender::BulkLost`](crate::protocol::ToSender::BulkLost) (to
    /// receivers that list [`feature::BULK_MOVES`]; absent, false, from older senders).
    #[serde(default, skip_serializing_if = "is_false")]
    pub moves_bulk: bool,
    /// The sender cuts a file's last stretch into pieces when the receiver lists
    /// [`feature::TAIL_PIECES`], and the receiver then expects them (absent, false, from
    /// older senders: every range ends at a chunk multiple).
    #[serde(default, skip_serializing_if = "is_false")]
    pub tail_pieces: bool,
}

/// For `skip_serializing_if`: a false flag is left out of the message.
fn is_false(b: &bool) -> bool {
    !*b
}

//! The job protocol between hare-send and hare-recv (version [`PROTOCOL_VERSION`]).
//!
//! A *control channel* (the first bidirectional QUIC stream, or the first TCP connection)
//! carries length-prefixed JSON messages: a 4-byte big-endian length, then that many bytes of
//! one [`ToReceiver`] or [`ToSender`] object. Frames above [`MAX_FRAME`] are a protocol error,
//! so a peer cannot make the other side buffer more than that. Data travels on separate
//! channels (QUIC unidirectional streams, or more TCP connections) that start with a fixed
//! [`DataHeader`]. The full description is in `docs/TRANSFER.md`.

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
/// Magic that opens a TCP control connection (data connections open with `HARE`).
pub const TCP_CONTROL_MAGIC: &[u8; 4] = b"HCTL";

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
/// Most connections of one job (`--connections`): the further ones join at once, each
/// holding one of a receiver's pre-authentication places for its address until it is in
/// (32 by default).
pub const MAX_CONNECTIONS: u16 = 32;
/// Smallest `--chunk` a receiver takes: ranges smaller than this would cost more in stream
/// headers and bookkeeping than they gain.
pub const MIN_CHUNK: u64 = 64 << 10;
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

pub use crate::fail_code::FailCode;

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
    /// Jobs over several QUIC connections (`striping` in the hello, `join`, range streams).
    pub const CONNECTIONS: &str = "connections";
    /// A job over several connections survives the loss of its first one: its control
    /// channel moves to a further connection's join stream (`take-over`).
    pub const TAKE_OVER: &str = "take-over";
    /// A bulk stream of a job over several connections whose connection is lost to the path
    /// continues on another (`bulk-lost`, from senders whose striping says `moves_bulk`).
    pub const BULK_MOVES: &str = "bulk-moves";
    /// Ranges in a file's last stretch end at multiples of a piece, a fraction of a chunk
    /// (from senders whose striping says `tail_pieces`; module `cuts`).
    pub const TAIL_PIECES: &str = "tail-pieces";
}

/// A session id from its hex form in a welcome.
pub fn parse_session(hex: &str) -> crate::error::Result<[u8; 12]> {
    let mut out = [0u8; 12];
    if hex.len() != 24 || !hex.is_ascii() {
        return Err(crate::error::TransferError::Protocol(
            "bad session id".into(),
        ));
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| crate::error::TransferError::Protocol("bad session id".into()))?;
    }
    Ok(out)
}

mod cuts;
mod data;
mod frame;
mod job;
#[cfg(test)]
mod tests;
mod to_receiver;
mod to_sender;

pub use data::{DataHeader, DataKind};
pub use frame::{read_frame, write_frame};
pub use job::{FileEntry, Job, LinkEntry, LinkResult, SkipRule};
pub use to_receiver::{Reverse, Striping, ToReceiver, REVERSE_VERSION};
pub use to_sender::{FilePlan, FromRemoteSender, HaveRange, ToSender};

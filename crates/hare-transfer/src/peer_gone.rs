//! The words for a peer that went away in the middle of a job.
//!
//! Kernel TCP, either side: the kernel of a process that died closes its connections at once,
//! with a FIN, or with a reset when data sent to it was still unread there (a later write
//! then fails with EPIPE). Either is said the same way, `the PEER went away: ...; the PEER is
//! down or was stopped`, with the OS error once at the end ([`tcp_words`], [`closed`]).
//! hare-send's policy for using them is `sender/gone.rs`.
//!
//! QUIC, the receiver's side: the job notices a lost connection through the stream it was
//! reading (or the control stream it was writing), with quinn's reason inside the stream
//! error. Said as they were, these read "reading the control channel: connection lost"; the
//! receiver says that the sender is gone and why ([`in_receiver_words`]), as hare-send says
//! it of a receiver (`sender/liveness.rs`).

use std::io;

use quinn::{ConnectionError, ReadError, WriteError};

use crate::error::TransferError;
use crate::protocol::close;

/// The peer a side speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// hare-send, as hare-recv speaks of it.
    Sender,
    /// hare-recv, as hare-send speaks of it.
    Receiver,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Sender => "sender",
            Peer::Receiver => "receiver",
        }
    }
}

/// The peer's connection ended cleanly before the job did.
pub(crate) fn closed(peer: Peer) -> String {
    let p = peer.name();
    format!(
        "the {p} went away: it closed the connection before the job ended; the {p} is down or \
         was stopped"
    )
}

/// The words for a kernel-TCP error that says the peer is gone (a reset, an aborted
/// connection, a broken pipe, a connection cut in the middle of a message), else `None`.
pub(crate) fn tcp_words(peer: Peer, e: &io::Error) -> Option<String> {
    let p = peer.name();
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => Some(format!(
            "the {p} went away: its connection broke; the {p} is down or was stopped: {e}"
        )),
        io::ErrorKind::UnexpectedEof => Some(closed(peer)),
        _ => None,
    }
}

/// `e` as a lost connection in the receiver's words when it says the sender went away, else
/// unchanged.
pub(crate) fn in_receiver_words(e: TransferError) -> TransferError {
    match &e {
        TransferError::Io { cause, .. } => match words(cause) {
            Some(w) => TransferError::Connection(w),
            None => e,
        },
        _ => e,
    }
}

/// The receiver's words for a data stream's read error that means the sender is gone (the
/// connection was lost), else `None`.
pub(crate) fn of_read_error(e: &ReadError) -> Option<String> {
    match e {
        ReadError::ConnectionLost(c) => Some(lost(c)),
        _ => None,
    }
}

/// The words for an I/O error that means the sender is gone, else `None`.
pub(crate) fn words(cause: &io::Error) -> Option<String> {
    if let Some(inner) = cause.get_ref() {
        if let Some(r) = inner.downcast_ref::<ReadError>() {
            return match r {
                ReadError::ConnectionLost(c) => Some(lost(c)),
                ReadError::Reset(code) => Some(format!(
                    "the sender abandoned the stream (reset, code {code}) before the job ended"
                )),
                _ => None,
            };
        }
        if let Some(w) = inner.downcast_ref::<WriteError>() {
            return match w {
                WriteError::ConnectionLost(c) => Some(lost(c)),
                WriteError::Stopped(code) => Some(format!(
                    "the sender stopped reading the control stream (code {code}) before the job ended"
                )),
                _ => None,
            };
        }
        if let Some(c) = inner.downcast_ref::<ConnectionError>() {
            return Some(lost(c));
        }
    }
    // Kernel TCP (`--tcp`).
    tcp_words(Peer::Sender, cause)
}

/// How the QUIC connection to the sender ended, in the receiver's words.
fn lost(c: &ConnectionError) -> String {
    match c {
        ConnectionError::TimedOut => "the sender went silent: nothing heard from it within the \
             idle timeout; the path or the sender is down"
            .to_owned(),
        ConnectionError::ApplicationClosed(a) => {
            let what = match a.error_code.into_inner() {
                x if x == u64::from(close::INTERRUPTED) => "the sender was interrupted",
                x if x == u64::from(close::PROTOCOL) => "the sender reports a protocol error",
                x if x == u64::from(close::TIMEOUT) => "the sender timed the job out",
                _ => "the sender closed the connection before the job ended",
            };
            let reason = String::from_utf8_lossy(&a.reason);
            if reason.is_empty() {
                what.to_owned()
            } else {
                format!("{what}: {reason}")
            }
        }
        ConnectionError::Reset => "the sender reset the connection (it restarted?)".to_owned(),
        other => format!("the connection to the sender was lost: {other}"),
    }
}

/// Whether `conn` ended by the path or the transport (silence, a reset, a transport error),
/// not closed on purpose by either application: a job over several connections may then go
/// on over the others.
pub(crate) fn lost_to_path(conn: &quinn::Connection) -> bool {
    matches!(
        conn.close_reason(),
        Some(
            quinn::ConnectionError::TimedOut
                | quinn::ConnectionError::Reset
                | quinn::ConnectionError::TransportError(_)
                | quinn::ConnectionError::ConnectionClosed(_)
                | quinn::ConnectionError::CidsExhausted
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_of(e: impl Into<io::Error>) -> TransferError {
        TransferError::io("reading the control channel", e.into())
    }

    #[test]
    fn a_silent_sender_is_said_as_one() {
        let e = in_receiver_words(io_of(ReadError::ConnectionLost(ConnectionError::TimedOut)));
        assert_eq!(
            e.to_string(),
            "connection: the sender went silent: nothing heard from it within the idle \
             timeout; the path or the sender is down"
        );
        let reset = in_receiver_words(io_of(WriteError::ConnectionLost(ConnectionError::Reset)));
        assert_eq!(
            reset.to_string(),
            "connection: the sender reset the connection (it restarted?)"
        );
    }

    #[test]
    fn a_tcp_sender_that_went_away_is_said_with_the_os_cause_once() {
        let eof = in_receiver_words(io_of(io::Error::from(io::ErrorKind::UnexpectedEof)));
        assert_eq!(
            eof.to_string(),
            "connection: the sender went away: it closed the connection before the job ended; \
             the sender is down or was stopped"
        );
        let reset = in_receiver_words(io_of(io::Error::from_raw_os_error(104)));
        assert_eq!(
            reset.to_string(),
            "connection: the sender went away: its connection broke; the sender is down or was \
             stopped: Connection reset by peer (os error 104)"
        );
    }

    #[test]
    fn other_errors_are_kept_as_they_were() {
        let full = io_of(io::Error::from_raw_os_error(28));
        let text = full.to_string();
        assert_eq!(in_receiver_words(full).to_string(), text);
        let t = TransferError::Timeout("no data for 30 s".into());
        assert_eq!(
            in_receiver_words(t).to_string(),
            "timed out: no data for 30 s"
        );
    }
}

//! The receiver's words for a sender that went away in the middle of a job.
//!
//! The job notices it through the stream it was reading (or the control stream it was
//! writing): quinn reports the connection's end inside the stream error, and kernel TCP
//! reports an early end of the stream or a reset. Said as they were, these read "reading the
//! control channel: connection lost"; the user wants to know that the sender is gone and
//! why. hare-send says the same of a receiver that went away (`sender/gone.rs`,
//! `sender/liveness.rs`).

use std::io;

use quinn::{ConnectionError, ReadError, WriteError};

use crate::error::TransferError;
use crate::protocol::close;

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
    // Kernel TCP (`--tcp`): the sender's socket closed by its end (a killed process's
    // sockets are closed by its kernel) or reset.
    match cause.kind() {
        io::ErrorKind::UnexpectedEof => Some(
            "the sender went away: it closed the connection before the job ended; the sender \
             is down or was stopped"
                .to_owned(),
        ),
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => Some(format!(
            "the sender went away: its connection broke; the sender is down or was stopped: \
             {cause}"
        )),
        _ => None,
    }
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

//! Kernel TCP, reverse mode: how this side words a hare-recv that went away. QUIC hears
//! only silence from a peer that died and says so after the idle timeout (`the receiver went
//! silent: ...; the path or the receiver is down`, exit status 6). Over TCP the receiver's
//! kernel closes the connections of a process that died at once: a FIN, or a reset when data
//! this side sent was still unread there (so a write then fails with EPIPE). Either is said
//! the same way, `the receiver went away: ...; the receiver is down or was stopped`, with the
//! OS error once at the end, and ends the run as a lost connection (status 6), never as a
//! local I/O error.

use crate::error::TransferError;

/// The control connection ended cleanly before the job did.
pub(super) const CLOSED: &str =
    "the receiver went away: it closed the connection before the job ended; the receiver is \
     down or was stopped";

/// The words for an I/O error that says the receiver is gone (a reset, an aborted
/// connection, a broken pipe, a connection cut in the middle of a message), else `None`.
pub(super) fn words(e: &std::io::Error) -> Option<String> {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
            Some(format!(
                "the receiver went away: its connection broke; the receiver is down or was \
                 stopped: {e}"
            ))
        }
        ErrorKind::UnexpectedEof => Some(CLOSED.to_owned()),
        _ => None,
    }
}

/// The words for an engine error that says the receiver is gone, else `None`.
pub(super) fn of(e: &TransferError) -> Option<String> {
    match e {
        TransferError::Io { cause, .. } => words(cause),
        _ => None,
    }
}

/// `e` as a lost connection when it says the receiver is gone, else unchanged.
pub(super) fn mapped(e: TransferError) -> TransferError {
    match of(&e) {
        Some(w) => TransferError::Connection(w),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_or_a_broken_pipe_is_a_receiver_that_went_away_with_its_cause_once() {
        let reset = std::io::Error::from_raw_os_error(libc::ECONNRESET);
        let e = mapped(TransferError::io("reading the control channel", reset));
        assert_eq!(
            e.to_string(),
            "connection: the receiver went away: its connection broke; the receiver is down or \
             was stopped: Connection reset by peer (os error 104)"
        );
        assert_eq!(crate::exit::ExitKind::of(&e).code(), 6);
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(words(&eof).as_deref(), Some(CLOSED));
        // Anything else stays what it was.
        let other = std::io::Error::from_raw_os_error(libc::EIO);
        let e = mapped(TransferError::io("reading the control channel", other));
        assert!(matches!(e, TransferError::Io { .. }));
    }
}

//! Kernel TCP: when hare-send words a hare-recv that went away, forward (`--tcp`) and reverse
//! (`-r --tcp`) alike, in the words of `crate::peer_gone`. QUIC hears only silence from a
//! peer that died and says so after the idle timeout (`the receiver went silent: ...; the
//! path or the receiver is down`, exit status 6). Over TCP the receiver's kernel closes the
//! connections of a process that died at once, said as `the receiver went away: ...; the
//! receiver is down or was stopped` with the OS error once at the end, and the run ends as a
//! lost connection (status 6), never as a local I/O error.
//!
//! hare-recv's side of a reverse job runs the same control reader, run loop and data
//! writers, and its peer there is hare-send: it keeps its own words (`the receiver closed the
//! control channel`, `connection: TCP write: ...`), so these are asked for by [`Words`].

use crate::error::TransferError;
use crate::peer_gone::{self, Peer};

/// The control connection ended cleanly before the job did.
pub(super) fn closed() -> String {
    peer_gone::closed(Peer::Receiver)
}

/// Whether a connection that ended is said as the receiver going away (hare-send over kernel
/// TCP) or as it was (QUIC, whose connection gives its own reason, and hare-recv's side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Words {
    /// [`closed`] and [`words`].
    ReceiverGone,
    /// The error's own text.
    AsItWas,
}

impl Words {
    /// The words for hare-send over `tcp`.
    pub(super) fn for_sender(tcp: bool) -> Self {
        if tcp {
            Words::ReceiverGone
        } else {
            Words::AsItWas
        }
    }

    /// The control channel ended between two messages before the job did; `as_it_was` is
    /// what it is said as otherwise.
    pub(super) fn closed(self, as_it_was: &str) -> String {
        match self {
            Words::ReceiverGone => closed(),
            Words::AsItWas => as_it_was.to_owned(),
        }
    }

    /// `e`'s text: a receiver that went away, or (for any other error, or as it was) `e`'s
    /// own text, led by `context` when there is one.
    pub(super) fn error(self, e: &TransferError, context: &str) -> String {
        match (self, of(e)) {
            (Words::ReceiverGone, Some(w)) => w,
            _ if context.is_empty() => e.to_string(),
            _ => format!("{context}: {e}"),
        }
    }

    /// `e` as a lost connection when it says the receiver went away, else unchanged.
    pub(super) fn mapped(self, e: TransferError) -> TransferError {
        match self {
            Words::ReceiverGone => mapped(e),
            Words::AsItWas => e,
        }
    }
}

/// The words for an I/O error that says the receiver is gone, else `None`.
pub(super) fn words(e: &std::io::Error) -> Option<String> {
    peer_gone::tcp_words(Peer::Receiver, e)
}

/// The words for an engine error that says the receiver is gone, else `None`.
pub(super) fn of(e: &TransferError) -> Option<String> {
    match e {
        TransferError::Io { cause, .. } | TransferError::Broken { cause, .. } => words(cause),
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
        assert_eq!(words(&eof), Some(closed()));
        assert_eq!(
            closed(),
            "the receiver went away: it closed the connection before the job ended; the \
             receiver is down or was stopped"
        );
        // Anything else stays what it was.
        let other = std::io::Error::from_raw_os_error(libc::EIO);
        let e = mapped(TransferError::io("reading the control channel", other));
        assert!(matches!(e, TransferError::Io { .. }));
    }

    #[test]
    fn a_broken_data_write_is_said_as_the_words_ask() {
        let broken = || TransferError::Broken {
            what: "TCP write".into(),
            cause: std::io::Error::from_raw_os_error(libc::EPIPE),
        };
        // hare-recv's side keeps the writer's own text; both end the run as a lost connection.
        let e = Words::AsItWas.mapped(broken());
        assert_eq!(
            e.to_string(),
            "connection: TCP write: Broken pipe (os error 32)"
        );
        assert_eq!(crate::exit::ExitKind::of(&e).code(), 6);
        let e = Words::ReceiverGone.mapped(broken());
        assert_eq!(
            e.to_string(),
            "connection: the receiver went away: its connection broke; the receiver is down or \
             was stopped: Broken pipe (os error 32)"
        );
        assert_eq!(crate::exit::ExitKind::of(&e).code(), 6);
    }

    #[test]
    fn the_control_channel_ending_is_said_as_the_words_ask() {
        let said = "the receiver closed the control channel";
        assert_eq!(Words::AsItWas.closed(said), said);
        assert_eq!(Words::ReceiverGone.closed(said), closed());
        let reset = || {
            let cause = std::io::Error::from_raw_os_error(libc::ECONNRESET);
            TransferError::io("writing to the control channel", cause)
        };
        assert_eq!(
            Words::AsItWas.error(&reset(), "control channel"),
            "control channel: writing to the control channel: Connection reset by peer (os \
             error 104)"
        );
        assert_eq!(
            Words::ReceiverGone.error(&reset(), "control channel"),
            "the receiver went away: its connection broke; the receiver is down or was stopped: \
             Connection reset by peer (os error 104)"
        );
        // Not a peer that went away: said as it was, whatever the words.
        let bad = TransferError::Protocol("bad control message".into());
        assert_eq!(
            Words::ReceiverGone.error(&bad, ""),
            "protocol: bad control message"
        );
        assert_eq!(Words::for_sender(true), Words::ReceiverGone);
        assert_eq!(Words::for_sender(false), Words::AsItWas);
    }
}

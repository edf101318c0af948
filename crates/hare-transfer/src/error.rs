//! The engine's error type.

use std::path::PathBuf;

use thiserror::Error;

/// Everything that can make a transfer or a receiver fail.
#[derive(Debug, Error)]
pub enum TransferError {
    /// An I/O error with what was being done. The cause is part of the message and is
    /// deliberately not exposed as `source()` too: error reporters that print the chain
    /// (`anyhow`'s `{:#}`) would print it twice.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done (includes the path when there is one).
        what: String,
        /// The error.
        cause: std::io::Error,
    },
    /// The receiver's identity could not be made or loaded.
    #[error("identity in {dir}: {message}")]
    Identity {
        /// The state directory.
        dir: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The trust settings are unusable (bad pin, unreadable CA file, ...).
    #[error("trust: {0}")]
    Trust(String),
    /// The receiver presented a certificate whose fingerprint is not the pinned one.
    #[error(
        "certificate pin mismatch: expected sha256 {expected}, the receiver presented {actual}; \
             check --pin / --cert (the receiver prints its fingerprint when it starts)"
    )]
    PinMismatch {
        /// The pinned fingerprint.
        expected: String,
        /// The presented one.
        actual: String,
    },
    /// TLS or QUIC configuration was rejected.
    #[error("configuration: {0}")]
    Config(String),
    /// Could not connect or the connection failed.
    #[error("connection: {0}")]
    Connection(String),
    /// A kernel TCP connection broke under a read or a write: what was being done and the OS
    /// error, kept whole so that each side can say in its own words that its peer went away
    /// (hare-send: `sender::gone`). Shown, and ends the run, as [`TransferError::Connection`].
    #[error("connection: {what}: {cause}")]
    Broken {
        /// What was being done (`TCP write`).
        what: String,
        /// The error.
        cause: std::io::Error,
    },
    /// The peer broke the job protocol.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The receiver refused the job.
    #[error("receiver refused the job: {0}")]
    Refused(String),
    /// The receiver has no room for another job or connection right now.
    #[error("receiver busy: {0}")]
    Busy(String),
    /// The peer let a deadline pass (no hello, no data, a control stream it did not read).
    #[error("timed out: {0}")]
    Timeout(String),
    /// A file failed (verification, local error, refusal of the receiver).
    #[error("file {name}: {reason}")]
    File {
        /// The file's name in the job.
        name: String,
        /// Why.
        reason: String,
        /// The kind of failure.
        code: crate::fail_code::FailCode,
    },
    /// Some files of a job failed; the details were reported per file.
    #[error("{failed} of {total} files failed")]
    FilesFailed {
        /// How many failed.
        failed: usize,
        /// How many were in the job.
        total: usize,
    },
    /// The user interrupted the transfer (Ctrl-C) before it completed.
    #[error("interrupted before the transfer completed")]
    Interrupted,
    /// A bad argument.
    #[error("{0}")]
    Usage(String),
}

impl TransferError {
    /// An I/O error with context.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        TransferError::Io {
            what: what.into(),
            cause: source,
        }
    }
}

/// Shorthand for the engine's results.
pub type Result<T, E = TransferError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_say_their_cause_once() {
        let e = TransferError::io("reading x", std::io::Error::from_raw_os_error(2));
        assert_eq!(
            e.to_string(),
            "reading x: No such file or directory (os error 2)"
        );
        assert!(std::error::Error::source(&e).is_none());
    }
}

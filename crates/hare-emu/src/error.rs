//! Errors of the emulator library.

use std::io;

/// Everything that can stop the emulator from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A system call or file operation failed; `what` says which and on what.
    // The OS error is part of the message (not a `source`), so `{:#}` chains print it once.
    #[error("{what}: {error}")]
    Io {
        /// What was being done (e.g. "open /dev/net/tun").
        what: String,
        /// The OS error.
        error: io::Error,
    },
    /// Namespace mode needs privileges or devices this process does not have.
    #[error("namespace mode refused: {0}")]
    Refused(String),
    /// The path configuration is invalid.
    #[error(transparent)]
    Link(#[from] hare_link::LinkError),
    /// An external command (`ip ...`) failed.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status and standard error.
        message: String,
    },
    /// A configuration value that cannot work.
    #[error("invalid {field}: {message}")]
    Config {
        /// The offending field or option.
        field: String,
        /// Why.
        message: String,
    },
    /// A kernel module parameter could not be read, written or restored.
    #[error("tcp_cubic parameter {name}: {message}")]
    Param {
        /// The parameter name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The run was interrupted (Ctrl-C / SIGTERM).
    #[error("interrupted")]
    Interrupted,
}

impl EmuError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        EmuError::Io {
            what: what.into(),
            error: source,
        }
    }

    /// A configuration error.
    pub fn config(field: impl Into<String>, message: impl Into<String>) -> Self {
        EmuError::Config {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Result with [`EmuError`].
pub type Result<T, E = EmuError> = std::result::Result<T, E>;

/// The last OS error, wrapped with what was being done.
pub(crate) fn last_os(what: impl Into<String>) -> EmuError {
    EmuError::io(what, io::Error::last_os_error())
}

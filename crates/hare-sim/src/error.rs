//! What can go wrong in a simulated run.

use thiserror::Error;

use crate::output::SimOutput;

/// Which endpoint of the simulated connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The data sender (quinn client).
    Client,
    /// The data receiver (quinn server).
    Server,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Endpoint::Client => "client (sender)",
            Endpoint::Server => "server (receiver)",
        })
    }
}

/// A run that could not be set up or did not finish.
#[derive(Debug, Error)]
pub enum SimError {
    /// The controller string does not parse in hare-cc's grammar.
    #[error("bad controller spec `{spec}`: {message}")]
    Controller {
        /// The spec as given.
        spec: String,
        /// hare-cc's explanation.
        message: String,
    },
    /// A link configuration was rejected by hare-link.
    #[error("bad {direction} link config: {message}")]
    Link {
        /// `forward` or `reverse`.
        direction: &'static str,
        /// hare-link's explanation (names the field and value).
        message: String,
    },
    /// Some other setting is out of range.
    #[error("bad simulator setting `{field}` = {value}: expected {expected}")]
    Setting {
        /// The field of [`crate::SimConfig`].
        field: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// TLS identity or quinn configuration could not be built.
    #[error("setup failed: {0}")]
    Setup(String),
    /// The qlog directory or files could not be created.
    #[error("cannot write qlog file {path}: {error}")]
    Qlog {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The QUIC connection failed; the report up to that moment is in `partial`.
    #[error("{side} connection lost at t={t_s:.3} s: {reason}")]
    ConnectionLost {
        /// Which endpoint reported it first.
        side: Endpoint,
        /// quinn's reason (e.g. `INTERNAL_ERROR: too many gaps in stream buffer`).
        reason: String,
        /// Seconds since the run origin.
        t_s: f64,
        /// The report up to the failure (summary `completed = false`, an error event).
        partial: Box<SimOutput>,
    },
    /// Nothing moved for too long: no byte reached the receiving application for
    /// `Limits::stall_after` of virtual time, or no event was pending at all.
    #[error("simulation stalled at t={t_s:.3} s: {what}")]
    Stalled {
        /// Seconds since the run origin (negative: during the handshake).
        t_s: f64,
        /// What was observed.
        what: String,
        /// The report up to the stall.
        partial: Box<SimOutput>,
    },
}

impl SimError {
    /// The partial report of a run that started but did not finish, if any.
    pub fn partial(&self) -> Option<&SimOutput> {
        match self {
            SimError::ConnectionLost { partial, .. } | SimError::Stalled { partial, .. } => {
                Some(partial)
            }
            _ => None,
        }
    }
}

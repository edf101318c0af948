//! What a pull's receiver keeps to dial its sender again: a job over several connections gets
//! its further connections from the side that dials (module `dialled` dials and serves them).

use std::net::SocketAddr;
use std::sync::Arc;

use super::gate::Gate;
use super::{RecvOptions, Shared};

/// What dialling the sender again needs: a job over several connections (`-C N` on the
/// remote sender) gets its further connections from this side, which dials, while the
/// sender sends on them once they joined.
#[derive(Clone)]
pub(super) struct DialMore {
    /// The receiver's options.
    pub(super) opts: Arc<RecvOptions>,
    /// What the job's connections share (names, reorder budget, sessions).
    pub(super) shared: Shared,
    /// The admission gate.
    pub(super) gate: Gate,
    /// The endpoint that dialled the first connection.
    pub(super) endpoint: quinn::Endpoint,
    /// Its client configuration (the sender's pin, this side's certificate).
    pub(super) client: Arc<quinn::ClientConfig>,
    /// The sender's address.
    pub(super) addr: SocketAddr,
    /// The ports the sender listens on for connections 1, 2, ..., each with its own socket
    /// and thread (empty: they go to `addr` too, from `endpoint`).
    pub(super) further: Vec<u16>,
}

impl std::fmt::Debug for DialMore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DialMore({})", self.addr)
    }
}

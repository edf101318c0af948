//! The receiver (`hare-recv`): serves many senders at once over QUIC (or kernel TCP with
//! `--tcp`), with bounded connections, job sizes and memory.
//!
//! Defences against a misbehaving client: at most `max_conns` connections at a time (QUIC
//! connections beyond are refused before the handshake); before the Hello is accepted a QUIC
//! client may open only the control stream and no data stream; the Hello must arrive within
//! [`HELLO_TIMEOUT`] and fit [`crate::protocol::MAX_FRAME`]; the token is checked before
//! anything else; job sizes, durations and file counts are capped; the connection receive
//! window, which bounds what quinn buffers, is capped by `max_window`; bulk senders may not
//! send more than they announced; files may not grow past their announced size; and every
//! failure ends that connection only.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cc::QuicCc;
use crate::error::{Result, TransferError};
use crate::identity::{self, Fingerprint};
use crate::protocol::{MAX_FILES, MAX_TOKEN};
use crate::quic_config::Link;
use crate::report::OutputOptions;
use crate::stop::Stop;
use crate::tcp::{self, TcpOptions};

mod job;
mod quic;
mod tcp_listen;

use quic::serve_quic;
use tcp_listen::serve_tcp;

/// Time a client has to send its Hello after connecting.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a data channel has to send its header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to wait for a file's digest after its data ended.
pub const DIGEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Grace after a timed bulk job's announced duration before the receiver gives up on it.
pub const DURATION_GRACE: Duration = Duration::from_secs(30);
/// A job that receives no data for this long is ended (checked at each report tick).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest run of contiguous file data gathered before one positional write.
pub(crate) const COALESCE: usize = 1 << 20;
/// Default UDP / TCP port.
pub const DEFAULT_PORT: u16 = 5210;

/// Limits the receiver enforces on each client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Connections served at once.
    pub max_conns: usize,
    /// Largest bulk size or total file size of one job, bytes.
    pub max_job_bytes: u64,
    /// Longest timed bulk job, seconds.
    pub max_seconds: f64,
    /// Most files in one job.
    pub max_files: usize,
    /// Largest connection receive window granted to a sender, bytes (bounds the memory one
    /// connection can pin in quinn's buffers).
    pub max_window: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_conns: 16,
            max_job_bytes: 1 << 40,
            max_seconds: 3600.0,
            max_files: MAX_FILES,
            max_window: 256 << 20,
        }
    }
}

/// Everything `hare-recv` can be told.
#[derive(Debug, Clone)]
pub struct RecvOptions {
    /// Address to listen on (UDP for QUIC, TCP with `tcp`).
    pub listen: SocketAddr,
    /// State directory of the identity.
    pub identity_dir: PathBuf,
    /// Extra names for a newly made certificate (besides `localhost`).
    pub names: Vec<String>,
    /// Token every client must present.
    pub token: Option<String>,
    /// Directory that receives files; without it file jobs are refused.
    pub dir: Option<PathBuf>,
    /// Receive windows (`-w`) and MTU.
    pub link: Link,
    /// The receiver's own controller (it sends only control data and ACKs).
    pub cc: QuicCc,
    /// `--qlog DIR`.
    pub qlog: Option<PathBuf>,
    /// Report interval.
    pub interval: Duration,
    /// Limits per client.
    pub limits: Limits,
    /// Serve one job, then exit with its result.
    pub one_shot: bool,
    /// Output.
    pub output: OutputOptions,
    /// Kernel TCP mode.
    pub tcp: Option<TcpOptions>,
}

enum Listener {
    Quic {
        endpoint: quinn::Endpoint,
        crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
    },
    Tcp(tokio::net::TcpListener),
}

/// A bound receiver.
pub struct Receiver {
    opts: Arc<RecvOptions>,
    fingerprint: Option<Fingerprint>,
    created_identity: bool,
    listener: Listener,
    local: SocketAddr,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("local", &self.local)
            .finish()
    }
}

impl Receiver {
    /// Load or make the identity and bind. Must run inside a tokio runtime.
    pub fn bind(opts: RecvOptions) -> Result<Self> {
        opts.link.validate()?;
        if let Some(t) = &opts.token {
            if t.is_empty() || t.len() > MAX_TOKEN {
                return Err(TransferError::Usage(format!(
                    "--token must be 1 to {MAX_TOKEN} bytes"
                )));
            }
        }
        if let Some(d) = &opts.dir {
            if !d.is_dir() {
                return Err(TransferError::Usage(format!(
                    "--dir {}: not a directory",
                    d.display()
                )));
            }
        }
        let (listener, fingerprint, created) = match &opts.tcp {
            Some(t) => (Listener::Tcp(tcp::listen(opts.listen, t)?), None, false),
            None => {
                let id = identity::load_or_create(&opts.identity_dir, &opts.names)?;
                let crypto = crate::trust::server_crypto(&id)?;
                let crypto = Arc::new(
                    quinn::crypto::rustls::QuicServerConfig::try_from(crypto)
                        .map_err(|e| TransferError::Config(e.to_string()))?,
                );
                let sock = crate::socket::bind_udp(opts.listen)?;
                let endpoint = crate::socket::endpoint(
                    sock,
                    opts.link.endpoint_config()?,
                    Some(quinn::ServerConfig::with_crypto(crypto.clone())),
                    opts.link.max_udp_payload(),
                )?;
                (
                    Listener::Quic { endpoint, crypto },
                    Some(id.fingerprint),
                    id.created,
                )
            }
        };
        let local = match &listener {
            Listener::Quic { endpoint, .. } => endpoint.local_addr(),
            Listener::Tcp(l) => l.local_addr(),
        }
        .map_err(|e| TransferError::io("reading the local address", e))?;
        Ok(Self {
            opts: Arc::new(opts),
            fingerprint,
            created_identity: created,
            listener,
            local,
        })
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// SHA-256 fingerprint of the certificate (QUIC mode).
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.fingerprint
    }

    /// True when this start made a new identity.
    pub fn created_identity(&self) -> bool {
        self.created_identity
    }

    /// Serve until `stop` fires (or after one job with `one_shot`).
    pub async fn run(self, stop: Stop) -> Result<()> {
        let Receiver { opts, listener, .. } = self;
        match listener {
            Listener::Quic { endpoint, crypto } => serve_quic(opts, endpoint, crypto, stop).await,
            Listener::Tcp(l) => serve_tcp(opts, l, stop).await,
        }
    }
}

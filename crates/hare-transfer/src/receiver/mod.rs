//! The receiver (`hare-recv`): serves many senders at once over QUIC (or kernel TCP with
//! `--tcp`), with bounded connections, job sizes and memory.
//!
//! Defences against a misbehaving client: connections that have not been accepted as a job
//! hold no job slot, only one of a small separate pre-auth budget (global and per peer
//! address), and must deliver their Hello within one deadline ([`HELLO_TIMEOUT`]) from their
//! first packet; before the Hello is accepted a QUIC client may open only the control stream
//! and no data stream; the Hello must fit [`crate::protocol::MAX_FRAME`]; the token is checked
//! before anything else; a job slot (`max_conns`, and at most `max_conns_per_peer` for one
//! address) is taken only then; every control message to a peer is written within
//! [`WRITE_TIMEOUT`] (a refusal within [`REFUSE_TIMEOUT`], then the connection is closed
//! regardless); progress requests are answered at most [`PROGRESS_RATE`] per second; job sizes, durations and file counts are capped; the connection receive
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

mod accept;
mod ctx;
mod dest;
mod dialled;
mod gate;
mod job;
mod joins;
mod redial;
mod sessions;
// Peer text for the log (also the sender's), below both sides.
pub(crate) use crate::peer_log as logs;
// The protocol's port and deadlines, defined with the protocol (the sender uses them too).
pub use crate::protocol::DEFAULT_PORT;
use crate::protocol::{DURATION_GRACE, HEADER_TIMEOUT};
mod quic;
mod reverse;
mod said;
mod streams;
mod tcp_listen;

pub use dialled::receive_from;
use quic::serve_quic;

/// What all the jobs of one receiver share: the final names being received, and the bound on
/// out-of-order data over all of them.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    pub(super) names: crate::recvfile::FinalNames,
    pub(super) reorder: Arc<crate::recvfile::ReorderBudget>,
    pub(super) jobs: JobCount,
    pub(super) joins: sessions::Joins,
}

/// The jobs of a receiver: how many run now (their lines are tagged while more than one
/// does) and the number the next one gets.
#[derive(Debug, Clone, Default)]
pub(super) struct JobCount {
    pub(super) running: Arc<std::sync::atomic::AtomicUsize>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl JobCount {
    /// A new job's number (1, 2, ...) and its place among the running ones, given back when
    /// the guard is dropped.
    pub(super) fn start(&self) -> (u64, RunningJob) {
        use std::sync::atomic::Ordering;
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.running.fetch_add(1, Ordering::Relaxed);
        (id, RunningJob(self.running.clone()))
    }
}

/// One running job, counted until dropped.
#[derive(Debug)]
pub(super) struct RunningJob(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for RunningJob {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Shared {
    fn new(limits: &Limits) -> Self {
        Self {
            names: crate::recvfile::FinalNames::default(),
            reorder: Arc::new(crate::recvfile::ReorderBudget::new(
                limits.max_reorder_ranges,
                limits.max_reorder_bytes,
            )),
            jobs: JobCount::default(),
            joins: sessions::Joins::default(),
        }
    }
}
use tcp_listen::serve_tcp;

/// Time a client has, from its first packet, to complete the handshake, open the control
/// stream and send its Hello (one deadline for all three).
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to wait for a file's digest after its data ended.
pub(crate) const DIGEST_TIMEOUT: Duration = Duration::from_secs(60);
use crate::protocol::STALL_TIMEOUT;
/// A job whose data has started must move at least this much in every
/// [`MIN_PROGRESS_WINDOW`] (about 8.7 kbit/s), else it loses its slot: without it, a sender
/// trickling one byte every few seconds keeps a job slot for as long as its job may last.
pub(crate) const MIN_PROGRESS: u64 = 64 << 10;
/// The window over which [`MIN_PROGRESS`] is measured.
pub(crate) const MIN_PROGRESS_WINDOW: Duration = Duration::from_secs(60);
/// Longest a single control message to a sender may take to be written (a sender that does
/// not read its control stream is dropped after this).
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a refusal may take to be written; the connection is closed regardless.
pub const REFUSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Progress requests answered per second per connection (a sender asks once per `-i`, at
/// most 10 per second); requests beyond this rate, after a burst of twice as many, are not
/// answered.
pub(crate) const PROGRESS_RATE: u32 = 20;
/// Largest run of contiguous file data gathered before one positional write.
pub(crate) const COALESCE: usize = 1 << 20;

/// Limits the receiver enforces on each client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Jobs served at once (connections whose Hello was accepted).
    pub max_conns: usize,
    /// Jobs served at once for one peer address.
    pub max_conns_per_peer: usize,
    /// Connections that have not yet been accepted as a job (handshake, Hello), at once. They
    /// hold no job slot and must pass [`Limits::hello_timeout`].
    pub max_preauth: usize,
    /// Not-yet-accepted connections at once from one peer address.
    pub max_preauth_per_peer: usize,
    /// Largest bulk size or total file size of one job, bytes.
    pub max_job_bytes: u64,
    /// Longest timed bulk job, seconds.
    pub max_seconds: f64,
    /// Most files in one job.
    pub max_files: usize,
    /// Largest connection receive window granted to a sender, bytes (bounds the memory one
    /// connection can pin in quinn's buffers).
    pub max_window: u64,
    /// Deadline from a connection's first packet to its Hello.
    pub hello_timeout: Duration,
    /// Deadline for writing one control message to the sender.
    pub write_timeout: Duration,
    /// A job that receives no data for this long is ended.
    pub stall_timeout: Duration,
    /// Out-of-order ranges held at once over all jobs (`--reorder-ranges`; each file has its
    /// own bound too, see `recvfile::EarlyLimits`).
    pub max_reorder_ranges: u64,
    /// Bytes held ahead of their files' in-order frontiers at once over all jobs
    /// (`--reorder-bytes`).
    pub max_reorder_bytes: u64,
    /// A job must move at least this many bytes in every [`Limits::min_progress_window`]
    /// once its data has started (`--min-rate`; 0: no such rule), or it loses its slot.
    pub min_progress: u64,
    /// The window of [`Limits::min_progress`].
    pub min_progress_window: Duration,
    /// Refuse links whose target is absolute or climbs out of the job's tree (`--safe-links`,
    /// as rsync's option on the receiving side); by default links keep their target text.
    pub safe_links: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_conns: 16,
            max_conns_per_peer: 8,
            max_preauth: 64,
            max_preauth_per_peer: 32,
            max_job_bytes: 1 << 40,
            max_seconds: 3600.0,
            max_files: MAX_FILES,
            max_window: crate::quic_config::DEFAULT_MAX_WINDOW,
            hello_timeout: HELLO_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            stall_timeout: STALL_TIMEOUT,
            max_reorder_ranges: crate::recvfile::ReorderBudget::DEFAULT_RANGES,
            max_reorder_bytes: crate::recvfile::ReorderBudget::DEFAULT_BYTES,
            min_progress: MIN_PROGRESS,
            min_progress_window: MIN_PROGRESS_WINDOW,
            safe_links: false,
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
    /// The token that authorises a sender (`--token`); without [`RecvOptions::allow`], every
    /// sender must present it.
    pub token: Option<String>,
    /// Sender certificate fingerprints that authorise a sender (`--allow`, the allow-list
    /// file); QUIC only.
    pub allow: Vec<Fingerprint>,
    /// Accept file jobs with no authorisation configured (`--open`); each such job is logged
    /// with a warning.
    pub open: bool,
    /// Directory that receives files; without it file jobs are refused.
    pub dir: Option<PathBuf>,
    /// Whom kept partial files belong to when it is not the sender's certificate (a pull
    /// through ssh names the ssh login, so that a rerun, whose remote sender has a new
    /// certificate, resumes them).
    pub partial_owner: Option<String>,
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

/// A receiver that writes files must know who may write them: a fingerprint allow list or a
/// token, or an explicit `--open`. Kernel TCP carries no TLS, so no certificate can be
/// checked and a token would travel in clear: files over `--tcp` need `--open`.
fn check_file_authorisation(opts: &RecvOptions) -> Result<()> {
    if opts.dir.is_none() || opts.open {
        return Ok(());
    }
    if opts.tcp.is_some() {
        return Err(TransferError::Usage(
            "--dir with --tcp: kernel TCP has no TLS, so senders cannot be authenticated and a \
             token would travel in clear; add --open to accept files from anyone who can reach \
             the port, or receive files over QUIC"
                .into(),
        ));
    }
    if opts.allow.is_empty() && opts.token.is_none() {
        return Err(TransferError::Usage(
            "--dir needs to know who may write files: allow senders by certificate fingerprint \
             (--allow SHA256, as `hare-send id` prints it, or one per line in the allow-list \
             file), or require --token; --open accepts anyone who can reach the port"
                .into(),
        ));
    }
    Ok(())
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
        check_file_authorisation(&opts)?;
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

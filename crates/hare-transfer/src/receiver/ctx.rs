//! What one job's tasks share: the connection and the receiver's state a job reads
//! ([`JobCtx`]), whose the job's files are ([`Whose`]), and, over QUIC, the connection's
//! controller and qlog for a reverse job ([`SendingCc`]). Below the job, accept, reverse and
//! quic modules, so that none of them imports another to reach these.

use std::net::SocketAddr;
use std::sync::Arc;

use hare_report::Transport;
use tokio::sync::mpsc;

use crate::channels::DataIn;
use crate::identity::Fingerprint;
use crate::protocol::DataHeader;
use crate::recvfile::{FinalNames, Owner, ReorderBudget};

use super::gate::{Gate, Ticket};
use super::RecvOptions;

/// The qlog of a connection, shared by the connection's task and a reverse job on it.
pub(super) type QlogSlot = std::sync::Arc<std::sync::Mutex<Option<crate::qlog::ConnectionQlog>>>;

/// QUIC: what a reverse job needs of the connection's controller.
#[derive(Clone)]
pub(super) struct SendingCc {
    /// The observer the controller reports to.
    pub(super) observer: hare_cc::Observer,
    /// When the controller was built.
    pub(super) epoch: std::time::Instant,
    /// The connection's qlog, whose controller sidecar the job writes while it samples.
    pub(super) qlog: QlogSlot,
}

/// One job's view of its connection and of the receiver it runs in.
pub(super) struct JobCtx {
    pub(super) opts: Arc<RecvOptions>,
    pub(super) peer: SocketAddr,
    pub(super) transport: Transport,
    pub(super) conn: Option<quinn::Connection>,
    /// QUIC: where accepted data streams go (the acceptor starts after the Welcome).
    pub(super) data_tx: Option<mpsc::Sender<(DataHeader, DataIn)>>,
    pub(super) session: Option<[u8; 12]>,
    /// Final names being received by this receiver's jobs.
    pub(super) names: FinalNames,
    /// Out-of-order data held by all this receiver's jobs.
    pub(super) reorder: Arc<ReorderBudget>,
    /// The receiver's running jobs (for tagging lines while they overlap).
    pub(super) jobs: super::JobCount,
    /// The sessions of running jobs that further connections may join.
    pub(super) joins: super::sessions::Joins,
    /// Set when this connection joined another's job instead of holding one (a one-shot
    /// receiver keeps serving until its job, not a join, ends).
    pub(super) joined: Arc<std::sync::atomic::AtomicBool>,
    /// Admission: the pre-auth place this connection holds until its job is admitted.
    pub(super) gate: Gate,
    pub(super) preauth: Option<Ticket>,
    /// When the Hello must have arrived.
    pub(super) hello_deadline: tokio::time::Instant,
    /// The fingerprint of the certificate the sender presented (QUIC, mutual TLS).
    pub(super) peer_cert: Option<Fingerprint>,
    /// QUIC: this connection's controller (its observer, when it was built) and qlog, for
    /// reverse mode, where this side sends and reports what the controller decided.
    pub(super) controller: Option<SendingCc>,
    /// A pull: this side dialled the sender, and dials the further connections of a job
    /// over several connections too.
    pub(super) dial_more: Option<super::redial::DialMore>,
}

/// Whose a job's files are, and the receiver-wide budget they share.
pub(super) struct Whose {
    pub(super) owner: Owner,
    pub(super) reorder: Arc<ReorderBudget>,
}

impl Whose {
    /// A job's owner: the allowed certificate that let it in, else the token of a token-only
    /// receiver, else whatever certificate the sender showed.
    pub(super) fn of(ctx: &JobCtx) -> Self {
        let allowed = ctx.peer_cert.filter(|fp| ctx.opts.allow.contains(fp));
        let token = ctx.opts.token.as_deref();
        let owner = match &ctx.opts.partial_owner {
            Some(name) => Owner::named(name),
            None => Owner::of_job(allowed.as_ref(), token, ctx.peer_cert.as_ref()),
        };
        Self {
            owner,
            reorder: ctx.reorder.clone(),
        }
    }
}

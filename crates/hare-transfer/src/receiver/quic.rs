//! Serving QUIC: one fresh server configuration (controller observer, qlog) per connection,
//! no data streams before the job is accepted, one deadline from the first packet to the
//! Hello, and a close code for every way a connection ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hare_cc::Observer;
use hare_report::Transport;
use quinn::VarInt;
use tokio::sync::mpsc;

use super::Shared;
use crate::error::{Result, TransferError};
use crate::protocol::close;
use crate::qlog::ConnectionQlog;
use crate::quic_config::transport_with;
use crate::stop::Stop;

use super::ctx::{JobCtx, QlogSlot, SendingCc};
use super::gate::{Gate, Ticket};
use super::job::run_job;
use super::logs;
use super::said::{log_end, said_scope};
use super::{RecvOptions, REFUSE_TIMEOUT};

/// How long a finished job waits for the sender to close after the last verdict.
const DONE_LINGER: Duration = Duration::from_secs(5);

pub(super) async fn serve_quic(
    opts: Arc<RecvOptions>,
    endpoint: quinn::Endpoint,
    crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
    mut stop: Stop,
) -> Result<()> {
    let gate = Gate::new(opts.limits);
    let names = Shared::new(&opts.limits);
    // One-shot: the connection that may be the one job, while it runs.
    let mut first_job: Option<tokio::sync::oneshot::Receiver<Option<Result<()>>>> = None;
    let result = loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => break Ok(()),
            },
            r = async { first_job.as_mut()?.await.ok() }, if first_job.is_some() => match r {
                Some(Some(r)) => break r,
                // A join, or a task that ended without a word: wait for the next one.
                _ => {
                    first_job = None;
                    continue;
                }
            },
            _ = stop.stopped() => break if first_job.is_some() {
                Err(TransferError::Interrupted)
            } else {
                Ok(())
            },
        };
        let peer = incoming.remote_address();
        if gate.crowded() && !incoming.remote_address_validated() && incoming.may_retry() {
            // Costs a legitimate client one round trip; a spoofed source never answers.
            let _ = incoming.retry();
            continue;
        }
        let ticket = match gate.preauth(peer.ip()) {
            Ok(t) => t,
            Err(why) => {
                // Before the handshake only a transport-level refusal is cheap.
                let text = logs::line(peer, "refused before the handshake", &why);
                logs::limited("busy", &text, |l| tracing::warn!("{l}"));
                incoming.refuse();
                continue;
            }
        };
        let joined = Arc::new(AtomicBool::new(false));
        let fut = quic_connection(
            opts.clone(),
            crypto.clone(),
            incoming,
            (gate.clone(), ticket),
            (names.clone(), joined.clone()),
        );
        if opts.one_shot && first_job.is_none() {
            // One job: served here while the loop keeps accepting the connections that
            // join it; a join is not that job.
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(said_scope(async move {
                let r = fut.await;
                if joined.load(Ordering::Relaxed) {
                    log_end(peer, &r);
                    let _ = tx.send(None);
                } else {
                    let _ = tx.send(Some(r));
                }
            }));
            first_job = Some(rx);
            continue;
        }
        tokio::spawn(said_scope(async move {
            let r = fut.await;
            log_end(peer, &r);
        }));
    };
    endpoint.close(VarInt::from_u32(close::BUSY), b"receiver shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    result
}

/// The application close code and reason for a job's result.
fn close_for(r: &Result<()>) -> (u32, String) {
    let code = match r {
        Ok(()) | Err(TransferError::FilesFailed { .. }) => close::DONE,
        Err(TransferError::Refused(_)) => close::REFUSED,
        Err(TransferError::Busy(_) | TransferError::Interrupted) => close::BUSY,
        Err(TransferError::Timeout(_)) => close::TIMEOUT,
        Err(
            TransferError::Protocol(_)
            | TransferError::Connection(_)
            | TransferError::Broken { .. },
        ) => close::PROTOCOL,
        Err(_) => close::ABORTED,
    };
    let reason = match r {
        Ok(()) => "done".to_owned(),
        Err(TransferError::Interrupted) => "receiver shutting down".to_owned(),
        Err(TransferError::Refused(r)) => r.clone(),
        Err(e) => e.to_string(),
    };
    // A close frame must fit one packet.
    (code, logs::clean(&reason, 200))
}

async fn quic_connection(
    opts: Arc<RecvOptions>,
    crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
    incoming: quinn::Incoming,
    (gate, mut ticket): (Gate, Ticket),
    (names, joined): (Shared, Arc<AtomicBool>),
) -> Result<()> {
    let peer = incoming.remote_address();
    // The pre-auth place may be taken for another address until the hello is accepted.
    let evicted = ticket.evicted();
    tokio::pin!(evicted);
    let hello_deadline = tokio::time::Instant::now() + opts.limits.hello_timeout;
    let observer = Observer::new();
    // The controller is built for the connection from here on (for reverse mode's reports).
    let cc_epoch = std::time::Instant::now();
    let mut qlog = match &opts.qlog {
        Some(dir) => Some(ConnectionQlog::create(
            dir,
            "receiver",
            format!("hare-recv from {peer}"),
        )?),
        None => None,
    };
    let mut transport = transport_with(&opts.link, opts.cc.factory(&observer));
    // Nothing but the control stream until the Hello is accepted.
    transport
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_concurrent_bidi_streams(VarInt::from_u32(1));
    if let Some(q) = qlog.as_mut() {
        transport.qlog_stream(q.stream.take());
    }
    // Shared with a reverse job, whose sampler reads the controller's events as it sends.
    let qlog: QlogSlot = Arc::new(std::sync::Mutex::new(qlog));
    let mut sc = quinn::ServerConfig::with_crypto(crypto);
    sc.transport_config(Arc::new(transport));
    let secs = opts.limits.hello_timeout.as_secs();
    let connecting = incoming
        .accept_with(Arc::new(sc))
        .map_err(|e| TransferError::Connection(format!("handshake: {e}")))?;
    let handshake = tokio::select! {
        h = tokio::time::timeout_at(hello_deadline, connecting) => h,
        _ = &mut evicted => return Err(TransferError::Busy(super::gate::EVICTED.into())),
    };
    let conn = handshake
        .map_err(|_| {
            TransferError::Timeout(format!(
                "no hello within {secs} s (handshake not completed)"
            ))
        })?
        .map_err(|e| TransferError::Connection(format!("handshake: {e}")))?;
    let ctx = JobCtx {
        opts: opts.clone(),
        peer,
        transport: Transport::Quic,
        conn: Some(conn.clone()),
        data_tx: None,
        session: None,
        names: names.names,
        reorder: names.reorder,
        jobs: names.jobs,
        joins: names.joins,
        joined,
        gate,
        preauth: Some(ticket),
        hello_deadline,
        peer_cert: crate::trust::peer_fingerprint(&conn),
        controller: Some(SendingCc {
            observer: observer.clone(),
            epoch: cc_epoch,
            qlog: qlog.clone(),
        }),
        dial_more: None,
    };
    let res = tokio::select! {
        r = serve_connection(ctx, &conn) => r,
        _ = &mut evicted => Err(TransferError::Busy(super::gate::EVICTED.into())),
    };
    if let Some(q) = qlog.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        q.cc_events(
            &observer
                .drain_all()
                .into_iter()
                .map(|(_, e)| e)
                .collect::<Vec<_>>(),
        );
    }
    close_after(&conn, &res).await;
    res
}

/// Close `conn` with the code and reason of the job's result `res`. After a verdict or a
/// refusal the sender closes once it has read it (closing first would discard what is still
/// in flight), so this side waits for that, bounded; a connection whose pre-auth place was
/// taken was told nothing to read and goes at once.
pub(super) async fn close_after(conn: &quinn::Connection, res: &Result<()>) {
    let (code, reason) = close_for(res);
    let evicted = matches!(res, Err(TransferError::Busy(r)) if r == super::gate::EVICTED);
    let linger = match code {
        _ if evicted => None,
        close::DONE => Some(DONE_LINGER),
        close::REFUSED | close::BUSY => Some(REFUSE_TIMEOUT),
        _ => None,
    };
    if let Some(l) = linger {
        let _ = tokio::time::timeout(l, conn.closed()).await;
    }
    // A connection that ended already (timed out, reset) is left alone: closing it would
    // replace its reason with a local close for the streams still to notice the end (quinn
    // keeps the last reason), and a bulk stream of a job over several connections is
    // continued only when its connection was lost to the path.
    if conn.close_reason().is_none() {
        conn.close(VarInt::from_u32(code), reason.as_bytes());
    }
}

pub(super) async fn serve_connection(mut ctx: JobCtx, conn: &quinn::Connection) -> Result<()> {
    let secs = ctx.opts.limits.hello_timeout.as_secs();
    let (send, recv) = tokio::time::timeout_at(ctx.hello_deadline, conn.accept_bi())
        .await
        .map_err(|_| TransferError::Timeout(format!("no hello within {secs} s")))?
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let (data_tx, data_rx) = mpsc::channel(64);
    ctx.data_tx = Some(data_tx);
    run_job(ctx, Box::new(recv), Box::new(send), data_rx).await
}

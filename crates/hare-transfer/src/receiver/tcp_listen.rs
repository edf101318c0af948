//! Serving kernel TCP (`--tcp`): control connections start with `HCTL`, data connections
//! with a `HARE` header naming their session.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hare_report::Transport;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, Semaphore};

use super::Shared;
use crate::channels::{DataIn, TCP_CONTROL_MAGIC};
use crate::error::Result;
use crate::protocol::{write_frame, DataHeader, ToSender, MAX_STREAMS};
use crate::stop::Stop;

use super::ctx::JobCtx;
use super::gate::Gate;
use super::job::run_job;
use super::logs;
use super::said::{log_end, said_scope};
use super::{RecvOptions, HEADER_TIMEOUT, REFUSE_TIMEOUT};

type Sessions = Arc<Mutex<HashMap<[u8; 12], mpsc::Sender<(DataHeader, DataIn)>>>>;

pub(super) async fn serve_tcp(
    opts: Arc<RecvOptions>,
    listener: tokio::net::TcpListener,
    mut stop: Stop,
) -> Result<()> {
    let gate = Gate::new(opts.limits);
    // Unclassified sockets are bounded too, so that idle connects cannot pile up.
    let pending = Arc::new(Semaphore::new(
        opts.limits.max_conns.max(1) * (MAX_STREAMS as usize + 1),
    ));
    let sessions: Sessions = Arc::default();
    let names = Shared::new(&opts.limits);
    let (done_tx, mut done_rx) = mpsc::channel::<Result<()>>(1);
    loop {
        let (sock, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => { tracing::warn!("accept: {e}"); continue; }
            },
            r = done_rx.recv() => return r.unwrap_or(Ok(())),
            _ = stop.stopped() => return Ok(()),
        };
        let Ok(p) = pending.clone().try_acquire_owned() else {
            continue;
        };
        let (opts, gate, sessions, done_tx, names) = (
            opts.clone(),
            gate.clone(),
            sessions.clone(),
            done_tx.clone(),
            names.clone(),
        );
        tokio::spawn(said_scope(async move {
            let r = tcp_socket(opts.clone(), sock, peer, gate, sessions, names).await;
            drop(p);
            if let Some(r) = r {
                if opts.one_shot {
                    let _ = done_tx.send(r).await;
                } else {
                    log_end(peer, &r);
                }
            }
        }));
    }
}

/// Classify one accepted TCP socket; `Some` with the job result for control connections.
async fn tcp_socket(
    opts: Arc<RecvOptions>,
    mut sock: tokio::net::TcpStream,
    peer: SocketAddr,
    gate: Gate,
    sessions: Sessions,
    names: Shared,
) -> Option<Result<()>> {
    let hello_deadline = tokio::time::Instant::now() + opts.limits.hello_timeout;
    let mut magic = [0u8; 4];
    if !matches!(
        tokio::time::timeout(HEADER_TIMEOUT, sock.read_exact(&mut magic)).await,
        Ok(Ok(_))
    ) {
        return None;
    }
    if &magic == TCP_CONTROL_MAGIC {
        let mut ticket = match gate.preauth(peer.ip()) {
            Ok(t) => t,
            Err(why) => {
                let (_, mut w) = sock.into_split();
                let msg = ToSender::Refuse {
                    reason: reason_text(&why),
                };
                let refuse = write_frame(&mut w, &msg);
                let _ = tokio::time::timeout(REFUSE_TIMEOUT, refuse).await;
                // Not a job: logged, and a one-shot receiver keeps waiting for its job.
                let text = logs::line(peer, "refused", &reason_text(&why));
                logs::limited("busy", &text, |l| tracing::warn!("{l}"));
                return None;
            }
        };
        let ticket_evicted = ticket.evicted();
        let id: [u8; 12] = rand::random();
        let (data_tx, data_rx) = mpsc::channel(64);
        lock(&sessions).insert(id, data_tx);
        let (r, w) = sock.into_split();
        let ctx = JobCtx {
            opts,
            peer,
            transport: Transport::Tcp,
            conn: None,
            data_tx: None,
            session: Some(id),
            names: names.names,
            reorder: names.reorder,
            jobs: names.jobs,
            joins: names.joins,
            joined: Default::default(),
            gate,
            preauth: Some(ticket),
            hello_deadline,
            peer_cert: None,
            controller: None,
            dial_more: None,
        };
        let evicted = ticket_evicted;
        let res = tokio::select! {
            r = run_job(ctx, Box::new(r), Box::new(w), data_rx) => r,
            _ = evicted => Err(crate::error::TransferError::Busy(super::gate::EVICTED.into())),
        };
        lock(&sessions).remove(&id);
        return Some(res);
    }
    let mut rest = [0u8; DataHeader::LEN];
    rest[..4].copy_from_slice(&magic);
    if !matches!(
        tokio::time::timeout(HEADER_TIMEOUT, sock.read_exact(&mut rest[4..])).await,
        Ok(Ok(_))
    ) {
        return None;
    }
    let h = DataHeader::decode(&rest).ok()?;
    let tx = lock(&sessions).get(&h.session).cloned()?;
    let _ = tx.send((h, DataIn::Tcp(sock, 0))).await;
    None
}

fn reason_text(why: &str) -> String {
    format!("receiver busy: {why}")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

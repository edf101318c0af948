//! Jobs over several QUIC connections (the sender's `-C N`): the job's first connection
//! registers a session, named in its welcome; each further connection names it in a `join`
//! and, once let in, hands its data streams to that job. Only the sender that holds the job
//! may join it (the same certificate, when it showed one; the session itself is known only to
//! the job's peer, through its TLS connection), at most the number of connections the hello
//! announced, and the job's limits stay the job's: a joined connection takes no job slot and
//! ends with its job.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::channels::{ControlWrite, DataIn};
use crate::error::{Result, TransferError};
use crate::identity::Fingerprint;
use crate::protocol::{write_frame, DataHeader, ToSender};
use crate::quic_config::Link;

use super::ctx::JobCtx;
use super::streams::accept_quic_streams;
use super::REFUSE_TIMEOUT;

/// What a further connection of a job gets.
#[derive(Clone)]
pub(super) struct Slot {
    /// The job's data channels.
    pub(super) data_tx: mpsc::Sender<(DataHeader, DataIn)>,
    /// The certificate the job's sender showed.
    pub(super) owner: Option<Fingerprint>,
    /// The token the job's hello showed.
    pub(super) token: Option<String>,
    /// The job's window settings and grant, for each of its connections.
    pub(super) link: Link,
    pub(super) grant: u64,
    /// Data streams one connection may open at once.
    pub(super) streams: u32,
    /// Connections the job announced, its own included.
    pub(super) connections: u16,
}

struct Entry {
    slot: Slot,
    /// Further connections still allowed.
    left: u16,
    /// Closed when the job ends.
    ended: watch::Receiver<()>,
}

/// The sessions of the receiver's running jobs that take further connections.
#[derive(Clone, Default)]
pub(crate) struct Joins(Arc<Mutex<HashMap<[u8; 12], Entry>>>);

impl std::fmt::Debug for Joins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Joins({} sessions)", lock(&self.0).len())
    }
}

/// A job's registration: removed, and its joined connections ended, when dropped.
pub(super) struct Registered {
    joins: Joins,
    id: [u8; 12],
    _ended: watch::Sender<()>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.joins.0).remove(&self.id);
    }
}

impl Joins {
    /// Register a job that takes `further` more connections under session `id`.
    pub(super) fn register(&self, id: [u8; 12], slot: Slot, further: u16) -> Registered {
        let (tx, rx) = watch::channel(());
        let entry = Entry {
            slot,
            left: further,
            ended: rx,
        };
        lock(&self.0).insert(id, entry);
        Registered {
            joins: self.clone(),
            id,
            _ended: tx,
        }
    }

    /// Let a connection showing `cert` into session `id`: the job's slot and its end, or
    /// why not.
    fn take(
        &self,
        id: &[u8; 12],
        (cert, token, number): (Option<Fingerprint>, Option<&str>, u16),
    ) -> std::result::Result<(Slot, watch::Receiver<()>), String> {
        let mut map = lock(&self.0);
        let e = map
            .get_mut(id)
            .ok_or_else(|| "no such job here (it may have ended)".to_owned())?;
        if e.slot.owner.is_some() && e.slot.owner != cert {
            return Err("the job belongs to another sender".into());
        }
        if e.slot.token.is_some() && e.slot.token.as_deref() != token {
            return Err("the join does not show the job's token".into());
        }
        if number == 0 || number >= e.slot.connections {
            return Err(format!(
                "connection number {number} is not one of the job's 1 to {}",
                e.slot.connections - 1
            ));
        }
        if e.left == 0 {
            return Err("the job has all the connections it announced".into());
        }
        e.left -= 1;
        Ok((e.slot.clone(), e.ended.clone()))
    }
}

/// Serve a connection whose first frame was a `join`: let it into its job, then keep it
/// until the job or the connection ends.
pub(super) async fn serve_join(
    mut ctx: JobCtx,
    (session, number, token): (&str, u16, Option<&str>),
    mut out: ControlWrite,
) -> Result<()> {
    let Some(conn) = ctx.conn.clone() else {
        return Err(TransferError::Protocol("a join over kernel TCP".into()));
    };
    let taken = crate::protocol::parse_session(session)
        .map_err(|_| "a malformed session".to_owned())
        .and_then(|id| ctx.joins.take(&id, (ctx.peer_cert, token, number)));
    let (slot, mut ended) = match taken {
        Ok(t) => t,
        Err(reason) => {
            let m = ToSender::Refuse {
                reason: reason.clone(),
            };
            let _ = tokio::time::timeout(REFUSE_TIMEOUT, write_frame(&mut out, &m)).await;
            return Err(TransferError::Refused(format!("join refused: {reason}")));
        }
    };
    // Let in: it holds no pre-authentication place any more, and no job of its own.
    ctx.preauth = None;
    ctx.joined.store(true, std::sync::atomic::Ordering::Relaxed);
    crate::quic_config::open_receive_window(&conn, &slot.link, slot.grant);
    conn.set_max_concurrent_uni_streams(quinn::VarInt::from_u32(slot.streams));
    let joined = ToSender::Joined { connection: number };
    tokio::time::timeout(
        ctx.opts.limits.write_timeout,
        write_frame(&mut out, &joined),
    )
    .await
    .map_err(|_| TransferError::Timeout("the joining sender did not read".into()))??;
    tokio::spawn(accept_quic_streams((conn.clone(), number), slot.data_tx));
    tokio::select! {
        _ = ended.changed() => {
            // The job's verdicts went over its first connection: nothing on this one is
            // waited for, and its streams must end now so that the job's files are free.
            conn.close(quinn::VarInt::from_u32(crate::protocol::close::DONE), b"job over");
        }
        _ = conn.closed() => {}
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

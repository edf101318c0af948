//! The sessions of running jobs that further connections may join (`-C N` on the sender):
//! what a joining connection gets and who may join, kept apart from serving a join (module
//! `joins`) so that a job's context can hold them.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::channels::{ControlRead, ControlWrite, DataIn};
use crate::identity::Fingerprint;
use crate::protocol::DataHeader;
use crate::quic_config::Link;

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
    /// Where a joined connection hands its join stream when the sender moves the job's
    /// control channel there (`take-over`).
    pub(super) take_over: mpsc::Sender<TakeOver>,
    /// Joined connections still open.
    pub(super) joined_open: Arc<AtomicUsize>,
}

/// A joined connection's join stream, which now carries the job's control channel.
pub(super) struct TakeOver {
    /// The stream's halves.
    pub(super) control: (ControlRead, ControlWrite),
    /// The connection that carries it.
    pub(super) conn: quinn::Connection,
    /// Its number within the job.
    pub(super) number: u16,
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
    pub(super) fn take(
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

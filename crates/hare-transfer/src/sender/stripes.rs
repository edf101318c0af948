//! A job's data spread over its connections (`-C N`), as the data movers do it: whole files
//! go to the connection given the fewest bytes so far, and a file with more than a chunk to
//! send travels as ranges (module `ranges`), each on whichever connection has no range
//! being written when the range is ready, so that a connection held back by loss or a small
//! window takes fewer.
//!
//! The further connections join while the job already runs on the first one: a slot waits
//! for its connection until it joins (then takes work) or fails to (then is broken), so that
//! the job's data does not wait the two round trips of the joins.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::{Notify, Semaphore};

use crate::error::{Result, TransferError};
use crate::protocol::Striping;

/// The connections of a job and what each was given.
pub(crate) struct Stripes {
    /// Connection `i`, once it joined the job (connection 0, the job's own, from the start).
    conns: Vec<OnceLock<quinn::Connection>>,
    /// Payload bytes given to each connection (whole files and ranges).
    given: Vec<AtomicU64>,
    /// Ranges each connection is taking into its send buffer right now.
    writing: Vec<AtomicUsize>,
    /// Bytes of ranges given to each connection and not yet acknowledged.
    outstanding: Vec<AtomicU64>,
    /// Connections found broken (a range lost on them) or that never joined.
    broken: Vec<AtomicBool>,
    /// Woken when a connection joins, stops writing a range or breaks.
    free: Notify,
    /// `-C` and `--chunk`: where ranges end.
    pub(crate) striping: Striping,
    /// How far a file's ranges may run ahead of its oldest range not yet acknowledged:
    /// one granted window per connection (a receiver holds twice that of one file).
    pub(crate) ahead: u64,
    /// Places for files whose ranges are all sent and wait for their acknowledgement.
    acking: Arc<Semaphore>,
}

/// Files of a job that may wait for their ranges' acknowledgement at once (each holds its
/// file open): enough for a round trip's worth of small files at the `-P` default.
const ACKING: usize = 256;

impl Stripes {
    /// The connections `striping` names: the first (control) connection `first`, the others
    /// still to join ([`Stripes::joined`]), each granted `granted` bytes of window by the
    /// receiver.
    pub(crate) fn new(first: quinn::Connection, striping: Striping, granted: u64) -> Arc<Self> {
        let n = usize::from(striping.connections.max(1));
        let ahead = granted.max(striping.chunk).saturating_mul(n as u64);
        let conns: Vec<OnceLock<quinn::Connection>> = (0..n).map(|_| OnceLock::new()).collect();
        let _ = conns[0].set(first);
        Arc::new(Self {
            conns,
            given: (0..n).map(|_| AtomicU64::new(0)).collect(),
            writing: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            outstanding: (0..n).map(|_| AtomicU64::new(0)).collect(),
            broken: (0..n).map(|_| AtomicBool::new(false)).collect(),
            free: Notify::new(),
            striping,
            ahead,
            acking: Arc::new(Semaphore::new(ACKING)),
        })
    }

    /// How many connections.
    pub(crate) fn len(&self) -> usize {
        self.conns.len()
    }

    fn alive(&self, i: usize) -> bool {
        !self.broken[i].load(Ordering::Relaxed)
            && self.conns[i]
                .get()
                .is_some_and(|c| c.close_reason().is_none())
    }

    /// Connection `i` has neither joined nor failed to yet.
    fn joining(&self, i: usize) -> bool {
        !self.broken[i].load(Ordering::Relaxed) && self.conns[i].get().is_none()
    }

    /// The live connections, or an error when none is left and none is still joining
    /// (`Ok(empty)`: wait).
    fn live(&self) -> Result<Vec<usize>> {
        let live: Vec<usize> = (0..self.len()).filter(|&i| self.alive(i)).collect();
        if live.is_empty() && !(0..self.len()).any(|i| self.joining(i)) {
            return Err(all_failed());
        }
        Ok(live)
    }

    /// The live connection given the fewest bytes, charged with `bytes` more (waiting for a
    /// join if none is live yet).
    pub(crate) async fn least_given(&self, bytes: u64) -> Result<quinn::Connection> {
        Ok(self.least_given_at(bytes).await?.1)
    }

    /// [`Stripes::least_given`], with the connection's number.
    pub(crate) async fn least_given_at(&self, bytes: u64) -> Result<(usize, quinn::Connection)> {
        loop {
            let notified = self.free.notified();
            let least = self
                .live()?
                .into_iter()
                .min_by_key(|&i| self.given[i].load(Ordering::Relaxed));
            if let Some((i, c)) = least.and_then(|i| Some((i, self.conns[i].get()?.clone()))) {
                self.given[i].fetch_add(bytes, Ordering::Relaxed);
                return Ok((i, c));
            }
            notified.await;
        }
    }

    /// Connection `i` once it joined; if it cannot, the live connection given the fewest
    /// bytes (a bulk stream's place). With the connection's number.
    pub(crate) async fn wait_for(&self, i: usize) -> Result<(usize, quinn::Connection)> {
        loop {
            let notified = self.free.notified();
            if self.alive(i) {
                if let Some(c) = self.conns[i].get() {
                    return Ok((i, c.clone()));
                }
            }
            if !self.joining(i) {
                return self.least_given_at(0).await;
            }
            notified.await;
        }
    }

    /// Connection `i` joined the job: it takes work from now on.
    pub(crate) fn joined(&self, i: usize, conn: quinn::Connection) {
        if let Some(slot) = self.conns.get(i) {
            let _ = slot.set(conn);
        }
        self.free.notify_waiters();
    }

    /// Connection `i` will not join: no work waits for it.
    pub(crate) fn not_joined(&self, i: usize) {
        if let Some(b) = self.broken.get(i) {
            b.store(true, Ordering::Relaxed);
        }
        self.free.notify_waiters();
    }

    /// Wait for a live connection that can take a range of `bytes` (writing none, and
    /// holding no more unacknowledged than its congestion window and one such range: the one
    /// holding least first), mark it writing and charge it `bytes`.
    ///
    /// The second rule keeps the queue shared until the end: with the large windows of a
    /// long path a connection would otherwise take ranges into its send buffer long before
    /// it could send them, and the connections holding more would finish late.
    pub(crate) async fn take_free(&self, bytes: u64) -> Result<usize> {
        loop {
            let notified = self.free.notified();
            let idle = self
                .live()?
                .into_iter()
                .filter(|&i| self.writing[i].load(Ordering::Relaxed) == 0)
                .filter(|&i| self.outstanding[i].load(Ordering::Relaxed) <= self.room(i, bytes))
                .min_by_key(|&i| {
                    (
                        self.outstanding[i].load(Ordering::Relaxed),
                        self.given[i].load(Ordering::Relaxed),
                    )
                });
            if let Some(i) = idle {
                self.writing[i].fetch_add(1, Ordering::Relaxed);
                self.given[i].fetch_add(bytes, Ordering::Relaxed);
                self.outstanding[i].fetch_add(bytes, Ordering::Relaxed);
                return Ok(i);
            }
            notified.await;
        }
    }

    /// What connection `i` may hold unacknowledged before it takes a range of `bytes`: its
    /// congestion window and one such range.
    fn room(&self, i: usize, bytes: u64) -> u64 {
        let cwnd = self.conns[i].get().map_or(0, |c| c.stats().path.cwnd);
        cwnd.saturating_add(bytes)
    }

    /// A range of `bytes` given to connection `i` was acknowledged, lost or given up.
    pub(crate) fn settled(&self, i: usize, bytes: u64) {
        let _ = self.outstanding[i].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |o| {
            Some(o.saturating_sub(bytes))
        });
        self.free.notify_waiters();
    }

    /// The places of files waiting for their ranges' acknowledgement.
    pub(crate) fn acking(&self) -> Arc<Semaphore> {
        self.acking.clone()
    }

    /// Connection `i`'s handle, once it joined.
    pub(crate) fn conn(&self, i: usize) -> Option<quinn::Connection> {
        self.conns.get(i).and_then(|c| c.get().cloned())
    }

    /// Connection `i` took all of a range into its send buffer (or gave up on it).
    pub(crate) fn done_writing(&self, i: usize) {
        let _ = self.writing[i].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            Some(w.saturating_sub(1))
        });
        self.free.notify_waiters();
    }

    /// A range was lost on connection `i`: no more ranges go there.
    pub(crate) fn broke(&self, i: usize) {
        self.broken[i].store(true, Ordering::Relaxed);
        self.free.notify_waiters();
    }
}

fn all_failed() -> TransferError {
    TransferError::Connection("every connection of the job has failed".into())
}

//! A job's data spread over its connections (`-C N`), as the data movers do it: whole files
//! go to the connection given the fewest bytes so far, and a file with more than a chunk to
//! send travels as ranges (module `ranges`), each on whichever connection has no range
//! being written when the range is ready, so that a connection held back by loss or a small
//! window takes fewer.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{Notify, Semaphore};

use crate::error::{Result, TransferError};

/// The connections of a job and what each was given.
pub(crate) struct Stripes {
    conns: Vec<quinn::Connection>,
    /// Payload bytes given to each connection (whole files and ranges).
    given: Vec<AtomicU64>,
    /// Ranges each connection is taking into its send buffer right now.
    writing: Vec<AtomicUsize>,
    /// Connections found broken (a range lost on them).
    broken: Vec<AtomicBool>,
    /// Woken when a connection stops writing a range or breaks.
    free: Notify,
    /// `--chunk`.
    pub(crate) chunk: u64,
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
    /// The job's connections, the first (control) connection first, with the window the
    /// receiver granted each.
    pub(crate) fn new(conns: Vec<quinn::Connection>, chunk: u64, granted: u64) -> Arc<Self> {
        let n = conns.len();
        let ahead = granted.max(chunk).saturating_mul(n as u64);
        Arc::new(Self {
            conns,
            given: (0..n).map(|_| AtomicU64::new(0)).collect(),
            writing: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            broken: (0..n).map(|_| AtomicBool::new(false)).collect(),
            free: Notify::new(),
            chunk,
            ahead,
            acking: Arc::new(Semaphore::new(ACKING)),
        })
    }

    /// How many connections.
    pub(crate) fn len(&self) -> usize {
        self.conns.len()
    }

    fn alive(&self, i: usize) -> bool {
        !self.broken[i].load(Ordering::Relaxed) && self.conns[i].close_reason().is_none()
    }

    /// The live connection given the fewest bytes, charged with `bytes` more.
    pub(crate) fn least_given(&self, bytes: u64) -> Result<quinn::Connection> {
        let i = (0..self.len())
            .filter(|&i| self.alive(i))
            .min_by_key(|&i| self.given[i].load(Ordering::Relaxed))
            .ok_or_else(all_failed)?;
        self.given[i].fetch_add(bytes, Ordering::Relaxed);
        Ok(self.conns[i].clone())
    }

    /// Wait for a live connection that is writing no range (the least given first), mark it
    /// writing and charge it `bytes`.
    pub(crate) async fn take_free(&self, bytes: u64) -> Result<usize> {
        loop {
            let notified = self.free.notified();
            let live: Vec<usize> = (0..self.len()).filter(|&i| self.alive(i)).collect();
            if live.is_empty() {
                return Err(all_failed());
            }
            let idle = live
                .into_iter()
                .filter(|&i| self.writing[i].load(Ordering::Relaxed) == 0)
                .min_by_key(|&i| self.given[i].load(Ordering::Relaxed));
            if let Some(i) = idle {
                self.writing[i].fetch_add(1, Ordering::Relaxed);
                self.given[i].fetch_add(bytes, Ordering::Relaxed);
                return Ok(i);
            }
            notified.await;
        }
    }

    /// The places of files waiting for their ranges' acknowledgement.
    pub(crate) fn acking(&self) -> Arc<Semaphore> {
        self.acking.clone()
    }

    /// Connection `i`'s handle.
    pub(crate) fn conn(&self, i: usize) -> quinn::Connection {
        self.conns[i].clone()
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

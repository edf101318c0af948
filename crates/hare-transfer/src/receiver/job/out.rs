//! The control stream's writing half, every message bounded in time, and what keeps a job
//! over several connections going when its first connection is lost: until the sender moves
//! the control channel onto a joined connection's stream (`take-over`), what is said to the
//! sender is dropped here (the verdicts are said again after the move), and the job waits a
//! bounded time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::channels::ControlWrite;
use crate::error::{Result, TransferError};
use crate::protocol::{write_frame, ToSender};
use crate::receiver::sessions::TakeOver;

/// How long a job whose first connection was lost waits for the sender to move its control
/// channel: the sender notices the loss within its idle timeout, which is at most the
/// receiver's own (QUIC takes the smaller, RFC 9000 section 10.1), plus time to move.
pub(super) const TAKE_OVER_WAIT: Duration =
    Duration::from_secs(crate::quic_config::IDLE_TIMEOUT.as_secs() + 5);

/// A job over several connections: what a lost first connection may be survived with.
pub(super) struct Standby {
    /// Where joined connections hand their join streams over.
    pub(super) take_rx: mpsc::Receiver<TakeOver>,
    /// Joined connections still open.
    pub(super) joined_open: Arc<AtomicUsize>,
    /// The job's first connection.
    pub(super) first: Option<quinn::Connection>,
}

/// The control channel's writer.
pub(super) struct Out {
    pub(super) w: ControlWrite,
    pub(super) timeout: Duration,
    /// A job over several connections (see [`Standby`]), without its `take_rx`.
    pub(super) standby: Option<(Arc<AtomicUsize>, Option<quinn::Connection>)>,
    /// The control channel was lost at this instant, for this reason; no take-over yet.
    pub(super) lost: Option<(Instant, TransferError)>,
}

impl Out {
    /// A writer of `w`.
    pub(super) fn new(w: ControlWrite, timeout: Duration) -> Self {
        Self {
            w,
            timeout,
            standby: None,
            lost: None,
        }
    }

    pub(super) async fn send(&mut self, m: &ToSender) -> Result<()> {
        self.send_within(m, self.timeout).await
    }

    pub(super) async fn send_within(&mut self, m: &ToSender, limit: Duration) -> Result<()> {
        let r = match tokio::time::timeout(limit, write_frame(&mut self.w, m)).await {
            Ok(r) => r,
            Err(_) => Err(TransferError::Timeout(format!(
                "the sender did not read its control stream for {:.0} s",
                limit.as_secs_f64()
            ))),
        };
        match r {
            Err(e) if self.may_wait() => {
                self.lose(e);
                Ok(())
            }
            r => r,
        }
    }

    /// Whether the control channel broke with the job's first connection lost to the path
    /// (not closed by either side on purpose) while a joined connection still lives: the
    /// sender may move the control channel there.
    pub(super) fn may_wait(&self) -> bool {
        let Some((open, Some(first))) = &self.standby else {
            return false;
        };
        crate::peer_gone::lost_to_path(first) && open.load(Ordering::Relaxed) > 0
    }

    /// The control channel is lost (`why`): wait for a take-over, dropping what is said
    /// meanwhile.
    pub(super) fn lose(&mut self, why: TransferError) {
        if self.lost.is_none() {
            self.lost = Some((Instant::now(), why));
        }
        self.w = Box::new(tokio::io::sink());
    }

    /// Why the job must end while it waits: the wait is over or no joined connection is
    /// left.
    pub(super) fn wait_over(&self) -> Option<TransferError> {
        let (since, why) = self.lost.as_ref()?;
        let open = self
            .standby
            .as_ref()
            .is_some_and(|(o, _)| o.load(Ordering::Relaxed) > 0);
        if open && since.elapsed() < TAKE_OVER_WAIT {
            return None;
        }
        let what = match open {
            true => format!(
                "the sender did not move the job to another connection within {} s",
                TAKE_OVER_WAIT.as_secs()
            ),
            false => "no other connection of the job is left".to_owned(),
        };
        Some(TransferError::Connection(format!(
            "{why}; the job's first connection was lost and {what}"
        )))
    }

    /// The control channel continues on `w`.
    pub(super) fn moved(&mut self, w: ControlWrite) {
        self.w = w;
        self.lost = None;
    }
}

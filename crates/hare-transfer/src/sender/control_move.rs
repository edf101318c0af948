//! The only writer of the control channel after the hello, and the move of the channel when a
//! job over several connections (`-C N`) loses its first connection: the channel continues on
//! the stream a further connection joined on (`take-over`, to receivers that list the
//! feature), where the writer says again what it said of the files still without a verdict
//! (a message in flight on the lost connection may never have arrived; the receiver takes
//! each once). The job then fails only when no connection is left.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::control::{lock, spawn_reader, Ctl, ReadEnd, Reading};
use super::standby::{Standby, Standbys};
use crate::channels::{ControlRead, ControlWrite};
use crate::protocol::{write_frame, ToReceiver};

/// How long moving the channel may take (the take-over and what is said again).
const MOVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the channel may move: the job's first connection (whose loss allows it) and the
/// further connections' streams, in order.
pub(super) struct Moves {
    pub(super) first: quinn::Connection,
    /// Filled as the further connections join.
    pub(super) standby: Standbys,
}

/// The writer's state.
struct Writer {
    w: ControlWrite,
    moves: Option<Moves>,
    rd: Reading,
    ends: mpsc::Sender<ReadEnd>,
    generation: u32,
    /// What was said of files (and `bulk-end`), to be said again after a move; pruned of
    /// files with a verdict as it grows.
    said: Vec<ToReceiver>,
    kept: usize,
}

/// Start the reader of `ctl_r` and the only writer of `ctl_w`, which writes what `from`
/// gives until every sender of it is gone, then ends the stream cleanly. A failure the
/// channel cannot move past reaches the run loop as [`Ctl::Closed`].
pub(super) fn spawn_control(
    (ctl_r, ctl_w): (ControlRead, ControlWrite),
    moves: Option<Moves>,
    mut from: mpsc::Receiver<ToReceiver>,
    rd: Reading,
) -> JoinHandle<()> {
    let (ends, mut end_rx) = mpsc::channel(4);
    spawn_reader(ctl_r, rd.clone(), (ends.clone(), 0));
    let mut wr = Writer {
        w: ctl_w,
        moves,
        rd,
        ends,
        generation: 0,
        said: Vec::new(),
        kept: 0,
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                m = from.recv() => {
                    let Some(m) = m else {
                        let _ = wr.w.shutdown().await;
                        return;
                    };
                    if !wr.write(m).await {
                        return;
                    }
                }
                Some(end) = end_rx.recv() => wr.reader_ended(end).await,
            }
        }
    })
}

impl Writer {
    /// Write `m`, moving the channel if it broke; false when the channel is gone for good.
    async fn write(&mut self, m: ToReceiver) -> bool {
        if said_again(&m).is_some() {
            self.said.push(m.clone());
            self.prune();
        }
        let e = match write_frame(&mut self.w, &m).await {
            Ok(()) => return true,
            Err(e) => e,
        };
        let reason = self.rd.words.error(&e, "control channel");
        if self.try_move(&reason).await {
            return true;
        }
        let _ = self.rd.to_loop.send(Ctl::Closed(reason)).await;
        false
    }

    /// The current reader ended (an earlier one's end is old news).
    async fn reader_ended(&mut self, end: ReadEnd) {
        if end.generation != self.generation {
            return;
        }
        if end.clean || !self.try_move(&end.reason).await {
            let _ = self.rd.to_loop.send(Ctl::Closed(end.reason)).await;
        }
    }

    /// Move the channel to the next live further connection, when the first connection was
    /// lost to the path (not closed by either side) before the receiver's `done`.
    async fn try_move(&mut self, reason: &str) -> bool {
        let may = self.moves.as_ref().is_some_and(|m| {
            crate::peer_gone::lost_to_path(&m.first) && !self.rd.done.load(Ordering::Relaxed)
        });
        if !may {
            return false;
        }
        while let Some(sb) = self.moves.as_ref().and_then(|m| next_standby(&m.standby)) {
            if sb.conn.close_reason().is_some() {
                continue;
            }
            let (r, mut w) = sb.control;
            let again = self.pending();
            let said = async {
                let t = ToReceiver::TakeOver {
                    connection: sb.number,
                };
                write_frame(&mut w, &t).await?;
                for m in &again {
                    write_frame(&mut w, m).await?;
                }
                Ok::<(), crate::error::TransferError>(())
            };
            if !matches!(tokio::time::timeout(MOVE_TIMEOUT, said).await, Ok(Ok(()))) {
                continue;
            }
            self.generation += 1;
            self.rd.moved.store(true, Ordering::Relaxed);
            spawn_reader(r, self.rd.clone(), (self.ends.clone(), self.generation));
            self.w = w;
            let note = format!(
                "connection 0 was lost ({reason}): the job's control channel continues on \
                 connection {}",
                sb.number
            );
            let _ = self.rd.to_loop.send(Ctl::Note(note)).await;
            return true;
        }
        false
    }

    /// What was said of files still waiting for their verdict, in order.
    fn pending(&self) -> Vec<ToReceiver> {
        let waiting = lock(&self.rd.verdicts);
        self.said
            .iter()
            .filter(|m| said_again(m).is_some_and(|i| i.is_none_or(|i| waiting.contains_key(&i))))
            .cloned()
            .collect()
    }

    /// Keep only what concerns files still waiting, once the record doubled since the last
    /// pruning (amortised: each message is looked at a bounded number of times).
    fn prune(&mut self) {
        if self.moves.is_none() {
            // Nothing is ever said again over one connection.
            self.said.clear();
            return;
        }
        if self.said.len() < 2 * self.kept.max(64) {
            return;
        }
        self.said = self.pending();
        self.kept = self.said.len();
    }
}

/// Whether `m` is said again after a move: `Some(Some(file))` for a message about a file,
/// `Some(None)` for `bulk-end`, `None` for the rest.
fn said_again(m: &ToReceiver) -> Option<Option<u32>> {
    match m {
        ToReceiver::FileDone { index, .. }
        | ToReceiver::FileAbandoned { index, .. }
        | ToReceiver::FileRetry { index, .. } => Some(Some(*index)),
        ToReceiver::BulkEnd { .. } => Some(None),
        _ => None,
    }
}

/// The lowest-numbered join stream not tried yet (the lock is not held past the call).
fn next_standby(standby: &Standbys) -> Option<Standby> {
    super::control::lock(standby).pop_front()
}

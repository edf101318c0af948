//! Bulk streams of a job over several connections that outlive their connection: when one
//! is lost to the path (its connection timed out or was reset), the receiver tells the
//! sender how much of the stream it has (`bulk-lost`), and the sender continues the stream
//! from there on another connection, so that a size job still moves exactly its size and a
//! timed job keeps its streams until its time. The job fails only when no connection is
//! left (its control channel goes then too).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use hare_report::{Event, EventKind};
use tokio::sync::mpsc;

use super::{spawn_bulk, Finished, Out, Running, Step};
use crate::channels::DataIn;
use crate::error::{Result, TransferError};
use crate::protocol::{DataHeader, ToSender};
use crate::receiver::streams::BulkEnd;
use crate::receiver::DURATION_GRACE;
use crate::report::RunLog;

/// Lost bulk streams.
#[derive(Default)]
pub(super) struct BulkMoves {
    /// How many times each stream was lost.
    losses: HashMap<u32, u16>,
    /// Streams waiting for their continuation: the byte it starts at and its attempt.
    waiting: HashMap<u32, (u64, u16)>,
}

impl Running {
    /// Read bulk stream `h.index` (its first channel or a continuation), counting into its
    /// counters.
    pub(super) fn bulk_stream(
        &mut self,
        h: DataHeader,
        input: DataIn,
        fin: &mpsc::Sender<Finished>,
    ) -> Step {
        // The announced duration on this side's clock: a reset after it is a normal end.
        let time_up = self.deadline.map(|d| d - DURATION_GRACE);
        let Some(stream) = self.by_stream.get(h.index as usize).cloned() else {
            return Step::Stop(Some(TransferError::Protocol(format!(
                "bulk stream number {} of a job of {} stream(s)",
                h.index,
                self.by_stream.len()
            ))));
        };
        let counters = (self.bytes.clone(), stream);
        spawn_bulk(
            (h.index, input),
            fin.clone(),
            counters,
            self.bulk_limit,
            time_up,
        );
        Step::Go
    }

    /// A continuation of a lost bulk stream: taken only where and as this side asked.
    pub(super) fn bulk_continued(
        &mut self,
        h: DataHeader,
        input: DataIn,
        fin: &mpsc::Sender<Finished>,
    ) -> Step {
        match self.bulk_moves.waiting.get(&h.index) {
            Some(&(at, attempt)) if (at, attempt) == (h.offset, h.attempt) => {
                self.bulk_moves.waiting.remove(&h.index);
                self.bulk_stream(h, input, fin)
            }
            _ => Step::Stop(Some(TransferError::Protocol(format!(
                "bulk stream {} continued at byte {} (attempt {}) where it was not lost",
                h.index, h.offset, h.attempt
            )))),
        }
    }

    /// Bulk stream `stream` ended: at its end it counts as done; lost with its connection,
    /// from a sender that continues bulk streams, the sender is told where to continue it.
    pub(super) async fn bulk_stream_end(
        &mut self,
        stream: u32,
        r: Result<BulkEnd>,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        let why = match r {
            Ok(BulkEnd::Done) => {
                self.finished += 1;
                return Step::Go;
            }
            Ok(BulkEnd::Lost(e)) => e,
            Err(e) => return Step::Stop(Some(e)),
        };
        let Some((striping, _)) = self.striping.filter(|(s, _)| s.moves_bulk) else {
            return Step::Stop(Some(why));
        };
        let losses = self.bulk_moves.losses.entry(stream).or_insert(0);
        *losses += 1;
        // Each loss takes a connection with it: more than the job has is not a loss.
        if *losses >= striping.connections {
            return Step::Stop(Some(why));
        }
        let attempt = *losses;
        let received = self
            .by_stream
            .get(stream as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed));
        self.bulk_moves.waiting.insert(stream, (received, attempt));
        log.event(Event {
            t_s: self.t0.elapsed().as_secs_f64(),
            kind: EventKind::Note {
                message: format!(
                    "bulk stream {stream} was lost with its connection ({why}): the sender \
                     continues it on another from byte {received}"
                ),
            },
        });
        let m = ToSender::BulkLost {
            stream,
            received,
            attempt,
        };
        self.say_kept(m, out).await
    }
}

//! The streams of a bulk job: `-n` split evenly over them (the first streams take the
//! remainder), `-T` as a deadline. Over several connections stream i goes on connection
//! i mod N; when its connection is lost to the path, the receiver says how much of the
//! stream it has (`bulk-lost`) and the stream continues from there on another connection,
//! so that a size job still moves exactly its size and a timed job keeps its streams.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::control::{lock, BulkLosts};
use super::opener::Opener;
use super::stripes::Stripes;
use super::tasks::{DataShared, DataTasks};
use super::writers::{bulk_writer, BulkPlan};
use crate::channels::CHUNK;
use crate::error::Result;
use crate::protocol::{Job, ToReceiver};

/// How long a stream broken with its connection waits for the receiver's `bulk-lost` (the
/// receiver notices the loss at its own idle timeout, which may end later than this side's).
const LOST_WAIT: Duration = Duration::from_secs(45);

/// What the end of the job's streams says: the control writer, the streams still writing,
/// and the stop flag (`bulk-end` once all have ended, when the receiver lists it).
type EndWord = (mpsc::Sender<ToReceiver>, Arc<AtomicUsize>, Arc<AtomicBool>);

/// One bulk stream's task.
struct StreamTask {
    opener: Opener,
    stripes: Option<Arc<Stripes>>,
    plan: BulkPlan,
    stop: Arc<AtomicBool>,
    pacer: Option<Arc<super::writers::Pacer>>,
    pattern: Bytes,
    end: Option<EndWord>,
    /// Where the receiver's `bulk-lost` for this stream arrives (jobs over several
    /// connections, to receivers that continue bulk streams).
    lost: Option<mpsc::UnboundedReceiver<(u64, u16)>>,
    /// The run's log, for the line that says a stream continues.
    notes: Option<mpsc::Sender<super::control::Ctl>>,
}

/// Start the bulk writers of a bulk job from `t0`. With `say_end` the stream that ends last,
/// once all ended well, tells the receiver on the control channel that the job's data is all
/// sent. With `moves`, a stream lost with its connection continues on another.
pub(super) fn spawn_bulk(
    tasks: &mut DataTasks,
    job: &Job,
    shared: &DataShared,
    (t0, say_end): (Instant, bool),
    moves: Option<BulkLosts>,
) {
    let Job::Bulk {
        bytes,
        seconds,
        streams,
    } = job
    else {
        return;
    };
    let pattern = Bytes::from((0..CHUNK).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let deadline = seconds.map(|s| t0 + Duration::from_secs_f64(s));
    let n = u64::from(*streams);
    let running = Arc::new(AtomicUsize::new(usize::from(*streams)));
    for i in 0..*streams {
        let lost = moves
            .as_ref()
            .filter(|_| shared.stripes.is_some())
            .map(|m| {
                let (tx, rx) = mpsc::unbounded_channel();
                lock(m).insert(u32::from(i), tx);
                rx
            });
        let task = StreamTask {
            opener: shared.opener.clone(),
            stripes: shared.stripes.clone(),
            plan: BulkPlan {
                index: u32::from(i),
                quota: bytes.map(|b| b / n + u64::from(u64::from(i) < b % n)),
                deadline,
                written: shared.written.clone(),
                offset: 0,
                attempt: 0,
            },
            stop: shared.stop_flag.clone(),
            pacer: shared.pacer.clone(),
            pattern: pattern.clone(),
            end: say_end.then(|| {
                (
                    shared.out_tx.clone(),
                    running.clone(),
                    shared.stop_flag.clone(),
                )
            }),
            lost,
            notes: shared.retry.notes.clone(),
        };
        tasks.spawn(async move { task.run().await.map(|()| None) });
    }
}

impl StreamTask {
    /// Write the stream; after a loss, continue it where and as the receiver says, until the
    /// job's end (the receiver's `done` closes `lost`).
    async fn run(mut self) -> Result<()> {
        let mut counted = false;
        loop {
            let (conn, r) = self.write_once().await;
            let broke = match r {
                Ok(()) => {
                    if !counted {
                        counted = true;
                        self.ended().await;
                    }
                    None
                }
                Err(e) => Some(e),
            };
            let Some(lost) = self.lost.as_mut() else {
                return broke.map_or(Ok(()), Err);
            };
            if let Some(e) = broke {
                let Some((i, c)) = conn.filter(|(_, c)| crate::peer_gone::lost_to_path(c)) else {
                    return Err(e);
                };
                drop(c);
                if let Some(st) = &self.stripes {
                    st.broke(i);
                }
                match tokio::time::timeout(LOST_WAIT, next_attempt(lost, self.plan.attempt)).await {
                    Ok(Some(at)) => self.continue_at(at).await,
                    Ok(None) => return Ok(()),
                    Err(_) => return Err(e),
                }
            } else {
                match next_attempt(lost, self.plan.attempt).await {
                    Some(at) => self.continue_at(at).await,
                    None => return Ok(()),
                }
            }
        }
    }

    /// One attempt of the stream on its connection (the first on connection i mod N, a
    /// continuation on the live one given least), and that connection.
    async fn write_once(&self) -> (Option<(usize, quinn::Connection)>, Result<()>) {
        let (opener, conn) = match &self.stripes {
            Some(st) => {
                let picked = match self.plan.attempt {
                    0 => st.wait_for(self.plan.index as usize % st.len()).await,
                    _ => st.least_given_at(0).await,
                };
                match picked {
                    Ok((i, c)) => (Opener::Quic(c.clone()), Some((i, c))),
                    Err(e) => return (None, Err(e)),
                }
            }
            None => (self.opener.clone(), None),
        };
        let plan = self.plan.clone();
        let r = bulk_writer(
            opener,
            plan,
            self.stop.clone(),
            self.pacer.clone(),
            self.pattern.clone(),
        )
        .await;
        (conn, r.map(|_| ()))
    }

    /// The next attempt starts at byte `received` of the stream (said in the run's log).
    async fn continue_at(&mut self, (received, attempt): (u64, u16)) {
        self.plan.offset = received;
        self.plan.attempt = attempt;
        if let Some(n) = &self.notes {
            let line = format!(
                "bulk stream {} was lost with its connection: it continues on another from \
                 byte {received}",
                self.plan.index
            );
            let _ = n.send(super::control::Ctl::Note(line)).await;
        }
    }

    /// This stream ended well for the first time: the last one to do so says `bulk-end`.
    async fn ended(&self) {
        let Some((out, running, stop)) = &self.end else {
            return;
        };
        if running.fetch_sub(1, Ordering::AcqRel) == 1 {
            let bytes = self.plan.written.load(Ordering::Relaxed);
            let stopped = stop.load(Ordering::Relaxed);
            // A closed writer is a control channel already broken: the run loop hears of it
            // from there.
            let _ = out.send(ToReceiver::BulkEnd { bytes, stopped }).await;
        }
    }
}

/// The receiver's next word on this stream beyond attempt `after` (a repeat after a move of
/// the control channel is passed over); `None` once the job is over.
async fn next_attempt(
    lost: &mut mpsc::UnboundedReceiver<(u64, u16)>,
    after: u16,
) -> Option<(u64, u16)> {
    loop {
        let (received, attempt) = lost.recv().await?;
        if attempt > after {
            return Some((received, attempt));
        }
    }
}

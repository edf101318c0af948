//! The accepted job's loop: report ticks and the no-data deadline, control messages, data
//! channels, verdicts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind};
use tokio::sync::mpsc;

use super::{
    bulk_deadline, digest_channels, spawn_bulk, spawn_file, stall, wrong_kind, Accepted, Ctl,
    DigestSlot, DigestWait, FileEnv, Finished, JobCtx, Out, ProgressBudget,
};
use crate::channels::DataIn;
use crate::error::TransferError;
use crate::intervals::{settle, ArrivalIntervals};
use crate::protocol::FailCode;
use crate::protocol::{DataHeader, ToReceiver, ToSender};
use crate::receiver::DURATION_GRACE;
use crate::recvfile::{Batch, EarlyLimits, Failure, Planned, Published, Verified};
use crate::report::RunLog;

/// State of an accepted job.
pub(super) struct Running {
    pub(super) bytes: Arc<AtomicU64>,
    /// Bulk jobs: payload received by stream number (`-P` lines and `[SUM]`).
    by_stream: Vec<Arc<AtomicU64>>,
    pub(super) expected: usize,
    /// Links of the job (made at acceptance; their failures count in `failures`).
    pub(super) links: usize,
    pub(super) failures: usize,
    /// The job's report intervals: payload that arrived in each, on this side's clock.
    pub(super) arrivals: ArrivalIntervals,
    /// Byte count at the last tick (for the no-data deadline).
    last_bytes: u64,
    t0: Instant,
    planned: HashMap<u32, Planned>,
    digests: HashMap<u32, DigestSlot>,
    digest_rx: HashMap<u32, DigestWait>,
    files_job: bool,
    bulk_limit: Option<u64>,
    deadline: Option<Instant>,
    env: FileEnv,
    stall_after: Duration,
    interval: Duration,
    seen: usize,
    finished: usize,
    last_progress: Instant,
    progress: ProgressBudget,
    srtt: Option<quinn::Connection>,
    /// Verified files waiting to be made durable together (opened with the first one).
    batch: Option<Batch>,
}

/// What one event of the loop decided.
enum Step {
    Go,
    Stop(Option<TransferError>),
}

impl Running {
    pub(super) fn new(
        ctx: &JobCtx,
        accepted: Accepted,
        expected: usize,
        t0: Instant,
        interval: Duration,
    ) -> Self {
        let (mut links, mut failed_links) = (0, 0);
        let (planned, files_job, bulk_limit, deadline, streams) = match accepted {
            Accepted::Files {
                planned, links: l, ..
            } => {
                links = l.len();
                failed_links = l.iter().filter(|r| r.reason.is_some()).count();
                (planned, true, None, None, 0)
            }
            Accepted::Bulk {
                bytes,
                seconds,
                streams,
            } => (
                HashMap::new(),
                false,
                bytes,
                bulk_deadline(t0, seconds),
                usize::from(streams),
            ),
        };
        let (digests, digest_rx) = digest_channels(&planned);
        Self {
            bytes: Arc::new(AtomicU64::new(0)),
            by_stream: (0..streams).map(|_| Arc::default()).collect(),
            expected,
            links,
            failures: failed_links,
            arrivals: ArrivalIntervals::new(t0),
            last_bytes: 0,
            t0,
            planned,
            digests,
            digest_rx,
            files_job,
            bulk_limit,
            deadline,
            env: FileEnv {
                dir: ctx.opts.dir.clone().unwrap_or_default(),
                limits: EarlyLimits::for_window(ctx.opts.link.window),
            },
            stall_after: ctx.opts.limits.stall_timeout,
            interval,
            seen: 0,
            finished: 0,
            last_progress: Instant::now(),
            progress: ProgressBudget::new(),
            srtt: ctx.conn.clone(),
            batch: None,
        }
    }

    /// Run until every channel finished (`None`) or the job must end (`Some(why)`).
    pub(super) async fn serve(
        &mut self,
        out: &mut Out,
        log: &mut RunLog,
        mut ctl_rx: mpsc::Receiver<Ctl>,
        mut data_rx: mpsc::Receiver<(DataHeader, DataIn)>,
    ) -> Option<TransferError> {
        let (fin_tx, mut fin_rx) = mpsc::channel::<Finished>(self.expected.max(1));
        let start = tokio::time::Instant::from_std(self.t0 + self.interval);
        let mut ticker = tokio::time::interval_at(start, self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let far = self.t0 + Duration::from_secs(u64::from(u32::MAX));
        let deadline = tokio::time::sleep_until(self.deadline.unwrap_or(far).into());
        tokio::pin!(deadline);
        while self.finished < self.expected {
            let due = self.batch.as_ref().and_then(Batch::due);
            let step = tokio::select! {
                _ = ticker.tick() => self.tick(out, log).await,
                m = ctl_rx.recv() => self.control(m, out).await,
                d = data_rx.recv() => self.data(d, &fin_tx),
                f = fin_rx.recv() => self.verdict(f, out, log).await,
                _ = tokio::time::sleep_until(due.unwrap_or(far).into()), if due.is_some() => {
                    self.flush(out, log).await
                }
                _ = &mut deadline => Step::Stop(Some(TransferError::Timeout(
                    "the timed job overran its duration".into(),
                ))),
            };
            if let Step::Stop(why) = step {
                return why;
            }
        }
        match self.flush(out, log).await {
            Step::Go => None,
            Step::Stop(why) => why,
        }
    }

    /// A verified file joins the batch; a full batch, or the job's last file, flushes it.
    async fn verified(&mut self, index: u32, v: Verified, out: &mut Out, log: &mut RunLog) -> Step {
        if self.batch.is_none() {
            match Batch::open(&self.env.dir) {
                Ok(b) => self.batch = Some(b),
                Err(e) => {
                    let reason = format!("{}: cannot open the directory to sync it: {e}", v.name());
                    v.discard();
                    let f = Failure::new(FailCode::of_io(&e), reason);
                    return self.report(index, Some(f), out, log).await;
                }
            }
        }
        let Some(batch) = self.batch.as_mut() else {
            return Step::Go;
        };
        batch.push(index, v);
        if batch.full() || self.finished == self.expected {
            return self.flush(out, log).await;
        }
        Step::Go
    }

    /// Make the batch durable and publish it (off the runtime thread), then tell the sender.
    async fn flush(&mut self, out: &mut Out, log: &mut RunLog) -> Step {
        let Some(mut batch) = self.batch.take().filter(|b| !b.is_empty()) else {
            return Step::Go;
        };
        let done = tokio::task::spawn_blocking(move || {
            let published: Published = batch.flush();
            (batch, published)
        })
        .await;
        let published = match done {
            Ok((batch, published)) => {
                self.batch = Some(batch);
                published
            }
            Err(e) => {
                return Step::Stop(Some(TransferError::Connection(format!(
                    "storing the files failed: {e}"
                ))))
            }
        };
        for (index, r) in published {
            if let Step::Stop(why) = self.report(index, r.err(), out, log).await {
                return Step::Stop(why);
            }
        }
        Step::Go
    }

    /// Payload received by bulk stream so far (empty for a file job).
    pub(super) fn stream_counts(&self) -> Vec<u64> {
        self.by_stream
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Payload received so far: over the streams' own counts for a bulk job, so that an
    /// interval's streams add up to it exactly.
    pub(super) fn received(&self, streams: &[u64]) -> u64 {
        if streams.is_empty() {
            self.bytes.load(Ordering::Relaxed)
        } else {
            streams.iter().sum()
        }
    }

    async fn tick(&mut self, out: &mut Out, log: &mut RunLog) -> Step {
        settle().await;
        let streams = self.stream_counts();
        let b = self.received(&streams);
        let srtt = self
            .srtt
            .as_ref()
            .map(|c| c.stats().path.rtt.as_secs_f64() * 1e3);
        let iv = self.arrivals.close(b, &streams, srtt);
        // The sender prints this interval's bytes as its own (keyed by the index).
        if let Err(e) = out.send(&iv.message()).await {
            return Step::Stop(Some(e));
        }
        log.line(iv.line());
        if b != self.last_bytes {
            self.last_progress = Instant::now();
        }
        self.last_bytes = b;
        // A client that keeps its connection alive but sends nothing would hold a job slot
        // for ever.
        if self.last_progress.elapsed() >= self.stall_after {
            return Step::Stop(Some(stall(self.stall_after)));
        }
        Step::Go
    }

    async fn control(&mut self, m: Option<Ctl>, out: &mut Out) -> Step {
        let m = match m {
            Some(Ctl::Msg(m)) => m,
            Some(Ctl::Closed(Some(e))) => return Step::Stop(Some(e)),
            Some(Ctl::Closed(None)) | None => {
                return Step::Stop(Some(TransferError::Connection(
                    "the sender closed the control channel before the job ended".into(),
                )))
            }
        };
        match m {
            ToReceiver::ProgressRequest { seq } => {
                if !self.progress.take() {
                    return Step::Go;
                }
                let bytes = self.bytes.load(Ordering::Relaxed);
                match out.send(&ToSender::Progress { seq, bytes }).await {
                    Ok(()) => Step::Go,
                    Err(e) => Step::Stop(Some(e)),
                }
            }
            ToReceiver::FileDone { index, blake3 } => match self.digests.remove(&index) {
                Some(tx) => {
                    let _ = tx.send(Ok(blake3));
                    Step::Go
                }
                None => Step::Stop(Some(TransferError::Protocol(format!(
                    "digest for unknown or finished file {index}"
                )))),
            },
            ToReceiver::FileAbandoned { index, reason } => {
                if let Some(tx) = self.digests.remove(&index) {
                    let _ = tx.send(Err(format!("sender abandoned it: {reason}")));
                }
                Step::Go
            }
            ToReceiver::Hello { .. } => {
                Step::Stop(Some(TransferError::Protocol("a second hello".into())))
            }
            ToReceiver::FileRetry { .. } => Step::Stop(Some(TransferError::Protocol(
                "a file retry, which this receiver did not offer".into(),
            ))),
        }
    }

    fn data(&mut self, d: Option<(DataHeader, DataIn)>, fin: &mpsc::Sender<Finished>) -> Step {
        let Some((h, input)) = d else {
            return Step::Stop(Some(TransferError::Connection(
                "the connection closed".into(),
            )));
        };
        self.seen += 1;
        if self.seen > self.expected {
            return Step::Stop(Some(TransferError::Protocol(
                "more data channels than the job has".into(),
            )));
        }
        if let Some(why) = wrong_kind(h.kind, self.files_job) {
            return Step::Stop(Some(TransferError::Protocol(why.into())));
        }
        let counter = self.bytes.clone();
        if !self.files_job {
            // The announced duration on this side's clock: a reset after it is a normal end.
            let time_up = self.deadline.map(|d| d - DURATION_GRACE);
            let Some(stream) = self.by_stream.get(h.index as usize).cloned() else {
                return Step::Stop(Some(TransferError::Protocol(format!(
                    "bulk stream number {} of a job of {} stream(s)",
                    h.index,
                    self.by_stream.len()
                ))));
            };
            let counters = (counter, stream);
            spawn_bulk(input, fin.clone(), counters, self.bulk_limit, time_up);
            return Step::Go;
        }
        let (Some(p), Some(rx)) = (
            self.planned.remove(&h.index),
            self.digest_rx.remove(&h.index),
        ) else {
            return Step::Stop(Some(TransferError::Protocol(format!(
                "data for unknown or repeated file {}",
                h.index
            ))));
        };
        spawn_file(self.env.clone(), p, h, input, rx, fin.clone(), counter);
        Step::Go
    }

    async fn verdict(&mut self, f: Option<Finished>, out: &mut Out, log: &mut RunLog) -> Step {
        let Some(f) = f else {
            return Step::Stop(None);
        };
        self.finished += 1;
        let (index, r) = match f {
            Finished::Bulk(Ok(())) => return Step::Go,
            Finished::Bulk(Err(e)) => return Step::Stop(Some(e)),
            Finished::File(index, r) => (index, r),
        };
        match r {
            Ok(v) => self.verified(index, v, out, log).await,
            Err(reason) => self.report(index, Some(reason), out, log).await,
        }
    }

    /// Tell the sender the verdict on one file (`reason` when it failed).
    async fn report(
        &mut self,
        index: u32,
        failure: Option<Failure>,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        let (reason, code) = match failure {
            Some(f) => (Some(f.text), Some(f.code)),
            None => (None, None),
        };
        if let Some(r) = &reason {
            self.failures += 1;
            log.event(Event {
                t_s: self.t0.elapsed().as_secs_f64(),
                kind: EventKind::Error {
                    message: super::logs::clean(r, super::logs::MAX_LOGGED),
                },
            });
        }
        let ok = reason.is_none();
        let verdict = ToSender::FileResult {
            index,
            ok,
            reason,
            code,
        };
        match out.send(&verdict).await {
            Ok(()) => Step::Go,
            Err(e) => Step::Stop(Some(e)),
        }
    }
}

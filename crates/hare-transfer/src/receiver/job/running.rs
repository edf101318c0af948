//! The accepted job's loop: report ticks and the no-data deadline, control messages, data
//! channels, verdicts.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind};
use tokio::sync::mpsc;

use super::{
    bulk_deadline, digest_channels, spawn_bulk, spawn_file, stall, wrong_kind, Accepted, Ctl,
    DigestSlot, DigestWait, Finished, JobCtx, Out, ProgressBudget,
};
use crate::channels::DataIn;
use crate::error::TransferError;
use crate::intervals::{settle, ArrivalIntervals};
use crate::protocol::FailCode;
use crate::protocol::{DataHeader, DataKind, FileEntry, ToReceiver, ToSender, MAX_RETRIES};
use crate::receiver::sessions::TakeOver;
use crate::recvfile::{
    plan_file, Batch, Failure, FinalNames, Planned, Published, Target, Verified,
};
use crate::recvfile::{Decision, Existing};
use crate::report::RunLog;

/// State of an accepted job.
pub(super) struct Running {
    pub(super) bytes: Arc<AtomicU64>,
    /// Bulk jobs: payload received by stream number (`-P` lines and `[SUM]`).
    by_stream: Vec<Arc<AtomicU64>>,
    /// A file job over several connections: payload received by connection (its `[  n]`
    /// lines, as a bulk job's by stream).
    by_conn: Vec<Arc<AtomicU64>>,
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
    /// Where and for whom the files go (file jobs).
    target: Option<Target>,
    /// The job's limits (`--max-size`, the slow-job rule).
    limits: crate::receiver::Limits,
    /// Byte counts at recent ticks, for the slow-job rule: (when, bytes).
    recent: std::collections::VecDeque<(Instant, u64)>,
    stall_after: Duration,
    interval: Duration,
    seen: usize,
    finished: usize,
    last_progress: Instant,
    progress: ProgressBudget,
    srtt: Option<quinn::Connection>,
    /// A job over several connections: its striping and the window granted each connection.
    striping: Option<(crate::protocol::Striping, u64)>,
    /// Files arriving as ranges, by index, while they assemble.
    ranges: HashMap<u32, super::assemble::Ranges>,
    /// Verified files waiting to be made durable together (opened with the first one).
    batch: Option<Batch>,
    /// Files sent again: the manifest entries, names and retries so far.
    again: Again,
    /// A bulk job from a sender that says `bulk-end`: complete only once it came
    /// (`bulk_ended`).
    needs_bulk_end: bool,
    /// The sender's `bulk-end` came.
    bulk_ended: bool,
    /// The file verdicts (and `bulk-lost`s) said so far, said again after the control
    /// channel moved.
    said: Vec<ToSender>,
    /// Bulk streams lost with their connection: the times each was, and those waiting for
    /// their continuation (at this byte, with this attempt).
    bulk_moves: bulk_moves::BulkMoves,
    /// The control channel moved to a joined connection: the sender repeats what it said of
    /// files still without a verdict, so a repeated digest, retry or abandon is no error.
    took_over: bool,
}

/// What sending a file again needs: the manifest entries (a retry changes only the size and
/// metadata), the final names and `--force` to plan the file anew, the retries so far, the
/// files whose abandoned attempt has not ended yet, and those already judged.
#[derive(Default)]
struct Again {
    entries: HashMap<u32, FileEntry>,
    names: FinalNames,
    /// A file sent again replaces what is there when the job's files may (never skipped:
    /// it is being sent).
    replace: bool,
    count: HashMap<u32, u32>,
    waiting: HashMap<u32, FileEntry>,
    judged: HashSet<u32>,
    /// The attempt number the next data channel of a file sent again must carry (senders
    /// that number attempts): a channel of an attempt already discarded is dropped.
    attempt: HashMap<u32, u16>,
    /// Files given up before their (reset) channel came: a late channel of one is dropped.
    dropped: HashSet<u32>,
}

mod bulk_moves;
mod ranges;
mod take_over;
use take_over::next_take_over;

/// What one event of the loop decided.
enum Step {
    Go,
    Stop(Option<TransferError>),
    /// The sender moved the control channel (`take-over`).
    Moved(TakeOver),
}

impl Running {
    pub(super) fn new(
        ctx: &JobCtx,
        accepted: Accepted,
        expected: usize,
        t0: Instant,
        interval: Duration,
        needs_end: bool,
    ) -> Self {
        let (mut links, mut failed_links) = (0, 0);
        let mut again = Again {
            names: ctx.names.clone(),
            ..Again::default()
        };
        let mut target = None;
        let (planned, files_job, bulk_limit, deadline, streams) = match accepted {
            Accepted::Files {
                planned,
                links: l,
                existing,
                target: t,
                ..
            } => {
                links = l.len();
                failed_links = l.iter().filter(|r| r.reason.is_some()).count();
                again.replace = existing != Existing::Refuse;
                again.entries = planned.iter().map(|(i, p)| (*i, p.entry.clone())).collect();
                target = Some(t);
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
            by_conn: Vec::new(),
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
            target,
            limits: ctx.opts.limits,
            recent: std::collections::VecDeque::new(),
            stall_after: ctx.opts.limits.stall_timeout,
            interval,
            seen: 0,
            finished: 0,
            last_progress: Instant::now(),
            progress: ProgressBudget::new(),
            srtt: ctx.conn.clone(),
            striping: None,
            ranges: HashMap::new(),
            batch: None,
            again,
            needs_bulk_end: needs_end && !files_job,
            bulk_ended: false,
            said: Vec::new(),
            bulk_moves: Default::default(),
            took_over: false,
        }
    }

    /// Every data channel is done, but the sender has not said `bulk-end` yet.
    fn awaiting_bulk_end(&self) -> bool {
        self.needs_bulk_end && !self.bulk_ended
    }

    /// Run until every channel finished (`None`) or the job must end (`Some(why)`).
    pub(super) async fn serve(
        &mut self,
        out: &mut Out,
        log: &mut RunLog,
        (mut ctl_rx, mut take_rx): (mpsc::Receiver<Ctl>, Option<mpsc::Receiver<TakeOver>>),
        mut data_rx: mpsc::Receiver<(DataHeader, DataIn)>,
    ) -> Option<TransferError> {
        let (fin_tx, mut fin_rx) = mpsc::channel::<Finished>(self.expected.max(1));
        let start = tokio::time::Instant::from_std(self.t0 + self.interval);
        let mut ticker = tokio::time::interval_at(start, self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let far = self.t0 + Duration::from_secs(u64::from(u32::MAX));
        let deadline = tokio::time::sleep_until(self.deadline.unwrap_or(far).into());
        tokio::pin!(deadline);
        while self.finished < self.expected || self.awaiting_bulk_end() {
            let due = self.batch.as_ref().and_then(Batch::due);
            let step = tokio::select! {
                _ = ticker.tick() => self.tick(out, log).await,
                m = ctl_rx.recv(), if out.lost.is_none() => self.control(m, out, log).await,
                Some(t) = next_take_over(&mut take_rx) => Step::Moved(t),
                d = data_rx.recv(), if self.finished < self.expected => self.data(d, &fin_tx),
                f = fin_rx.recv() => self.verdict(f, out, log).await,
                _ = tokio::time::sleep_until(due.unwrap_or(far).into()), if due.is_some() => {
                    self.flush(out, log).await
                }
                _ = &mut deadline => Step::Stop(Some(TransferError::Timeout(
                    "the timed job overran its duration".into(),
                ))),
            };
            match step {
                Step::Go => {}
                Step::Stop(why) => return why,
                Step::Moved(t) => match self.take_over(t, out, log).await {
                    Ok(rx) => ctl_rx = rx,
                    Err(e) => return Some(e),
                },
            }
        }
        match self.flush(out, log).await {
            Step::Stop(why) => why,
            _ => None,
        }
    }

    /// A verified file joins the batch; a full batch, or the job's last file, flushes it.
    async fn verified(&mut self, index: u32, v: Verified, out: &mut Out, log: &mut RunLog) -> Step {
        if self.batch.is_none() {
            let opened = match &self.target {
                Some(t) => Batch::open(&t.root),
                None => Err(std::io::Error::other("not a file job")),
            };
            match opened {
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
        let counters = match self.by_conn.is_empty() {
            true => &self.by_stream,
            false => &self.by_conn,
        };
        counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
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
        if let Some(e) = out.wait_over() {
            return Step::Stop(Some(e));
        }
        // A client that keeps its connection alive but sends nothing would hold a job slot
        // for ever.
        if self.last_progress.elapsed() >= self.stall_after {
            return Step::Stop(Some(stall(self.stall_after)));
        }
        match self.too_slow(b) {
            Some(e) => Step::Stop(Some(e)),
            None => Step::Go,
        }
    }

    /// The slow-job rule: once data has started, at least `min_progress` bytes in every
    /// `min_progress_window`; a job below it loses its slot (close code 5, timeout).
    fn too_slow(&mut self, bytes: u64) -> Option<TransferError> {
        let (need, window) = (self.limits.min_progress, self.limits.min_progress_window);
        if need == 0 || bytes == 0 {
            return None;
        }
        let now = Instant::now();
        self.recent.push_back((now, bytes));
        // Keep the newest sample at least a window old as the reference.
        while self.recent.len() > 1 && now.duration_since(self.recent[1].0) >= window {
            self.recent.pop_front();
        }
        let (t0, b0) = *self.recent.front()?;
        if now.duration_since(t0) < window || bytes - b0 >= need {
            return None;
        }
        let secs = window.as_secs();
        Some(TransferError::Timeout(format!(
            "{} moved in the last {secs} s, below this receiver's minimum of {} per {secs} s \
             (--min-rate)",
            crate::space::binary_size(bytes - b0),
            crate::space::binary_size(need)
        )))
    }

    async fn control(&mut self, m: Option<Ctl>, out: &mut Out, log: &mut RunLog) -> Step {
        let m = match m {
            Some(Ctl::Msg(m)) => m,
            Some(Ctl::Closed(Some(e))) if out.may_wait() => {
                out.lose(e);
                return Step::Go;
            }
            Some(Ctl::Closed(Some(e))) => return Step::Stop(Some(e)),
            Some(Ctl::Closed(None)) | None => {
                return Step::Stop(Some(TransferError::Connection(crate::peer_gone::closed(
                    crate::peer_gone::Peer::Sender,
                ))))
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
                // Said again after the control channel moved: the first one counts.
                None if self.took_over && self.again.entries.contains_key(&index) => Step::Go,
                None => Step::Stop(Some(TransferError::Protocol(format!(
                    "digest for unknown or finished file {index}"
                )))),
            },
            ToReceiver::FileAbandoned {
                index,
                reason,
                unsent,
            } => self.abandoned(index, &reason, unsent, out, log).await,
            ToReceiver::Hello { .. } => {
                Step::Stop(Some(TransferError::Protocol("a second hello".into())))
            }
            ToReceiver::Join { .. } => Step::Stop(Some(TransferError::Protocol(
                "a join on a connection that already holds a job".into(),
            ))),
            ToReceiver::TakeOver { .. } => Step::Stop(Some(TransferError::Protocol(
                "a take-over on the job's control channel itself".into(),
            ))),
            ToReceiver::BulkEnd { .. } if self.files_job => Step::Stop(Some(
                TransferError::Protocol("bulk-end in a file job".into()),
            )),
            // `bytes` is what the sender handed to its transport: not compared, since a
            // timed QUIC job discards what was still queued when its time was up.
            ToReceiver::BulkEnd { stopped, .. } => {
                self.bulk_ended = true;
                if stopped {
                    log.event(Event {
                        t_s: self.t0.elapsed().as_secs_f64(),
                        kind: EventKind::Note {
                            message: "the sender was stopped before the job's end \
                                      (interrupted): the job ends with what arrived"
                                .into(),
                        },
                    });
                }
                Step::Go
            }
            ToReceiver::FileRetry {
                index,
                reason,
                size,
                mode,
                mtime_ns,
                attempt,
            } => {
                if self.took_over
                    && attempt.is_some()
                    && self.again.attempt.get(&index) == attempt.as_ref()
                {
                    // Said again after the control channel moved: taken already.
                    return Step::Go;
                }
                if let Some(a) = attempt {
                    self.again.attempt.insert(index, a);
                }
                let Some(old) = self.again.entries.get(&index) else {
                    return Step::Stop(Some(TransferError::Protocol(format!(
                        "retry of unknown file {index}"
                    ))));
                };
                let entry = FileEntry {
                    size,
                    mode,
                    mtime_ns,
                    ..old.clone()
                };
                if let Some(why) = self.retry_too_large(index, size) {
                    return self.refuse_retry(index, &entry.name, why, out, log).await;
                }
                self.again.entries.insert(index, entry.clone());
                self.retry(index, entry, &reason, out, log).await
            }
        }
    }

    fn data(&mut self, d: Option<(DataHeader, DataIn)>, fin: &mpsc::Sender<Finished>) -> Step {
        let Some((h, input)) = d else {
            return Step::Stop(Some(TransferError::Connection(
                "the connection closed".into(),
            )));
        };
        if matches!(h.kind, DataKind::File | DataKind::Range)
            && self
                .again
                .attempt
                .get(&h.index)
                .is_some_and(|&want| h.attempt != want)
        {
            // An attempt the retry already discarded, arriving after it (it was opened before
            // the retry was asked for): dropped, its data never read.
            drop(input);
            return Step::Go;
        }
        if h.kind == DataKind::Range && !self.again.dropped.contains(&h.index) {
            return self.range(h, input, fin);
        }
        if h.kind == DataKind::Bulk && h.attempt > 0 {
            return self.bulk_continued(h, input, fin);
        }
        if h.kind != DataKind::Bulk && self.again.dropped.remove(&h.index) {
            // The late channel of a file the sender gave up before it came (judged then).
            drop(input);
            return Step::Go;
        }
        self.seen += 1;
        if self.seen > self.expected {
            return Step::Stop(Some(TransferError::Protocol(
                "more data channels than the job has".into(),
            )));
        }
        if let Some(why) = wrong_kind(h.kind, self.files_job) {
            return Step::Stop(Some(TransferError::Protocol(why.into())));
        }
        if !self.files_job {
            return self.bulk_stream(h, input, fin);
        }
        let counter = self.bytes.clone();
        let (Some(p), Some(rx)) = (
            self.planned.remove(&h.index),
            self.digest_rx.remove(&h.index),
        ) else {
            return Step::Stop(Some(TransferError::Protocol(format!(
                "data for unknown or repeated file {}",
                h.index
            ))));
        };
        let Some(target) = self.target.clone() else {
            return Step::Stop(Some(TransferError::Protocol(
                "a file stream in a bulk job".into(),
            )));
        };
        let by_conn = self.by_conn.get(usize::from(input.connection())).cloned();
        spawn_file(target, p, h, input, rx, fin.clone(), (counter, by_conn));
        Step::Go
    }

    async fn verdict(&mut self, f: Option<Finished>, out: &mut Out, log: &mut RunLog) -> Step {
        let Some(f) = f else {
            return Step::Stop(None);
        };
        let (index, r) = match f {
            Finished::Bulk(stream, r) => return self.bulk_stream_end(stream, r, out, log).await,
            Finished::File(index, r) => (index, r),
        };
        self.ranges.remove(&index);
        if let Some(entry) = self.again.waiting.remove(&index) {
            // The abandoned attempt has ended (its data discarded): plan the new one, whose
            // data channel is still to come.
            if let Ok(v) = r {
                v.discard();
            }
            self.seen -= 1;
            return self.replan(index, entry, out, log).await;
        }
        self.again.judged.insert(index);
        self.finished += 1;
        match r {
            Ok(v) => self.verified(index, v, out, log).await,
            Err(reason) => self.report(index, Some(reason), out, log).await,
        }
    }

    /// The sender sends file `index` again as `entry` (it changed while read). Its current
    /// attempt is discarded: at once when its data channel has not come yet, else once its
    /// task has ended (the digest slot tells it to discard); then it is planned anew.
    async fn retry(
        &mut self,
        index: u32,
        entry: FileEntry,
        reason: &str,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        let n = self.again.count.entry(index).or_insert(0);
        *n += 1;
        if *n > MAX_RETRIES {
            return Step::Stop(Some(TransferError::Protocol(format!(
                "file {index} sent again more than {MAX_RETRIES} times"
            ))));
        }
        if self.again.judged.contains(&index) {
            // Already judged (it failed here first): the verdict stands.
            return Step::Go;
        }
        let Some(slot) = self.digests.remove(&index) else {
            return Step::Stop(Some(TransferError::Protocol(format!(
                "retry of file {index}, whose digest was already sent"
            ))));
        };
        let why = reason
            .split_once("; not delivered")
            .map_or(reason, |(w, _)| w);
        log.event(Event {
            t_s: self.t0.elapsed().as_secs_f64(),
            kind: EventKind::Note {
                message: super::super::logs::clean(
                    &format!("{}: {why}; the sender sends it again", entry.name),
                    super::super::logs::MAX_LOGGED,
                ),
            },
        });
        if self.planned.remove(&index).is_some() {
            self.digest_rx.remove(&index);
            return self.replan(index, entry, out, log).await;
        }
        let _ = slot.send(Err(format!("the sender sends it again: {reason}")));
        self.again.waiting.insert(index, entry);
        Step::Go
    }

    /// Why a retry announcing `size` bytes for file `index` is refused: the job's total with
    /// the new size over `--max-size` (every announced size passes the limits the hello did).
    fn retry_too_large(&self, index: u32, size: u64) -> Option<String> {
        let others = self
            .again
            .entries
            .iter()
            .filter(|(i, _)| **i != index)
            .try_fold(0u64, |a, (_, e)| a.checked_add(e.size));
        let max = self.limits.max_job_bytes;
        match others.and_then(|o| o.checked_add(size)) {
            Some(t) if t <= max => None,
            _ => Some(format!(
                "sent again at {size} bytes, which brings the job over this receiver's limit of \
                 {max} bytes (--max-size); not received"
            )),
        }
    }

    /// A retry that may not be taken: the file fails (its current attempt is discarded when
    /// its channel ends) and the sender is told why; the job goes on.
    async fn refuse_retry(
        &mut self,
        index: u32,
        name: &str,
        why: String,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        if self.again.judged.contains(&index) {
            return Step::Go;
        }
        if self.planned.remove(&index).is_some() {
            // No data channel yet: none may come now.
            self.digest_rx.remove(&index);
            self.digests.remove(&index);
            self.finished += 1;
            self.again.judged.insert(index);
            let f = Failure::new(FailCode::Other, format!("{name}: {why}"));
            return self.report(index, Some(f), out, log).await;
        }
        // Its channel is open: it fails when that ends, with this reason.
        if let Some(tx) = self.digests.remove(&index) {
            let _ = tx.send(Err(why));
        }
        Step::Go
    }

    /// The sender gave file `index` up. A file whose data channel never opened (`unsent`: it
    /// could not be read at all) fails here at once, as the sender said; one whose channel
    /// is open fails when that channel ends (its digest slot carries the reason).
    async fn abandoned(
        &mut self,
        index: u32,
        reason: &str,
        unsent: bool,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        let why = format!("sender abandoned it: {reason}");
        // A channel the sender opened and reset at once may never show its header here
        // (a reset discards what was not sent yet): a file whose channel has not come is
        // judged now, as an unsent one, and a late channel of it is dropped unread.
        let no_channel_yet = self.planned.contains_key(&index);
        if (!unsent && !no_channel_yet) || self.again.judged.contains(&index) {
            if let Some(tx) = self.digests.remove(&index) {
                let _ = tx.send(Err(why));
            }
            return Step::Go;
        }
        let Some(p) = self.planned.remove(&index) else {
            if self.took_over {
                // Said again after the control channel moved; its data channel came.
                return Step::Go;
            }
            return Step::Stop(Some(TransferError::Protocol(format!(
                "file {index} given up as unsent, but its data channel came"
            ))));
        };
        self.digest_rx.remove(&index);
        self.digests.remove(&index);
        if !unsent {
            self.again.dropped.insert(index);
        }
        // No channel will come for it: it counts as one that ended.
        self.finished += 1;
        self.again.judged.insert(index);
        let f = super::super::streams::abandoned(&p.entry.name, &why);
        // A prefix kept from an earlier job stays for --resume (nothing of it was touched).
        drop(p);
        // The last file judged ends the loop, which then flushes the batch.
        self.report(index, Some(f), out, log).await
    }

    /// Plan file `index` anew (from offset 0, as `entry`) and tell the sender to send it; a
    /// file that can no longer be planned (its name appeared meanwhile) fails.
    async fn replan(
        &mut self,
        index: u32,
        entry: FileEntry,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Step {
        let a = &self.again;
        let planned = match &self.target {
            Some(t) => {
                let existing = match a.replace {
                    true => Existing::Replace,
                    false => Existing::Refuse,
                };
                match plan_file(t, &entry, false, existing, &a.names) {
                    // A file sent again is written from 0: its new size must fit the disk.
                    Ok(Decision::Send(p)) => {
                        crate::space::check_free(&t.root, p.remaining()).map(|()| *p)
                    }
                    Ok(Decision::Skip(why)) => Err(why),
                    Err(e) => Err(e),
                }
            }
            None => Err("not a file job".into()),
        };
        match planned {
            Ok(p) => {
                self.planned.insert(index, p);
                let (tx, rx) = tokio::sync::oneshot::channel();
                self.digests.insert(index, tx);
                self.digest_rx.insert(index, rx);
                match out.send(&ToSender::FileRestart { index }).await {
                    Ok(()) => Step::Go,
                    Err(e) => Step::Stop(Some(e)),
                }
            }
            Err(reason) => {
                self.finished += 1;
                self.again.judged.insert(index);
                let f = Failure::new(FailCode::Other, format!("{}: {reason}", entry.name));
                self.report(index, Some(f), out, log).await
            }
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
        self.say_kept(verdict, out).await
    }

    /// Say `m` to the sender and keep it, to be said again after the control channel moves.
    async fn say_kept(&mut self, m: ToSender, out: &mut Out) -> Step {
        self.said.push(m.clone());
        match out.send(&m).await {
            Ok(()) => Step::Go,
            Err(e) => Step::Stop(Some(e)),
        }
    }
}

//! The data tasks of a job: one task per file (at most `-P` streaming at a time; a file
//! waiting for its verdict does not count), and what every data task shares (bulk streams:
//! module `bulk`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use indicatif::MultiProgress;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::JoinSet;

use crate::error::{Result, TransferError};
use crate::protocol::{FilePlan, ToReceiver};
use crate::sendfiles::Source;

use super::bar::OverallBar;
use super::control::Verdict;
use super::opener::Opener;
use super::retry::Retry;
use super::writers::{file_task, Pacer};
use super::FileReport;

/// What every data task shares.
pub(super) struct DataShared {
    /// Opens the data channels.
    pub(super) opener: Opener,
    /// Set to end the bulk writers (Ctrl-C).
    pub(super) stop_flag: Arc<AtomicBool>,
    /// Payload handed to the transport, all streams.
    pub(super) written: Arc<AtomicU64>,
    /// `-R` over all streams together.
    pub(super) pacer: Option<Arc<Pacer>>,
    /// The control writer (file digests).
    pub(super) out_tx: mpsc::Sender<ToReceiver>,
    /// How changed files are sent again.
    pub(super) retry: Retry,
    /// The job's connections, when it has several (`-C`).
    pub(super) stripes: Option<Arc<super::stripes::Stripes>>,
}

/// A data task's result: a file's report, or `None` for a bulk stream.
pub(super) type DataTasks = JoinSet<Result<Option<FileReport>>>;

/// The `-R` pacer, shared by all streams; a rate of 0 is no limit.
pub(super) fn pacer(rate: Option<u64>) -> Option<Arc<Pacer>> {
    rate.filter(|&r| r > 0).map(|r| {
        Arc::new(Pacer {
            bits_per_s: r as f64,
            start: Instant::now(),
            sent: AtomicU64::new(0),
        })
    })
}

/// Start one task per file; `parallel` of them hold a permit to send at once.
pub(super) fn spawn_files(
    tasks: &mut DataTasks,
    sources: &[Source],
    plans: Vec<FilePlan>,
    mut verdicts: HashMap<u32, oneshot::Receiver<Verdict>>,
    parallel: u16,
    shared: &DataShared,
    multi: Option<&MultiProgress>,
) -> Option<OverallBar> {
    let gate = Arc::new(Semaphore::new(usize::from(parallel)));
    let plan_of: HashMap<u32, FilePlan> = plans.into_iter().map(|p| (p.index, p)).collect();
    let skipped = |i: usize| plan_of.get(&(i as u32)).and_then(|p| p.skip.clone());
    // One bar for the whole job; each file reports into a hidden bar of its own (a file the
    // receiver has already counts as settled, with nothing to send).
    let sizes: Vec<u64> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if skipped(i).is_some() {
                0
            } else {
                s.entry.size
            }
        })
        .collect();
    let (overall, bars) = match multi.map(|m| OverallBar::start(m, &sizes)) {
        Some((o, b)) => (Some(o), b),
        None => (None, Vec::new()),
    };
    for (i, src) in sources.iter().enumerate() {
        let bar = bars.get(i).cloned();
        if let Some(why) = skipped(i) {
            if let Some(b) = &bar {
                b.settle(true);
            }
            verdicts.remove(&(i as u32));
            let report = FileReport {
                name: src.entry.name.clone(),
                ok: true,
                reason: None,
                resumed_from: 0,
                retries: 0,
                skipped: Some(why),
                grew_to: None,
            };
            tasks.spawn(async move { Ok(Some(report)) });
            continue;
        }
        let i = i as u32;
        let Some(result_rx) = verdicts.remove(&i) else {
            continue;
        };
        let (opener, out_tx, gate, src, plan) = (
            shared.opener.clone(),
            shared.out_tx.clone(),
            gate.clone(),
            src.clone(),
            plan_of.get(&i).cloned(),
        );
        let (pacer, retry) = (shared.pacer.clone(), shared.retry.clone());
        let stripes = shared.stripes.clone();
        tasks.spawn(async move {
            let permit = gate
                .acquire_owned()
                .await
                .map_err(|_| TransferError::Interrupted)?;
            Ok(Some(
                file_task(
                    (opener, stripes),
                    i,
                    src,
                    plan,
                    out_tx,
                    result_rx,
                    pacer,
                    bar,
                    permit,
                    retry,
                )
                .await,
            ))
        });
    }
    overall
}

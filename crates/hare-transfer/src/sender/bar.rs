//! The overall progress bar of a file job: files settled, bytes, rate and ETA, fed from one
//! hidden bar per file (plain atomics, so the files' tasks pay nothing for it).
//!
//! A file counts on the bar once it is settled, whether it was sent or failed, as rsync's
//! `to-chk` and scp's bar run to the end whatever happened to each file: a job with 10 of 40
//! files failed ends at `files 40/40 (10 failed)` with its bytes complete, and the summary
//! says which failed and why. A job cut short (Ctrl-C, a lost connection) keeps the bar where
//! it stopped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

/// How often the overall bar is redrawn: a few times a second reads well and costs the
/// sender nothing measurable.
const BAR_TICK: Duration = Duration::from_millis(250);

/// What the overall bar reads: every file's hidden bar and how many files failed.
struct Files {
    bars: Vec<ProgressBar>,
    failed: AtomicUsize,
}

impl Files {
    /// Bring `overall` up to date; true when every file is settled.
    fn show(&self, overall: &ProgressBar) -> bool {
        let done = self.bars.iter().filter(|b| b.is_finished()).count();
        // A file sent again adds its new attempt to its bar's length, and one that failed
        // takes off what it will not send: the total is what is really sent.
        overall.set_length(self.bars.iter().map(|b| b.length().unwrap_or(0)).sum());
        overall.set_position(self.bars.iter().map(ProgressBar::position).sum());
        overall.set_message(files_message(
            done,
            self.bars.len(),
            self.failed.load(Ordering::Relaxed),
        ));
        done == self.bars.len()
    }
}

/// `files 38/40`, with `(N failed)` once any failed.
fn files_message(done: usize, of: usize, failed: usize) -> String {
    match failed {
        0 => format!("files {done}/{of}"),
        n => format!("files {done}/{of} ({n} failed)"),
    }
}

/// One file's place on the overall bar.
#[derive(Clone)]
pub(super) struct FileBar {
    bar: ProgressBar,
    files: Arc<Files>,
}

impl FileBar {
    /// The file's hidden bar: its bytes sent (every attempt) of its length.
    pub(super) fn bytes(&self) -> &ProgressBar {
        &self.bar
    }

    /// The file is settled: sent, or failed (what it did not send comes off the total).
    pub(super) fn settle(&self, ok: bool) {
        if !ok {
            self.files.failed.fetch_add(1, Ordering::Relaxed);
            self.bar.set_length(self.bar.position());
        }
        self.bar.finish();
    }
}

/// The job's overall bar and the task that redraws it.
pub(super) struct OverallBar {
    bar: ProgressBar,
    files: Arc<Files>,
    ticker: JoinHandle<()>,
}

impl OverallBar {
    /// Add the bar for files of these `sizes` to `m` and start redrawing it; one
    /// [`FileBar`] per file, in order.
    pub(super) fn start(m: &MultiProgress, sizes: &[u64]) -> (Self, Vec<FileBar>) {
        let files = Arc::new(Files {
            bars: sizes
                .iter()
                .map(|&s| ProgressBar::with_draw_target(Some(s), ProgressDrawTarget::hidden()))
                .collect(),
            failed: AtomicUsize::new(0),
        });
        let bar = m.add(ProgressBar::new(sizes.iter().sum()));
        bar.set_style(
            ProgressStyle::with_template(template(terminal_columns()))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        files.show(&bar);
        let ticker = {
            let (bar, files) = (bar.clone(), files.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(BAR_TICK);
                loop {
                    tick.tick().await;
                    files.show(&bar);
                }
            })
        };
        let each = files
            .bars
            .iter()
            .map(|b| FileBar {
                bar: b.clone(),
                files: files.clone(),
            })
            .collect();
        (Self { bar, files, ticker }, each)
    }

    /// The job's end, before the summary: the bar is taken off the screen, so that nothing is
    /// drawn under the summary (indicatif keeps a bar it still holds below every line
    /// printed after it). A job whose files all settled leaves one plain line with the bar's
    /// final state; one cut short leaves none, as what the bar counted (bytes handed to the
    /// transport) is not what was delivered, which the summary says.
    pub(super) fn end(self, m: &MultiProgress) {
        self.ticker.abort();
        let settled = self.files.show(&self.bar);
        if settled {
            self.bar.finish_and_clear();
        }
        // Out of the MultiProgress: its next line (the summary) clears the bar's.
        m.remove(&self.bar);
        if settled {
            let _ = m.println(format!(
                "{} {}/{} sent",
                self.bar.message(),
                crate::space::binary_size(self.bar.position()),
                crate::space::binary_size(self.bar.length().unwrap_or(0)),
            ));
        }
    }
}

/// The bar's layout for a terminal `columns` wide: the bar itself takes what the figures
/// leave (`wide_bar`), and figures are dropped on a narrow terminal rather than wrapped
/// (the widest message, `files 10000/10000 (10000 failed)`, is 33 columns).
fn template(columns: u16) -> &'static str {
    match columns {
        0..=59 => "{msg} {bytes}/{total_bytes}",
        60..=99 => "{msg} {wide_bar} {bytes}/{total_bytes}",
        _ => "{msg} {wide_bar} {bytes:>10}/{total_bytes:10} {bytes_per_sec:>12} ETA {eta}",
    }
}

/// Columns of the terminal on stderr (where the bar is drawn), 80 when unknown.
fn terminal_columns() -> u16 {
    crate::screen::tty_columns(libc::STDERR_FILENO)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden() -> MultiProgress {
        MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
    }

    #[tokio::test]
    async fn failed_files_count_as_settled_and_the_bar_ends_complete() {
        let m = hidden();
        let (overall, files) = OverallBar::start(&m, &[100, 200, 300, 400]);
        let bar = overall.bar.clone();
        assert_eq!(bar.message(), "files 0/4");
        files[0].bytes().inc(100);
        files[0].bytes().finish();
        files[0].settle(true);
        files[1].bytes().inc(50);
        files[1].settle(false);
        files[2].settle(false);
        files[3].bytes().inc(400);
        files[3].settle(true);
        overall.end(&m);
        assert_eq!(bar.message(), "files 4/4 (2 failed)");
        assert!(bar.is_finished());
        // What the failed files did not send is off the total; the bytes are complete.
        assert_eq!((bar.position(), bar.length()), (550, Some(550)));
    }

    #[tokio::test]
    async fn a_job_cut_short_keeps_the_bar_where_it_stopped() {
        let m = hidden();
        let (overall, files) = OverallBar::start(&m, &[100, 200]);
        let bar = overall.bar.clone();
        files[0].bytes().inc(100);
        files[0].settle(true);
        files[1].bytes().inc(20);
        overall.end(&m);
        assert_eq!(bar.message(), "files 1/2");
        assert_eq!((bar.position(), bar.length()), (120, Some(300)));
    }

    #[test]
    fn a_narrow_terminal_drops_figures_instead_of_wrapping() {
        assert_eq!(template(40), "{msg} {bytes}/{total_bytes}");
        assert_eq!(template(60), "{msg} {wide_bar} {bytes}/{total_bytes}");
        assert!(template(100).ends_with("{bytes_per_sec:>12} ETA {eta}"));
    }

    #[test]
    fn the_message_names_failures_only_when_there_are_some() {
        assert_eq!(files_message(3, 40, 0), "files 3/40");
        assert_eq!(files_message(40, 40, 10), "files 40/40 (10 failed)");
    }
}

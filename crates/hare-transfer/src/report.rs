//! Where reports go: nuttcp text lines on stdout, hare-report JSON lines (`--jsonl`) while the
//! run goes on, and an iperf3-shaped document (`--json FILE|-`) at the end.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use hare_report::{
    compact, jsonl, nuttcp, Event, EventKind, Interval, Record, Role, Run, RunHeader, Summary, Tool,
};
use indicatif::MultiProgress;

use crate::intervals::Line;
use crate::iperf_extra::IperfContext;
use crate::iperf_streams::PerStream;

use crate::error::{Result, TransferError};

/// The units of every figure the sender's text report prints and what the flag at the end
/// of an interval line means, stated once under its header
/// (nuttcp's readers take MB for 2^20 bytes, iperf3's Mbps for 10^6 bit/s; sizes such as the
/// window are in MiB, the same 2^20 bytes).
pub const SENDER_UNITS: [&str; 3] = [
    "  units: MB and MiB = 2^20 bytes, Mbps = 10^6 bit/s",
    "cwnd in packets",
    "[cwnd]/[window]: what bound",
];

/// The units of the receiver's text report, stated once under each job's header.
pub const RECEIVER_UNITS: &str = "  units: MB and MiB = 2^20 bytes, Mbps = 10^6 bit/s";

/// Where the iperf3-shaped JSON goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTarget {
    /// Standard output (text lines are then suppressed so that stdout is pure JSON).
    Stdout,
    /// A file (one document; the receiver writes one line per connection).
    File(PathBuf),
}

/// Output settings shared by both ends.
#[derive(Debug, Clone, Default)]
pub struct OutputOptions {
    /// `-q`: no text lines.
    pub quiet: bool,
    /// `--json FILE|-`.
    pub json: Option<JsonTarget>,
    /// `--jsonl FILE`: hare-report records written as they happen.
    pub jsonl: Option<PathBuf>,
    /// Progress bars for files (only honoured on a terminal, without `--json` and `-q`).
    pub progress: bool,
    /// `-v`: sender interval lines with every congestion column (cwnd in bytes, ssthresh,
    /// minimum RTT), wider than 100 columns.
    pub verbose: bool,
}

impl OutputOptions {
    /// True when text lines should be printed.
    pub fn text(&self) -> bool {
        !self.quiet && self.json != Some(JsonTarget::Stdout)
    }
}

/// Prints text lines, through the progress bars when they are shown, each cut to the
/// terminal's width when stdout is one ([`crate::screen`]).
#[derive(Debug, Clone)]
pub(crate) struct Printer {
    text: bool,
    multi: Option<MultiProgress>,
    tag: Option<JobTag>,
    columns: Option<usize>,
}

/// Which job a line belongs to, said only while several jobs of a receiver overlap (one job's
/// lines read as nuttcp's; two jobs' lines interleaved need a name).
#[derive(Debug, Clone)]
pub(crate) struct JobTag {
    text: String,
    running: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl JobTag {
    /// `[PEER #ID]` for lines printed while more than one of the `running` jobs run.
    pub fn new(
        peer: std::net::SocketAddr,
        id: u64,
        running: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        Self {
            text: format!("[{peer} #{id}]"),
            running,
        }
    }

    fn now(&self) -> Option<&str> {
        let n = self.running.load(std::sync::atomic::Ordering::Relaxed);
        (n > 1).then_some(self.text.as_str())
    }
}

impl Printer {
    /// A printer for these options.
    pub fn new(out: &OutputOptions) -> Self {
        let text = out.text();
        Self {
            text,
            multi: None,
            tag: None,
            columns: text.then(crate::screen::stdout_columns).flatten(),
        }
    }

    /// True when report lines take their compact form: a terminal narrower than the full
    /// lines ([`crate::screen::FULL_COLUMNS`]).
    pub fn compact(&self) -> bool {
        self.columns
            .is_some_and(|c| c < crate::screen::FULL_COLUMNS)
    }

    /// Print `parts` joined by `; ` on as few lines as the terminal's width allows (one
    /// line when stdout is not a terminal); a part that starts a later line is indented.
    pub fn parts(&self, parts: &[&str]) {
        let mut line = String::new();
        for p in parts {
            let next = format!("{line}; {p}");
            if line.is_empty() {
                line = p.to_string();
            } else if self.columns.is_some_and(|c| next.chars().count() > c) {
                self.line(&line);
                line = format!("  {p}");
            } else {
                line = next;
            }
        }
        self.line(&line);
    }

    /// Tag each line with its job while jobs overlap.
    pub fn tagged(mut self, tag: JobTag) -> Self {
        self.tag = Some(tag);
        self
    }

    /// Show progress bars in `multi` and print through it.
    pub(crate) fn with_progress(mut self, multi: MultiProgress) -> Self {
        self.multi = Some(multi);
        self
    }

    /// The progress bar container, when bars are shown.
    pub fn multi(&self) -> Option<&MultiProgress> {
        self.multi.as_ref()
    }

    /// True when text is printed.
    pub(crate) fn enabled(&self) -> bool {
        self.text
    }

    /// Print one line (nothing when quiet).
    pub fn line(&self, s: &str) {
        if !self.text {
            return;
        }
        let tagged;
        let s = match self.tag.as_ref().and_then(JobTag::now) {
            Some(t) => {
                tagged = format!("{t} {s}");
                tagged.as_str()
            }
            None => s,
        };
        for piece in crate::screen::fit(s, self.columns) {
            match &self.multi {
                Some(m) => {
                    let _ = m.println(piece);
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{piece}");
                    let _ = out.flush();
                }
            }
        }
    }
}

/// One run's records: printed, streamed and kept for the final JSON.
#[derive(Debug)]
pub(crate) struct RunLog {
    run: Run,
    printer: Printer,
    jsonl: Option<BufWriter<File>>,
    json: Option<JsonTarget>,
    iperf: IperfContext,
    started: SystemTime,
    per_stream: PerStream,
    reverse: bool,
    verbose: bool,
    /// Whether the compact lines' column heading was printed.
    heading_done: bool,
}

impl RunLog {
    /// Start a run with its header.
    pub fn new(header: RunHeader, printer: Printer, out: &OutputOptions) -> Result<Self> {
        let jsonl = match &out.jsonl {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
                TransferError::io(format!("creating {}", p.display()), e)
            })?)),
            None => None,
        };
        let mut log = Self {
            run: Run {
                header,
                intervals: Vec::new(),
                events: Vec::new(),
                summary: None,
            },
            printer,
            jsonl,
            json: out.json.clone(),
            iperf: IperfContext::default(),
            started: SystemTime::now(),
            per_stream: PerStream::default(),
            reverse: false,
            verbose: out.verbose,
            heading_done: false,
        };
        let rec = Record::Header(log.run.header.clone());
        log.stream(&rec);
        Ok(log)
    }

    /// What the iperf3-shaped document says about the connection and the test beyond the
    /// run's own records.
    pub(crate) fn set_iperf(&mut self, cx: IperfContext) {
        self.iperf = cx;
    }

    /// Mark the run as reverse mode (`-r`: the receiver sends), for the iperf3-shaped
    /// document (`start.test_start.reverse`).
    pub(crate) fn set_reverse(&mut self) {
        self.reverse = true;
    }

    /// The printer.
    pub(crate) fn printer(&self) -> &Printer {
        &self.printer
    }

    fn stream(&mut self, rec: &Record) {
        if let Some(w) = &mut self.jsonl {
            let _ = jsonl::write_record(&mut *w, rec);
            let _ = w.flush();
        }
    }

    /// Record and print an interval; with several streams, one line per stream first and
    /// the whole job's line marked `[SUM]`, as iperf3 prints them. On a narrow terminal the
    /// lines take their compact form under a heading ([`hare_report::compact`]).
    pub fn line(&mut self, line: Line) {
        let iv = line.interval;
        let several = line.streams.len() > 1;
        if self.compact() {
            self.heading();
            let sum = several.then_some("[SUM]");
            let text = match self.run.header.role {
                Role::Sender => compact::sender_line(sum, &iv),
                Role::Receiver => compact::receiver_line(sum, &iv),
            };
            self.stream_lines(&line.streams, iv.seconds());
            self.printer.line(&text);
        } else {
            let text = match self.run.header.role {
                Role::Sender if self.verbose => nuttcp::interval_line_verbose(&iv),
                Role::Sender => nuttcp::interval_line(&iv),
                Role::Receiver => receiver_line(&iv),
            };
            self.stream_lines(&line.streams, iv.seconds());
            match several {
                true => self.printer.line(&format!("[SUM]{text}")),
                false => self.printer.line(&text),
            }
        }
        self.stream(&Record::Interval(iv.clone()));
        self.run.intervals.push(iv);
        self.per_stream.intervals.push(line.streams);
    }

    /// True when lines take their compact form (a narrow terminal; `-v` keeps its columns).
    fn compact(&self) -> bool {
        self.printer.compact() && !self.verbose
    }

    /// The compact lines' column heading, once per run.
    fn heading(&mut self) {
        if std::mem::replace(&mut self.heading_done, true) {
            return;
        }
        self.printer.line(&match self.run.header.role {
            Role::Sender => compact::sender_heading(),
            Role::Receiver => compact::receiver_heading(),
        });
    }

    /// One line per stream (`[  1]`) when there are several.
    fn stream_lines(&self, streams: &[u64], seconds: f64) {
        if streams.len() < 2 {
            return;
        }
        for (i, b) in streams.iter().enumerate() {
            match self.compact() {
                true => {
                    let slot = format!("[{:3}]", i + 1);
                    self.printer
                        .line(&compact::rate_line(Some(&slot), *b, seconds));
                }
                false => self.printer.line(&stream_line(i, *b, seconds)),
            }
        }
    }

    /// The job's final payload bytes by stream (bulk jobs), for the summary's per-stream
    /// lines and the JSON's `end.streams`.
    pub(crate) fn stream_totals(&mut self, totals: Vec<u64>) {
        self.per_stream.totals = totals;
    }

    /// Record an event, printing the ones a reader of the text wants to see.
    pub fn event(&mut self, ev: Event) {
        if let Some(line) = event_line(&ev) {
            self.printer.line(&line);
        }
        self.stream(&Record::Event(ev.clone()));
        self.run.events.push(ev);
    }

    /// Print a free-form line (not recorded).
    pub fn note(&self, s: &str) {
        self.printer.line(s);
    }

    /// Record and print the summary, write the JSON document, and return the run.
    pub fn finish(mut self, summary: Summary) -> Result<Run> {
        let totals = std::mem::take(&mut self.per_stream.totals);
        // A job that moved nothing (a rerun with everything in place) ends with one line,
        // not one of zeros per connection; the JSON keeps its streams.
        let lines: &[u64] = if summary.bytes > 0 { &totals } else { &[] };
        let several = lines.len() > 1;
        if self.compact() {
            self.heading();
            self.stream_lines(lines, summary.seconds);
            let text = compact::summary_line(several.then_some("[SUM]"), &summary);
            self.printer.line(&text);
        } else {
            let text = nuttcp::summary_line(&summary);
            self.stream_lines(lines, summary.seconds);
            match several {
                true => self.printer.line(&format!("[SUM]{text}")),
                false => self.printer.line(&text),
            }
        }
        self.per_stream.totals = totals;
        self.stream(&Record::Summary(summary.clone()));
        self.run.summary = Some(summary);
        let mut doc = hare_report::iperf::to_iperf_json(&self.run);
        crate::iperf_extra::extend(&mut doc, &self.run, &self.iperf, self.started);
        crate::iperf_streams::extend(&mut doc, &self.run, &self.per_stream);
        if self.reverse {
            crate::iperf_extra::mark_reverse(&mut doc, self.run.header.role == Role::Sender);
        }
        match &self.json {
            // hare-send's run is one document; hare-recv serves many jobs (reverse ones, where
            // it sends, too), so it writes one compact document per line (JSON lines), never
            // documents back to back.
            Some(JsonTarget::Stdout) if self.run.header.tool == Tool::HareRecv => {
                let mut out = std::io::stdout().lock();
                let _ = serde_json::to_writer(&mut out, &doc);
                let _ = writeln!(out);
                let _ = out.flush();
            }
            Some(JsonTarget::Stdout) => {
                let mut out = std::io::stdout().lock();
                let _ = serde_json::to_writer_pretty(&mut out, &doc);
                let _ = writeln!(out);
                let _ = out.flush();
            }
            Some(JsonTarget::File(p)) => {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| TransferError::io(format!("opening {}", p.display()), e))?;
                let mut text = serde_json::to_string(&doc)
                    .map_err(|e| TransferError::io("encoding JSON", std::io::Error::other(e)))?;
                text.push('\n');
                f.write_all(text.as_bytes())
                    .map_err(|e| TransferError::io(format!("writing {}", p.display()), e))?;
            }
            None => {}
        }
        Ok(self.run)
    }
}

/// One stream's share of an interval or of the summary: `[  1]` (stream numbers from 1) and
/// the nuttcp rate part.
pub(crate) fn stream_line(index: usize, bytes: u64, seconds: f64) -> String {
    format!("[{:3}]{}", index + 1, nuttcp::rate_part(bytes, seconds))
}

/// The receiver's interval line: the nuttcp part and its own RTT estimate.
pub(crate) fn receiver_line(iv: &Interval) -> String {
    let mut s = nuttcp::rate_part(iv.bytes, iv.seconds());
    if let Some(r) = iv.srtt_ms {
        s.push_str(&format!("  srtt {r:8.3} ms"));
    }
    s
}

/// The text form of the events worth a line (slow-start exits, RTO resets, errors, notes).
pub(crate) fn event_line(ev: &Event) -> Option<String> {
    match &ev.kind {
        EventKind::Cc { event } => match event {
            hare_report::CcEvent::SlowStartExit {
                cwnd,
                ssthresh,
                reason,
                ..
            } => Some(format!(
                "  {:8.3} s  slow start exit: {reason}, cwnd {cwnd} seg, ssthresh {ssthresh} seg",
                ev.t_s
            )),
            hare_report::CcEvent::RtoReset {
                from_cwnd,
                ssthresh,
                ..
            } => Some(format!(
                "  {:8.3} s  RTO reset: cwnd {from_cwnd} seg -> minimum, ssthresh {ssthresh} seg",
                ev.t_s
            )),
            _ => None,
        },
        EventKind::SlowStartExitObserved {
            cwnd_segments,
            reason,
        } => Some(format!(
            "  {:8.3} s  slow start exit (observed): {reason}, cwnd {cwnd_segments} seg",
            ev.t_s
        )),
        EventKind::Error { message } => Some(format!("  {:8.3} s  error: {message}", ev.t_s)),
        EventKind::Note { message } => Some(format!("  {:8.3} s  {message}", ev.t_s)),
        EventKind::Path { what } => Some(format!("  {:8.3} s  path: {what}", ev.t_s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_exit_prints_reason() {
        let ev = Event {
            t_s: 1.5,
            kind: EventKind::Cc {
                event: hare_report::CcEvent::SlowStartExit {
                    t_us: 1_500_000,
                    cwnd: 1958,
                    ssthresh: 1958,
                    reason: hare_report::ExitReason::AckTrain,
                },
            },
        };
        assert_eq!(
            event_line(&ev).as_deref(),
            Some("     1.500 s  slow start exit: ack-train, cwnd 1958 seg, ssthresh 1958 seg")
        );
    }

    #[test]
    fn receiver_line_is_nuttcp() {
        let iv = Interval {
            start_s: 0.0,
            end_s: 1.0,
            bytes: 1 << 20,
            ..Interval::default()
        };
        assert_eq!(
            receiver_line(&iv),
            "    1.0000 MB /   1.00 sec =    8.3886 Mbps"
        );
    }
}

//! The sender (`hare-send`): connects, asks for a job, pushes bulk data or files, and reports
//! every interval like `nuttcp -i`.
//!
//! Interval bytes are true by construction ([`crate::intervals`]): over QUIC the receiver's
//! own interval counts (what arrived in each of its intervals), keyed by interval number and
//! printed beside the sender's congestion sample of the same tick; over kernel TCP what the
//! receiver acknowledged (cumulatively or by SACK) in the sender's own interval. Either way
//! the intervals add up exactly to the receiver's total, which is the summary's byte count.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_cc::Observer;
use hare_report::Run;
use indicatif::{MultiProgress, ProgressDrawTarget};
use tokio::sync::mpsc;

use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::SenderLines;
use crate::protocol::{Job, ToReceiver};
use crate::quic_config::{Link, Liveness};
use crate::report::{OutputOptions, Printer, RunLog};
use crate::stop::Stop;
use crate::trust::Trust;

mod bar;
mod bulk;
mod connect;
mod control;
mod control_move;
mod finish;
mod gone;
mod grow;
mod handshake;
mod header;
mod join;
mod kept;
mod listen;
mod listen_more;
mod liveness;
mod opener;
mod plan;
mod probe;
mod ranges;
mod recorder;
mod restarts;
mod retry;
mod reverse_in;
mod reverse_out;
mod run_loop;
mod standby;
mod stripes;
mod tasks;
mod tls_text;
mod writers;
pub use crate::protocol::MAX_RETRIES;
use bulk::spawn_bulk;
/// Size of one write of bulk data (iperf3's `blksize`), for both sides' JSON documents.
use connect::{connect, Connected};
use control::{verdict_channels, Ctl};
use finish::{add_refused, close_connection, file_reports, iperf_context, link_reports, summarise};
use gone::Words;
use handshake::{hello, Welcome};
use header::{announce, run_header, Negotiated};
use join::JoinTo;
use opener::Opener;
use plan::{plan, Plan};
use probe::Probe;
use recorder::Recorder;
pub use retry::DEFAULT_RETRIES;
pub(crate) use reverse_out::{send_back, BackPath, SendBack};
use run_loop::{Context, Inputs};
use tasks::{pacer, spawn_files, DataShared, DataTasks};

/// What to send.
#[derive(Debug, Clone, PartialEq)]
pub enum SendJob {
    /// Memory to memory (`-n SIZE` or `-T SECONDS`, `-P N`).
    Bulk {
        /// Total bytes over all streams.
        bytes: Option<u64>,
        /// Seconds to send.
        seconds: Option<f64>,
        /// Parallel streams.
        streams: u16,
    },
    /// Files and directory trees.
    Files {
        /// Paths as given.
        paths: Vec<PathBuf>,
        /// Continue partial files on the receiver.
        resume: bool,
        /// Overwrite existing files.
        force: bool,
        /// Files in flight at once.
        parallel: u16,
    },
}

/// `--tcp` settings of the sender.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpSendOptions {
    /// `-w` as `SO_SNDBUF`/`SO_RCVBUF` when given explicitly (else kernel autotuning).
    pub buffer: Option<usize>,
    /// `--pacing-rate` in bytes/s (`SO_MAX_PACING_RATE`).
    pub pacing_rate: Option<u64>,
}

/// Everything `hare-send` can be told.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// `HOST[:PORT]`.
    pub server: String,
    /// How to trust the receiver (required for QUIC).
    pub trust: Option<Trust>,
    /// The sender's own certificate, presented to receivers that authorise senders by
    /// fingerprint (mutual TLS; QUIC only).
    pub identity: Option<Arc<crate::identity::Identity>>,
    /// Token for the receiver.
    pub token: Option<String>,
    /// File metadata to keep (`--no-perms`, `--no-times`).
    pub keep: crate::sendfiles::Keep,
    /// The job.
    pub job: SendJob,
    /// File jobs: which files the receiver has need not be sent, the others replacing what
    /// is there (rsync's quick check, `--checksum`, `--ignore-existing`, `--update`); `None`:
    /// existing files are refused unless `force` (`--force` replaces them all).
    pub skip: Option<crate::protocol::SkipRule>,
    /// File jobs: a directory beneath the receiver's `--dir` to put the files in (`HOST:PORT:DEST`);
    /// only receivers that take it (else the job stops before any data is sent).
    pub dest: Option<String>,
    /// `-w` and `--mtu` (its `streams` is set from the job).
    pub link: Link,
    /// `--cc` as given (`None`: hare CUBIC `linux-6`, or kernel `cubic` with `--tcp`).
    pub cc: Option<String>,
    /// `--qlog DIR`.
    pub qlog: Option<PathBuf>,
    /// `-i`.
    pub interval: Duration,
    /// `-R`: application rate limit over all streams, bit/s.
    pub rate: Option<u64>,
    /// Output.
    pub output: OutputOptions,
    /// `--tcp`.
    pub tcp: Option<TcpSendOptions>,
    /// `--idle-timeout` and `--keep-alive` (QUIC).
    pub liveness: Liveness,
    /// `-r`: reverse mode, the receiver sends the bulk job back over this connection.
    pub reverse: bool,
    /// `--retries`: times a file that changed while it was read is sent again from its start
    /// (receivers that do not offer it get none: the file fails at once).
    pub retries: u32,
    /// Send over this connection, which the receiver dialled to this side (a pull started
    /// through ssh), instead of dialling `server`.
    pub via: Option<Dialled>,
    /// `-C`: QUIC connections that carry the job, each on its own UDP socket and thread with
    /// its own controller (1: one connection, as before).
    pub connections: u16,
    /// `--chunk`: with several connections, the largest range of a file sent on one stream
    /// ([`DEFAULT_CHUNK`]).
    pub chunk: u64,
}

/// Default `--chunk`: 4 MiB. A connection held to 6.5 Mbit/s by random loss (one CUBIC flow
/// at 100 Mbit/s x 80 ms with 0.1% loss) moves one range in about 5 s, which bounds how long
/// the last ranges keep a job waiting on its slowest connection; a range costs one stream and
/// a 32-byte header, no round trip (the next range starts as soon as the last one's bytes
/// are queued).
pub const DEFAULT_CHUNK: u64 = 4 << 20;

pub use listen::Listening;
pub use listen_more::Further;

/// A QUIC connection a receiver dialled to this sender, accepted by an endpoint whose
/// transport runs a controller built with `observer` (so that the report reads its
/// decisions as when this side dials).
#[derive(Debug, Clone)]
pub struct Dialled {
    /// The accepted connection.
    pub conn: quinn::Connection,
    /// The observer the connection's controller reports to.
    pub observer: Observer,
    /// The endpoint that accepted it (kept open while the job runs).
    pub endpoint: quinn::Endpoint,
    /// The listeners of the job's further connections, each on its own port and thread
    /// (empty: they come to `endpoint`).
    pub further: Further,
}

/// How one file went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Name in the job.
    pub name: String,
    /// Verified and renamed on the receiver.
    pub ok: bool,
    /// Why not.
    pub reason: Option<String>,
    /// Bytes the receiver already had and kept (resume).
    pub resumed_from: u64,
    /// Times the file was sent again from its start because it changed while it was read
    /// (`--retries`).
    pub retries: u32,
    /// Not sent: the receiver has it already (the job's skip rule), and why (`up to date`).
    pub skipped: Option<String>,
    /// The file grew while it was read (appended to) and was delivered at its listed size:
    /// its size when the read ended.
    pub grew_to: Option<u64>,
}

/// The result of a run that got as far as a job.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    /// The report.
    pub run: Run,
    /// Per-file results (file jobs).
    pub files: Vec<FileReport>,
    /// The user stopped the run.
    pub interrupted: bool,
}

impl SendOutcome {
    /// Files that failed.
    pub fn failures(&self) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter(|f| !f.ok)
    }
}

/// Split `HOST[:PORT]` (`[v6]:port`, bare IPv6 without a port).
pub(crate) fn split_host_port(s: &str, default_port: u16) -> Result<(String, u16)> {
    let bad = || TransferError::Usage(format!("bad receiver address `{s}`: expected HOST[:PORT]"));
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => port_of(s, p)?,
            None if tail.is_empty() => default_port,
            None => return Err(bad()),
        };
        return Ok((host.to_owned(), port));
    }
    match s.matches(':').count() {
        0 if !s.is_empty() => Ok((s.to_owned(), default_port)),
        1 => {
            let (h, p) = s.split_once(':').ok_or_else(bad)?;
            if h.is_empty() {
                return Err(bad());
            }
            Ok((h.to_owned(), port_of(s, p)?))
        }
        _ if s.parse::<std::net::Ipv6Addr>().is_ok() => Ok((s.to_owned(), default_port)),
        _ => Err(bad()),
    }
}

/// The port of the receiver address `s`: digits naming a port from 1 to 65535.
fn port_of(s: &str, p: &str) -> Result<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TransferError::Usage(format!(
            "bad receiver address `{s}`: expected HOST[:PORT]"
        )));
    }
    match p.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(TransferError::Usage(format!(
            "bad receiver address `{s}`: port {p} is out of range (1-65535)"
        ))),
    }
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| TransferError::Connection(format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| TransferError::Connection(format!("{host} has no address")))
}

/// Run one transfer. Returns `Err` when no job could be run (bad options, connection or
/// trust failure, refusal) or when the connection failed mid-job.
pub async fn send(opts: SendOptions, stop: Stop) -> Result<SendOutcome> {
    if opts.reverse {
        reverse_in::check(&opts)?;
    }
    let Plan {
        streams,
        link,
        sources,
        refused,
        job,
    } = plan(&opts)?;
    let printer = Printer::new(&opts.output);
    let (host, addr) = match &opts.via {
        Some(d) => (
            d.conn.remote_address().ip().to_string(),
            d.conn.remote_address(),
        ),
        None => {
            let (host, port) = split_host_port(&opts.server, crate::protocol::DEFAULT_PORT)?;
            let addr = resolve(&host, port).await?;
            (host, addr)
        }
    };

    let connect_start = Instant::now();
    let observer = opts
        .via
        .as_ref()
        .map_or_else(Observer::new, |d| d.observer.clone());
    let Connected {
        mut ctl_r,
        mut ctl_w,
        mut opener,
        endpoint,
        controller,
        profile,
        kernel_cc,
        qlog,
    } = connect(&opts, &link, addr, &host, &observer).await?;
    let Welcome {
        granted,
        plans,
        features,
        links,
        software,
        session,
    } = hello(
        &mut ctl_r,
        &mut ctl_w,
        &mut opener,
        &opts,
        &link,
        &job,
        &controller,
    )
    .await?;
    if opts.reverse {
        // This end receives the data: its window opens (or autotunes) as a receiver's.
        if let Opener::Quic(c) = &opener {
            crate::quic_config::open_receive_window(c, &link, link.connection_window());
        }
        let take = reverse_in::Take {
            opts: &opts,
            job: &job,
            addr,
            opener: opener.clone(),
            endpoint,
            window: link.window,
            granted,
        };
        return reverse_in::take(take, stop, ctl_r, ctl_w).await;
    }
    if opts.dest.is_some() && !features.iter().any(|f| f == crate::protocol::feature::DEST) {
        if let opener::Opener::Quic(c) = &opener {
            // Ends the job before any data: the receiver drops what it planned.
            c.close(
                quinn::VarInt::from_u32(crate::protocol::close::INTERRUPTED),
                b"no dest",
            );
        }
        return Err(TransferError::Refused(format!(
            "the receiver ({software}) does not take a destination directory (HOST:PORT:DEST); \
             upgrade it, or send without DEST"
        )));
    }
    let link_reports = link_reports(&job, links, &features, &software);
    let more = JoinTo {
        opts: &opts,
        link: &link,
        addr,
        host: &host,
        session: session.unwrap_or_default(),
    };
    let (extras, stripes) =
        match further_connections(more, &opener, (&features, &software), granted).await {
            Ok(x) => x,
            Err(e) => {
                close_connection(&opener, false);
                return Err(e);
            }
        };

    // The run.
    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let mut rec = recorder(RecorderArgs {
        opts: &opts,
        link: &link,
        job: &job,
        printer,
        negotiated: Negotiated {
            addr,
            controller: &controller,
            profile,
            granted,
            mtu: match &opener {
                Opener::Quic(c) => u32::from(c.stats().path.current_mtu),
                Opener::Tcp { .. } => 0,
            },
        },
        kernel_cc: kernel_cc.as_deref(),
        probe: Probe::new(&opener, &observer, connect_start, t0, &controller),
        qlog,
    })?;

    let Started {
        ctl_rx,
        writer,
        shared,
        stop_flag,
        tasks,
        bar,
    } = start_job(StartJob {
        opts: &opts,
        job: &job,
        sources: &sources,
        plans,
        features: &features,
        streams,
        opener: &opener,
        t0,
        multi: rec.log.printer().multi(),
        ctl: (ctl_r, ctl_w),
        stripes: stripes.clone(),
        moves: moves(&opener, extras.as_ref(), &features),
    });

    let mut inputs = Inputs {
        ctl_rx,
        tasks,
        stop,
    };
    let cx = Context {
        t0,
        interval: opts.interval,
        opener: &opener,
        bulk: matches!(job, Job::Bulk { .. }),
        stop_flag: &stop_flag,
        liveness: opts.liveness,
        words: Words::for_sender(matches!(opener, Opener::Tcp { .. })),
    };
    let lines = match &opener {
        Opener::Quic(_) => SenderLines::remote(),
        Opener::Tcp { .. } => SenderLines::local(),
    };
    let mut st = run_loop::run(&mut rec, &mut inputs, &cx, lines).await;
    if st.interrupted && !cx.bulk && st.failure.is_none() && st.done.is_none() {
        st.kept = kept::ask(
            &shared.out_tx,
            &mut inputs.ctl_rx,
            &opener,
            &mut rec,
            &mut st,
        )
        .await;
    }
    if let Some(x) = &extras {
        x.job_over();
    }
    inputs.tasks.abort_all();
    if let (Some(b), Some(m)) = (bar, rec.log.printer().multi()) {
        b.end(m);
    }
    let cx = iperf_context(&opener, endpoint.as_ref(), addr, &job, streams, &cpu);
    rec.log.set_iperf(cx);
    // Said after the last interval lines, beside the summary, of a job that moved data (a
    // rerun with nothing left to send says nothing of its connections).
    let moved_nothing = st.done.as_ref().map(|d| d.bytes).or(st.kept) == Some(0);
    st.closing_note = stripes
        .as_deref()
        .filter(|_| !moved_nothing)
        .map(join::shares_line);
    add_refused(&mut st.reports, refused);
    st.reports.extend(link_reports);
    let (run, mut qlog) = summarise(rec, &mut st, &job, &sources, t0, &cpu, &shared.written)?;
    close_connection(&opener, st.interrupted && !sources.is_empty());
    if let Some(x) = extras {
        x.close().await;
    }
    drop(shared);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    if let Some(e) = endpoint {
        let _ = tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, e.wait_idle()).await;
    }
    if let Some(q) = qlog.as_mut() {
        let rest: Vec<_> = observer.drain_all().into_iter().map(|(_, e)| e).collect();
        q.cc_events(&rest);
    }
    if let Some(e) = st.failure.take() {
        if !st.interrupted {
            return Err(e);
        }
    }
    Ok(SendOutcome {
        run,
        files: file_reports(std::mem::take(&mut st.reports), &sources, st.interrupted),
        interrupted: st.interrupted,
    })
}

/// What [`recorder`] needs to print the run's header and start its log.
struct RecorderArgs<'a> {
    opts: &'a SendOptions,
    link: &'a Link,
    job: &'a Job,
    printer: Printer,
    negotiated: Negotiated<'a>,
    kernel_cc: Option<&'a str>,
    probe: Probe,
    qlog: Option<crate::qlog::ConnectionQlog>,
}

/// The run's log (header, announcement, the overall progress bar for files) with the probe
/// and qlog that feed it.
fn recorder(a: RecorderArgs<'_>) -> Result<Recorder> {
    let header = run_header(a.opts, a.link, &a.negotiated);
    let printer = match (&a.opts.job, a.opts.output.progress && a.printer.enabled()) {
        (SendJob::Files { .. }, true) => a.printer.with_progress(MultiProgress::with_draw_target(
            ProgressDrawTarget::stderr_with_hz(4),
        )),
        _ => a.printer,
    };
    let mut log = RunLog::new(header, printer, &a.opts.output)?;
    announce(&mut log, a.opts, a.link, a.job, &a.negotiated, a.kernel_cc);
    Ok(Recorder {
        log,
        probe: a.probe,
        qlog: a.qlog,
        first_exit: None,
    })
}

/// What [`start_job`] needs: the job, the receiver's plans and features, the connection.
struct StartJob<'a> {
    opts: &'a SendOptions,
    job: &'a Job,
    sources: &'a [crate::sendfiles::Source],
    plans: Vec<crate::protocol::FilePlan>,
    features: &'a [String],
    streams: u16,
    opener: &'a Opener,
    t0: Instant,
    multi: Option<&'a MultiProgress>,
    ctl: (crate::channels::ControlRead, crate::channels::ControlWrite),
    stripes: Option<Arc<stripes::Stripes>>,
    moves: Option<control_move::Moves>,
}

/// Where the control channel may move should the first connection be lost: the further
/// connections' join streams, when the receiver takes a `take-over`.
fn moves(
    opener: &Opener,
    extras: Option<&join::Extras>,
    features: &[String],
) -> Option<control_move::Moves> {
    let (Opener::Quic(first), Some(extras)) = (opener, extras) else {
        return None;
    };
    if !features
        .iter()
        .any(|f| f == crate::protocol::feature::TAKE_OVER)
    {
        return None;
    }
    Some(control_move::Moves {
        first: first.clone(),
        standby: extras.standby(),
    })
}

/// `-C N`: connections 1 to N-1 joined to the job, and the job's connections as stripes;
/// `None` for one connection, or a receiver that does not take more (said on stderr).
async fn further_connections(
    to: JoinTo<'_>,
    opener: &Opener,
    (features, software): (&[String], &str),
    granted: u64,
) -> Result<(Option<join::Extras>, Option<Arc<stripes::Stripes>>)> {
    let n = to.opts.connections;
    let Opener::Quic(first) = opener else {
        return Ok((None, None));
    };
    if n <= 1 {
        return Ok((None, None));
    }
    if !features
        .iter()
        .any(|f| f == crate::protocol::feature::CONNECTIONS)
    {
        eprintln!(
            "hare-send: the receiver ({software}) takes one connection per job: -C {n} is ignored"
        );
        return Ok((None, None));
    }
    if to.session == [0; 12] {
        eprintln!("hare-send: the receiver ({software}) named no session: -C {n} is ignored");
        return Ok((None, None));
    }
    // As the hello said, but pieces only when the receiver expects them.
    let striping = crate::protocol::Striping {
        connections: n,
        chunk: to.opts.chunk,
        moves_bulk: true,
        tail_pieces: features
            .iter()
            .any(|f| f == crate::protocol::feature::TAIL_PIECES),
    };
    let stripes = stripes::Stripes::new(first.clone(), striping, granted);
    let roster = join::Roster::new(stripes.clone());
    let extras = match &to.opts.via {
        Some(d) => join::Extras::accept(d, n, (to.session, to.opts.token.clone()), roster),
        None => join::Extras::open(to, n, roster),
    };
    Ok((Some(extras), Some(stripes)))
}

/// The running job: the control channel's reader output and writer, the data tasks and what
/// they share, and the overall progress bar's task.
struct Started {
    ctl_rx: mpsc::Receiver<Ctl>,
    writer: tokio::task::JoinHandle<()>,
    shared: DataShared,
    stop_flag: Arc<AtomicBool>,
    tasks: DataTasks,
    bar: Option<bar::OverallBar>,
}

/// Start the control reader and writer and the job's data tasks (bulk streams, or the files
/// with their verdict channels; a changed file may be sent again when the receiver takes
/// retries).
fn start_job(j: StartJob<'_>) -> Started {
    let StartJob {
        opts,
        job,
        sources,
        plans,
        features,
        streams,
        opener,
        t0,
        multi,
        ctl: (ctl_r, ctl_w),
        stripes,
        moves,
    } = j;
    let (ctl_tx, ctl_rx) = mpsc::channel::<Ctl>(256);
    let (verdict_txs, verdict_rxs) = verdict_channels(sources.len());
    let restarts = restarts::Restarts::default();
    let words = Words::for_sender(matches!(opener, Opener::Tcp { .. }));
    let bulk_lost = control::BulkLosts::default();
    let reading = control::Reading {
        to_loop: ctl_tx.clone(),
        verdicts: Arc::new(std::sync::Mutex::new(verdict_txs)),
        restarts: restarts.clone(),
        words,
        moved: Arc::default(),
        done: Arc::default(),
        bulk_lost: bulk_lost.clone(),
    };
    let (out_tx, out_rx) = mpsc::channel::<ToReceiver>(256);
    let writer = control_move::spawn_control((ctl_r, ctl_w), moves, out_rx, reading);
    let stop_flag = Arc::new(AtomicBool::new(false));
    let shared = DataShared {
        opener: opener.clone(),
        stop_flag: stop_flag.clone(),
        written: Arc::new(AtomicU64::new(0)),
        pacer: pacer(opts.rate),
        out_tx,
        retry: retry::Retry {
            max: if features
                .iter()
                .any(|f| f == crate::protocol::feature::RETRY)
            {
                opts.retries
            } else {
                0
            },
            restarts,
            notes: Some(ctl_tx.clone()),
        },
        stripes,
    };
    let mut tasks = DataTasks::new();
    let bar = match job {
        Job::Bulk { .. } => {
            let listed = |name: &str| features.iter().any(|f| f == name);
            let say_end = listed(crate::protocol::feature::BULK_END);
            let moves = listed(crate::protocol::feature::BULK_MOVES).then_some(bulk_lost);
            spawn_bulk(&mut tasks, job, &shared, (t0, say_end), moves);
            None
        }
        Job::Files { .. } => spawn_files(
            &mut tasks,
            sources,
            plans,
            verdict_rxs,
            streams,
            &shared,
            multi,
        ),
    };

    Started {
        ctl_rx,
        writer,
        shared,
        stop_flag,
        tasks,
        bar,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        let d = 5210;
        assert_eq!(split_host_port("h", d).ok(), Some(("h".into(), d)));
        assert_eq!(split_host_port("h:7", d).ok(), Some(("h".into(), 7)));
        assert_eq!(
            split_host_port("127.0.0.1:9", d).ok(),
            Some(("127.0.0.1".into(), 9))
        );
        assert_eq!(split_host_port("[::1]:9", d).ok(), Some(("::1".into(), 9)));
        assert_eq!(split_host_port("[::1]", d).ok(), Some(("::1".into(), d)));
        assert_eq!(split_host_port("::1", d).ok(), Some(("::1".into(), d)));
        assert!(split_host_port("h:x", d).is_err());
        for bad in ["127.0.0.1:99999", "h:0", "[::1]:65536"] {
            let e = split_host_port(bad, d).map(|_| ()).unwrap_err().to_string();
            assert!(e.ends_with("is out of range (1-65535)"), "{bad}: {e}");
        }
        assert_eq!(
            split_host_port("h:65535", d).ok(),
            Some(("h".into(), 65535))
        );
        assert!(split_host_port(":9", d).is_err());
        assert!(split_host_port("", d).is_err());
    }
}

//! The sender (`hare-send`): connects, asks for a job, pushes bulk data or files, and reports
//! every interval like `nuttcp -i`.
//!
//! Interval bytes are true by construction ([`crate::intervals`]): over QUIC the receiver's
//! own interval counts (what arrived in each of its intervals), keyed by interval number and
//! printed beside the sender's congestion sample of the same tick; over kernel TCP what the
//! receiver acknowledged (cumulatively or by SACK) in the sender's own interval. Either way
//! the intervals add up exactly to the receiver's total, which is the summary's byte count.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hare_cc::{CcEvent, Observer};
use hare_report::{
    Event, EventKind, Role, Run, RunHeader, SlowStartExit, Summary, Tool, Transport, Windows,
};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use quinn::VarInt;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::SenderLines;
use crate::protocol::{
    close, read_frame, write_frame, FilePlan, Job, ToReceiver, ToSender, MAX_STREAMS,
    PROTOCOL_VERSION,
};
use crate::quic_config::Link;
use crate::report::{OutputOptions, Printer, RunLog};
use crate::sampler::QuicSampler;
use crate::sendfiles::gather;
use crate::stop::Stop;
use crate::trust::Trust;

mod connect;
mod opener;
mod probe;
mod writers;

use connect::{connect, Connected};
use opener::{lock, Opener};
use probe::Probe;
use writers::{bulk_writer, file_task, BulkPlan, Pacer, CHUNK};

/// Time the receiver has to answer the Hello.
const WELCOME_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to wait for the receiver's final verdict after the data went out.
const DONE_TIMEOUT: Duration = Duration::from_secs(60);

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
pub fn split_host_port(s: &str, default_port: u16) -> Result<(String, u16)> {
    let bad = || TransferError::Usage(format!("bad receiver address `{s}`: expected HOST[:PORT]"));
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
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
            Ok((h.to_owned(), p.parse().map_err(|_| bad())?))
        }
        _ if s.parse::<std::net::Ipv6Addr>().is_ok() => Ok((s.to_owned(), default_port)),
        _ => Err(bad()),
    }
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| TransferError::Connection(format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| TransferError::Connection(format!("{host} has no address")))
}

/// Messages from the control reader.
enum Ctl {
    /// The receiver's interval: index, start, end (its seconds), bytes.
    Interval(u64, f64, f64, u64),
    Done {
        bytes: u64,
        seconds: f64,
        cpu_pct: Option<f64>,
    },
    Closed(String),
}

/// Run one transfer. Returns `Err` when no job could be run (bad options, connection or
/// trust failure, refusal) or when the connection failed mid-job.
pub async fn send(opts: SendOptions, mut stop: Stop) -> Result<SendOutcome> {
    let streams = match &opts.job {
        SendJob::Bulk { streams, .. } => *streams,
        SendJob::Files { parallel, .. } => *parallel,
    };
    if streams == 0 || streams > MAX_STREAMS {
        return Err(TransferError::Usage(format!(
            "-P must be 1 to {MAX_STREAMS}"
        )));
    }
    let link = Link {
        streams,
        ..opts.link
    };
    link.validate()?;
    if opts.interval < Duration::from_millis(100) {
        return Err(TransferError::Usage("-i must be at least 0.1 s".into()));
    }
    let printer = Printer::new(&opts.output);
    let (sources, refused, job) = match &opts.job {
        SendJob::Bulk {
            bytes,
            seconds,
            streams,
        } => {
            if bytes.is_some() == seconds.is_some() {
                return Err(TransferError::Usage(
                    "give exactly one of -n SIZE or -T SECONDS".into(),
                ));
            }
            if let Some(s) = seconds {
                if !(s.is_finite() && *s > 0.0) {
                    return Err(TransferError::Usage(
                        "-T must be a positive number of seconds".into(),
                    ));
                }
            }
            (
                Vec::new(),
                Vec::new(),
                Job::Bulk {
                    bytes: *bytes,
                    seconds: *seconds,
                    streams: *streams,
                },
            )
        }
        SendJob::Files {
            paths,
            resume,
            force,
            ..
        } => {
            let crate::sendfiles::Gathered {
                sources,
                warnings,
                refused,
                empty_dirs: dirs,
            } = gather(paths, opts.keep)?;
            for w in warnings {
                eprintln!("hare-send: warning: {w}");
            }
            if sources.is_empty() && dirs.is_empty() {
                let why: Vec<String> = refused.iter().map(|(n, r)| format!("{n}: {r}")).collect();
                return Err(TransferError::Usage(if why.is_empty() {
                    "no files to send".into()
                } else {
                    format!("no file can be sent: {}", why.join("; "))
                }));
            }
            let files = sources.iter().map(|s| s.entry.clone()).collect();
            (
                sources,
                refused,
                Job::Files {
                    files,
                    resume: *resume,
                    force: *force,
                    dirs,
                },
            )
        }
    };
    let (host, port) = split_host_port(&opts.server, crate::receiver::DEFAULT_PORT)?;
    let addr = resolve(&host, port).await?;

    // Connect.
    let connect_start = Instant::now();
    let observer = Observer::new();
    let Connected {
        ctl_r,
        mut ctl_w,
        opener,
        endpoint,
        controller,
        profile,
        kernel_cc,
        mut qlog,
    } = connect(&opts, &link, addr, &host, &observer).await?;
    let mut ctl_r = ctl_r;
    write_frame(
        &mut ctl_w,
        &ToReceiver::Hello {
            version: PROTOCOL_VERSION,
            software: format!("hare-send {}", env!("CARGO_PKG_VERSION")),
            token: opts.token.clone(),
            job: job.clone(),
            window: link.connection_window(),
            controller: controller.clone(),
            interval_s: Some(opts.interval.as_secs_f64()),
        },
    )
    .await?;
    let welcome: ToSender =
        match tokio::time::timeout(WELCOME_TIMEOUT, read_frame(&mut ctl_r)).await {
            Ok(Ok(Some(m))) => m,
            Ok(Ok(None)) => {
                return Err(TransferError::Connection(
                    "the receiver closed the connection before answering".into(),
                ))
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(TransferError::Connection(
                    "the receiver did not answer the job in time".into(),
                ))
            }
        };
    let (granted, plans, session) = match welcome {
        ToSender::Welcome {
            window,
            files,
            session,
            ..
        } => (window, files, session),
        ToSender::Refuse { reason } => {
            if let Opener::Quic(c) = &opener {
                c.close(VarInt::from_u32(close::REFUSED), b"refused");
            }
            return Err(TransferError::Refused(reason));
        }
        other => {
            return Err(TransferError::Protocol(format!(
                "expected a welcome, got {other:?}"
            )))
        }
    };
    let mut opener = opener;
    if let (Opener::Tcp { session: s, .. }, Some(hex)) = (&mut opener, &session) {
        *s = parse_session(hex)?;
    }

    // The run.
    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let mtu = match &opener {
        Opener::Quic(c) => u32::from(c.stats().path.current_mtu),
        Opener::Tcp { .. } => 0,
    };
    let header = RunHeader {
        schema: hare_report::SCHEMA.into(),
        tool: if opts.tcp.is_some() {
            Tool::KernelTcp
        } else {
            Tool::HareSend
        },
        tool_version: env!("CARGO_PKG_VERSION").into(),
        role: Role::Sender,
        transport: if opts.tcp.is_some() {
            Transport::Tcp
        } else {
            Transport::Quic
        },
        run_id: format!(
            "{addr}-{}",
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        ),
        scenario: None,
        controller: controller.clone(),
        profile: profile.clone(),
        mtu: if opts.tcp.is_some() {
            0
        } else {
            link.mtu.map(u32::from).unwrap_or(mtu)
        },
        windows: match &opts.tcp {
            None => Windows {
                stream_receive: Some(link.window),
                receive: Some(granted),
                send: Some(link.connection_window()),
            },
            Some(t) => Windows {
                stream_receive: t.buffer.map(|b| b as u64),
                receive: None,
                send: t.buffer.map(|b| b as u64),
            },
        },
        path: None,
        seed: None,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        interval_s: opts.interval.as_secs_f64(),
    };
    let printer = match (&opts.job, opts.output.progress && printer.enabled()) {
        (SendJob::Files { .. }, true) => printer.with_progress(MultiProgress::new()),
        _ => printer,
    };
    let mut log = RunLog::new(header, printer, &opts.output)?;
    log.note(&format!(
        "hare-send -> {addr}: {}, controller {controller}{}",
        describe(&job),
        match &opts.tcp {
            None => format!(
                ", window {} B x {streams}, mtu {}",
                link.window,
                link.mtu
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "auto".into())
            ),
            Some(t) => format!(
                ", kernel TCP ({})",
                if t.pacing_rate.is_some() || kernel_cc.as_deref() == Some("bbr") {
                    "paced"
                } else {
                    "unpaced"
                }
            ),
        }
    ));
    if let Some(t) = &opts.tcp {
        let paced = t.pacing_rate.is_some() || kernel_cc.as_deref() == Some("bbr");
        log.event(Event {
            t_s: 0.0,
            kind: EventKind::Note {
                message: format!(
                    "kernel TCP {} set before connect(), {}",
                    kernel_cc.clone().unwrap_or_default(),
                    if paced {
                        "paced"
                    } else {
                        "unpaced (no fq, no SO_MAX_PACING_RATE)"
                    }
                ),
            },
        });
    }
    let mut probe = match &opener {
        Opener::Quic(c) => Probe::Quic(Box::new(QuicSampler::new(
            c.clone(),
            observer.clone(),
            connect_start,
            t0,
            !controller.starts_with("quinn-"),
        ))),
        Opener::Tcp { sockets, .. } => Probe::Tcp {
            sockets: sockets.clone(),
            infos: Vec::new(),
            mib0: crate::hystart_mib::HystartMib::read(),
            last_retrans: 0,
            last_segs: 0,
            exit_seen: false,
            max_cwnd: 0,
            t0,
            srtt_ms: 0.0,
            min_rtt_ms: 0.0,
        },
    };

    // Control reader.
    let (ctl_tx, mut ctl_rx) = mpsc::channel::<Ctl>(256);
    let ctl_tx_w = ctl_tx.clone();
    let mut result_txs: HashMap<u32, oneshot::Sender<(bool, Option<String>)>> = HashMap::new();
    let mut result_rxs: HashMap<u32, oneshot::Receiver<(bool, Option<String>)>> = HashMap::new();
    for i in 0..sources.len() as u32 {
        let (tx, rx) = oneshot::channel();
        result_txs.insert(i, tx);
        result_rxs.insert(i, rx);
    }
    tokio::spawn(async move {
        loop {
            let msg = match read_frame::<_, ToSender>(&mut ctl_r).await {
                Ok(Some(m)) => m,
                Ok(None) => {
                    let _ = ctl_tx
                        .send(Ctl::Closed(
                            "the receiver closed the control channel".into(),
                        ))
                        .await;
                    return;
                }
                Err(e) => {
                    let _ = ctl_tx.send(Ctl::Closed(e.to_string())).await;
                    return;
                }
            };
            let fwd = match msg {
                ToSender::Interval {
                    index,
                    start_s,
                    end_s,
                    bytes,
                } => Ctl::Interval(index, start_s, end_s, bytes),
                // Only answers to requests this sender no longer makes.
                ToSender::Progress { .. } => continue,
                ToSender::FileResult { index, ok, reason } => {
                    if let Some(tx) = result_txs.remove(&index) {
                        let _ = tx.send((ok, reason));
                    }
                    continue;
                }
                ToSender::Done {
                    bytes,
                    seconds,
                    cpu_pct,
                } => Ctl::Done {
                    bytes,
                    seconds,
                    cpu_pct,
                },
                other => Ctl::Closed(format!("unexpected message from the receiver: {other:?}")),
            };
            if ctl_tx.send(fwd).await.is_err() {
                return;
            }
        }
    });

    // Data.
    // Control writer: the only writer of the control channel after the hello.
    let (out_tx, mut out_rx) = mpsc::channel::<ToReceiver>(256);
    let writer_err = ctl_tx_w.clone();
    let writer = tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if let Err(e) = write_frame(&mut ctl_w, &m).await {
                let _ = writer_err
                    .send(Ctl::Closed(format!("control channel: {e}")))
                    .await;
                return;
            }
        }
        // All senders gone: end the control stream cleanly.
        let _ = ctl_w.shutdown().await;
    });
    let stop_flag = Arc::new(AtomicBool::new(false));
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks: JoinSet<Result<Option<FileReport>>> = JoinSet::new();
    // -R is over all streams together.
    let pacer = opts.rate.map(|r| {
        Arc::new(Pacer {
            bits_per_s: r as f64,
            start: Instant::now(),
            sent: std::sync::atomic::AtomicU64::new(0),
        })
    });
    match &job {
        Job::Bulk {
            bytes,
            seconds,
            streams,
        } => {
            let pattern = Bytes::from((0..CHUNK).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
            let deadline = seconds.map(|s| t0 + Duration::from_secs_f64(s));
            let n = u64::from(*streams);
            for i in 0..*streams {
                let plan = BulkPlan {
                    index: u32::from(i),
                    quota: bytes.map(|b| b / n + u64::from(u64::from(i) < b % n)),
                    deadline,
                    written: written.clone(),
                };
                let (opener, flag, pattern) = (opener.clone(), stop_flag.clone(), pattern.clone());
                let pacer = pacer.clone();
                tasks.spawn(async move {
                    bulk_writer(opener, plan, flag, pacer, pattern).await?;
                    Ok(None)
                });
            }
        }
        Job::Files { .. } => {
            let gate = Arc::new(tokio::sync::Semaphore::new(usize::from(streams)));
            let plan_of: HashMap<u32, FilePlan> = plans.into_iter().map(|p| (p.index, p)).collect();
            for (i, src) in sources.iter().enumerate() {
                let i = i as u32;
                let Some(result_rx) = result_rxs.remove(&i) else {
                    continue;
                };
                let bar = log.printer().multi().map(|m| {
                    let b = m.add(ProgressBar::new(src.entry.size));
                    b.set_style(
                        ProgressStyle::with_template("{msg:30!} {bar:30} {bytes:>10}/{total_bytes:10} {bytes_per_sec:>12} {eta:>4}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    b.set_message(src.entry.name.clone());
                    b
                });
                let (opener, out_tx, gate, src, plan) = (
                    opener.clone(),
                    out_tx.clone(),
                    gate.clone(),
                    src.clone(),
                    plan_of.get(&i).cloned(),
                );
                let pacer = pacer.clone();
                tasks.spawn(async move {
                    let _permit = gate
                        .acquire_owned()
                        .await
                        .map_err(|_| TransferError::Interrupted)?;
                    Ok(Some(
                        file_task(opener, i, src, plan, out_tx, result_rx, pacer, bar).await,
                    ))
                });
            }
        }
    }

    // The loop: ticks, progress answers, control writes, data completion, stop.
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::from_std(t0 + opts.interval),
        opts.interval,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // QUIC: the receiver's interval counts; kernel TCP: what the peer acknowledged.
    let mut lines = match &opener {
        Opener::Quic(_) => SenderLines::remote(),
        Opener::Tcp { .. } => SenderLines::local(),
    };
    let mut seq = 0u64;
    let mut reports: Vec<FileReport> = Vec::new();
    let mut interrupted = false;
    let mut failure: Option<TransferError> = None;
    let mut done: Option<(u64, f64, Option<f64>)> = None;
    let mut data_done = false;
    let mut first_exit: Option<SlowStartExit> = None;
    let mut done_deadline = Box::pin(tokio::time::sleep(Duration::from_secs(u32::MAX as u64)));
    let mut ctl_open = true;
    let mut record_events = |log: &mut RunLog,
                             events: Vec<Event>,
                             raw: Vec<CcEvent>,
                             first_exit: &mut Option<SlowStartExit>| {
        if let Some(q) = qlog.as_mut() {
            q.cc_events(&raw);
        }
        for ev in events {
            if first_exit.is_none() {
                match &ev.kind {
                    EventKind::Cc {
                        event: CcEvent::SlowStartExit { cwnd, reason, .. },
                    } => {
                        *first_exit = Some(SlowStartExit {
                            t_s: ev.t_s,
                            cwnd_segments: *cwnd,
                            reason: *reason,
                        })
                    }
                    EventKind::SlowStartExitObserved {
                        cwnd_segments,
                        reason,
                    } => {
                        *first_exit = Some(SlowStartExit {
                            t_s: ev.t_s,
                            cwnd_segments: *cwnd_segments,
                            reason: *reason,
                        })
                    }
                    _ => {}
                }
            }
            log.event(ev);
        }
    };
    // Run until the receiver's final verdict is in and every data task has reported (file
    // verdicts arrive before the receiver's Done, but their tasks may be joined after it).
    while done.is_none() || !data_done {
        tokio::select! {
            _ = ticker.tick() => {
                let (sample, events, raw) = probe.sample();
                record_events(&mut log, events, raw, &mut first_exit);
                seq += 1;
                for iv in lines.tick(seq, t0.elapsed().as_secs_f64(), sample) {
                    log.interval(iv);
                }
            }
            m = ctl_rx.recv(), if ctl_open => match m {
                Some(Ctl::Interval(index, start_s, end_s, bytes)) => {
                    for iv in lines.received(index, start_s, end_s, bytes) {
                        log.interval(iv);
                    }
                }
                Some(Ctl::Done { bytes, seconds, cpu_pct }) => {
                    done = Some((bytes, seconds, cpu_pct));
                    done_deadline = Box::pin(tokio::time::sleep(Duration::from_secs(5)));
                }
                _ if done.is_some() => ctl_open = false,
                m @ (Some(Ctl::Closed(_)) | None) => {
                    let reason = match m { Some(Ctl::Closed(r)) => r, _ => "the control reader stopped".into() };
                    let reason = if let Opener::Quic(c) = &opener {
                        c.close_reason().map(|r| r.to_string()).unwrap_or(reason)
                    } else { reason };
                    failure = Some(TransferError::Connection(reason));
                    break;
                }
            },
            r = tasks.join_next(), if !data_done => match r {
                None => {
                    data_done = true;
                    done_deadline = Box::pin(tokio::time::sleep(DONE_TIMEOUT));
                }
                Some(Ok(Ok(Some(rep)))) => {
                    if let Some(b) = log.printer().multi() { let _ = b.clear(); }
                    if !rep.ok {
                        log.event(Event { t_s: t0.elapsed().as_secs_f64(), kind: EventKind::Error {
                            message: format!("{}: {}", rep.name, rep.reason.clone().unwrap_or_default()) } });
                    }
                    reports.push(rep);
                }
                Some(Ok(Ok(None))) => {}
                Some(Ok(Err(e))) => {
                    if !interrupted {
                        failure = Some(e);
                        break;
                    }
                }
                Some(Err(e)) => {
                    failure = Some(TransferError::Protocol(format!("a data task failed: {e}")));
                    break;
                }
            },
            _ = &mut done_deadline => {
                if done.is_none() {
                    failure = Some(TransferError::Connection("no final verdict from the receiver".into()));
                }
                break;
            }
            _ = stop.stopped(), if !interrupted => {
                interrupted = true;
                log.event(Event { t_s: t0.elapsed().as_secs_f64(), kind: EventKind::Note { message: "interrupted (Ctrl-C)".into() } });
                if matches!(job, Job::Bulk { .. }) {
                    // Like nuttcp: stop sending, let the receiver count what arrived, summarise.
                    stop_flag.store(true, Ordering::Relaxed);
                } else {
                    // Files cannot complete: abort; the receiver keeps the partial data.
                    break;
                }
            }
        }
    }
    tasks.abort_all();
    if let Some(m) = log.printer().multi() {
        let _ = m.clear();
    }
    let (sample, events, raw) = probe.sample();
    record_events(&mut log, events, raw, &mut first_exit);
    let end_s = t0.elapsed().as_secs_f64();
    let total = done.map(|d| d.0).unwrap_or(lines.printed());
    // Ticks without a receiver interval (the job ended first) fold into the last lines, so
    // that the intervals' bytes and losses add up to the summary's.
    for iv in lines.finish(sample, total, done.map(|d| d.1), end_s) {
        log.interval(iv);
    }
    if let Job::Bulk {
        seconds: Some(s), ..
    } = &job
    {
        let discarded = written.load(Ordering::Relaxed).saturating_sub(total);
        if discarded > 0 {
            log.event(Event {
                t_s: end_s,
                kind: EventKind::Note {
                    message: format!(
                        "time is up at {s} s: {discarded} bytes ({:.4} MB) written but not delivered were discarded",
                        discarded as f64 / hare_report::MIB
                    ),
                },
            });
        }
    }
    if let Some(e) = &failure {
        log.event(Event {
            t_s: end_s,
            kind: EventKind::Error {
                message: e.to_string(),
            },
        });
    }
    let (sent, lost, srtt, min_rtt) = probe.totals();
    let files_failed =
        !refused.is_empty() || reports.iter().any(|r| !r.ok) || reports.len() < sources.len();
    // A file job stopped by the user is incomplete; a bulk job stopped by the user is a
    // normal end (nuttcp-style).
    let stopped_files = interrupted && !sources.is_empty();
    let completed = failure.is_none() && done.is_some() && !stopped_files && !files_failed;
    let run = log.finish(Summary {
        bytes: total,
        seconds: end_s,
        sent_packets: sent,
        lost_packets: lost,
        srtt_ms: Some(srtt),
        min_rtt_ms: Some(min_rtt),
        cpu_sender_pct: cpu.percent(),
        cpu_receiver_pct: done.and_then(|d| d.2),
        slow_start_exit: first_exit,
        max_cwnd_segments: Some(probe.max_cwnd()),
        valid: true,
        invalid_reasons: Vec::new(),
        completed,
    })?;
    match &opener {
        Opener::Quic(c) => {
            let code = if interrupted && !sources.is_empty() {
                close::INTERRUPTED
            } else {
                close::DONE
            };
            c.close(VarInt::from_u32(code), b"");
        }
        Opener::Tcp { sockets, .. } => {
            for s in lock(sockets).iter() {
                let _ = socket2::SockRef::from(&**s).shutdown(std::net::Shutdown::Both);
            }
        }
    }
    drop(out_tx);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    if let Some(e) = endpoint {
        let _ = tokio::time::timeout(Duration::from_secs(1), e.wait_idle()).await;
    }
    if let Some(q) = qlog.as_mut() {
        q.cc_events(
            &observer
                .drain_all()
                .into_iter()
                .map(|(_, e)| e)
                .collect::<Vec<_>>(),
        );
    }
    if let Some(e) = failure {
        if !interrupted {
            return Err(e);
        }
    }
    // Files that never got a verdict (interrupted) count as failed.
    for s in &sources {
        if !reports.iter().any(|r| r.name == s.entry.name) {
            reports.push(FileReport {
                name: s.entry.name.clone(),
                ok: false,
                reason: Some(if interrupted {
                    "interrupted".into()
                } else {
                    "no verdict".into()
                }),
                resumed_from: 0,
            });
        }
    }
    // Files whose names cannot travel were left out of the job: failed, with the reason.
    reports.extend(refused.into_iter().map(|(name, reason)| FileReport {
        name,
        ok: false,
        reason: Some(reason),
        resumed_from: 0,
    }));
    Ok(SendOutcome {
        run,
        files: reports,
        interrupted,
    })
}

fn describe(job: &Job) -> String {
    match job {
        Job::Bulk {
            bytes: Some(b),
            streams,
            ..
        } => format!("bulk {b} bytes over {streams} stream(s)"),
        Job::Bulk {
            seconds, streams, ..
        } => format!("bulk {} s over {streams} stream(s)", seconds.unwrap_or(0.0)),
        Job::Files { files, .. } => {
            let total: u64 = files.iter().map(|f| f.size).sum();
            format!("{} file(s), {total} bytes", files.len())
        }
    }
}

fn parse_session(hex: &str) -> Result<[u8; 12]> {
    let mut out = [0u8; 12];
    if hex.len() != 24 || !hex.is_ascii() {
        return Err(TransferError::Protocol("bad TCP session id".into()));
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| TransferError::Protocol("bad TCP session id".into()))?;
    }
    Ok(out)
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
        assert!(split_host_port(":9", d).is_err());
        assert!(split_host_port("", d).is_err());
    }

    #[test]
    fn session_ids_parse() {
        assert_eq!(
            parse_session("000102030405060708090a0b").ok(),
            Some([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        );
        assert!(parse_session("00").is_err());
    }
}

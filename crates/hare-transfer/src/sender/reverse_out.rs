//! Reverse mode, the sending half (runs in hare-recv for a `hare-send -r` client): the bulk
//! writers, the `-R` pacer, the run loop and the summary of a forward run, on the connection
//! the client opened. The client counts what arrives and sends its intervals and its `done`
//! exactly as a forward receiver does, so the lines here pair the controller's samples with
//! the bytes that really arrived. At the end the summary (packets, losses, RTT, congestion
//! window, the slow-start exit, CPU) goes back to the client, whose user sees it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_cc::Observer;
use hare_report::{Role, RunHeader, Tool, Transport, Windows};
use quinn::VarInt;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::channels::{ControlRead, ControlWrite};
use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::SenderLines;
use crate::protocol::{close, write_frame, FromRemoteSender, Job, ToReceiver};
use crate::qlog::ConnectionQlog;
use crate::quic_config::{Liveness, IDLE_TIMEOUT};
use crate::report::{OutputOptions, Printer, RunLog};
use crate::stop::Stop;
use crate::tcp::TcpOptions;

use super::bulk::spawn_bulk;
use super::control::{spawn_lone_reader, Ctl};
use super::finish::{iperf_context, summarise};
use super::gone::Words;
use super::opener::{lock, Opener};
use super::plan::describe;
use super::probe::Probe;
use super::recorder::Recorder;
use super::run_loop::{self, Context, Inputs};
use super::tasks::{pacer, DataShared, DataTasks};

/// The receiver's keep-alive (`Link::transport`), for the silence notes of its log.
const RECEIVER_KEEP_ALIVE: Duration = Duration::from_secs(5);

/// What a reverse job is sent over.
pub enum BackPath {
    /// The QUIC connection the client opened.
    Quic {
        /// The connection.
        conn: quinn::Connection,
        /// The observer of the connection's controller.
        observer: Observer,
        /// When that controller was built.
        cc_epoch: Instant,
        /// The connection's qlog, if any: its controller sidecar gets the events the
        /// sampler reads (the slot is given back at the end).
        qlog: Arc<std::sync::Mutex<Option<ConnectionQlog>>>,
    },
    /// Kernel TCP: the data connections the client opened, by bulk stream number.
    Tcp(HashMap<u32, tokio::net::TcpStream>),
}

/// An admitted reverse job, as the receiver hands it over.
pub struct SendBack {
    /// What it is sent over.
    pub path: BackPath,
    /// Its label (`cubic@linux-6`).
    pub controller: String,
    /// Its kernel profile, if any.
    pub profile: Option<String>,
    /// The bulk job: size or duration, streams.
    pub job: Job,
    /// `-R` of the client, bit/s.
    pub rate: Option<u64>,
    /// The report interval (the client's `-i`).
    pub interval: Duration,
    /// The client's address.
    pub peer: SocketAddr,
    /// The client's software, as its hello named it (cleaned).
    pub peer_software: String,
    /// This receiver's `-w`.
    pub window: u64,
    /// Where text goes.
    pub printer: Printer,
    /// The receiver's output settings.
    pub output: OutputOptions,
    /// Longest one control message may take to be written.
    pub write_timeout: Duration,
    /// A job whose data has not moved for this long is ended (the receiver's limit).
    pub stall_timeout: Duration,
}

/// End the connection (or the data connections) when no data has been handed to the
/// transport for `limit`: a client that stops reading (its window stays shut) must not hold
/// a job slot for ever.
fn watch_stall(opener: Opener, written: Arc<AtomicU64>, limit: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = (written.load(Ordering::Relaxed), Instant::now());
        loop {
            tokio::time::sleep(limit / 8).await;
            let now = written.load(Ordering::Relaxed);
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() >= limit {
                let why = format!("no data moved for {} s", limit.as_secs());
                match &opener {
                    Opener::Quic(conn) => {
                        conn.close(VarInt::from_u32(close::TIMEOUT), why.as_bytes())
                    }
                    Opener::Tcp { sockets, .. } => {
                        for (_, s) in lock(sockets).iter() {
                            let how = std::net::Shutdown::Both;
                            let _ = socket2::SockRef::from(&*s.stream).shutdown(how);
                        }
                    }
                }
                return;
            }
        }
    })
}

fn header(b: &SendBack) -> RunHeader {
    RunHeader {
        schema: hare_report::SCHEMA.into(),
        tool: Tool::HareRecv,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        role: Role::Sender,
        transport: match b.path {
            BackPath::Quic { .. } => Transport::Quic,
            BackPath::Tcp(_) => Transport::Tcp,
        },
        run_id: format!(
            "{}-{}",
            b.peer,
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        ),
        scenario: None,
        controller: b.controller.clone(),
        profile: b.profile.clone(),
        mtu: match &b.path {
            BackPath::Quic { conn, .. } => u32::from(conn.stats().path.current_mtu),
            BackPath::Tcp(_) => 0,
        },
        windows: Windows {
            stream_receive: Some(b.window),
            receive: None,
            send: None,
        },
        path: None,
        seed: None,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        interval_s: b.interval.as_secs_f64(),
    }
}

/// Run the reverse job to its end and send the summary to the client. `Err` when the
/// connection failed or the client broke the protocol.
pub async fn send_back(b: SendBack, ctl_r: ControlRead, mut ctl_w: ControlWrite) -> Result<()> {
    let limit = b.write_timeout;
    let start = FromRemoteSender::Start {
        controller: b.controller.clone(),
        profile: b.profile.clone(),
    };
    bounded(limit, write_frame(&mut ctl_w, &start)).await?;
    let head = header(&b);
    let (opener, observer, cc_epoch, lines, slot) = match b.path {
        BackPath::Quic {
            conn,
            observer,
            cc_epoch,
            qlog,
        } => (
            Opener::Quic(conn),
            observer,
            cc_epoch,
            SenderLines::remote(),
            Some(qlog),
        ),
        // Kernel TCP: the lines are what the client acknowledged (TCP_INFO by connection),
        // as a forward `--tcp` sender's.
        BackPath::Tcp(streams) => (
            given_opener(b.peer, streams),
            Observer::new(),
            Instant::now(),
            SenderLines::local(),
            None,
        ),
    };
    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let streams = match &b.job {
        Job::Bulk { streams, .. } => *streams,
        Job::Files { .. } => 1,
    };
    let mut log = RunLog::new(head, b.printer.clone(), &b.output)?;
    log.set_reverse();
    log.note(&format!(
        "hare-recv -> {} ({}): reverse mode, sending {}, controller {}",
        b.peer,
        b.peer_software,
        describe(&b.job),
        b.controller
    ));
    log.printer().parts(&crate::report::SENDER_UNITS);
    let probe = Probe::new(&opener, &observer, cc_epoch, t0, &b.controller);
    let mut rec = Recorder {
        log,
        probe,
        qlog: slot.as_ref().and_then(|s| lock(s).take()),
        first_exit: None,
    };
    let (ctl_tx, ctl_rx) = mpsc::channel::<Ctl>(256);
    // This side's peer is hare-send: its own words, not a receiver that went away.
    spawn_lone_reader(ctl_r, ctl_tx, Words::AsItWas);
    // Bulk writers send nothing on the control channel; this side writes its two frames
    // itself.
    let (out_tx, _unused) = mpsc::channel::<ToReceiver>(1);
    let stop_flag = Arc::new(AtomicBool::new(false));
    let shared = DataShared {
        opener: opener.clone(),
        stop_flag: stop_flag.clone(),
        written: Arc::new(AtomicU64::new(0)),
        pacer: pacer(b.rate),
        out_tx,
        // Bulk data: nothing is ever sent again.
        retry: super::retry::Retry {
            max: 0,
            restarts: super::restarts::Restarts::default(),
            notes: None,
        },
        stripes: None,
    };
    let mut tasks = DataTasks::new();
    // Reverse mode keeps its own end (the taking side counts the streams).
    spawn_bulk(&mut tasks, &b.job, &shared, (t0, false), None);
    let stall = watch_stall(opener.clone(), shared.written.clone(), b.stall_timeout);
    let mut inputs = Inputs {
        ctl_rx,
        tasks,
        stop: Stop::never(),
    };
    let cx = Context {
        t0,
        interval: b.interval,
        opener: &opener,
        bulk: true,
        stop_flag: &stop_flag,
        liveness: Liveness {
            idle_timeout: IDLE_TIMEOUT,
            keep_alive: RECEIVER_KEEP_ALIVE,
            ..Liveness::default()
        },
        words: Words::AsItWas,
    };
    let mut st = run_loop::run(&mut rec, &mut inputs, &cx, lines).await;
    inputs.tasks.abort_all();
    stall.abort();
    rec.log
        .set_iperf(iperf_context(&opener, None, b.peer, &b.job, streams, &cpu));
    let (run, qlog) = summarise(rec, &mut st, &b.job, &[], t0, &cpu, &shared.written)?;
    if let Some(s) = &slot {
        *lock(s) = qlog;
    }
    if let Some(e) = st.failure.take() {
        return Err(e);
    }
    if let Some(summary) = run.summary {
        let report = FromRemoteSender::Report {
            summary,
            written: shared.written.load(Ordering::Relaxed),
        };
        bounded(limit, write_frame(&mut ctl_w, &report)).await?;
        let _ = ctl_w.shutdown().await;
    }
    Ok(())
}

/// An opener that hands out the client's data connections instead of connecting.
fn given_opener(peer: SocketAddr, streams: HashMap<u32, tokio::net::TcpStream>) -> Opener {
    Opener::Tcp {
        addr: peer,
        opts: TcpOptions::default(),
        session: [0; 12],
        sockets: Arc::default(),
        given: Some(Arc::new(std::sync::Mutex::new(streams))),
    }
}

/// A control write within `limit`.
async fn bounded(limit: Duration, w: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    tokio::time::timeout(limit, w).await.unwrap_or_else(|_| {
        Err(TransferError::Timeout(format!(
            "the client did not read its control stream for {:.0} s",
            limit.as_secs_f64()
        )))
    })
}

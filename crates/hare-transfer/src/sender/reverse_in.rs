//! Reverse mode, the receiving half (hare-send `-r`, like nuttcp `-r` and iperf3 `-R`):
//! hare-send opens the connection, so it works through a NAT, and asks in its hello for the
//! bulk job to come back; hare-recv sends ([`super::reverse_out`]) and this side counts
//! what arrives by stream, as a forward receiver does, and sends it the same `interval` and
//! `done` messages. The lines printed here are the receiving side's (iperf3 `-R` prints the
//! same); the summary joins this side's counts to the sending side's own figures (packets,
//! losses, RTT, congestion window, slow-start exit, its CPU), which it reports at the end.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind, Role, RunHeader, Summary, Tool, Transport, Windows};
use quinn::VarInt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::channels::{read_quic_header, ControlRead, ControlWrite, DataOut};
use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::{settle, ArrivalIntervals};
use crate::protocol::{
    close, read_frame, write_frame, DataHeader, DataKind, FromRemoteSender, Job, ToSender,
    MAX_STREAMS,
};
use crate::protocol::{DURATION_GRACE, HEADER_TIMEOUT};
use crate::report::{Printer, RunLog};
use crate::stop::{Stop, DEFAULT_STOP_REASON};

use super::finish::iperf_context;
use super::gone;
use super::liveness::{describe_close, Silence};
use super::opener::Opener;
use super::plan::describe;
use super::{SendJob, SendOptions, SendOutcome};

/// Time the remote sender has to name its controller after the welcome.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Time the remote sender has to report after this side's `done`.
const REPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest one control message may take to be written.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What cannot run in reverse mode, refused before connecting.
pub(super) fn check(opts: &SendOptions) -> Result<()> {
    if opts.tcp.as_ref().is_some_and(|t| t.pacing_rate.is_some()) {
        return Err(TransferError::Usage(
            "--pacing-rate with -r: the sending side paces, and in reverse mode that is \
             hare-recv; use -R RATE, which it honours"
                .into(),
        ));
    }
    if let SendJob::Files { .. } = opts.job {
        return Err(TransferError::Usage(
            "-r with files: reverse mode moves bulk data only (-n SIZE or -T SECONDS); to get \
             files from the other host, run hare-recv --dir here and hare-send there"
                .into(),
        ));
    }
    if opts.cc.is_some() {
        return Err(TransferError::Usage(
            "--cc with -r: in reverse mode hare-recv sends, with the controller it was \
             started with (hare-recv --cc), fixed when it accepted the connection; drop --cc \
             here"
                .into(),
        ));
    }
    Ok(())
}

/// The connection and job of a reverse run, once welcomed.
pub(super) struct Take<'a> {
    pub(super) opts: &'a SendOptions,
    pub(super) job: &'a Job,
    pub(super) addr: SocketAddr,
    /// The connection (QUIC) or how to open data connections (TCP).
    pub(super) opener: Opener,
    pub(super) endpoint: Option<quinn::Endpoint>,
    pub(super) window: u64,
    pub(super) granted: u64,
}

impl Take<'_> {
    /// The QUIC connection, if it is one.
    fn conn(&self) -> Option<&quinn::Connection> {
        match &self.opener {
            Opener::Quic(c) => Some(c),
            Opener::Tcp { .. } => None,
        }
    }
}

/// Peer text for this side's output: printable and short.
fn clean(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(100).collect()
}

/// What the remote sender says on the control channel, or how the channel ended.
enum Heard {
    Said(FromRemoteSender),
    Closed(String),
}

/// Read the remote sender's messages; over kernel TCP (`tcp`) an end or a reset before the
/// job ended is said as the receiver going away ([`gone`]).
fn spawn_reader(mut ctl_r: ControlRead, tcp: bool) -> mpsc::Receiver<Heard> {
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            let h = match read_frame::<_, FromRemoteSender>(&mut ctl_r).await {
                Ok(Some(m)) => Heard::Said(m),
                Ok(None) if tcp => Heard::Closed(gone::closed()),
                Ok(None) => Heard::Closed("the receiver closed the control channel".into()),
                Err(e) => Heard::Closed(
                    gone::of(&e)
                        .filter(|_| tcp)
                        .unwrap_or_else(|| e.to_string()),
                ),
            };
            let last = matches!(h, Heard::Closed(_));
            if tx.send(h).await.is_err() || last {
                return;
            }
        }
    });
    rx
}

async fn send(w: &mut ControlWrite, m: &ToSender) -> Result<()> {
    tokio::time::timeout(WRITE_TIMEOUT, write_frame(w, m))
        .await
        .unwrap_or_else(|_| {
            Err(TransferError::Timeout(
                "the receiver did not read its control stream".into(),
            ))
        })
}

/// The remote sender's first word: its controller.
async fn start(ctl_r: &mut ControlRead) -> Result<(String, Option<String>)> {
    match tokio::time::timeout(START_TIMEOUT, read_frame(ctl_r)).await {
        Ok(Ok(Some(FromRemoteSender::Start {
            controller,
            profile,
        }))) => Ok((clean(&controller), profile.map(|p| clean(&p)))),
        Ok(Ok(Some(_))) => Err(TransferError::Protocol(
            "the receiver reported before it started sending".into(),
        )),
        Ok(Ok(None)) => Err(TransferError::Connection(
            "the receiver closed the control channel before sending".into(),
        )),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(TransferError::Connection(
            "the receiver did not start sending in time".into(),
        )),
    }
}

/// Count one stream until it ends, or is reset with [`close::TIME_UP`] (the sender's time is
/// up: it discarded what it had queued, a normal end whatever either clock says).
async fn count(
    mut s: quinn::RecvStream,
    mine: Arc<AtomicU64>,
    all: Arc<AtomicU64>,
    limit: Option<u64>,
) -> Result<()> {
    let time_up = VarInt::from_u32(close::TIME_UP);
    loop {
        match s.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => {
                let n = c.bytes.len() as u64;
                mine.fetch_add(n, Ordering::Relaxed);
                let total = all.fetch_add(n, Ordering::Relaxed) + n;
                if limit.is_some_and(|l| total > l) {
                    return Err(TransferError::Protocol(
                        "the receiver sent more bulk data than asked for".into(),
                    ));
                }
            }
            Ok(None) => return Ok(()),
            Err(quinn::ReadError::Reset(code)) if code == time_up => return Ok(()),
            Err(e) => return Err(TransferError::Connection(format!("reading a stream: {e}"))),
        }
    }
}

/// Accept the job's streams, check their headers, count each; every stream's end (or the
/// first failure) goes to `fin`.
fn spawn_streams(
    conn: quinn::Connection,
    counters: Vec<Arc<AtomicU64>>,
    all: Arc<AtomicU64>,
    limit: Option<u64>,
    fin: mpsc::Sender<Result<()>>,
) {
    tokio::spawn(async move {
        let mut seen = vec![false; counters.len()];
        for _ in 0..counters.len() {
            let Ok(mut s) = conn.accept_uni().await else {
                return;
            };
            let h = match tokio::time::timeout(HEADER_TIMEOUT, read_quic_header(&mut s)).await {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => {
                    let _ = fin.send(Err(e)).await;
                    return;
                }
                Err(_) => {
                    let why = "a data stream without its header".into();
                    let _ = fin.send(Err(TransferError::Protocol(why))).await;
                    return;
                }
            };
            let i = h.index as usize;
            if h.kind != DataKind::Bulk || seen.get(i) != Some(&false) {
                let why = format!("unexpected data stream (bulk stream number {i})");
                let _ = fin.send(Err(TransferError::Protocol(why))).await;
                return;
            }
            seen[i] = true;
            let (mine, all, fin) = (counters[i].clone(), all.clone(), fin.clone());
            tokio::spawn(async move {
                let _ = fin.send(count(s, mine, all, limit).await).await;
            });
        }
    });
}

/// Kernel TCP: open the job's data connections (one per stream, each named by its header
/// and the session), which the remote sender writes to.
async fn open_tcp_streams(opener: &Opener, streams: u16) -> Result<Vec<Arc<TcpStream>>> {
    let mut out = Vec::new();
    for index in 0..u32::from(streams) {
        let h = DataHeader {
            kind: DataKind::Bulk,
            index,
            offset: 0,
            session: [0; 12],
            attempt: 0,
        };
        if let DataOut::Tcp(s) = opener.open(h).await? {
            out.push(s.stream.clone());
        }
    }
    Ok(out)
}

/// Kernel TCP: count one data connection until the sender closes it, or aborts it once its
/// time is up (`time_up`: the duration from before this side opened the connections, so
/// earlier than any abort the sender's clock allows).
async fn count_tcp(
    s: Arc<TcpStream>,
    (mine, all): (Arc<AtomicU64>, Arc<AtomicU64>),
    limit: Option<u64>,
    time_up: Option<Instant>,
) -> Result<()> {
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let ready = s.readable().await;
        let read = ready.and_then(|()| s.try_read(&mut buf));
        match read {
            Ok(0) => return Ok(()),
            Ok(n) => {
                let n = n as u64;
                mine.fetch_add(n, Ordering::Relaxed);
                let total = all.fetch_add(n, Ordering::Relaxed) + n;
                if limit.is_some_and(|l| total > l) {
                    return Err(TransferError::Protocol(
                        "the receiver sent more bulk data than asked for".into(),
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) if time_up.is_some_and(|t| Instant::now() >= t) => return Ok(()),
            Err(e) => {
                let why = gone::words(&e).unwrap_or_else(|| format!("TCP read: {e}"));
                return Err(TransferError::Connection(why));
            }
        }
    }
}

/// Kernel TCP: count every data connection; each one's end goes to `fin`.
fn spawn_tcp_streams(
    socks: Vec<Arc<TcpStream>>,
    counters: Vec<Arc<AtomicU64>>,
    all: Arc<AtomicU64>,
    (limit, time_up): (Option<u64>, Option<Instant>),
    fin: mpsc::Sender<Result<()>>,
) {
    for (s, mine) in socks.into_iter().zip(counters) {
        let (all, fin) = (all.clone(), fin.clone());
        tokio::spawn(async move {
            let _ = fin
                .send(count_tcp(s, (mine, all), limit, time_up).await)
                .await;
        });
    }
}

/// How the loop ended.
struct Ended {
    /// Why the run failed, if it did.
    pub(super) failure: Option<TransferError>,
    /// The user stopped it.
    pub(super) interrupted: bool,
    /// The sender's summary and the bytes it wrote.
    pub(super) report: Option<(Summary, u64)>,
}

mod run;
mod summary;
pub(super) use run::take;

//! One job, common to both transports, in named steps: hello, admission, welcome, the data
//! channels and verdicts, the summary. Every write to the peer has a deadline.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind, Role, RunHeader, Summary, Tool, Windows};
use quinn::VarInt;
use tokio::sync::{mpsc, oneshot};

use crate::channels::{ControlRead, ControlWrite, DataIn};
use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::job_interval;
use crate::protocol::{
    feature, read_frame, DataHeader, DataKind, FilePlan, LinkResult, Striping, ToReceiver,
    ToSender, MAX_CONNECTIONS, MAX_STREAMS, MIN_CHUNK, PROTOCOL_VERSION,
};
use crate::recvfile::{Failure, Planned, Target, Verified};
use crate::report::{Printer, RunLog};

use super::accept::{check_credentials, plan_job, Accepted};
use super::ctx::{JobCtx, Whose};
use super::gate::Ticket;
use super::logs;
use super::streams::{accept_quic_streams, bulk_stream, file_stream, BulkEnd};
use super::{DURATION_GRACE, PROGRESS_RATE, REFUSE_TIMEOUT};

/// What a data channel handler reports.
enum Finished {
    /// Bulk stream `n` ended: all of it came, it was lost with its connection, or it failed.
    Bulk(u32, Result<BulkEnd>),
    /// A file stream ended: verified (to be made durable and published), or why not.
    File(u32, Result<Verified, Failure>),
}

/// Messages the control reader forwards.
enum Ctl {
    Msg(ToReceiver),
    Closed(Option<TransferError>),
}

pub(super) async fn run_job(
    mut ctx: JobCtx,
    mut ctl_r: ControlRead,
    ctl_w: ControlWrite,
    data_rx: mpsc::Receiver<(DataHeader, DataIn)>,
) -> Result<()> {
    let mut out = Out::new(ctl_w, ctx.opts.limits.write_timeout);
    let hello = read_hello(&ctx, &mut ctl_r).await?;
    if let ToReceiver::Join {
        session,
        connection,
        token,
    } = &hello
    {
        let join = (session.as_str(), *connection, token.as_deref());
        return super::joins::serve_join(ctx, join, (ctl_r, out.w)).await;
    }
    let (job_id, _running) = ctx.jobs.start();
    let tag = crate::report::JobTag::new(ctx.peer, job_id, ctx.jobs.running.clone());
    let printer = Printer::new(&ctx.opts.output).tagged(tag);
    let (accepted, plans, grant, _slot) = match admit(&mut ctx, &hello).await {
        Ok(a) => a,
        Err(e) => {
            let reason = match &e {
                TransferError::Refused(r) => r.clone(),
                other => other.to_string(),
            };
            let text = logs::line(ctx.peer, "refused", &reason);
            logs::limited("refused", &text, |l| printer.line(l));
            // Best effort: a sender that does not read cannot keep the connection open.
            let _ = out
                .send_within(&ToSender::Refuse { reason }, REFUSE_TIMEOUT)
                .await;
            return Err(e);
        }
    };
    let channels = match &accepted {
        Accepted::Bulk { streams, .. } => usize::from(*streams),
        Accepted::Files { count, .. } => *count,
    };
    // The receiver reports on the sender's interval (like nuttcp's server), so that the
    // sender can print the receiver's counts as its own lines, keyed by interval.
    let interval = match &hello {
        ToReceiver::Hello { interval_s, .. } => job_interval(*interval_s, ctx.opts.interval),
        _ => ctx.opts.interval,
    };
    let links = match &accepted {
        Accepted::Files { links, .. } => links.clone(),
        Accepted::Bulk { .. } => Vec::new(),
    };
    // A sender's fixed -w is granted at once; otherwise this receiver's own -w rules.
    let fixed = matches!(
        &hello,
        ToReceiver::Hello {
            fixed_window: true,
            ..
        }
    );
    let striping = striping_of(&ctx, &hello);
    let (_joins, standby) = match striping {
        Some(st) => register(&mut ctx, (st, &hello), (grant, fixed), channels),
        None => (None, None),
    };
    welcome(&ctx, &mut out, (grant, fixed), plans, channels, links).await?;
    if let (Some(st), Some(dial)) = (striping, &ctx.dial_more) {
        // A pull: the sender listens, so this side dials the job's further connections.
        dial.spawn(st.connections);
    }
    if let ToReceiver::Hello {
        reverse: Some(r), ..
    } = &hello
    {
        // Reverse mode: this side sends the job back over the same connection.
        let data = (ctl_r, out.w, data_rx);
        return super::reverse::serve(&ctx, &hello, r, accepted, interval, printer, data).await;
    }
    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let mut log = start_log(&ctx, &hello, &accepted, grant, interval, printer)?;
    // iperf3 JSON (`start.test_start`, `start.connected`): what the hello asked.
    if let ToReceiver::Hello { job, .. } = &hello {
        let local = ctx.conn.as_ref().and_then(|c| c.local_ip());
        let local = local.map(|ip| SocketAddr::new(ip, ctx.opts.listen.port()));
        log.set_iperf(crate::iperf_extra::receiver_context(job, local, ctx.peer));
    }
    log_failed_links(&hello, &accepted, &mut log);
    let ctl_rx = spawn_control_reader(ctl_r);
    // Over kernel TCP a data stream's end does not tell a finished sender from a dead one,
    // and over either transport only `bulk-end` says whether the user stopped the sender
    // early: a bulk job of a sender that ends its jobs with it waits for it (it is sent as
    // the streams end).
    let needs_end = matches!(
        hello,
        ToReceiver::Hello {
            ends_bulk: true,
            ..
        }
    );
    let mut job = Running::new(&ctx, accepted, channels, t0, interval, needs_end);
    job.striped(striping, grant);
    let take_rx = standby.map(|s| {
        out.standby = Some((s.joined_open, s.first));
        s.take_rx
    });
    let abort = job
        .serve(&mut out, &mut log, (ctl_rx, take_rx), data_rx)
        .await;
    finish(&ctx, job, abort, &mut out, log, t0, cpu).await
}

/// Read the Hello before the connection's deadline.
async fn read_hello(ctx: &JobCtx, ctl_r: &mut ControlRead) -> Result<ToReceiver> {
    match tokio::time::timeout_at(ctx.hello_deadline, read_frame(ctl_r)).await {
        Ok(Ok(Some(h))) => Ok(h),
        Ok(Ok(None)) => Err(TransferError::Protocol("closed before its hello".into())),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(TransferError::Timeout(format!(
            "no hello within {} s",
            ctx.opts.limits.hello_timeout.as_secs()
        ))),
    }
}

/// Credentials, then a job slot, then the plan. `Err(Refused | Busy)` carries the reason.
async fn admit(
    ctx: &mut JobCtx,
    hello: &ToReceiver,
) -> Result<(Accepted, Vec<FilePlan>, u64, Ticket)> {
    check_credentials(&ctx.opts, ctx.peer_cert, hello).map_err(TransferError::Refused)?;
    if ctx.opts.open && ctx.opts.allow.is_empty() && ctx.opts.token.is_none() {
        let who = match ctx.peer_cert {
            Some(fp) => format!("sender certificate sha256 {fp}"),
            None => "no sender certificate".to_owned(),
        };
        let text = logs::line(ctx.peer, "accepted without authorisation (--open)", &who);
        logs::limited("open", &text, |l| tracing::warn!("{l}"));
    }
    let slot = ctx.gate.job(ctx.peer.ip()).map_err(TransferError::Busy)?;
    // Authenticated and admitted: the pre-auth place goes back.
    ctx.preauth = None;
    // Planning reads partial files to hash them: off the runtime thread, so that other
    // connections keep being served meanwhile.
    let (o, h, n, w) = (
        ctx.opts.clone(),
        hello.clone(),
        ctx.names.clone(),
        Whose::of(ctx),
    );
    let verdict = tokio::task::spawn_blocking(move || plan_job(&o, &h, &n, &w))
        .await
        .map_err(|e| TransferError::Protocol(format!("planning the job failed: {e}")))?;
    let (accepted, plans, grant) = verdict.map_err(TransferError::Refused)?;
    Ok((accepted, plans, grant, slot))
}

/// Each link the job could not make, as an error event of the job's log.
fn log_failed_links(hello: &ToReceiver, accepted: &Accepted, log: &mut RunLog) {
    let (
        ToReceiver::Hello {
            job: crate::protocol::Job::Files { links: asked, .. },
            ..
        },
        Accepted::Files { links, .. },
    ) = (hello, accepted)
    else {
        return;
    };
    for r in links {
        if let (Some(why), Some(k)) = (&r.reason, asked.get(r.index as usize)) {
            log.event(Event {
                t_s: 0.0,
                kind: EventKind::Error {
                    message: logs::clean(&format!("{}: {why}", k.name), logs::MAX_LOGGED),
                },
            });
        }
    }
}

/// Open the connection to data (window, stream credit) and send the Welcome.
async fn welcome(
    ctx: &JobCtx,
    out: &mut Out,
    (grant, fixed): (u64, bool),
    plans: Vec<FilePlan>,
    channels: usize,
    links: Vec<LinkResult>,
) -> Result<()> {
    if let Some(conn) = &ctx.conn {
        let link = crate::quic_config::Link {
            auto: ctx.opts.link.auto && !fixed,
            ..ctx.opts.link
        };
        crate::quic_config::open_receive_window(conn, &link, grant);
        conn.set_max_concurrent_uni_streams(VarInt::from_u32(uni_streams(ctx, channels)));
    }
    out.send(&ToSender::Welcome {
        version: PROTOCOL_VERSION,
        software: format!("hare-recv {}", env!("CARGO_PKG_VERSION")),
        window: grant,
        files: plans,
        session: ctx
            .session
            .map(|s| s.iter().map(|b| format!("{b:02x}")).collect()),
        features: vec![
            feature::LINKS.to_owned(),
            feature::RETRY.to_owned(),
            feature::BULK_END.to_owned(),
            feature::SKIP.to_owned(),
            feature::DEST.to_owned(),
            feature::CONNECTIONS.to_owned(),
            feature::TAKE_OVER.to_owned(),
            feature::BULK_MOVES.to_owned(),
            feature::TAIL_PIECES.to_owned(),
        ],
        links,
    })
    .await?;
    if let (Some(conn), Some(tx)) = (&ctx.conn, ctx.data_tx.clone()) {
        tokio::spawn(accept_quic_streams((conn.clone(), 0), tx));
    }
    Ok(())
}

/// The striping a QUIC job asked for and this receiver takes: a push (not reverse), at most
/// [`MAX_CONNECTIONS`] connections, ranges of at least [`MIN_CHUNK`] bytes. Anything else
/// runs on the one connection (the sender hears no session and keeps to it).
fn striping_of(ctx: &JobCtx, hello: &ToReceiver) -> Option<Striping> {
    let ToReceiver::Hello {
        striping: Some(st),
        reverse: None,
        ..
    } = hello
    else {
        return None;
    };
    let fits = (2..=MAX_CONNECTIONS).contains(&st.connections) && st.chunk >= MIN_CHUNK;
    (ctx.conn.is_some() && fits).then_some(*st)
}

/// Data streams one connection of the job may open at once: one per channel, or for a job
/// over several connections as many as any job may (its ranges come and go). A stream's
/// credit comes back only once the receiver has read it to its end, so on a long path the
/// limit bounds how many files travel per round trip: [`FILE_STREAMS`] of 4 KiB files fill
/// 200 Mbit/s at 80 ms, where 128 filled half of 100 Mbit/s. Each open stream holds one
/// temporary file open here.
fn uni_streams(ctx: &JobCtx, channels: usize) -> u32 {
    if ctx.session.is_some() && ctx.conn.is_some() {
        return u32::from(MAX_STREAMS);
    }
    // A bulk job's channels are its `-P` streams, at most MAX_STREAMS.
    channels.clamp(1, FILE_STREAMS) as u32
}

/// Most data streams a one-connection job may have open at once (see [`uni_streams`]).
const FILE_STREAMS: usize = 512;

/// Open the job to its further connections: a session for the welcome, registered with
/// what each connection gets, and where a joined connection hands over the control channel.
fn register(
    ctx: &mut JobCtx,
    (st, hello): (Striping, &ToReceiver),
    (grant, fixed): (u64, bool),
    channels: usize,
) -> (Option<super::sessions::Registered>, Option<Standby>) {
    let Some(data_tx) = ctx.data_tx.clone() else {
        return (None, None);
    };
    let id: [u8; 12] = rand::random();
    ctx.session = Some(id);
    let (take_tx, take_rx) = mpsc::channel(usize::from(st.connections));
    let joined_open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let slot = super::sessions::Slot {
        data_tx,
        owner: ctx.peer_cert,
        link: crate::quic_config::Link {
            auto: ctx.opts.link.auto && !fixed,
            ..ctx.opts.link
        },
        grant,
        streams: uni_streams(ctx, channels),
        connections: st.connections,
        token: match hello {
            ToReceiver::Hello { token, .. } => token.clone(),
            _ => None,
        },
        take_over: take_tx,
        joined_open: joined_open.clone(),
    };
    let standby = Standby {
        take_rx,
        joined_open,
        first: ctx.conn.clone(),
    };
    let registered = ctx.joins.register(id, slot, st.connections - 1);
    (Some(registered), Some(standby))
}

fn start_log(
    ctx: &JobCtx,
    hello: &ToReceiver,
    accepted: &Accepted,
    grant: u64,
    interval: Duration,
    printer: Printer,
) -> Result<RunLog> {
    let (controller, software) = match hello {
        ToReceiver::Hello {
            controller,
            software,
            ..
        } => (controller.as_str(), software.as_str()),
        _ => ("", ""),
    };
    let job_text = match accepted {
        Accepted::Bulk {
            bytes: Some(b),
            streams,
            ..
        } => format!("bulk {b} bytes, {streams} stream(s)"),
        Accepted::Bulk {
            seconds, streams, ..
        } => format!("bulk {:.1} s, {streams} stream(s)", seconds.unwrap_or(0.0)),
        Accepted::Files { count, links, .. } if !links.is_empty() => {
            format!("{count} file(s), {} link(s)", links.len())
        }
        Accepted::Files { count, .. } => format!("{count} file(s)"),
    };
    let mtu = ctx
        .conn
        .as_ref()
        .map(|c| u32::from(c.stats().path.current_mtu))
        .unwrap_or(0);
    let controller = logs::clean(controller, 100);
    let header = RunHeader {
        schema: hare_report::SCHEMA.into(),
        tool: Tool::HareRecv,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        role: Role::Receiver,
        transport: ctx.transport,
        run_id: format!(
            "{}-{}",
            ctx.peer,
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        ),
        scenario: None,
        controller: controller.clone(),
        profile: None,
        mtu,
        windows: Windows {
            stream_receive: Some(ctx.opts.link.window),
            receive: Some(grant),
            send: None,
        },
        path: None,
        seed: None,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        interval_s: interval.as_secs_f64(),
    };
    let log = RunLog::new(header, printer, &ctx.opts.output)?;
    log.note(&format!(
        "hare-recv: {} ({}, {controller}): {job_text}",
        ctx.peer,
        logs::clean(software, 100)
    ));
    log.note(crate::report::RECEIVER_UNITS);
    Ok(log)
}

fn spawn_control_reader(mut ctl_r: ControlRead) -> mpsc::Receiver<Ctl> {
    let (ctl_tx, ctl_rx) = mpsc::channel::<Ctl>(64);
    tokio::spawn(async move {
        loop {
            let m = match read_frame::<_, ToReceiver>(&mut ctl_r).await {
                Ok(Some(m)) => Ctl::Msg(m),
                Ok(None) => Ctl::Closed(None),
                Err(e) => Ctl::Closed(Some(e)),
            };
            let last = matches!(m, Ctl::Closed(_));
            if ctl_tx.send(m).await.is_err() || last {
                return;
            }
        }
    });
    ctl_rx
}

/// Answers progress requests at most [`PROGRESS_RATE`] per second after a burst of twice
/// that (a token bucket); the sender pairs answers by sequence number, so one left
/// unanswered only merges two report intervals.
struct ProgressBudget {
    tokens: f64,
    at: Instant,
}

impl ProgressBudget {
    fn new() -> Self {
        Self {
            tokens: 2.0 * f64::from(PROGRESS_RATE),
            at: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let cap = 2.0 * f64::from(PROGRESS_RATE);
        let refill = now.duration_since(self.at).as_secs_f64() * f64::from(PROGRESS_RATE);
        self.tokens = (self.tokens + refill).min(cap);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

mod assemble;
mod out;
mod running;
use out::{Out, Standby};
use running::Running;

/// The summary, the final `done` (when nothing aborted) and the job's result.
async fn finish(
    ctx: &JobCtx,
    mut job: Running,
    abort: Option<TransferError>,
    out: &mut Out,
    mut log: RunLog,
    t0: Instant,
    cpu: CpuClock,
) -> Result<()> {
    // A sender that went away is said as one (the stream error alone reads "connection lost").
    let abort = abort.map(crate::peer_gone::in_receiver_words);
    let end_s = t0.elapsed().as_secs_f64();
    let streams = job.stream_counts();
    let total = job.received(&streams);
    let cpu_pct = cpu.percent();
    if abort.is_none() {
        out.send(&ToSender::Done {
            bytes: total,
            seconds: end_s,
            cpu_pct,
            streams: streams.clone(),
        })
        .await?;
    }
    if let Some(line) = job.arrivals.finish(end_s, total, &streams) {
        log.line(line);
    }
    log.stream_totals(streams);
    if let Some(e) = &abort {
        log.event(Event {
            t_s: end_s,
            kind: EventKind::Error {
                message: e.to_string(),
            },
        });
        if ctx.opts.output.text() {
            super::said::said_in_report();
        }
    }
    let srtt = ctx
        .conn
        .as_ref()
        .map(|c| c.stats().path.rtt.as_secs_f64() * 1e3);
    log.finish(Summary {
        bytes: total,
        seconds: end_s,
        cpu_receiver_pct: cpu_pct,
        srtt_ms: srtt,
        valid: true,
        completed: abort.is_none() && job.failures == 0,
        ..Summary::default()
    })?;
    match abort {
        Some(e) => Err(e),
        None if job.failures > 0 => Err(TransferError::FilesFailed {
            failed: job.failures,
            total: job.expected + job.links,
        }),
        None => Ok(()),
    }
}

/// Why the data loop stopped early.
fn stall(limit: Duration) -> TransferError {
    TransferError::Timeout(format!("no data for {} s", limit.as_secs()))
}

type DigestSlot = oneshot::Sender<Result<String, String>>;
type DigestWait = oneshot::Receiver<Result<String, String>>;

/// The file plans of a job, by index, with the channels their digests arrive on.
fn digest_channels(
    planned: &HashMap<u32, Planned>,
) -> (HashMap<u32, DigestSlot>, HashMap<u32, DigestWait>) {
    let mut tx = HashMap::new();
    let mut rx = HashMap::new();
    for &i in planned.keys() {
        let (t, r) = oneshot::channel();
        tx.insert(i, t);
        rx.insert(i, r);
    }
    (tx, rx)
}

/// `counters`: the job's payload count and this stream's.
fn spawn_bulk(
    (index, input): (u32, DataIn),
    fin: mpsc::Sender<Finished>,
    counters: (Arc<AtomicU64>, Arc<AtomicU64>),
    limit: Option<u64>,
    time_up: Option<Instant>,
) {
    tokio::spawn(async move {
        let r = bulk_stream(input, counters, limit, time_up).await;
        let _ = fin.send(Finished::Bulk(index, r)).await;
    });
}

#[allow(clippy::too_many_arguments)]
fn spawn_file(
    target: Target,
    p: Planned,
    h: DataHeader,
    input: DataIn,
    rx: DigestWait,
    fin: mpsc::Sender<Finished>,
    bytes: (Arc<AtomicU64>, Option<Arc<AtomicU64>>),
) {
    tokio::spawn(async move {
        let r = file_stream(&target, p, h, input, rx, bytes).await;
        let _ = fin.send(Finished::File(h.index, r)).await;
    });
}

/// Data channel kinds a job accepts.
fn wrong_kind(kind: DataKind, files_job: bool) -> Option<&'static str> {
    match (kind, files_job) {
        (DataKind::Bulk, true) => Some("a bulk stream in a file job"),
        (DataKind::File, false) => Some("a file stream in a bulk job"),
        _ => None,
    }
}

/// The deadline of a timed bulk job.
fn bulk_deadline(t0: Instant, seconds: Option<f64>) -> Option<Instant> {
    seconds.map(|s| t0 + Duration::from_secs_f64(s) + DURATION_GRACE)
}

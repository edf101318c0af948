//! One job, common to both transports: the hello, the welcome, the data channels, the
//! verdicts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_report::{Event, EventKind, Role, RunHeader, Summary, Tool, Transport, Windows};
use quinn::VarInt;
use tokio::sync::{mpsc, oneshot};

use crate::channels::{ControlRead, ControlWrite, DataIn};
use crate::cpu::CpuClock;
use crate::error::{Result, TransferError};
use crate::intervals::ArrivalIntervals;
use crate::protocol::{
    read_frame, write_frame, DataHeader, DataKind, FilePlan, Job, ToReceiver, ToSender,
    MAX_STREAMS, PROTOCOL_VERSION,
};
use crate::recvfile::{plan_file, FileSink, Planned};
use crate::report::{Printer, RunLog};

use super::quic::accept_quic_streams;
use super::{RecvOptions, COALESCE, DIGEST_TIMEOUT, DURATION_GRACE, HELLO_TIMEOUT, STALL_TIMEOUT};

pub(super) struct JobCtx {
    pub(super) opts: Arc<RecvOptions>,
    pub(super) peer: SocketAddr,
    pub(super) transport: Transport,
    pub(super) conn: Option<quinn::Connection>,
    /// QUIC: where accepted data streams go (the acceptor starts after the Welcome).
    pub(super) data_tx: Option<mpsc::Sender<(DataHeader, DataIn)>>,
    pub(super) session: Option<[u8; 12]>,
}

/// An accepted job.
enum Accepted {
    Bulk {
        bytes: Option<u64>,
        seconds: Option<f64>,
        streams: u16,
    },
    Files {
        planned: HashMap<u32, Planned>,
        count: usize,
    },
}

/// Check a Hello; `Err` is the reason to refuse.
fn accept_hello(
    opts: &RecvOptions,
    hello: &ToReceiver,
) -> Result<(Accepted, Vec<FilePlan>, u64), String> {
    let ToReceiver::Hello {
        version,
        token,
        job,
        window,
        ..
    } = hello
    else {
        return Err("the first message must be a hello".into());
    };
    if *version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {version} not supported (this receiver speaks {PROTOCOL_VERSION})"
        ));
    }
    if let Some(required) = &opts.token {
        if !crate::trust::token_matches(required, token.as_deref()) {
            return Err(if token.is_some() {
                "wrong token".into()
            } else {
                "a token is required (--token or HARE_TOKEN)".into()
            });
        }
    }
    let l = &opts.limits;
    let grant = (*window).clamp(crate::quic_config::MIN_WINDOW, l.max_window);
    match job {
        Job::Bulk {
            bytes,
            seconds,
            streams,
        } => {
            if *streams == 0 || *streams > MAX_STREAMS {
                return Err(format!("streams must be 1 to {MAX_STREAMS}"));
            }
            match (bytes, seconds) {
                (Some(b), None) if *b <= l.max_job_bytes => {}
                (Some(b), None) => {
                    return Err(format!(
                        "{b} bytes exceeds this receiver's limit of {}",
                        l.max_job_bytes
                    ))
                }
                (None, Some(s)) if s.is_finite() && *s > 0.0 && *s <= l.max_seconds => {}
                (None, Some(s)) => {
                    return Err(format!(
                        "duration {s} s outside this receiver's limit of (0, {}] s",
                        l.max_seconds
                    ))
                }
                _ => return Err("a bulk job needs exactly one of bytes or seconds".into()),
            }
            Ok((
                Accepted::Bulk {
                    bytes: *bytes,
                    seconds: *seconds,
                    streams: *streams,
                },
                Vec::new(),
                grant,
            ))
        }
        Job::Files {
            files,
            resume,
            force,
        } => {
            let Some(dir) = &opts.dir else {
                return Err("this receiver takes no files (start it with --dir DIR)".into());
            };
            if files.len() > l.max_files {
                return Err(format!(
                    "{} files exceeds this receiver's limit of {}",
                    files.len(),
                    l.max_files
                ));
            }
            let total = files.iter().try_fold(0u64, |a, f| a.checked_add(f.size));
            match total {
                Some(t) if t <= l.max_job_bytes => {}
                _ => {
                    return Err(format!(
                        "total size exceeds this receiver's limit of {} bytes",
                        l.max_job_bytes
                    ))
                }
            }
            let mut seen = std::collections::HashSet::new();
            let mut planned = HashMap::new();
            let mut plans = Vec::new();
            let mut problems = Vec::new();
            for (i, f) in files.iter().enumerate() {
                if !seen.insert(f.name.as_str()) {
                    problems.push(format!("{}: named twice", f.name));
                    continue;
                }
                match plan_file(dir, f, *resume, *force) {
                    Ok(p) => {
                        plans.push(p.plan(i as u32));
                        planned.insert(i as u32, p);
                    }
                    Err(r) => problems.push(format!("{}: {r}", f.name)),
                }
            }
            if !problems.is_empty() {
                let more = problems.len().saturating_sub(5);
                let mut reason = problems.into_iter().take(5).collect::<Vec<_>>().join("; ");
                if more > 0 {
                    reason.push_str(&format!("; and {more} more"));
                }
                return Err(reason);
            }
            let need: u64 = planned.values().map(Planned::remaining).sum();
            match crate::space::available_bytes(dir) {
                Ok(avail) if avail >= need => {}
                Ok(avail) => {
                    return Err(format!(
                        "not enough free space: {need} bytes needed, {avail} available"
                    ))
                }
                Err(e) => return Err(e.to_string()),
            }
            Ok((
                Accepted::Files {
                    count: files.len(),
                    planned,
                },
                plans,
                grant,
            ))
        }
    }
}

/// What a data channel handler reports.
enum Finished {
    Bulk(Result<()>),
    File(u32, Result<(), String>),
}

/// Messages the control reader forwards.
enum Ctl {
    Msg(ToReceiver),
    Closed(Option<TransferError>),
}

pub(super) async fn run_job(
    ctx: JobCtx,
    mut ctl_r: ControlRead,
    mut ctl_w: ControlWrite,
    mut data_rx: mpsc::Receiver<(DataHeader, DataIn)>,
) -> Result<()> {
    let opts = ctx.opts.clone();
    let hello: ToReceiver = match tokio::time::timeout(HELLO_TIMEOUT, read_frame(&mut ctl_r)).await
    {
        Ok(Ok(Some(h))) => h,
        Ok(Ok(None)) => {
            return Err(TransferError::Protocol(format!(
                "{}: closed before its hello",
                ctx.peer
            )))
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(TransferError::Protocol(format!(
                "{}: no hello in time",
                ctx.peer
            )))
        }
    };
    let printer = Printer::new(&opts.output);
    // Planning reads partial files to hash them: off the runtime thread, so that other
    // connections keep being served meanwhile.
    let verdict = {
        let (o, h) = (opts.clone(), hello.clone());
        tokio::task::spawn_blocking(move || accept_hello(&o, &h))
            .await
            .map_err(|e| TransferError::Protocol(format!("planning the job failed: {e}")))?
    };
    let (accepted, plans, grant) = match verdict {
        Ok(a) => a,
        Err(reason) => {
            printer.line(&format!("hare-recv: refused {}: {reason}", ctx.peer));
            let _ = write_frame(
                &mut ctl_w,
                &ToSender::Refuse {
                    reason: reason.clone(),
                },
            )
            .await;
            return Err(TransferError::Refused(reason));
        }
    };
    let ToReceiver::Hello {
        controller,
        software,
        interval_s,
        ..
    } = &hello
    else {
        return Err(TransferError::Protocol("unreachable: hello checked".into()));
    };
    let interval = crate::intervals::job_interval(*interval_s, opts.interval);
    let expected_channels = match &accepted {
        Accepted::Bulk { streams, .. } => usize::from(*streams),
        Accepted::Files { count, .. } => *count,
    };
    if let Some(conn) = &ctx.conn {
        conn.set_receive_window(VarInt::from_u64(grant).unwrap_or(VarInt::MAX));
        let streams = expected_channels.clamp(1, MAX_STREAMS as usize) as u32;
        conn.set_max_concurrent_uni_streams(VarInt::from_u32(streams));
    }
    write_frame(
        &mut ctl_w,
        &ToSender::Welcome {
            version: PROTOCOL_VERSION,
            software: format!("hare-recv {}", env!("CARGO_PKG_VERSION")),
            window: grant,
            files: plans,
            session: ctx
                .session
                .map(|s| s.iter().map(|b| format!("{b:02x}")).collect()),
        },
    )
    .await?;
    if let (Some(conn), Some(tx)) = (&ctx.conn, ctx.data_tx) {
        tokio::spawn(accept_quic_streams(conn.clone(), tx));
    }

    let t0 = Instant::now();
    let cpu = CpuClock::start();
    let job_text = match &accepted {
        Accepted::Bulk {
            bytes: Some(b),
            streams,
            ..
        } => format!("bulk {b} bytes, {streams} stream(s)"),
        Accepted::Bulk {
            seconds, streams, ..
        } => {
            format!("bulk {:.1} s, {streams} stream(s)", seconds.unwrap_or(0.0))
        }
        Accepted::Files { count, .. } => format!("{count} file(s)"),
    };
    let mtu = ctx
        .conn
        .as_ref()
        .map(|c| u32::from(c.stats().path.current_mtu))
        .unwrap_or(0);
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
            stream_receive: Some(opts.link.window),
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
    let mut log = RunLog::new(header, printer, &opts.output)?;
    log.note(&format!(
        "hare-recv: {} ({software}, {controller}): {job_text}",
        ctx.peer
    ));

    // Control reader.
    let (ctl_tx, mut ctl_rx) = mpsc::channel::<Ctl>(64);
    tokio::spawn(async move {
        loop {
            match read_frame::<_, ToReceiver>(&mut ctl_r).await {
                Ok(Some(m)) => {
                    if ctl_tx.send(Ctl::Msg(m)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    let _ = ctl_tx.send(Ctl::Closed(None)).await;
                    return;
                }
                Err(e) => {
                    let _ = ctl_tx.send(Ctl::Closed(Some(e))).await;
                    return;
                }
            }
        }
    });

    let bytes = Arc::new(AtomicU64::new(0));
    let (fin_tx, mut fin_rx) = mpsc::channel::<Finished>(expected_channels.max(1));
    let mut digests: HashMap<u32, oneshot::Sender<Result<String, String>>> = HashMap::new();
    let mut digest_rx: HashMap<u32, oneshot::Receiver<Result<String, String>>> = HashMap::new();
    let (mut planned, bulk_limit, deadline) = match accepted {
        Accepted::Files { planned, .. } => {
            for &i in planned.keys() {
                let (tx, rx) = oneshot::channel();
                digests.insert(i, tx);
                digest_rx.insert(i, rx);
            }
            (planned, None, None)
        }
        Accepted::Bulk { bytes, seconds, .. } => (
            HashMap::new(),
            bytes,
            seconds.map(|s| t0 + Duration::from_secs_f64(s) + DURATION_GRACE),
        ),
    };
    let time_up = deadline.map(|d| d - DURATION_GRACE);
    let mut channels_seen = 0usize;
    let mut finished = 0usize;
    let mut failures: Vec<String> = Vec::new();
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::from_std(t0 + interval), interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut arrivals = ArrivalIntervals::new(t0);
    let mut last_b = 0u64;
    let deadline_sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(
        deadline.unwrap_or(t0 + Duration::from_secs(u32::MAX as u64)),
    ));
    tokio::pin!(deadline_sleep);
    let mut abort: Option<TransferError> = None;
    let mut last_progress = Instant::now();
    let dir = opts.dir.clone().unwrap_or_default();

    while finished < expected_channels {
        tokio::select! {
            _ = ticker.tick() => {
                crate::intervals::settle().await;
                let b = bytes.load(Ordering::Relaxed);
                let srtt = ctx.conn.as_ref().map(|c| c.stats().path.rtt.as_secs_f64() * 1e3);
                let iv = arrivals.close(b, srtt);
                // The sender prints this interval's bytes as its own (keyed by the index).
                write_frame(&mut ctl_w, &iv.message()).await?;
                log.interval(iv.interval);
                if b != last_b {
                    last_progress = Instant::now();
                }
                last_b = b;
                // A client that keeps its connection alive but sends nothing would hold a
                // connection slot for ever.
                if last_progress.elapsed() >= STALL_TIMEOUT {
                    abort = Some(TransferError::Protocol(format!("no data for {} s", STALL_TIMEOUT.as_secs())));
                    break;
                }
            }
            m = ctl_rx.recv() => match m {
                Some(Ctl::Msg(ToReceiver::ProgressRequest { seq })) => {
                    write_frame(&mut ctl_w, &ToSender::Progress { seq, bytes: bytes.load(Ordering::Relaxed) }).await?;
                }
                Some(Ctl::Msg(ToReceiver::FileDone { index, blake3 })) => match digests.remove(&index) {
                    Some(tx) => { let _ = tx.send(Ok(blake3)); }
                    None => { abort = Some(TransferError::Protocol(format!("digest for unknown or finished file {index}"))); break; }
                },
                Some(Ctl::Msg(ToReceiver::FileAbandoned { index, reason })) => {
                    if let Some(tx) = digests.remove(&index) {
                        let _ = tx.send(Err(format!("sender abandoned it: {reason}")));
                    }
                }
                Some(Ctl::Msg(ToReceiver::Hello { .. })) => {
                    abort = Some(TransferError::Protocol("a second hello".into()));
                    break;
                }
                m @ (Some(Ctl::Closed(_)) | None) => {
                    let e = match m { Some(Ctl::Closed(e)) => e, _ => None };
                    abort = Some(e.unwrap_or_else(|| TransferError::Connection("the sender closed the control channel before the job ended".into())));
                    break;
                }
            },
            d = data_rx.recv() => {
                let Some((h, input)) = d else {
                    abort = Some(TransferError::Connection("the connection closed".into()));
                    break;
                };
                channels_seen += 1;
                if channels_seen > expected_channels {
                    abort = Some(TransferError::Protocol("more data channels than the job has".into()));
                    break;
                }
                let fin = fin_tx.clone();
                let counter = bytes.clone();
                match h.kind {
                    DataKind::Bulk if planned.is_empty() && digest_rx.is_empty() => {
                        let limit = bulk_limit;
                        tokio::spawn(async move {
                            let r = bulk_stream(input, counter, limit, time_up).await;
                            let _ = fin.send(Finished::Bulk(r)).await;
                        });
                    }
                    DataKind::File => {
                        let (Some(p), Some(rx)) = (planned.remove(&h.index), digest_rx.remove(&h.index)) else {
                            abort = Some(TransferError::Protocol(format!("data for unknown or repeated file {}", h.index)));
                            break;
                        };
                        let dir = dir.clone();
                        tokio::spawn(async move {
                            let r = file_stream(&dir, p, h, input, rx, counter).await;
                            let _ = fin.send(Finished::File(h.index, r)).await;
                        });
                    }
                    DataKind::Bulk => {
                        abort = Some(TransferError::Protocol("a bulk stream in a file job".into()));
                        break;
                    }
                }
            }
            f = fin_rx.recv() => {
                let Some(f) = f else { break };
                finished += 1;
                match f {
                    Finished::Bulk(Ok(())) => {}
                    Finished::Bulk(Err(e)) => { abort = Some(e); break; }
                    Finished::File(index, r) => {
                        let (ok, reason) = match r { Ok(()) => (true, None), Err(r) => (false, Some(r)) };
                        if let Some(r) = &reason {
                            failures.push(r.clone());
                            log.event(Event { t_s: t0.elapsed().as_secs_f64(), kind: EventKind::Error { message: r.clone() } });
                        }
                        write_frame(&mut ctl_w, &ToSender::FileResult { index, ok, reason }).await?;
                    }
                }
            }
            _ = &mut deadline_sleep => {
                abort = Some(TransferError::Protocol("the timed job overran its duration".into()));
                break;
            }
        }
    }
    let end_s = t0.elapsed().as_secs_f64();
    let total = bytes.load(Ordering::Relaxed);
    let cpu_pct = cpu.percent();
    if abort.is_none() {
        write_frame(
            &mut ctl_w,
            &ToSender::Done {
                bytes: total,
                seconds: end_s,
                cpu_pct,
            },
        )
        .await?;
    }
    if let Some(iv) = arrivals.finish(end_s, total) {
        log.interval(iv);
    }
    if let Some(e) = &abort {
        log.event(Event {
            t_s: t0.elapsed().as_secs_f64(),
            kind: EventKind::Error {
                message: e.to_string(),
            },
        });
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
        completed: abort.is_none() && failures.is_empty(),
        ..Summary::default()
    })?;
    match abort {
        Some(e) => Err(e),
        None if !failures.is_empty() => Err(TransferError::FilesFailed {
            failed: failures.len(),
            total: expected_channels,
        }),
        None => Ok(()),
    }
}

/// Counts one bulk stream's payload. A timed job's streams end with a reset once the sender's
/// time is up (it discards what it still had queued): after `time_up` (the announced duration
/// on this side's clock, which starts half an RTT before the sender's) that is a normal end.
async fn bulk_stream(
    mut input: DataIn,
    bytes: Arc<AtomicU64>,
    limit: Option<u64>,
    time_up: Option<Instant>,
) -> Result<()> {
    loop {
        let b = match input.next().await {
            Ok(Some((_, b))) => b,
            Ok(None) => break,
            Err(_) if time_up.is_some_and(|t| Instant::now() >= t) => break,
            Err(e) => return Err(e),
        };
        let total = bytes.fetch_add(b.len() as u64, Ordering::Relaxed) + b.len() as u64;
        if limit.is_some_and(|l| total > l) {
            return Err(TransferError::Protocol(
                "more bulk data than announced".into(),
            ));
        }
    }
    Ok(())
}

async fn file_stream(
    dir: &std::path::Path,
    planned: Planned,
    h: DataHeader,
    mut input: DataIn,
    digest: oneshot::Receiver<Result<String, String>>,
    bytes: Arc<AtomicU64>,
) -> Result<(), String> {
    let name = planned.entry.name.clone();
    let mut sink = FileSink::open(dir, planned, h.offset).map_err(|e| e.to_string())?;
    // QUIC hands out about one packet per chunk: gather contiguous chunks so that the file
    // sees few large writes instead of one small write per packet.
    let mut pend: Vec<u8> = Vec::with_capacity(COALESCE);
    let mut pend_at = 0u64;
    loop {
        let next = input.next().await;
        let flush = match &next {
            Ok(Some((off, b))) => {
                !pend.is_empty()
                    && (h.offset.checked_add(*off) != Some(pend_at + pend.len() as u64)
                        || pend.len() + b.len() > COALESCE)
            }
            _ => !pend.is_empty(),
        };
        if flush {
            if let Err(e) = sink.write(pend_at, &pend) {
                sink.discard();
                return Err(e.to_string());
            }
            pend.clear();
        }
        match next {
            Ok(Some((off, b))) => {
                let at = h
                    .offset
                    .checked_add(off)
                    .ok_or_else(|| format!("{name}: offset overflow"))?;
                if pend.is_empty() {
                    pend_at = at;
                }
                pend.extend_from_slice(&b);
                bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            Ok(None) => break,
            Err(e) => {
                sink.keep_partial();
                return Err(format!("{name}: {e}; partial data kept for --resume"));
            }
        }
    }
    if !sink.complete() {
        sink.keep_partial();
        return Err(format!(
            "{name}: data ended early; partial data kept for --resume"
        ));
    }
    match tokio::time::timeout(DIGEST_TIMEOUT, digest).await {
        Ok(Ok(Ok(hex))) => sink.finish(&hex).map_err(|e| e.to_string()),
        Ok(Ok(Err(reason))) => {
            sink.discard();
            Err(format!("{name}: {reason}"))
        }
        _ => {
            sink.keep_partial();
            Err(format!(
                "{name}: no digest from the sender; partial data kept for --resume"
            ))
        }
    }
}

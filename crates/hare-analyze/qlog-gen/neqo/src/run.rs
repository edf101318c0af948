//! The run: both endpoints, the two directions of the path, the applications, on a virtual
//! clock. What neqo counted is taken around every call that may change it.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use neqo_common::event::Provider;
use neqo_common::qlog::Qlog;
use neqo_common::Role;
use neqo_crypto::AuthenticationStatus;
use neqo_transport::{
    CongestionControl, Connection, ConnectionEvent, ConnectionParameters, Output,
    RandomConnectionIdGenerator, SlowStart, State, Stats, StreamId, StreamType,
};

use crate::path::Pipe;
use crate::Opts;

const ALPN: &str = "hare-fixture";
/// The key in neqo's test NSS database (test-fixture/db).
const KEY: &str = "key";
/// Virtual time after which the run gives up.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Loop iterations after which the run gives up, whatever the clock says.
const MAX_STEPS: u64 = 5_000_000;
const REQUEST: &[u8] = b"GET /\r\n";

/// The first congestion event neqo counted on the data sender.
pub struct FirstCongestion {
    /// The instant of the call during which neqo's congestion-event counter grew.
    pub at: Instant,
    /// neqo's window just before that call, and just after it.
    pub cwnd_before: Option<usize>,
    pub cwnd_after: Option<usize>,
    /// Packets neqo had declared lost before and after the call.
    pub lost_before: usize,
    pub lost_after: usize,
}

/// The call during which neqo's slow-start exit statistics were first set on the sender.
pub struct SlowStartExit {
    pub at: Instant,
    /// neqo's reason, as its `SlowStartExitReason` names it.
    pub reason: String,
    pub cwnd_before: Option<usize>,
    pub cwnd_after: Option<usize>,
}

/// Everything the truth file states.
pub struct RunResult {
    pub base: Instant,
    pub client_qlog: PathBuf,
    pub server_qlog: PathBuf,
    pub written: usize,
    pub received: usize,
    /// The sender's first datagram after its application handed data over.
    pub first_payload_tx: Option<Instant>,
    /// The receiver's application read the last byte.
    pub last_read: Option<Instant>,
    /// neqo told the sender that the peer acknowledged the whole stream.
    pub all_acked: Option<Instant>,
    pub first_congestion: Option<FirstCongestion>,
    pub slow_start_exit: Option<SlowStartExit>,
    /// The first call after which neqo's lost-packet counter grew.
    pub first_loss: Option<Instant>,
    pub sender_stats: Stats,
    pub receiver_stats: Stats,
    pub up: crate::path::PipeCounts,
    pub down: crate::path::PipeCounts,
    pub end: Instant,
}

/// One endpoint and the state of its application.
struct End {
    conn: Connection,
    timer: Option<Instant>,
    is_sender: bool,
    stream: Option<StreamId>,
    /// Sender: bytes handed to neqo; receiver: bytes read.
    bytes: usize,
    fin_sent: bool,
    /// Download server: the request has been read in full.
    request_done: bool,
}

fn params(o: &Opts) -> Result<ConnectionParameters, String> {
    let cc = match o.cc.as_str() {
        "cubic" => CongestionControl::Cubic,
        "reno" | "newreno" => CongestionControl::NewReno,
        x => return Err(format!("--cc: cubic or reno, not {x}")),
    };
    let ss = match o.slow_start.as_str() {
        "classic" => SlowStart::Classic,
        "hystart" => SlowStart::HyStart,
        x => return Err(format!("--slow-start: classic or hystart, not {x}")),
    };
    // Flow control far above the transfer, so only the path and the window limit it.
    Ok(ConnectionParameters::default()
        .congestion_control(cc)
        .slow_start(ss)
        .max_data(64 << 20)
        .max_stream_data(StreamType::BiDi, false, 64 << 20)
        .max_stream_data(StreamType::BiDi, true, 64 << 20)
        .idle_timeout(Duration::from_secs(10)))
}

fn qlog(o: &Opts, role: Role, side: &str, now: Instant) -> Result<(Qlog, PathBuf), String> {
    let what = if side == "sender" {
        "sender"
    } else {
        "receiver"
    };
    let who = if role == Role::Client {
        "client"
    } else {
        "server"
    };
    let prefix = format!("{}-{who}-{what}", o.name);
    let path = o.out.join(format!("{prefix}.sqlog"));
    // neqo opens its qlog with create_new.
    let _ = std::fs::remove_file(&path);
    let q = Qlog::enabled_with_file(
        o.out.clone(),
        role,
        Some(format!("qlog-gen-neqo {who}")),
        Some(o.name.clone()),
        prefix,
        now,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((q, path))
}

/// Runs the transfer to the end of both connections.
#[allow(clippy::too_many_lines)]
pub fn run(o: &Opts) -> Result<RunResult, String> {
    neqo_crypto::init_db(o.nss_db.clone()).map_err(|e| format!("NSS init: {e}"))?;
    std::fs::create_dir_all(&o.out).map_err(|e| e.to_string())?;
    let base = Instant::now();
    let mut now = base;
    let caddr = "127.0.0.1:40001".parse().map_err(|_| "addr")?;
    let saddr = "127.0.0.1:40002".parse().map_err(|_| "addr")?;
    let p = params(o)?;
    let cid = || Rc::new(RefCell::new(RandomConnectionIdGenerator::new(8)));
    let mut client =
        Connection::new_client("localhost", &[ALPN], cid(), caddr, saddr, p.clone(), now)
            .map_err(|e| format!("client: {e}"))?;
    let mut server =
        Connection::new_server(&[KEY], &[ALPN], cid(), p).map_err(|e| format!("server: {e}"))?;
    let (cside, sside) = if o.sender_is_client {
        ("sender", "receiver")
    } else {
        ("receiver", "sender")
    };
    let (cq, client_qlog) = qlog(o, Role::Client, cside, now)?;
    let (sq, server_qlog) = qlog(o, Role::Server, sside, now)?;
    client.set_qlog(cq);
    server.set_qlog(sq);
    let end = |conn, is_sender| End {
        conn,
        timer: Some(base),
        is_sender,
        stream: None,
        bytes: 0,
        fin_sent: false,
        request_done: false,
    };
    let mut c = end(client, o.sender_is_client);
    let mut s = end(server, !o.sender_is_client);
    let (up_drop, down_drop) = if o.sender_is_client {
        (o.drop_every, 0)
    } else {
        (0, o.drop_every)
    };
    let mut up = Pipe::new(now, o.rate_bps, o.delay, o.queue_bytes, up_drop);
    let mut down = Pipe::new(now, o.rate_bps, o.delay, o.queue_bytes, down_drop);
    let payload = vec![0x61u8; o.bytes];
    let mut buf = vec![0u8; 1 << 16];
    let mut w = Watch::default();
    let mut r = Outcome::default();
    let mut closed_by_us = false;

    for _ in 0..MAX_STEPS {
        if now.duration_since(base) > RUN_LIMIT {
            return Err("run limit reached".into());
        }
        while let Some(d) = up.pop_arrived(now) {
            w.call(&mut s, now, |k| k.process_input(d, now));
        }
        while let Some(d) = down.pop_arrived(now) {
            w.call(&mut c, now, |k| k.process_input(d, now));
        }
        for e in [&mut c, &mut s] {
            app(e, o, &payload, &mut buf, now, &mut r)?;
        }
        if !closed_by_us && r.last_read.is_some() && r.all_acked.is_some() {
            c.conn.close(now, 0, "done");
            closed_by_us = true;
        }
        w.drain(&mut c, &mut up, now);
        w.drain(&mut s, &mut down, now);
        let done = |e: &End| matches!(e.conn.state(), State::Closed(_));
        if done(&c) && done(&s) {
            break;
        }
        let next = [up.next_arrival(), down.next_arrival(), c.timer, s.timer]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => now = now.max(t),
            None => break,
        }
    }
    let (snd, rcv) = if o.sender_is_client {
        (&c, &s)
    } else {
        (&s, &c)
    };
    Ok(RunResult {
        base,
        client_qlog,
        server_qlog,
        written: snd.bytes,
        received: rcv.bytes,
        first_payload_tx: w.first_payload_tx,
        last_read: r.last_read,
        all_acked: r.all_acked,
        first_congestion: w.first_congestion,
        slow_start_exit: w.slow_start_exit,
        first_loss: w.first_loss,
        sender_stats: snd.conn.stats(),
        receiver_stats: rcv.conn.stats(),
        up: up.counts,
        down: down.counts,
        end: now,
    })
    // Both connections (and with them their qlog writers) are dropped here, which flushes
    // the files.
}

/// What the applications saw.
#[derive(Default)]
struct Outcome {
    last_read: Option<Instant>,
    all_acked: Option<Instant>,
}

/// Watches the data sender's counters around every call into neqo.
#[derive(Default)]
struct Watch {
    first_payload_tx: Option<Instant>,
    first_congestion: Option<FirstCongestion>,
    slow_start_exit: Option<SlowStartExit>,
    first_loss: Option<Instant>,
}

impl Watch {
    fn call<F: FnOnce(&mut Connection) -> T, T>(&mut self, e: &mut End, now: Instant, f: F) -> T {
        if !e.is_sender || (self.first_congestion.is_some() && self.slow_start_exit.is_some()) {
            return f(&mut e.conn);
        }
        let before = e.conn.stats();
        let out = f(&mut e.conn);
        let after = e.conn.stats();
        let events = |s: &Stats| s.cc.congestion_events.loss + s.cc.congestion_events.ecn;
        if after.lost > before.lost {
            self.first_loss.get_or_insert(now);
        }
        let exit_reason = |s: &Stats| s.cc.slow_start_exit_reason.map(|r| format!("{r:?}"));
        if self.slow_start_exit.is_none() && exit_reason(&before).is_none() {
            if let Some(reason) = exit_reason(&after) {
                self.slow_start_exit = Some(SlowStartExit {
                    at: now,
                    reason,
                    cwnd_before: before.cc.cwnd,
                    cwnd_after: after.cc.cwnd,
                });
            }
        }
        if self.first_congestion.is_none() && events(&after) > events(&before) {
            self.first_congestion = Some(FirstCongestion {
                at: now,
                cwnd_before: before.cc.cwnd,
                cwnd_after: after.cc.cwnd,
                lost_before: before.lost,
                lost_after: after.lost,
            });
        }
        out
    }

    /// Takes every datagram the endpoint has now, and its next timer.
    fn drain(&mut self, e: &mut End, pipe: &mut Pipe, now: Instant) {
        loop {
            match self.call(e, now, |k| k.process_output(now)) {
                Output::Datagram(d) => {
                    if e.is_sender && e.bytes > 0 {
                        self.first_payload_tx.get_or_insert(now);
                    }
                    pipe.push(now, d);
                }
                Output::Callback(d) => {
                    e.timer = Some(now + d);
                    break;
                }
                Output::None => {
                    e.timer = None;
                    break;
                }
            }
        }
    }
}

/// One endpoint's application: authenticate, open or accept the stream, write or read.
fn app(
    e: &mut End,
    o: &Opts,
    payload: &[u8],
    buf: &mut [u8],
    now: Instant,
    r: &mut Outcome,
) -> Result<(), String> {
    let client = e.conn.role() == Role::Client;
    while let Some(ev) = e.conn.next_event() {
        match ev {
            ConnectionEvent::AuthenticationNeeded => {
                e.conn.authenticated(AuthenticationStatus::Ok, now);
            }
            ConnectionEvent::NewStream { stream_id }
            | ConnectionEvent::RecvStreamReadable { stream_id } => {
                e.stream.get_or_insert(stream_id);
                read(e, stream_id, o, buf, now, r)?;
            }
            ConnectionEvent::SendStreamComplete { .. } if e.is_sender => {
                r.all_acked.get_or_insert(now);
            }
            _ => {}
        }
    }
    let connected = matches!(e.conn.state(), State::Connected | State::Confirmed);
    if client && connected && e.stream.is_none() {
        let id = e
            .conn
            .stream_create(StreamType::BiDi)
            .map_err(|x| format!("stream_create: {x}"))?;
        e.stream = Some(id);
        if !e.is_sender {
            let n = e.conn.stream_send(id, REQUEST).map_err(|x| x.to_string())?;
            if n != REQUEST.len() {
                return Err("the request did not fit".into());
            }
            e.conn.stream_close_send(id).map_err(|x| x.to_string())?;
        }
    }
    let may_write = e.is_sender && (client || e.request_done);
    if let (true, Some(id)) = (may_write && !e.fin_sent, e.stream) {
        if e.bytes < payload.len() {
            let n = e
                .conn
                .stream_send(id, &payload[e.bytes..])
                .map_err(|x| format!("stream_send: {x}"))?;
            e.bytes += n;
        }
        if e.bytes == payload.len() {
            e.conn.stream_close_send(id).map_err(|x| x.to_string())?;
            e.fin_sent = true;
        }
    }
    Ok(())
}

fn read(
    e: &mut End,
    id: StreamId,
    o: &Opts,
    buf: &mut [u8],
    now: Instant,
    r: &mut Outcome,
) -> Result<(), String> {
    loop {
        let (n, fin) = e
            .conn
            .stream_recv(id, buf)
            .map_err(|x| format!("stream_recv: {x}"))?;
        if e.is_sender {
            // The download server reads the request.
            if fin {
                e.request_done = true;
            }
        } else {
            e.bytes += n;
            if fin && e.bytes == o.bytes {
                r.last_read.get_or_insert(now);
            }
        }
        if n == 0 || fin {
            return Ok(());
        }
    }
}

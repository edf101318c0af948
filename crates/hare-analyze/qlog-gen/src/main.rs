//! Fixture generator for hare-analyze: one quiche client and one quiche server in one
//! process, joined by an emulated path (a rate-limited drop-tail bottleneck with a one-way
//! delay, plus a deterministic drop of every Nth 1-RTT datagram of the data sender), both
//! writing qlog. The data sender is the client or the server (`--sender`). At the end the
//! program writes `<out>/<name>.truth.json` with what quiche itself counted, the ground truth
//! the analysis tests compare against. See ../README.md.
//!
//! Usage: qlog-gen OUT_DIR NAME [--bytes N] [--rate-mbps R] [--delay-ms D] [--queue-bytes Q]
//!        [--drop-every N] [--sender client|server] [--cc cubic|reno|bbr2]

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CERT: &str = include_str!("../certs/cert.crt");
const KEY: &str = include_str!("../certs/cert.key");
const ALPN: &[u8] = b"hare-fixture";
const STREAM: u64 = 0;
const MAX_DATAGRAM: usize = 1350;
/// Every run ends within this, whatever happens.
const RUN_LIMIT: Duration = Duration::from_secs(60);

struct Opts {
    out: PathBuf,
    name: String,
    bytes: usize,
    rate_bps: f64,
    delay: Duration,
    queue_bytes: usize,
    drop_every: u64,
    sender_is_client: bool,
    cc: String,
}

fn parse() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().ok_or("missing OUT_DIR")?);
    let name = args.next().ok_or("missing NAME")?;
    let mut o = Opts {
        out,
        name,
        bytes: 1_000_000,
        rate_bps: 5e6,
        delay: Duration::from_millis(3),
        queue_bytes: 20_000,
        drop_every: 250,
        sender_is_client: true,
        cc: "cubic".into(),
    };
    while let Some(flag) = args.next() {
        let v = args.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--bytes" => o.bytes = num(&v)? as usize,
            "--rate-mbps" => o.rate_bps = num(&v)? * 1e6,
            "--delay-ms" => o.delay = Duration::from_secs_f64(num(&v)? / 1000.0),
            "--queue-bytes" => o.queue_bytes = num(&v)? as usize,
            "--drop-every" => o.drop_every = num(&v)? as u64,
            "--sender" => o.sender_is_client = v == "client",
            "--cc" => o.cc = v,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

/// One direction of the emulated path.
struct Pipe {
    /// (arrival time, datagram).
    queue: VecDeque<(Instant, Vec<u8>)>,
    /// When the bottleneck finishes serialising what it holds.
    busy_until: Instant,
    rate_bps: f64,
    delay: Duration,
    queue_bytes: usize,
    /// Drop every Nth 1-RTT datagram (0: never).
    drop_every: u64,
    short_seen: u64,
    dropped_nth: u64,
    dropped_queue: u64,
    carried: u64,
}

impl Pipe {
    fn new(now: Instant, o: &Opts, drop_every: u64) -> Self {
        Pipe {
            queue: VecDeque::new(),
            busy_until: now,
            rate_bps: o.rate_bps,
            delay: o.delay,
            queue_bytes: o.queue_bytes,
            drop_every,
            short_seen: 0,
            dropped_nth: 0,
            dropped_queue: 0,
            carried: 0,
        }
    }

    fn push(&mut self, now: Instant, d: Vec<u8>) {
        // A short-header (1-RTT) datagram has the high bit of its first byte clear.
        if d.first().is_some_and(|b| b & 0x80 == 0) {
            self.short_seen += 1;
            if self.drop_every > 0 && self.short_seen % self.drop_every == 0 {
                self.dropped_nth += 1;
                return;
            }
        }
        let start = self.busy_until.max(now);
        let backlog = start.duration_since(now).as_secs_f64() * self.rate_bps / 8.0;
        if backlog + d.len() as f64 > self.queue_bytes as f64 {
            self.dropped_queue += 1;
            return;
        }
        let tx = Duration::from_secs_f64(d.len() as f64 * 8.0 / self.rate_bps);
        self.busy_until = start + tx;
        self.carried += 1;
        self.queue.push_back((self.busy_until + self.delay, d));
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.queue.front().map(|q| q.0)
    }
}

fn config(o: &Opts, server: bool, dir: &Path) -> Result<quiche::Config, String> {
    let e = |x: quiche::Error| x.to_string();
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(e)?;
    if server {
        let cert = dir.join("cert.crt");
        let key = dir.join("cert.key");
        std::fs::write(&cert, CERT).map_err(|x| x.to_string())?;
        std::fs::write(&key, KEY).map_err(|x| x.to_string())?;
        c.load_cert_chain_from_pem_file(&cert.to_string_lossy())
            .map_err(e)?;
        c.load_priv_key_from_pem_file(&key.to_string_lossy())
            .map_err(e)?;
    }
    c.verify_peer(false);
    c.set_application_protos(&[ALPN]).map_err(e)?;
    c.set_max_idle_timeout(5_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(64 << 20);
    c.set_initial_max_stream_data_bidi_local(64 << 20);
    c.set_initial_max_stream_data_bidi_remote(64 << 20);
    c.set_initial_max_streams_bidi(4);
    c.set_cc_algorithm_name(&o.cc).map_err(e)?;
    // HyStart++ off: the first congestion event is then the slow-start exit, which the
    // truth file can state from quiche's own loss counter.
    c.enable_hystart(false);
    Ok(c)
}

/// What the data sender observed.
#[derive(Default)]
struct SenderTruth {
    first_loss_ms: Option<f64>,
    first_loss_window_ms: Option<(f64, f64)>,
    cwnd_before: Option<usize>,
    written: usize,
}

fn ms(a: Instant, origin: Instant) -> f64 {
    a.saturating_duration_since(origin).as_secs_f64() * 1000.0
}

fn main() {
    if let Err(e) = run() {
        eprintln!("qlog-gen: {e}");
        std::process::exit(1);
    }
}

fn qlog_writer(path: &Path) -> Result<Box<dyn std::io::Write + Send + Sync>, String> {
    let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Box::new(BufWriter::new(f)))
}

/// Both endpoints, the two directions of the path, and what the run has seen so far.
struct Run {
    o: Opts,
    scfg: quiche::Config,
    caddr: SocketAddr,
    saddr: SocketAddr,
    client: quiche::Connection,
    /// Created when the first datagram reaches the server.
    server: Option<quiche::Connection>,
    c_qlog: PathBuf,
    s_qlog: PathBuf,
    /// The qlog reference times of the client and the server (taken inside `set_qlog`).
    c_ref: Instant,
    s_ref: Instant,
    start: Instant,
    up: Pipe,
    down: Pipe,
    buf: Vec<u8>,
    out: Vec<u8>,
    payload: Vec<u8>,
    truth: SenderTruth,
    received: usize,
    fin_at: Option<Instant>,
    first_after_est: Option<Instant>,
    request_sent: bool,
    c_timer: Option<Instant>,
    s_timer: Option<Instant>,
}

const CID_CLIENT: [u8; 16] = [0xc1; 16];
const CID_SERVER: [u8; 20] = [0x5e; 20];

fn qe(x: quiche::Error) -> String {
    x.to_string()
}

impl Run {
    fn new(o: Opts, tmp: &Path) -> Result<Self, String> {
        let mut ccfg = config(&o, false, tmp)?;
        let scfg = config(&o, true, tmp)?;
        let caddr: SocketAddr = "127.0.0.1:40001".parse().map_err(|_| "addr")?;
        let saddr: SocketAddr = "127.0.0.1:40002".parse().map_err(|_| "addr")?;
        let mut client = quiche::connect(
            Some("localhost"),
            &quiche::ConnectionId::from_ref(&CID_CLIENT),
            caddr,
            saddr,
            &mut ccfg,
        )
        .map_err(qe)?;
        let (cname, sname) = if o.sender_is_client {
            ("sender", "receiver")
        } else {
            ("receiver", "sender")
        };
        let c_qlog = o.out.join(format!("{}-client-{cname}.sqlog", o.name));
        let s_qlog = o.out.join(format!("{}-server-{sname}.sqlog", o.name));
        // The writer first: quiche takes its reference time inside set_qlog.
        let writer = qlog_writer(&c_qlog)?;
        let c_ref = Instant::now();
        client.set_qlog(writer, "qlog-gen client".into(), o.name.clone());
        let start = Instant::now();
        let (up_drop, down_drop) = if o.sender_is_client {
            (o.drop_every, 0)
        } else {
            (0, o.drop_every)
        };
        Ok(Run {
            up: Pipe::new(start, &o, up_drop),
            down: Pipe::new(start, &o, down_drop),
            payload: vec![0x61u8; o.bytes],
            o,
            scfg,
            caddr,
            saddr,
            client,
            server: None,
            c_qlog,
            s_qlog,
            c_ref,
            s_ref: start,
            start,
            buf: vec![0u8; 65536],
            out: vec![0u8; MAX_DATAGRAM],
            truth: SenderTruth::default(),
            received: 0,
            fin_at: None,
            first_after_est: None,
            request_sent: false,
            c_timer: None,
            s_timer: None,
        })
    }

    /// Feeds both endpoints what the path delivered by `now` (the server is created by the
    /// first datagram that reaches it).
    fn deliver(&mut self, now: Instant) -> Result<(), String> {
        while self.up.next_arrival().is_some_and(|t| t <= now) {
            let Some((_, mut d)) = self.up.queue.pop_front() else {
                break;
            };
            if self.server.is_none() {
                let mut c = quiche::accept(
                    &quiche::ConnectionId::from_ref(&CID_SERVER),
                    None,
                    self.saddr,
                    self.caddr,
                    &mut self.scfg,
                )
                .map_err(qe)?;
                let writer = qlog_writer(&self.s_qlog)?;
                self.s_ref = Instant::now();
                c.set_qlog(writer, "qlog-gen server".into(), self.o.name.clone());
                self.server = Some(c);
            }
            if let Some(s) = self.server.as_mut() {
                let info = quiche::RecvInfo {
                    from: self.caddr,
                    to: self.saddr,
                };
                let is_sender = !self.o.sender_is_client;
                recv_one(s, &mut d, info, is_sender, &mut self.truth, self.s_ref)?;
            }
        }
        while self.down.next_arrival().is_some_and(|t| t <= now) {
            let Some((_, mut d)) = self.down.queue.pop_front() else {
                break;
            };
            let info = quiche::RecvInfo {
                from: self.saddr,
                to: self.caddr,
            };
            let is_sender = self.o.sender_is_client;
            recv_one(
                &mut self.client,
                &mut d,
                info,
                is_sender,
                &mut self.truth,
                self.c_ref,
            )?;
        }
        Ok(())
    }

    fn fire_timers(&mut self, now: Instant) {
        if self.c_timer.is_some_and(|t| t <= now) {
            on_timeout(
                &mut self.client,
                self.o.sender_is_client,
                &mut self.truth,
                self.c_ref,
            );
        }
        if let Some(s) = self.server.as_mut() {
            if self.s_timer.is_some_and(|t| t <= now) {
                on_timeout(s, !self.o.sender_is_client, &mut self.truth, self.s_ref);
            }
        }
    }

    /// The applications: the download's request, the sender writing, the receiver reading.
    fn applications(&mut self) -> Result<(), String> {
        let sender_is_client = self.o.sender_is_client;
        if self.client.is_established() && !self.request_sent && !sender_is_client {
            self.client
                .stream_send(STREAM, b"GET /\r\n", true)
                .map_err(qe)?;
            self.request_sent = true;
        }
        let (snd, rcv) = if sender_is_client {
            (Some(&mut self.client), self.server.as_mut())
        } else {
            (self.server.as_mut(), Some(&mut self.client))
        };
        if let Some(snd) = snd {
            let may_write = snd.is_established()
                && (sender_is_client || snd.stream_readable(STREAM) || self.truth.written > 0);
            if may_write && !sender_is_client {
                while let Ok((_, _)) = snd.stream_recv(STREAM, &mut self.buf) {}
            }
            if may_write && self.truth.written < self.payload.len() {
                match snd.stream_send(STREAM, &self.payload[self.truth.written..], true) {
                    Ok(n) => self.truth.written += n,
                    Err(quiche::Error::Done) => {}
                    Err(x) => return Err(format!("stream_send: {x}")),
                }
            }
        }
        if let Some(rcv) = rcv {
            if sender_is_client || self.request_sent {
                while let Ok((n, fin)) = rcv.stream_recv(STREAM, &mut self.buf) {
                    self.received += n;
                    if fin && self.fin_at.is_none() && self.received == self.o.bytes {
                        self.fin_at = Some(Instant::now());
                    }
                }
            }
        }
        Ok(())
    }

    /// Everything both endpoints want to send goes onto the path; the timers are re-read.
    fn send(&mut self, now: Instant) -> Result<(), String> {
        loop {
            match self.client.send(&mut self.out) {
                Ok((n, _)) => {
                    if self.o.sender_is_client && self.client.is_established() {
                        self.first_after_est.get_or_insert(now);
                    }
                    // The path takes the datagram when quiche handed it over.
                    self.up.push(Instant::now(), self.out[..n].to_vec());
                }
                Err(quiche::Error::Done) => break,
                Err(x) => return Err(format!("client send: {x}")),
            }
        }
        if let Some(s) = self.server.as_mut() {
            loop {
                match s.send(&mut self.out) {
                    Ok((n, _)) => {
                        if !self.o.sender_is_client && s.is_established() {
                            self.first_after_est.get_or_insert(now);
                        }
                        self.down.push(Instant::now(), self.out[..n].to_vec());
                    }
                    Err(quiche::Error::Done) => break,
                    Err(x) => return Err(format!("server send: {x}")),
                }
            }
        }
        self.c_timer = self.client.timeout().map(|d| now + d);
        self.s_timer = self
            .server
            .as_ref()
            .and_then(|s| s.timeout())
            .map(|d| now + d);
        Ok(())
    }

    /// Closes once everything arrived and the sender saw it acknowledged; true when the run
    /// is over.
    fn close_when_done(&mut self, now: Instant) -> bool {
        if let Some(f) = self.fin_at {
            let snd = if self.o.sender_is_client {
                Some(&self.client)
            } else {
                self.server.as_ref()
            };
            let all_acked = snd.is_some_and(|s| s.stats().lost + s.stats().sent > 0)
                && now.duration_since(f) > self.o.delay * 6;
            if all_acked && !self.client.is_closed() && !self.client.is_draining() {
                let _ = self.client.close(true, 0, b"done");
            }
        }
        let server_done = self
            .server
            .as_ref()
            .is_none_or(|s| s.is_closed() || s.is_draining());
        (self.client.is_closed() && server_done)
            || (self.client.is_closed() && now.duration_since(self.start) > RUN_LIMIT / 2)
    }

    /// Sleeps until the next arrival or timer (at most 50 ms).
    fn sleep_until_next(&self, now: Instant) {
        let next = [
            self.up.next_arrival(),
            self.down.next_arrival(),
            self.c_timer,
            self.s_timer,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + Duration::from_millis(1));
        let wait = next.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait.min(Duration::from_millis(50)));
        }
    }

    /// One step of the loop: deliver, timers, applications, send; true when the run is over.
    fn step(&mut self) -> Result<bool, String> {
        let now = Instant::now();
        if now.duration_since(self.start) > RUN_LIMIT {
            return Err("run limit reached".into());
        }
        self.deliver(now)?;
        self.fire_timers(now);
        self.applications()?;
        let now = Instant::now();
        self.send(now)?;
        if self.close_when_done(now) {
            return Ok(true);
        }
        self.sleep_until_next(now);
        Ok(false)
    }

    /// Drops both endpoints (flushing their qlogs), trims the qlogs and writes the truth file.
    fn finish(self) -> Result<PathBuf, String> {
        let server = self.server.as_ref().ok_or("no server")?;
        let (snd_stats, rcv_stats) = if self.o.sender_is_client {
            (self.client.stats(), server.stats())
        } else {
            (server.stats(), self.client.stats())
        };
        let Run {
            o,
            client,
            server,
            c_qlog,
            s_qlog,
            up,
            down,
            truth,
            received,
            fin_at,
            first_after_est,
            ..
        } = self;
        drop(client);
        drop(server);
        trim(&c_qlog)?;
        trim(&s_qlog)?;
        let start_payload = first_after_est.ok_or("no data sent")?;
        let fin = fin_at.ok_or("transfer did not finish")?;
        let secs = fin.duration_since(start_payload).as_secs_f64();
        let (snd_qlog, rcv_qlog) = if o.sender_is_client {
            (&c_qlog, &s_qlog)
        } else {
            (&s_qlog, &c_qlog)
        };
        let file_name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let truth_json = serde_json::json!({
            "generator": env!("CARGO_PKG_NAME"),
            "sender": if o.sender_is_client { "client" } else { "server" },
            "sender_qlog": file_name(snd_qlog),
            "receiver_qlog": file_name(rcv_qlog),
            "cc": o.cc,
            "path": {
                "rate_bps": o.rate_bps,
                "one_way_delay_ms": o.delay.as_secs_f64() * 1000.0,
                "queue_bytes": o.queue_bytes,
                "drop_every_nth_1rtt_datagram": o.drop_every,
            },
            "payload_bytes_sent": truth.written,
            "payload_bytes_received": received,
            "transfer_s": secs,
            "goodput_mbps": received as f64 * 8.0 / secs / 1e6,
            "sender_stats": {
                "sent_packets": snd_stats.sent,
                "lost_packets": snd_stats.lost,
                "spurious_lost_packets": snd_stats.spurious_lost,
                "retransmitted_packets": snd_stats.retrans,
                "sent_bytes": snd_stats.sent_bytes,
                "lost_bytes": snd_stats.lost_bytes,
                "stream_retransmitted_bytes": snd_stats.stream_retrans_bytes,
            },
            "receiver_stats": {
                "received_packets": rcv_stats.recv,
                "received_bytes": rcv_stats.recv_bytes,
            },
            "path_drops": {
                "nth": up.dropped_nth + down.dropped_nth,
                "queue": up.dropped_queue + down.dropped_queue,
            },
            // Times on the sender's qlog clock (ms since its reference time).
            "first_congestion": truth.first_loss_ms.map(|t| serde_json::json!({
                "t_ms": t,
                "window_ms": truth.first_loss_window_ms.map(|w| [w.0, w.1]),
                "cwnd_before_bytes": truth.cwnd_before,
            })),
        });
        let path = o.out.join(format!("{}.truth.json", o.name));
        let text = serde_json::to_string_pretty(&truth_json).map_err(|x| x.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|x| x.to_string())?;
        Ok(path)
    }
}

fn run() -> Result<(), String> {
    let o = parse()?;
    std::fs::create_dir_all(&o.out).map_err(|e| e.to_string())?;
    let tmp = std::env::temp_dir().join(format!("qlog-gen-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let mut run = Run::new(o, &tmp)?;
    while !run.step()? {}
    let path = run.finish()?;
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{}", path.display());
    Ok(())
}

/// Trims a qlog for a small fixture: drops the (stream) `data_moved` events, which the
/// analysis does not read (a quarter of the file); every other record stays as written.
fn trim(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::with_capacity(bytes.len());
    for rec in bytes.split(|&b| b == 0x1e).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(rec);
        if text.contains("\"name\":\"transport:data_moved\"")
            || text.contains("\"name\":\"quic:stream_data_moved\"")
        {
            continue;
        }
        out.push(0x1e);
        out.extend_from_slice(rec);
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

fn cwnd(c: &quiche::Connection) -> Option<usize> {
    c.path_stats().next().map(|p| p.cwnd)
}

/// Feeds one datagram; on the data sender, notes the first time quiche counted a loss and
/// the window just before that call.
fn recv_one(
    c: &mut quiche::Connection,
    d: &mut [u8],
    info: quiche::RecvInfo,
    is_sender: bool,
    t: &mut SenderTruth,
    qlog_ref: Instant,
) -> Result<(), String> {
    let before = cwnd(c);
    let lost_before = c.stats().lost;
    let t0 = Instant::now();
    match c.recv(d, info) {
        Ok(_) | Err(quiche::Error::Done) => {}
        Err(x) => return Err(format!("recv: {x}")),
    }
    let t1 = Instant::now();
    if is_sender && t.first_loss_ms.is_none() && c.stats().lost > lost_before {
        t.first_loss_ms = Some(ms(t0, qlog_ref));
        t.first_loss_window_ms = Some((ms(t0, qlog_ref), ms(t1, qlog_ref)));
        t.cwnd_before = before;
    }
    Ok(())
}

fn on_timeout(c: &mut quiche::Connection, is_sender: bool, t: &mut SenderTruth, r: Instant) {
    let before = cwnd(c);
    let lost_before = c.stats().lost;
    let t0 = Instant::now();
    c.on_timeout();
    let t1 = Instant::now();
    if is_sender && t.first_loss_ms.is_none() && c.stats().lost > lost_before {
        t.first_loss_ms = Some(ms(t0, r));
        t.first_loss_window_ms = Some((ms(t0, r), ms(t1, r)));
        t.cwnd_before = before;
    }
}

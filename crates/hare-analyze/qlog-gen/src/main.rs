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

#[allow(clippy::too_many_lines)]
fn run() -> Result<(), String> {
    let o = parse()?;
    std::fs::create_dir_all(&o.out).map_err(|e| e.to_string())?;
    let tmp = std::env::temp_dir().join(format!("qlog-gen-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let mut ccfg = config(&o, false, &tmp)?;
    let mut scfg = config(&o, true, &tmp)?;
    let caddr: SocketAddr = "127.0.0.1:40001".parse().map_err(|_| "addr")?;
    let saddr: SocketAddr = "127.0.0.1:40002".parse().map_err(|_| "addr")?;
    let e = |x: quiche::Error| x.to_string();

    let cid_c = [0xc1u8; 16];
    let cid_s = [0x5eu8; 20];
    let mut client = quiche::connect(
        Some("localhost"),
        &quiche::ConnectionId::from_ref(&cid_c),
        caddr,
        saddr,
        &mut ccfg,
    )
    .map_err(e)?;
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
    let mut server: Option<quiche::Connection> = None;
    let mut s_ref = start;
    let mut up = Pipe::new(start, &o, if o.sender_is_client { o.drop_every } else { 0 });
    let mut down = Pipe::new(start, &o, if o.sender_is_client { 0 } else { o.drop_every });
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; MAX_DATAGRAM];
    let payload = vec![0x61u8; o.bytes];
    let mut truth = SenderTruth::default();
    let mut received = 0usize;
    let mut fin_at: Option<Instant> = None;
    let mut first_after_est: Option<Instant> = None;
    let mut request_sent = false;
    let mut c_timer: Option<Instant> = None;
    let mut s_timer: Option<Instant> = None;

    loop {
        let now = Instant::now();
        if now.duration_since(start) > RUN_LIMIT {
            return Err("run limit reached".into());
        }
        // Deliver what has arrived.
        while up.next_arrival().is_some_and(|t| t <= now) {
            let Some((_, mut d)) = up.queue.pop_front() else {
                break;
            };
            if server.is_none() {
                let mut c = quiche::accept(
                    &quiche::ConnectionId::from_ref(&cid_s),
                    None,
                    saddr,
                    caddr,
                    &mut scfg,
                )
                .map_err(e)?;
                let writer = qlog_writer(&s_qlog)?;
                s_ref = Instant::now();
                c.set_qlog(writer, "qlog-gen server".into(), o.name.clone());
                server = Some(c);
            }
            if let Some(s) = server.as_mut() {
                let info = quiche::RecvInfo {
                    from: caddr,
                    to: saddr,
                };
                recv_one(s, &mut d, info, !o.sender_is_client, &mut truth, s_ref)?;
            }
        }
        while down.next_arrival().is_some_and(|t| t <= now) {
            let Some((_, mut d)) = down.queue.pop_front() else {
                break;
            };
            let info = quiche::RecvInfo {
                from: saddr,
                to: caddr,
            };
            recv_one(
                &mut client,
                &mut d,
                info,
                o.sender_is_client,
                &mut truth,
                c_ref,
            )?;
        }
        // Timers.
        if c_timer.is_some_and(|t| t <= now) {
            on_timeout(&mut client, o.sender_is_client, &mut truth, c_ref);
        }
        if let Some(s) = server.as_mut() {
            if s_timer.is_some_and(|t| t <= now) {
                on_timeout(s, !o.sender_is_client, &mut truth, s_ref);
            }
        }
        // Applications.
        if client.is_established() && !request_sent && !o.sender_is_client {
            client.stream_send(STREAM, b"GET /\r\n", true).map_err(e)?;
            request_sent = true;
        }
        {
            let (snd, rcv) = if o.sender_is_client {
                (Some(&mut client), server.as_mut())
            } else {
                let s = server.as_mut();
                (s, Some(&mut client))
            };
            if let Some(snd) = snd {
                let may_write = snd.is_established()
                    && (o.sender_is_client || snd.stream_readable(STREAM) || truth.written > 0);
                if may_write && !o.sender_is_client {
                    while let Ok((_, _)) = snd.stream_recv(STREAM, &mut buf) {}
                }
                if may_write && truth.written < payload.len() {
                    match snd.stream_send(STREAM, &payload[truth.written..], true) {
                        Ok(n) => truth.written += n,
                        Err(quiche::Error::Done) => {}
                        Err(x) => return Err(format!("stream_send: {x}")),
                    }
                }
            }
            if let Some(rcv) = rcv {
                if o.sender_is_client || request_sent {
                    loop {
                        match rcv.stream_recv(STREAM, &mut buf) {
                            Ok((n, fin)) => {
                                received += n;
                                if fin && fin_at.is_none() && received == o.bytes {
                                    fin_at = Some(Instant::now());
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
            }
        }
        // Send.
        let now = Instant::now();
        loop {
            match client.send(&mut out) {
                Ok((n, _)) => {
                    if o.sender_is_client && client.is_established() {
                        first_after_est.get_or_insert(now);
                    }
                    // The path takes the datagram when quiche handed it over.
                    up.push(Instant::now(), out[..n].to_vec());
                }
                Err(quiche::Error::Done) => break,
                Err(x) => return Err(format!("client send: {x}")),
            }
        }
        if let Some(s) = server.as_mut() {
            loop {
                match s.send(&mut out) {
                    Ok((n, _)) => {
                        if !o.sender_is_client && s.is_established() {
                            first_after_est.get_or_insert(now);
                        }
                        down.push(Instant::now(), out[..n].to_vec());
                    }
                    Err(quiche::Error::Done) => break,
                    Err(x) => return Err(format!("server send: {x}")),
                }
            }
        }
        c_timer = client.timeout().map(|d| now + d);
        s_timer = server.as_ref().and_then(|s| s.timeout()).map(|d| now + d);
        // Close once everything arrived and the sender saw it acknowledged.
        if let Some(f) = fin_at {
            let snd = if o.sender_is_client {
                Some(&client)
            } else {
                server.as_ref()
            };
            let all_acked = snd.is_some_and(|s| s.stats().lost + s.stats().sent > 0)
                && now.duration_since(f) > o.delay * 6;
            if all_acked && !client.is_closed() && !client.is_draining() {
                let _ = client.close(true, 0, b"done");
            }
        }
        if client.is_closed()
            && server
                .as_ref()
                .is_none_or(|s| s.is_closed() || s.is_draining())
        {
            break;
        }
        if client.is_closed() && now.duration_since(start) > RUN_LIMIT / 2 {
            break;
        }
        // Sleep until the next thing happens.
        let next = [up.next_arrival(), down.next_arrival(), c_timer, s_timer]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + Duration::from_millis(1));
        let wait = next.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait.min(Duration::from_millis(50)));
        }
    }
    // Let the server see the close, then drop both so their qlogs are flushed.
    let snd_stats = if o.sender_is_client {
        client.stats()
    } else {
        server.as_ref().map(|s| s.stats()).ok_or("no server")?
    };
    let rcv_stats = if o.sender_is_client {
        server.as_ref().map(|s| s.stats()).ok_or("no server")?
    } else {
        client.stats()
    };
    drop(client);
    drop(server);
    trim(&c_qlog)?;
    trim(&s_qlog)?;
    let _ = std::fs::remove_dir_all(&tmp);
    let start_payload = first_after_est.ok_or("no data sent")?;
    let fin = fin_at.ok_or("transfer did not finish")?;
    let secs = fin.duration_since(start_payload).as_secs_f64();
    let truth_json = serde_json::json!({
        "generator": env!("CARGO_PKG_NAME"),
        "sender": if o.sender_is_client { "client" } else { "server" },
        "sender_qlog": if o.sender_is_client { &c_qlog } else { &s_qlog }
            .file_name().map(|n| n.to_string_lossy().into_owned()),
        "receiver_qlog": if o.sender_is_client { &s_qlog } else { &c_qlog }
            .file_name().map(|n| n.to_string_lossy().into_owned()),
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

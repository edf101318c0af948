//! Measurement: what 1-byte, gapped STREAM frames cost hare-recv, and what they do to a
//! legitimate transfer beside them. Run under the bench lock, release build:
//!
//! ```text
//! flock /tmp/hare-bench.lock cargo run --release -p hare-transfer --example gapped -- 10
//! ```
//!
//! The receiver runs on a thread of its own (current-thread runtime, as `hare-recv`), whose
//! CPU time is read from `/proc/self/task/TID/stat`. A hostile client writes one byte per
//! millisecond on each of several file streams (each byte its own packet) through a UDP relay
//! that drops every other client datagram, so the receiver sees 1-byte frames with gaps that
//! retransmissions fill later. Printed: the receiver's CPU (percent of one core) with only the
//! attacker, and the time of a 200 MiB bulk transfer alone and beside the attacker, as a ratio.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_transfer::protocol::{self, DataHeader, DataKind, FileEntry, Job, ToReceiver};
use hare_transfer::testkit::{recv_options, send_options};
use hare_transfer::trust::Trust;
use hare_transfer::{identity::Fingerprint, send, stop_pair, Receiver, SendJob, Stop};

/// File streams the attacker writes at once (one byte per millisecond each).
const STREAMS: u32 = 4;
/// Legitimate transfer.
const LEGIT: u64 = 200 << 20;

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let id = tempfile_dir("id");
    let dst = tempfile_dir("dst");
    let (addr, fp, tid, trigger) = start_receiver(&id, &dst);
    let rt = hare_transfer::testkit::runtime();
    rt.block_on(async move {
        let alone = legit(addr, fp).await;
        let wire = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let relay = spawn_relay(addr, wire.clone(), stop.clone()).await;
        let attack = tokio::spawn(attacker(relay, fp, stop.clone()));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (c0, w0, t0) = (thread_cpu(tid), wire.load(Ordering::Relaxed), Instant::now());
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let (c1, w1, dt) = (thread_cpu(tid), wire.load(Ordering::Relaxed), t0.elapsed());
        let beside = legit(addr, fp).await;
        stop.store(true, Ordering::Relaxed);
        let _ = attack.await;
        let dt = dt.as_secs_f64();
        println!(
            "attacker: {STREAMS} streams of 1-byte writes every 1 ms, every other datagram dropped; \
             {:.2} Mbit/s on the wire over {dt:.1} s",
            (w1 - w0) as f64 * 8.0 / dt / 1e6
        );
        println!(
            "receiver CPU with only the attacker: {:.1} % of one core",
            (c1 - c0) / dt * 100.0
        );
        println!(
            "legitimate {} MiB bulk: alone {alone:.3} s, beside the attacker {beside:.3} s, ratio {:.2}",
            LEGIT >> 20,
            beside / alone
        );
    });
    trigger.stop();
}

fn tempfile_dir(what: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("hare-gapped-{}-{what}", std::process::id()));
    std::fs::create_dir_all(&p).expect("temporary directory");
    p
}

/// Start the receiver on a thread of its own; its address, fingerprint and thread id.
fn start_receiver(
    id: &std::path::Path,
    dst: &std::path::Path,
) -> (SocketAddr, Fingerprint, i64, hare_transfer::StopTrigger) {
    let opts = recv_options(id.into(), Some(dst.into()));
    let (trigger, stop) = stop_pair();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let rt = hare_transfer::testkit::runtime();
        rt.block_on(async move {
            let r = Receiver::bind(opts).expect("bind");
            let _ = tx.send((r.local_addr(), r.fingerprint().expect("quic"), tid));
            let _ = r.run(stop).await;
        });
    });
    let (a, f, t) = rx.recv().expect("receiver started");
    (a, f, t, trigger)
}

/// utime + stime of one thread of this process, seconds.
fn thread_cpu(tid: i64) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(')').map(|r| r.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
    (ticks(11) + ticks(12)) / hz
}

/// The legitimate transfer's time, on a thread and runtime of its own (as a separate
/// hare-send process would be).
async fn legit(addr: SocketAddr, fp: Fingerprint) -> f64 {
    let h = std::thread::spawn(move || {
        let job = SendJob::Bulk {
            bytes: Some(LEGIT),
            seconds: None,
            streams: 1,
        };
        let t = Instant::now();
        let out = hare_transfer::testkit::runtime()
            .block_on(send(
                send_options(addr, Some(Trust::Pin(fp)), job),
                Stop::never(),
            ))
            .expect("legitimate transfer");
        assert_eq!(out.run.summary.map(|s| s.bytes), Some(LEGIT));
        t.elapsed().as_secs_f64()
    });
    loop {
        if h.is_finished() {
            return h.join().expect("legitimate sender thread");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A UDP relay to `target` that drops every other client datagram after the first 40 (the
/// handshake); returns the relay's address.
async fn spawn_relay(
    target: SocketAddr,
    wire: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> SocketAddr {
    let front = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("relay");
    let back = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("relay");
    back.connect(target).await.expect("relay connect");
    let addr = front.local_addr().expect("relay addr");
    tokio::spawn(async move {
        let (mut a, mut b) = ([0u8; 65536], [0u8; 65536]);
        let mut client = None;
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            tokio::select! {
                r = front.recv_from(&mut a) => {
                    let Ok((len, from)) = r else { break };
                    client = Some(from);
                    n += 1;
                    wire.fetch_add(len as u64 + 28, Ordering::Relaxed);
                    if n < 40 || n % 2 == 0 {
                        let _ = back.send(&a[..len]).await;
                    }
                }
                r = back.recv(&mut b) => {
                    let Ok(len) = r else { break };
                    if let Some(c) = client {
                        let _ = front.send_to(&b[..len], c).await;
                    }
                }
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    });
    addr
}

/// One file job of `STREAMS` large files, written one byte per millisecond per stream.
async fn attacker(relay: SocketAddr, fp: Fingerprint, stop: Arc<AtomicBool>) {
    let crypto = hare_transfer::testkit::client_crypto(
        &Trust::Pin(fp),
        Some(&hare_transfer::testkit::test_sender()),
    )
    .expect("crypto");
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).expect("crypto");
    let ep = quinn::Endpoint::client("127.0.0.1:0".parse().expect("addr")).expect("endpoint");
    let conn = ep
        .connect_with(
            quinn::ClientConfig::new(Arc::new(crypto)),
            relay,
            "localhost",
        )
        .expect("connect")
        .await
        .expect("handshake");
    let (mut s, _r) = conn.open_bi().await.expect("bi");
    let files = (0..STREAMS)
        .map(|i| FileEntry::new(format!("gapped-{i}"), 1 << 30))
        .collect();
    let hello = ToReceiver::Hello {
        version: protocol::PROTOCOL_VERSION,
        software: "gapped".into(),
        token: None,
        job: Job::Files {
            files,
            resume: false,
            force: true,
            dirs: Vec::new(),
            links: Vec::new(),
            skip: None,
            dest: None,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "gapped".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    };
    protocol::write_frame(&mut s, &hello).await.expect("hello");
    let mut streams = Vec::new();
    for index in 0..STREAMS {
        let mut u = conn.open_uni().await.expect("uni");
        let h = DataHeader {
            kind: DataKind::File,
            index,
            offset: 0,
            session: [0; 12],
            attempt: 0,
        };
        u.write_all(&h.encode()).await.expect("header");
        streams.push(u);
    }
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        for u in &mut streams {
            if u.write_all(&[0x5a]).await.is_err() {
                return;
            }
        }
    }
    conn.close(2u32.into(), b"done");
}

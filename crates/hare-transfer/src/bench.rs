//! The loopback benchmark (`hare-send bench`): goodput of hare-send -> hare-recv against a
//! plain quinn sender/receiver with identical windows, MTU and quinn's default Cubic, and
//! against hare's own `--tcp` mode, at each MTU asked for.
//!
//! Every side runs in its own process with a current-thread tokio runtime (docs/PLATFORM.md:
//! faster than the multi-thread runtime on 2 cores), so that each side can have a core. The
//! baseline is written here, not borrowed from hare: a bidirectional stream written for T
//! seconds from one pattern buffer and read in order by `read_chunk`; the receiver answers
//! with its byte count. It shares with hare only what any quinn program on this machine needs
//! to work at jumbo MTUs (the GSO cap of [`crate::socket`]), the same socket buffers, and the
//! same window and MTU settings ([`crate::quic_config::Link`]). Goodput is measured the same
//! way on every path: receiver-counted payload bytes over the sender's time from the start of
//! the data to the receiver's final answer.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::VarInt;

use crate::error::{Result, TransferError};
use crate::identity::{self, Fingerprint};
use crate::quic_config::Link;
use crate::trust::Trust;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Seconds per run.
    pub seconds: f64,
    /// UDP payload sizes to test (each also sets the TCP MSS for the same IP packet size).
    pub mtus: Vec<u16>,
    /// `-w` for every QUIC run.
    pub window: u64,
    /// Directory holding `hare-send` and `hare-recv`.
    pub exe_dir: PathBuf,
    /// Scratch directory (identities).
    pub scratch: PathBuf,
    /// hare / plain-quinn pairs per MTU, interleaved (the order alternates each round so
    /// that a drift in the machine's load does not favour either); the median ratio is the
    /// figure.
    pub rounds: usize,
}

/// One MTU's figures, in Mbit/s.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchCase {
    /// UDP payload size.
    pub mtu: u16,
    /// Plain quinn baseline.
    pub plain_mbps: f64,
    /// hare-send -> hare-recv (QUIC, hare CUBIC).
    pub hare_mbps: f64,
    /// hare-send --tcp -> hare-recv --tcp (kernel CUBIC).
    pub tcp_mbps: f64,
    /// hare / plain quinn of each round, in run order.
    pub round_ratios: Vec<f64>,
}

impl BenchCase {
    /// hare / plain quinn: the median of the rounds' ratios (each measured back to back),
    /// or the ratio of the medians when there were no rounds.
    pub(crate) fn vs_plain(&self) -> f64 {
        median(&self.round_ratios).unwrap_or_else(|| ratio(self.hare_mbps, self.plain_mbps))
    }
    /// hare / kernel TCP.
    pub(crate) fn vs_tcp(&self) -> f64 {
        ratio(self.hare_mbps, self.tcp_mbps)
    }
}

/// The median (the mean of the middle two for an even count); `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The load average line of the machine (`/proc/loadavg`), for the record.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Kill a child on drop so that a failed bench leaves nothing running.
pub(crate) struct Reaper(pub(crate) Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn spawn(cmd: &mut Command) -> Result<Reaper> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map(Reaper)
        .map_err(|e| TransferError::io(format!("starting {cmd:?}"), e))
}

/// Read lines of a child's stdout until `want` returns a value (at most `limit` lines and
/// 20 seconds); the rest of the output is drained in the background.
pub(crate) fn read_until<T: Send + 'static>(
    child: &mut Reaper,
    want: impl Fn(&[String]) -> Option<T> + Send + 'static,
) -> Result<T> {
    let out = child
        .0
        .stdout
        .take()
        .ok_or_else(|| TransferError::Config("child has no stdout".into()))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut sent = false;
        for line in BufReader::new(out).lines().take(100_000) {
            let Ok(line) = line else { break };
            lines.push(line);
            if !sent {
                if let Some(v) = want(&lines) {
                    let _ = tx.send(v);
                    sent = true;
                }
            }
            if sent {
                lines.clear();
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20))
        .map_err(|_| TransferError::Config("a benchmark process did not report in time".into()))
}

pub(crate) fn parse_listen(lines: &[String]) -> Option<(String, Option<String>)> {
    let addr = lines.iter().find_map(|l| {
        l.strip_prefix("hare-recv: listening on ")
            .map(|r| r.split_whitespace().next().unwrap_or("").to_owned())
    })?;
    let fp = lines.iter().find_map(|l| {
        l.strip_prefix("hare-recv: certificate sha256 ")
            .map(|r| r.trim().to_owned())
    });
    // A QUIC receiver prints its fingerprint after the address: wait for it.
    let quic = lines
        .iter()
        .any(|l| l.starts_with("hare-recv: listening on ") && l.ends_with("(QUIC)"));
    if quic && fp.is_none() {
        return None;
    }
    Some((addr, fp))
}

/// Goodput in Mbit/s from `hare-send --json -` output.
fn goodput_from_json(text: &str) -> Result<f64> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| TransferError::Config(format!("hare-send --json output: {e}")))?;
    let s = &v["end"]["hare"];
    let bytes = s["bytes"].as_u64().unwrap_or(0);
    let secs = s["seconds"].as_f64().unwrap_or(0.0);
    Ok(hare_report::mbps(bytes, secs))
}

fn run_hare(o: &BenchOptions, mtu: u16, tcp: bool) -> Result<f64> {
    let recv = o.exe_dir.join("hare-recv");
    let send = o.exe_dir.join("hare-send");
    let id = o.scratch.join("identity");
    let mut r = Command::new(&recv);
    r.args([
        "--listen",
        "127.0.0.1:0",
        "--one-shot",
        "-i",
        "60",
        "--identity",
    ])
    .arg(&id);
    if tcp {
        r.args(["--tcp", "--cc", "cubic"]);
    } else {
        r.args(["--mtu", &mtu.to_string(), "-w", &o.window.to_string()]);
    }
    let mut rc = spawn(&mut r)?;
    let (addr, fp) = read_until(&mut rc, parse_listen)?;
    let mut s = Command::new(&send);
    s.args(["-T", &o.seconds.to_string(), "--json", "-", "-i", "60"]);
    if tcp {
        s.args(["--tcp", "--cc", "cubic", "--mtu", &mtu.to_string()]);
    } else {
        let fp =
            fp.ok_or_else(|| TransferError::Config("hare-recv printed no fingerprint".into()))?;
        s.args([
            "--pin",
            &fp,
            "--mtu",
            &mtu.to_string(),
            "-w",
            &o.window.to_string(),
        ]);
    }
    s.arg(&addr);
    let mut sc = spawn(&mut s)?;
    let mut text = String::new();
    if let Some(mut out) = sc.0.stdout.take() {
        out.read_to_string(&mut text)
            .map_err(|e| TransferError::io("reading hare-send output", e))?;
    }
    let status =
        sc.0.wait()
            .map_err(|e| TransferError::io("waiting for hare-send", e))?;
    if !status.success() {
        return Err(TransferError::Config(format!(
            "hare-send failed ({status})"
        )));
    }
    goodput_from_json(&text)
}

fn run_plain(o: &BenchOptions, mtu: u16) -> Result<f64> {
    let me = o.exe_dir.join("hare-send");
    let mut r = Command::new(&me);
    r.args([
        "bench-plain-recv",
        "--mtu",
        &mtu.to_string(),
        "-w",
        &o.window.to_string(),
        "--identity",
    ])
    .arg(o.scratch.join("plain-identity"));
    let mut rc = spawn(&mut r)?;
    let (addr, fp) = read_until(&mut rc, |lines: &[String]| {
        lines.iter().find_map(|l| {
            let mut it = l.strip_prefix("plain-recv ")?.split_whitespace();
            Some((it.next()?.to_owned(), it.next()?.to_owned()))
        })
    })?;
    let mut s = Command::new(&me);
    s.args([
        "bench-plain-send",
        &addr,
        "--pin",
        &fp,
        "--mtu",
        &mtu.to_string(),
        "-w",
        &o.window.to_string(),
        "--seconds",
        &o.seconds.to_string(),
    ]);
    let mut sc = spawn(&mut s)?;
    let mut text = String::new();
    if let Some(mut out) = sc.0.stdout.take() {
        out.read_to_string(&mut text)
            .map_err(|e| TransferError::io("reading the plain sender's output", e))?;
    }
    let status =
        sc.0.wait()
            .map_err(|e| TransferError::io("waiting for the plain sender", e))?;
    if !status.success() {
        return Err(TransferError::Config(format!(
            "plain quinn sender failed ({status})"
        )));
    }
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("plain-send "))
        .unwrap_or("");
    let mut it = line.split_whitespace();
    let bytes: u64 = it.next().and_then(|b| b.parse().ok()).unwrap_or(0);
    let secs: f64 = it.next().and_then(|b| b.parse().ok()).unwrap_or(0.0);
    Ok(hare_report::mbps(bytes, secs))
}

/// Run the benchmark; `progress` gets a line per finished measurement.
pub fn run(o: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<Vec<BenchCase>> {
    for exe in ["hare-send", "hare-recv"] {
        if !o.exe_dir.join(exe).is_file() {
            return Err(TransferError::Usage(format!(
                "{} not found next to this binary: build both (cargo build --release -p hare-send -p hare-recv)",
                exe
            )));
        }
    }
    let mut out = Vec::new();
    for &mtu in &o.mtus {
        out.push(run_mtu(o, mtu, &mut progress)?);
    }
    Ok(out)
}

/// One MTU: `rounds` interleaved hare / plain-quinn pairs, then one kernel-TCP run.
fn run_mtu(o: &BenchOptions, mtu: u16, progress: &mut impl FnMut(&str)) -> Result<BenchCase> {
    let (mut plains, mut hares, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..o.rounds.max(1) {
        let (plain, hare) = if round % 2 == 0 {
            let p = run_plain(o, mtu)?;
            (p, run_hare(o, mtu, false)?)
        } else {
            let h = run_hare(o, mtu, false)?;
            (run_plain(o, mtu)?, h)
        };
        let r = ratio(hare, plain);
        progress(&format!(
            "mtu {mtu} round {}: plain quinn {plain:10.1} Mbit/s, hare-send {hare:10.1} Mbit/s, ratio {r:.3}",
            round + 1
        ));
        plains.push(plain);
        hares.push(hare);
        ratios.push(r);
    }
    let tcp = run_hare(o, mtu, true)?;
    progress(&format!("mtu {mtu}: hare --tcp    {tcp:10.1} Mbit/s"));
    Ok(BenchCase {
        mtu,
        plain_mbps: median(&plains).unwrap_or(0.0),
        hare_mbps: median(&hares).unwrap_or(0.0),
        tcp_mbps: tcp,
        round_ratios: ratios,
    })
}

/// The table printed at the end.
pub fn table(cases: &[BenchCase]) -> String {
    let mut s =
        String::from("  MTU   plain quinn     hare-send    hare --tcp   hare/plain  hare/tcp  rounds (hare/plain)\n");
    for c in cases {
        let rounds: Vec<String> = c.round_ratios.iter().map(|r| format!("{r:.3}")).collect();
        s.push_str(&format!(
            "{:5} {:10.1} Mb/s {:8.1} Mb/s {:8.1} Mb/s {:10.3} {:9.3}  {}\n",
            c.mtu,
            c.plain_mbps,
            c.hare_mbps,
            c.tcp_mbps,
            c.vs_plain(),
            c.vs_tcp(),
            rounds.join(" ")
        ));
    }
    s.push_str("(plain quinn and hare-send: medians of the rounds; hare/plain: median of the rounds' ratios)\n");
    s
}

// ---------------------------------------------------------------------------------------------
// The plain quinn baseline (hidden subcommands of hare-send)

fn plain_link(mtu: u16, window: u64) -> Link {
    Link {
        mtu: Some(mtu),
        ..Link::fixed(window)
    }
}

/// Plain quinn receiver: prints `plain-recv ADDR FINGERPRINT`, serves one connection, exits.
pub async fn plain_recv(mtu: u16, window: u64, identity_dir: &Path) -> Result<()> {
    let link = plain_link(mtu, window);
    let id = identity::load_or_create(identity_dir, &[])?;
    let crypto =
        quinn::crypto::rustls::QuicServerConfig::try_from(crate::trust::server_crypto(&id)?)
            .map_err(|e| TransferError::Config(e.to_string()))?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    // quinn's default controller (Cubic) is left in place.
    sc.transport_config(Arc::new(link.transport()));
    let sock = crate::socket::bind_udp(
        "127.0.0.1:0"
            .parse()
            .map_err(|_| TransferError::Config("addr".into()))?,
    )?;
    let ep = crate::socket::endpoint(
        sock,
        link.endpoint_config()?,
        Some(sc),
        link.max_udp_payload(),
    )?;
    let addr = ep
        .local_addr()
        .map_err(|e| TransferError::io("local address", e))?;
    println!("plain-recv {addr} {}", id.fingerprint);
    let inc = ep
        .accept()
        .await
        .ok_or_else(|| TransferError::Connection("endpoint closed".into()))?;
    let conn = inc
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let (mut send, mut recv) = conn
        .accept_bi()
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let mut total = 0u64;
    while let Some(c) = recv
        .read_chunk(usize::MAX, true)
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?
    {
        total += c.bytes.len() as u64;
    }
    send.write_all(&total.to_be_bytes())
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let _ = send.finish();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    Ok(())
}

/// Plain quinn sender: writes for `seconds`, prints `plain-send BYTES SECONDS`.
pub async fn plain_send(
    addr: &str,
    pin: Fingerprint,
    mtu: u16,
    window: u64,
    seconds: f64,
) -> Result<()> {
    let link = plain_link(mtu, window);
    let addr: std::net::SocketAddr = addr
        .parse()
        .map_err(|_| TransferError::Usage(format!("bad address {addr}")))?;
    let (crypto, _) = crate::trust::client_crypto(&Trust::Pin(pin))?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto)
        .map_err(|e| TransferError::Config(e.to_string()))?;
    let mut cc = quinn::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(Arc::new(link.transport()));
    let sock = crate::socket::bind_udp(
        "127.0.0.1:0"
            .parse()
            .map_err(|_| TransferError::Config("addr".into()))?,
    )?;
    let ep = crate::socket::endpoint(sock, link.endpoint_config()?, None, link.max_udp_payload())?;
    let conn = ep
        .connect_with(cc, addr, "localhost")
        .map_err(|e| TransferError::Connection(e.to_string()))?
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let pattern = Bytes::from((0..256 << 10).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        send.write_chunk(pattern.clone())
            .await
            .map_err(|e| TransferError::Connection(e.to_string()))?;
    }
    send.finish()
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let mut count = [0u8; 8];
    recv.read_exact(&mut count)
        .await
        .map_err(|e| TransferError::Connection(e.to_string()))?;
    let secs = t0.elapsed().as_secs_f64();
    println!("plain-send {} {secs:.6}", u64::from_be_bytes(count));
    conn.close(VarInt::from_u32(0), b"");
    let _ = tokio::time::timeout(Duration::from_secs(1), ep.wait_idle()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_table() {
        let c = BenchCase {
            mtu: 1452,
            plain_mbps: 2000.0,
            hare_mbps: 1900.0,
            tcp_mbps: 3800.0,
            round_ratios: Vec::new(),
        };
        assert!((c.vs_plain() - 0.95).abs() < 1e-12);
        assert!((c.vs_tcp() - 0.5).abs() < 1e-12);
        let t = table(std::slice::from_ref(&c));
        assert!(t.contains(" 1452 "), "{t}");
        assert!(t.contains("0.950"), "{t}");
        let c = BenchCase {
            round_ratios: vec![1.2, 0.9, 1.0, 5.0, 0.95],
            ..c
        };
        assert_eq!(c.vs_plain(), 1.0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }

    #[test]
    fn listen_lines_parse() {
        let lines = vec![
            "hare-recv: listening on 127.0.0.1:4242 (QUIC)".to_owned(),
            "hare-recv: certificate sha256 abcd".to_owned(),
        ];
        assert_eq!(
            parse_listen(&lines[..1]),
            None,
            "QUIC waits for the fingerprint"
        );
        assert_eq!(
            parse_listen(&lines),
            Some(("127.0.0.1:4242".into(), Some("abcd".into())))
        );
        let tcp = vec!["hare-recv: listening on 127.0.0.1:1 (kernel TCP)".to_owned()];
        assert_eq!(parse_listen(&tcp), Some(("127.0.0.1:1".into(), None)));
    }

    #[test]
    fn goodput_reads_the_iperf_shape() {
        let j = r#"{"end":{"hare":{"bytes":125000000,"seconds":1.0}}}"#;
        assert!((goodput_from_json(j).expect("parse") - 1000.0).abs() < 1e-9);
    }
}

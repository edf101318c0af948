//! A kernel TCP CUBIC flow through hare-emu's namespace emulator: CUBIC allowed and made the
//! default in both namespaces (they copy the host's default, BBR here), a sink in the
//! receiver namespace, a bulk sender for a bounded time in the sender namespace.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hare_emu::{EmulatorRun, NamespaceConfig, NamespaceEmulator, Side};
use hare_link::PathConfig;

/// The port the sink listens on (the flow's `dport`).
pub const PORT: u16 = 5299;

/// What the flow moved.
#[derive(Debug)]
pub struct FlowResult {
    /// Bytes the sink received.
    pub bytes: u64,
    /// The emulator's self-check of the run.
    pub emulator: EmulatorRun,
}

const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
const DEFAULT_CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// CUBIC in the machine's allowed list (a global sysctl, writable only from the initial
/// namespace): added when missing, and said so.
fn allow_cubic() -> Result<()> {
    let allowed = std::fs::read_to_string(ALLOWED).with_context(|| format!("reading {ALLOWED}"))?;
    if allowed.split_whitespace().any(|c| c == "cubic") {
        return Ok(());
    }
    let list = format!("{} cubic", allowed.trim());
    std::fs::write(ALLOWED, &list).with_context(|| format!("writing {list:?} to {ALLOWED}"))?;
    eprintln!("added cubic to net.ipv4.tcp_allowed_congestion_control (now {list:?})");
    Ok(())
}

/// CUBIC as this namespace's default (a new namespace copies the host's, BBR here).
fn use_cubic() -> hare_emu::Result<()> {
    std::fs::write(DEFAULT_CC, "cubic")
        .map_err(|e| hare_emu::EmuError::io(format!("write {DEFAULT_CC}"), e))
}

/// Start the emulator on `path` (instance `kcheck`), run `seconds` of bulk TCP CUBIC from
/// the sender to the receiver namespace, calling `started` before connecting (attach the
/// capture there), then stop and judge the emulator.
pub fn run(
    path: PathConfig,
    seconds: f64,
    started: impl FnOnce() -> Result<()>,
) -> Result<FlowResult> {
    allow_cubic()?;
    let emu = NamespaceEmulator::start(NamespaceConfig::new("kcheck", path))
        .context("starting the namespace emulator")?;
    emu.run_in(Side::Sender, use_cubic)
        .context("setting CUBIC in the sender namespace")?;
    emu.run_in(Side::Receiver, use_cubic)
        .context("setting CUBIC in the receiver namespace")?;
    let rcv = SocketAddr::from((emu.config().receiver_addr, PORT));
    let listener = emu
        .run_in(Side::Receiver, move || {
            TcpListener::bind(rcv).map_err(|e| hare_emu::EmuError::io(format!("bind {rcv}"), e))
        })
        .context("the sink's listener")?;
    let sink = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            match s.read(&mut buf)? {
                0 => return Ok(total),
                n => total += n as u64,
            }
        }
    });
    started()?;
    let stream = emu
        .run_in(Side::Sender, move || {
            TcpStream::connect_timeout(&rcv, Duration::from_secs(5))
                .map_err(|e| hare_emu::EmuError::io(format!("connect {rcv}"), e))
        })
        .context("the sender's connection")?;
    let cc = socket2::SockRef::from(&stream)
        .tcp_congestion()
        .context("TCP_CONGESTION")?;
    if !cc.starts_with(b"cubic") {
        bail!(
            "the sender's socket runs {:?}, not cubic",
            String::from_utf8_lossy(&cc)
        );
    }
    send_for(stream, seconds)?;
    let bytes = match sink.join() {
        Ok(r) => r.context("the sink")?,
        Err(_) => bail!("the sink thread panicked"),
    };
    let emulator = emu.stop().context("stopping the emulator")?;
    Ok(FlowResult { bytes, emulator })
}

/// Write as fast as the socket takes it for `seconds`, then close the sending side.
fn send_for(mut stream: TcpStream, seconds: f64) -> Result<()> {
    let buf = vec![0x5au8; 1 << 16];
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    stream.set_write_timeout(Some(Duration::from_millis(200)))?;
    while Instant::now() < end {
        match stream.write(&buf) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e).context("sending"),
        }
    }
    stream
        .shutdown(std::net::Shutdown::Write)
        .context("closing the sending side")?;
    Ok(())
}

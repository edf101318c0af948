//! Helpers for tests and embedders: run a [`Receiver`] on a background thread with its own
//! current-thread runtime, and quiet default options for both ends on loopback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cc::QuicCc;
use crate::error::{Result, TransferError};
use crate::identity::{Fingerprint, Identity};
use crate::quic_config::{Link, DEFAULT_WINDOW};
use crate::receiver::{Limits, Receiver, RecvOptions};
use crate::report::OutputOptions;
use crate::sender::{SendJob, SendOptions};
use crate::stop::{stop_pair, StopTrigger};
use crate::trust::Trust;

/// A receiver serving on its own thread until stopped or dropped.
#[derive(Debug)]
pub struct BackgroundReceiver {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its certificate fingerprint (QUIC).
    pub fingerprint: Option<Fingerprint>,
    trigger: StopTrigger,
    handle: Option<JoinHandle<Result<()>>>,
}

impl BackgroundReceiver {
    /// Bind and start serving.
    pub fn start(opts: RecvOptions) -> Result<Self> {
        let (trigger, stop) = stop_pair();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || -> Result<()> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| TransferError::io("starting a runtime", e))?;
            rt.block_on(async move {
                let r = match Receiver::bind(opts) {
                    Ok(r) => r,
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = tx.send(Err(e));
                        return Err(TransferError::Config(msg));
                    }
                };
                let _ = tx.send(Ok((r.local_addr(), r.fingerprint())));
                r.run(stop).await
            })
        });
        let (addr, fingerprint) = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| TransferError::Config("the receiver did not start".into()))??;
        Ok(Self {
            addr,
            fingerprint,
            trigger,
            handle: Some(handle),
        })
    }

    /// The trust a sender needs for this receiver.
    pub fn trust(&self) -> Option<Trust> {
        self.fingerprint.map(Trust::Pin)
    }

    /// Wait for a one-shot receiver to finish by itself and return its result.
    pub fn join(mut self) -> Result<()> {
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(TransferError::Config("the receiver thread panicked".into())),
            None => Ok(()),
        }
    }

    /// Stop serving and return the serving loop's result.
    pub fn stop(self) -> Result<()> {
        self.trigger.stop();
        self.join()
    }
}

impl Drop for BackgroundReceiver {
    fn drop(&mut self) {
        self.trigger.stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The sender identity every test sender of this process presents (made in memory once);
/// [`recv_options`] allows it.
pub fn test_sender() -> Arc<Identity> {
    static ID: OnceLock<Arc<Identity>> = OnceLock::new();
    ID.get_or_init(|| {
        Arc::new(
            crate::identity::ephemeral(&[])
                .unwrap_or_else(|e| panic!("a test sender identity: {e}")),
        )
    })
    .clone()
}

/// Quiet receiver options on `127.0.0.1:0` that allow [`test_sender`].
pub fn recv_options(identity_dir: PathBuf, dir: Option<PathBuf>) -> RecvOptions {
    RecvOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        identity_dir,
        names: Vec::new(),
        token: None,
        allow: vec![test_sender().fingerprint],
        open: false,
        dir,
        partial_owner: None,
        link: Link::fixed(DEFAULT_WINDOW),
        cc: QuicCc::default(),
        qlog: None,
        interval: Duration::from_secs(1),
        limits: Limits::default(),
        one_shot: false,
        output: OutputOptions {
            quiet: true,
            ..OutputOptions::default()
        },
        tcp: None,
    }
}

/// Quiet sender options for `job` to `addr`, presenting [`test_sender`].
pub fn send_options(addr: SocketAddr, trust: Option<Trust>, job: SendJob) -> SendOptions {
    SendOptions {
        server: addr.to_string(),
        trust,
        identity: Some(test_sender()),
        token: None,
        keep: crate::sendfiles::Keep::default(),
        job,
        skip: None,
        dest: None,
        link: Link::fixed(DEFAULT_WINDOW),
        cc: None,
        qlog: None,
        interval: Duration::from_secs(1),
        rate: None,
        output: OutputOptions {
            quiet: true,
            ..OutputOptions::default()
        },
        tcp: None,
        liveness: Default::default(),
        reverse: false,
        retries: crate::sender::DEFAULT_RETRIES,
        via: None,
    }
}

/// A current-thread tokio runtime, as the binaries use.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("a test runtime: {e}"))
}

/// `n` deterministic pseudo-random bytes from `seed` (xorshift64*).
pub fn seeded_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// The part files of `name` in `dir` (`.NAME.<16 hex digits>.hare-part`, one per sender),
/// with their lengths: the files jobs are writing and the partials kept for `--resume`.
pub fn part_files(dir: &std::path::Path, name: &str) -> Vec<(String, u64)> {
    let (pre, suf) = (format!(".{name}."), crate::names::PART_SUFFIX);
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let mid = n.strip_prefix(&pre)?.strip_suffix(suf)?;
            let hex = mid.len() == 16 && mid.bytes().all(|b| b.is_ascii_hexdigit());
            hex.then(|| (n.clone(), e.metadata().map(|m| m.len()).unwrap_or(0)))
        })
        .collect()
}

/// The part files of `name` in `dir` that a job is writing right now (their job holds the
/// lock every job takes; a kept partial is not locked).
pub fn in_progress(dir: &std::path::Path, name: &str) -> Vec<(String, u64)> {
    part_files(dir, name)
        .into_iter()
        .filter(|(n, _)| locked(&dir.join(n)))
        .collect()
}

/// True when another open file holds the `flock(2)` of `path` (it is given back at once).
fn locked(path: &std::path::Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    // SAFETY: the descriptor is open for the duration of both calls.
    unsafe {
        if libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) == 0 {
            libc::flock(f.as_raw_fd(), libc::LOCK_UN);
            return false;
        }
    }
    true
}

/// Where a receiver made with [`recv_options`] keeps the partial of `name` (a job name, `/`
/// separated) for [`test_sender`] (its owner: the allowed certificate).
pub fn test_sender_part(dir: &std::path::Path, name: &str) -> PathBuf {
    part_for(dir, name, &test_sender().fingerprint)
}

/// Where a receiver keeps the partial of `name` for the sender whose allowed certificate is
/// `fp`.
pub fn part_for(dir: &std::path::Path, name: &str, fp: &Fingerprint) -> PathBuf {
    let (parent, leaf) = name.rsplit_once('/').unwrap_or(("", name));
    let tag = crate::recvfile::Owner::certificate(fp).tag();
    dir.join(parent).join(crate::names::part_name(leaf, tag))
}

/// What a terminal showed: `text` without its CSI sequences (`ESC [ ... letter`), cut at every `\r` and `\n`.
pub fn screen_pieces(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    plain
        .split(['\r', '\n'])
        .filter(|p| !p.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// A pseudo-terminal `columns` wide and 50 rows high, for running a binary as on a user's
/// terminal.
pub fn terminal_of(columns: u16) -> nix::pty::OpenptyResult {
    let size = nix::pty::Winsize {
        ws_row: 50,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    nix::pty::openpty(&size, None).expect("openpty")
}

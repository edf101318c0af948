//! Helpers for tests (the `testkit` feature; nothing in the library's behaviour depends on
//! it): a receiver on a background thread and quiet options for both ends on loopback, a
//! runtime, seeded data, and where a receiver keeps a sender's part files.

use std::path::PathBuf;

use crate::error::Result;
use crate::identity::{Fingerprint, Identity};
pub use crate::loopback::{recv_options, send_options, test_sender, BackgroundReceiver};
use crate::trust::Trust;

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

/// Run `send` with a stop that the user gives (as Ctrl-C would) once a part file of `name`
/// in `dir` being written holds more than `bytes`, or after 20 s.
pub fn send_until_part_holds(
    o: crate::SendOptions,
    (dir, name): (std::path::PathBuf, &'static str),
    bytes: u64,
) -> crate::Result<crate::SendOutcome> {
    let (trigger, stop) = crate::stop_pair();
    runtime().block_on(async move {
        tokio::spawn(async move {
            for _ in 0..800 {
                if in_progress(&dir, name).iter().any(|p| p.1 > bytes) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            trigger.stop();
        });
        crate::send(o, stop).await
    })
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

/// A client's TLS configuration that trusts `trust` and presents `identity`: what a test
/// that plays a peer by hand (a hostile client) hands to quinn.
pub fn client_crypto(trust: &Trust, identity: Option<&Identity>) -> Result<rustls::ClientConfig> {
    crate::trust::client_crypto_as(trust, identity).map(|(config, _)| config)
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

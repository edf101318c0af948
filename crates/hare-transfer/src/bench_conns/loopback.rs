//! The connections benchmark on loopback: for each round and each N, a fresh one-shot
//! `hare-recv` and a `hare-send -C N` (bulk for `-T` seconds, or one file), each in its own
//! process; the figures come from hare-send's `--json` summary and the children's CPU time.
//!
//! The children are reaped one at a time by this thread (the sender, then the receiver), so
//! the difference of [`crate::cpu::reaped_children_cpu_seconds`] around each wait is that
//! process's own CPU time. Nothing else of this process may reap children meanwhile.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::ConnRun;
use crate::bench::{parse_listen, read_until, spawn};
use crate::cpu::reaped_children_cpu_seconds;
use crate::error::{Result, TransferError};

/// What every run sends.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnLoad {
    /// Bulk for this many seconds (`-T`).
    Seconds(f64),
    /// This file (checked byte-identical on arrival).
    File(PathBuf),
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct ConnBenchOptions {
    /// The `-C` values, in the order each round runs them.
    pub connections: Vec<u16>,
    /// Rounds (each runs every N once).
    pub rounds: usize,
    /// What each run sends.
    pub load: ConnLoad,
    /// `-w` of both ends (`None`: their default).
    pub window: Option<String>,
    /// `--mtu` of both ends (`None`: their default).
    pub mtu: Option<u16>,
    /// Directory holding `hare-send` and `hare-recv`.
    pub exe_dir: PathBuf,
    /// Scratch directory (identities, received files).
    pub scratch: PathBuf,
}

/// Longest a sender may take beyond its `-T` (handshakes, the close) before the run fails.
const SENDER_GRACE: Duration = Duration::from_secs(60);
/// Longest a file run may take.
const FILE_LIMIT: Duration = Duration::from_secs(900);
/// Longest the one-shot receiver may take to exit after its sender did.
const RECEIVER_LIMIT: Duration = Duration::from_secs(20);

/// Runs every round, N after N; `progress` gets each run's line.
pub fn run(o: &ConnBenchOptions, mut progress: impl FnMut(&str)) -> Result<Vec<ConnRun>> {
    for exe in ["hare-send", "hare-recv"] {
        if !o.exe_dir.join(exe).is_file() {
            return Err(TransferError::Usage(format!(
                "{exe} not found next to this binary: build both (cargo build --release -p hare-send -p hare-recv)"
            )));
        }
    }
    let mut out = Vec::new();
    for round in 1..=o.rounds.max(1) {
        for &n in &o.connections {
            let r = run_one(o, n, round)?;
            progress(&r.line());
            out.push(r);
        }
    }
    Ok(out)
}

/// The token a file run authorises its sender with (the receiver writes files only for it).
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("bench-{:x}-{nanos:x}", std::process::id())
}

/// `-w` and `--mtu`, the same on both ends.
fn link_args(o: &ConnBenchOptions, cmd: &mut Command) {
    if let Some(w) = &o.window {
        cmd.args(["-w", w]);
    }
    if let Some(m) = o.mtu {
        cmd.args(["--mtu", &m.to_string()]);
    }
}

/// The receiver of a run of `n` connections: as many threads (`--threads`), as hare-send
/// starts a remote hare-recv over ssh.
fn receiver_command(o: &ConnBenchOptions, n: u16, dir: Option<&Path>, token: &str) -> Command {
    let mut r = Command::new(o.exe_dir.join("hare-recv"));
    r.args(["--listen", "127.0.0.1:0", "--one-shot", "-q", "-i", "60"])
        .args(["--threads", &n.to_string()])
        .arg("--identity")
        .arg(o.scratch.join("identity"))
        .env_remove("HARE_TOKEN");
    link_args(o, &mut r);
    if let Some(d) = dir {
        r.arg("--dir").arg(d).env("HARE_TOKEN", token);
    }
    r
}

fn sender_command(o: &ConnBenchOptions, n: u16, addr: &str, fp: &str, token: &str) -> Command {
    let mut s = Command::new(o.exe_dir.join("hare-send"));
    s.args(["--json", "-", "-i", "60", "--pin", fp, "-C", &n.to_string()])
        .env("HARE_SEND_IDENTITY", o.scratch.join("sender-identity"))
        .env_remove("HARE_PIN")
        .env_remove("HARE_TOKEN");
    link_args(o, &mut s);
    match &o.load {
        ConnLoad::Seconds(t) => {
            s.args(["-T", &t.to_string()]);
        }
        ConnLoad::File(f) => {
            s.env("HARE_TOKEN", token).arg(f);
        }
    }
    s.arg(addr);
    s
}

/// One run: a fresh receiver, the sender, both reaped and measured, the file compared.
fn run_one(o: &ConnBenchOptions, n: u16, round: usize) -> Result<ConnRun> {
    let token = token();
    let dir = match &o.load {
        ConnLoad::File(_) => Some(o.scratch.join(format!("recv-{round}-{n}"))),
        ConnLoad::Seconds(_) => None,
    };
    if let Some(d) = &dir {
        std::fs::create_dir_all(d)
            .map_err(|e| TransferError::io(format!("creating {}", d.display()), e))?;
    }
    let mut rc = spawn(&mut receiver_command(o, n, dir.as_deref(), &token))?;
    let (addr, fp) = read_until(&mut rc, parse_listen)?;
    let fp = fp.ok_or_else(|| TransferError::Config("hare-recv printed no fingerprint".into()))?;
    let mut sc = spawn(&mut sender_command(o, n, &addr, &fp, &token))?;
    let reader = output_reader(&mut sc.0)?;
    let limit = match &o.load {
        ConnLoad::Seconds(t) => Duration::from_secs_f64(*t) + SENDER_GRACE,
        ConnLoad::File(_) => FILE_LIMIT,
    };
    let (status, sender_cpu_s) = wait_counted(&mut sc.0, limit, "hare-send")?;
    let text = reader
        .join()
        .map_err(|_| TransferError::Config("the hare-send output reader failed".into()))?;
    if !status.success() {
        return Err(TransferError::Config(format!(
            "hare-send -C {n} failed ({status}) in round {round}"
        )));
    }
    let (rstatus, receiver_cpu_s) = wait_counted(&mut rc.0, RECEIVER_LIMIT, "hare-recv")?;
    if !rstatus.success() {
        return Err(TransferError::Config(format!(
            "hare-recv failed ({rstatus}) in round {round}, -C {n}"
        )));
    }
    let summary = summary_from_json(&text)?;
    if let (ConnLoad::File(f), Some(d)) = (&o.load, &dir) {
        check_arrived(f, d, summary.completed)?;
        let _ = std::fs::remove_dir_all(d);
    }
    Ok(ConnRun {
        connections: n,
        round,
        bytes: summary.bytes,
        seconds: summary.seconds,
        sender_cpu_s,
        receiver_cpu_s,
        invalid: None,
    })
}

/// Reads a child's whole stdout on a thread (so that a sender that hangs cannot block the
/// bench: the wait has a limit, the read ends when the child is killed).
fn output_reader(child: &mut Child) -> Result<std::thread::JoinHandle<String>> {
    let mut out = child
        .stdout
        .take()
        .ok_or_else(|| TransferError::Config("child has no stdout".into()))?;
    Ok(std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    }))
}

/// Waits for `child` at most `limit` (polling every 10 ms; killed and an error beyond) and
/// returns its status and CPU seconds (the reaped children's CPU time around the wait).
fn wait_counted(
    child: &mut Child,
    limit: Duration,
    what: &str,
) -> Result<(ExitStatus, Option<f64>)> {
    let before = reaped_children_cpu_seconds();
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if t.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TransferError::Config(format!(
                    "{what} did not finish within {} s",
                    limit.as_secs()
                )));
            }
            Err(e) => return Err(TransferError::io(format!("waiting for {what}"), e)),
        }
    };
    let cpu = reaped_children_cpu_seconds()
        .zip(before)
        .map(|(after, before)| after - before);
    Ok((status, cpu))
}

/// What the bench reads of hare-send's `--json` summary (`end.hare`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JsonSummary {
    /// Payload bytes the receiver counted.
    pub(crate) bytes: u64,
    /// The sender's seconds.
    pub(crate) seconds: f64,
    /// Whether the job completed.
    pub(crate) completed: bool,
}

/// `end.hare` of hare-send's `--json -` output.
pub(crate) fn summary_from_json(text: &str) -> Result<JsonSummary> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| TransferError::Config(format!("hare-send --json output: {e}")))?;
    let s = &v["end"]["hare"];
    let missing = |field: &str| {
        TransferError::Config(format!("hare-send --json output has no end.hare.{field}"))
    };
    Ok(JsonSummary {
        bytes: s["bytes"].as_u64().ok_or_else(|| missing("bytes"))?,
        seconds: s["seconds"].as_f64().ok_or_else(|| missing("seconds"))?,
        completed: s["completed"]
            .as_bool()
            .ok_or_else(|| missing("completed"))?,
    })
}

/// The file `sent` arrived complete and byte-identical in `dir`.
fn check_arrived(sent: &Path, dir: &Path, completed: bool) -> Result<()> {
    let name = sent
        .file_name()
        .ok_or_else(|| TransferError::Usage(format!("--file {}: no file name", sent.display())))?;
    let got = dir.join(name);
    if !completed {
        return Err(TransferError::Config(format!(
            "hare-send did not complete the file job ({})",
            sent.display()
        )));
    }
    if file_hash(sent)? != file_hash(&got)? {
        return Err(TransferError::Config(format!(
            "{} arrived different from {}",
            got.display(),
            sent.display()
        )));
    }
    Ok(())
}

/// BLAKE3 of a file's contents.
pub fn file_hash(path: &Path) -> Result<blake3::Hash> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| TransferError::io(format!("opening {}", path.display()), e))?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    // Bounded by the file's length: each turn consumes up to 1 MiB.
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| TransferError::io(format!("reading {}", path.display()), e))?;
        if n == 0 {
            return Ok(h.finalize());
        }
        h.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_summary_reads_end_hare() {
        let j = r#"{"end":{"hare":{"bytes":125000000,"seconds":1.5,"completed":true}}}"#;
        assert_eq!(
            summary_from_json(j).expect("parse"),
            JsonSummary {
                bytes: 125_000_000,
                seconds: 1.5,
                completed: true
            }
        );
        let e = summary_from_json(r#"{"end":{"hare":{"bytes":1}}}"#).expect_err("no seconds");
        assert!(e.to_string().contains("end.hare.seconds"), "{e}");
    }

    #[test]
    fn senders_carry_n_and_the_load() {
        let o = ConnBenchOptions {
            connections: vec![1, 4],
            rounds: 1,
            load: ConnLoad::Seconds(0.5),
            window: Some("8m".into()),
            mtu: None,
            exe_dir: "/x".into(),
            scratch: "/s".into(),
        };
        let c = sender_command(&o, 4, "127.0.0.1:9", "ab", "t");
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            args.join(" "),
            "--json - -i 60 --pin ab -C 4 -w 8m -T 0.5 127.0.0.1:9"
        );
    }
}

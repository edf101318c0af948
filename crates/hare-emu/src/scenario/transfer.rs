//! One transfer with hare-send / hare-recv through a fresh namespace-mode emulator: start the
//! namespaces, the receiver (inside the receiver namespace), the sender (inside the sender
//! namespace), wait with a time limit, stop the emulator, and fold its self-check and the
//! path's scheduled events into the sender's report.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use hare_report::{jsonl, Run};

use crate::check::{path_events, EmulatorRun};
use crate::cubic_sysfs::{CubicParams, CubicParamsGuard};
use crate::namespace::{NamespaceConfig, NamespaceEmulator};
use crate::netns::Side;
use crate::wall_clock::monotonic_ns;

use super::transfer_report::{path_info, read_receiver_run, TcpReductions};

/// Port hare-recv listens on inside the receiver namespace.
pub const RECV_PORT: u16 = 5210;

/// What to transfer and how.
#[derive(Debug, Clone)]
pub struct TransferSpec {
    /// Run name (file names in `work_dir`).
    pub name: String,
    /// Kernel TCP (`--tcp`) instead of QUIC.
    pub tcp: bool,
    /// `--cc`: hare-cc grammar for QUIC, a kernel name for TCP.
    pub cc: String,
    /// With `tcp`: `--pacing-rate` in bit/s (SO_MAX_PACING_RATE: kernel pacing on).
    pub pacing_rate: Option<u64>,
    /// tcp_cubic parameters held for the run (kernel runs).
    pub kernel_params: CubicParams,
    /// `-T` seconds (bulk by time).
    pub seconds: Option<f64>,
    /// `-n` bytes (bulk by size).
    pub bytes: Option<u64>,
    /// Files to send (file mode; received into `work_dir/<name>.recv/`).
    pub files: Vec<PathBuf>,
    /// `-w` (QUIC windows; kernel TCP autotunes when `None`).
    pub window: Option<String>,
    /// `-i` report interval, seconds.
    pub interval: f64,
    /// Give up (and kill both) after this long, seconds.
    pub timeout_s: f64,
    /// Directory with the `hare-send` and `hare-recv` executables.
    pub bin_dir: PathBuf,
    /// Where reports, logs and received files go.
    pub work_dir: PathBuf,
    /// Print hare-send's lines (its `-i` intervals, events, summary) as they come.
    pub echo: bool,
    /// `-C`: QUIC connections carrying the job (1: one).
    pub connections: u16,
}

/// What came of a transfer.
#[derive(Debug)]
pub struct TransferOutcome {
    /// The sender's report, with the emulator's verdict and the path's events folded in
    /// (`None` when the sender wrote none).
    pub run: Option<Run>,
    /// The emulator's self-check.
    pub emulator: EmulatorRun,
    /// Exit status of the sender (`None`: killed at the time limit or interrupted).
    pub sender_ok: Option<bool>,
    /// Seconds from starting hare-send to its exit (whole process: connect to close).
    pub sender_elapsed_s: f64,
    /// Exit status of the receiver.
    pub receiver_ok: Option<bool>,
    /// Where the report was written.
    pub report_path: PathBuf,
    /// Where received files went (file mode).
    pub recv_dir: PathBuf,
    /// The receiver's own report (its intervals count what arrived on its clock).
    pub receiver_run: Option<Run>,
    /// Kernel TCP runs: the sender namespace's recovery counters over the run.
    pub tcp_reductions: Option<TcpReductions>,
    /// hare-send's CPU seconds, user + system of the whole process (see
    /// [`reaped_children_cpu_s`]).
    pub sender_cpu_s: Option<f64>,
    /// hare-recv's CPU seconds, user + system of the whole process.
    pub receiver_cpu_s: Option<f64>,
}

impl TransferOutcome {
    /// Valid emulator run, both ends succeeded, and a summary that says valid.
    pub fn valid(&self) -> bool {
        self.emulator.valid
            && self.sender_ok == Some(true)
            && self
                .run
                .as_ref()
                .and_then(|r| r.summary.as_ref())
                .is_some_and(|s| s.valid)
    }
}

/// Finds `hare-send` and `hare-recv`: `explicit`, else `$HARE_BIN_DIR`, else the directory of
/// the running executable or its parent (a test binary lives in `target/<profile>/deps`).
pub fn find_bins(explicit: Option<&Path>) -> Result<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = explicit {
        candidates.push(d.to_path_buf());
    }
    if let Some(d) = std::env::var_os("HARE_BIN_DIR") {
        candidates.push(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent() {
            candidates.push(d.to_path_buf());
            if let Some(p) = d.parent() {
                candidates.push(p.to_path_buf());
            }
        }
    }
    for d in &candidates {
        if d.join("hare-send").is_file() && d.join("hare-recv").is_file() {
            return Ok(d.clone());
        }
    }
    bail!(
        "hare-send / hare-recv not found in {:?}: build them (cargo build -p hare-send -p hare-recv) \
         or pass --bin-dir / set HARE_BIN_DIR",
        candidates
    )
}

/// [`find_bins`] for tests: when they are not found, builds them with the running cargo
/// (`$CARGO`, else `cargo`: `cargo build -p hare-send -p hare-recv`) and looks again.
pub fn find_or_build_bins() -> Result<PathBuf> {
    if let Ok(d) = find_bins(None) {
        return Ok(d);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(&cargo)
        .args(["build", "-p", "hare-send", "-p", "hare-recv"])
        .status()
        .with_context(|| format!("running {cargo} build"))?;
    if !st.success() {
        bail!("building hare-send / hare-recv failed ({st})");
    }
    find_bins(None)
}

pub(super) fn wait_child(child: &mut Child, deadline_ns: u64) -> Option<bool> {
    // Bounded by the deadline; polls every 20 ms.
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return Some(st.success()),
            Ok(None) => {}
            Err(_) => return None,
        }
        if monotonic_ns() >= deadline_ns || crate::signals::interrupted() {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs one transfer through a fresh emulator built from `ns`.
pub fn run_transfer(ns: &NamespaceConfig, spec: &TransferSpec) -> Result<TransferOutcome> {
    std::fs::create_dir_all(&spec.work_dir)
        .with_context(|| format!("creating {}", spec.work_dir.display()))?;
    let report_path = spec.work_dir.join(format!("{}.jsonl", spec.name));
    let recv_dir = spec.work_dir.join(format!("{}.recv", spec.name));
    let identity = spec.work_dir.join("identity");
    let recv_json = spec.work_dir.join(format!("{}.recv.json", spec.name));
    let _ = std::fs::remove_file(&report_path);
    let _ = std::fs::remove_file(&recv_json);
    // tcp_cubic parameters: exclusive while changed, shared otherwise (serialised runs).
    let guard = if spec.tcp {
        Some(CubicParamsGuard::apply(&spec.kernel_params, 1800.0).context("tcp_cubic parameters")?)
    } else {
        None
    };
    let emu = NamespaceEmulator::start(ns.clone()).context("starting the namespace emulator")?;
    let peer = format!("{}:{RECV_PORT}", ns.receiver_addr);
    let payload = (ns.mtu - 28).to_string();

    let mut receiver = match start_receiver(&emu, spec, &peer, &payload, &identity) {
        Ok(r) => r,
        Err(e) => {
            let run = emu.stop();
            bail!(
                "{e:#}; emulator: {}",
                match run {
                    Ok(r) => r.line(),
                    Err(e) => format!("{e:#}"),
                }
            );
        }
    };

    let mut scmd = sender_command(&emu, spec, &peer, &payload, &identity, &report_path)?;
    let slog = std::fs::File::create(spec.work_dir.join(format!("{}.send.log", spec.name)))
        .context("sender log")?;
    scmd.stdout(if spec.echo {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stderr(slog);
    let counters0 = spec.tcp.then(|| sender_counters(&emu)).flatten();
    let start_ns = monotonic_ns();
    let mut sender = scmd
        .spawn()
        .context("starting hare-send in the sender namespace")?;
    let echo = sender.stdout.take().map(|out| {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
            }
        })
    });
    let deadline = start_ns + (spec.timeout_s * 1e9) as u64;
    // The two are reaped one after the other by this thread: the reaped children's CPU
    // time around each wait is that process's own.
    let cpu0 = reaped_children_cpu_s();
    let sender_ok = wait_child(&mut sender, deadline);
    let sender_elapsed_s = monotonic_ns().saturating_sub(start_ns) as f64 / 1e9;
    let cpu1 = reaped_children_cpu_s();
    let receiver_ok = wait_child(&mut receiver, monotonic_ns() + 5_000_000_000);
    let cpu2 = reaped_children_cpu_s();
    if let Some(e) = echo {
        let _ = e.join();
    }
    let tcp_reductions = counters0
        .zip(sender_counters(&emu))
        .map(|(a, b)| b.since(&a));
    let offset_s = start_ns.saturating_sub(emu.origin_ns()) as f64 / 1e9;
    let emulator = emu.stop().context("stopping the emulator")?;
    if let Some(g) = guard {
        g.restore().context("restoring tcp_cubic parameters")?;
    }

    let run = finish_sender_report(&report_path, ns, &emulator, sender_ok, offset_s)?;
    let emu_path = spec.work_dir.join(format!("{}.emu.json", spec.name));
    std::fs::write(&emu_path, serde_json::to_string_pretty(&emulator)?)
        .with_context(|| format!("writing {}", emu_path.display()))?;
    let receiver_run = write_receiver_report(spec, ns, &recv_json)?;
    Ok(TransferOutcome {
        run,
        emulator,
        sender_ok,
        sender_elapsed_s,
        receiver_ok,
        report_path,
        recv_dir,
        receiver_run,
        tcp_reductions,
        sender_cpu_s: cpu1.zip(cpu0).map(|(b, a)| b - a),
        receiver_cpu_s: cpu2.zip(cpu1).map(|(b, a)| b - a),
    })
}

/// User + system CPU seconds of this process's children reaped so far
/// (`getrusage(RUSAGE_CHILDREN)`); the difference around one child's wait is that child's
/// own, as long as nothing else of this process reaps a child meanwhile.
pub fn reaped_children_cpu_s() -> Option<f64> {
    // SAFETY: getrusage writes only into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(u.ru_utime) + tv(u.ru_stime))
}

/// Starts hare-recv for `spec` in the receiver namespace, listening on `peer`, and waits
/// (at most 20 s) until it says it listens; its log goes to `<name>.recv.log`.
pub(super) fn start_receiver(
    emu: &NamespaceEmulator,
    spec: &TransferSpec,
    peer: &str,
    payload: &str,
    identity: &Path,
) -> Result<Child> {
    let recv_json = spec.work_dir.join(format!("{}.recv.json", spec.name));
    let recv_dir = spec.work_dir.join(format!("{}.recv", spec.name));
    let mut rcmd = receiver_command(emu, spec, peer, payload, identity, &recv_json, &recv_dir)?;
    let rlog = std::fs::File::create(spec.work_dir.join(format!("{}.recv.log", spec.name)))
        .context("receiver log")?;
    rcmd.stdout(Stdio::piped()).stderr(rlog);
    let mut receiver = rcmd
        .spawn()
        .context("starting hare-recv in the receiver namespace")?;
    let out = receiver.stdout.take().context("receiver stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains("listening on") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(std::time::Duration::from_secs(20)).is_err() {
        let _ = receiver.kill();
        let _ = receiver.wait();
        bail!(
            "hare-recv did not start listening within 20 s (see {}.recv.log)",
            spec.name
        );
    }
    Ok(receiver)
}

/// The token this process's file runs authorise their sender with (one per process, from
/// the clock and the process id: unguessable enough for namespaces nobody else can reach).
fn job_token() -> &'static str {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("emu-{:x}-{nanos:x}", std::process::id())
    })
}

/// The hare-recv command in the receiver's namespace: one transfer, its JSON summary to
/// `recv_json`, files (if any) into `recv_dir`.
fn receiver_command(
    emu: &NamespaceEmulator,
    spec: &TransferSpec,
    peer: &str,
    payload: &str,
    identity: &Path,
    recv_json: &Path,
    recv_dir: &Path,
) -> Result<Command> {
    let mut rcmd = emu.command(
        Side::Receiver,
        &spec.bin_dir.join("hare-recv").to_string_lossy(),
    )?;
    rcmd.arg("--listen")
        .arg(peer)
        .arg("--identity")
        .arg(identity)
        .arg("-1")
        .arg("-q")
        .arg("--json")
        .arg(recv_json)
        .arg("--mtu")
        .arg(payload);
    if spec.tcp {
        rcmd.arg("--tcp").arg("--cc").arg(&spec.cc);
    } else if let Some(w) = &spec.window {
        rcmd.arg("-w").arg(w);
    }
    if !spec.files.is_empty() {
        std::fs::create_dir_all(recv_dir)
            .with_context(|| format!("creating {}", recv_dir.display()))?;
        rcmd.arg("--dir").arg(recv_dir);
        if spec.tcp {
            // Kernel TCP carries no TLS, so hare-recv takes files over it only when told
            // --open; the namespaces are the emulator's own, nobody else can reach the port.
            rcmd.arg("--open");
        } else {
            // A receiver that writes files must know who may write them: the run's token.
            rcmd.env("HARE_TOKEN", job_token());
        }
    }
    Ok(rcmd)
}

/// The hare-send command in the sender's namespace, writing its report to `report_path`.
pub(super) fn sender_command(
    emu: &NamespaceEmulator,
    spec: &TransferSpec,
    peer: &str,
    payload: &str,
    identity: &Path,
    report_path: &Path,
) -> Result<Command> {
    let mut scmd = emu.command(
        Side::Sender,
        &spec.bin_dir.join("hare-send").to_string_lossy(),
    )?;
    if !spec.echo {
        scmd.arg("-q");
    }
    if !spec.files.is_empty() && !spec.tcp {
        scmd.env("HARE_TOKEN", job_token());
    }
    scmd.arg("-i")
        .arg(spec.interval.to_string())
        .arg("--mtu")
        .arg(payload)
        .arg("--jsonl")
        .arg(report_path)
        .arg("--cc")
        .arg(&spec.cc);
    if spec.tcp {
        scmd.arg("--tcp");
        if let Some(p) = spec.pacing_rate {
            scmd.arg("--pacing-rate").arg(p.to_string());
        }
    } else {
        scmd.arg("--cert").arg(identity.join("cert.pem"));
        if let Some(w) = &spec.window {
            scmd.arg("-w").arg(w);
        }
        if spec.connections > 1 {
            scmd.arg("-C").arg(spec.connections.to_string());
        }
    }
    if let Some(s) = spec.seconds {
        scmd.arg("-T").arg(s.to_string());
    }
    if let Some(n) = spec.bytes {
        scmd.arg("-n").arg(n.to_string());
    }
    for f in &spec.files {
        scmd.arg(f);
    }
    scmd.arg(peer);
    Ok(scmd)
}

/// Reads the sender's report back and rewrites it with the path, the emulator's verdict
/// and the path's events; `None` when the sender wrote none.
pub(super) fn finish_sender_report(
    report_path: &Path,
    ns: &NamespaceConfig,
    emulator: &EmulatorRun,
    sender_ok: Option<bool>,
    offset_s: f64,
) -> Result<Option<Run>> {
    Ok(match std::fs::File::open(report_path) {
        Ok(f) => {
            let mut run =
                jsonl::read_run(BufReader::new(f), &report_path.display().to_string())?.run;
            let end_s = run.summary.as_ref().map_or(0.0, |s| s.seconds);
            run.header.path = Some(path_info(&ns.path));
            if let Some(s) = run.summary.as_mut() {
                emulator.apply_to(s);
                if sender_ok != Some(true) {
                    s.valid = false;
                    s.invalid_reasons
                        .push("hare-send did not exit successfully".into());
                }
            }
            run.events.extend(path_events(&emulator.path, offset_s));
            run.events.extend(emulator.events(end_s));
            run.events.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
            let f = std::fs::File::create(report_path)
                .with_context(|| format!("rewriting {}", report_path.display()))?;
            jsonl::write_run(std::io::BufWriter::new(f), &run)?;
            Some(run)
        }
        Err(_) => None,
    })
}

/// The receiver's summary with the path, also written as hare-report records beside the
/// sender's report.
fn write_receiver_report(
    spec: &TransferSpec,
    ns: &NamespaceConfig,
    recv_json: &Path,
) -> Result<Option<Run>> {
    let receiver_run = read_receiver_run(recv_json)?.map(|mut r| {
        r.header.path = Some(path_info(&ns.path));
        r
    });
    if let Some(r) = &receiver_run {
        // The receiver's side as hare-report records too, beside the sender's.
        let p = spec.work_dir.join(format!("{}.recv.jsonl", spec.name));
        let f = std::fs::File::create(&p).with_context(|| format!("writing {}", p.display()))?;
        jsonl::write_run(std::io::BufWriter::new(f), r)?;
    }
    Ok(receiver_run)
}

/// The TCP recovery counters of the sender's namespace (`None` when they cannot be read).
fn sender_counters(emu: &NamespaceEmulator) -> Option<TcpReductions> {
    let out = emu
        .command(Side::Sender, "cat")
        .ok()?
        .arg("/proc/net/netstat")
        .output()
        .ok()?;
    TcpReductions::parse(&String::from_utf8_lossy(&out.stdout))
}

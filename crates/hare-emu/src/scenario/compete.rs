//! Competing flows through one namespace-mode emulator: every flow a hare-send / hare-recv
//! pair (QUIC with a hare-cc controller, or kernel TCP with the kernel's congestion control
//! of a name), each on its own port, started at its own time over the one emulated
//! bottleneck; the emulator's self-check judges the whole run.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use hare_report::Run;

use crate::check::EmulatorRun;
use crate::cubic_sysfs::CubicParams;
use crate::namespace::{NamespaceConfig, NamespaceEmulator};
use crate::wall_clock::monotonic_ns;

use super::transfer::{
    finish_sender_report, sender_command, start_receiver, wait_child, TransferSpec, RECV_PORT,
};

/// One flow of a competition.
#[derive(Debug, Clone)]
pub struct CompeteFlow {
    /// Name for its files (`<run>-f0`).
    pub name: String,
    /// Kernel TCP with the kernel's congestion control `cc`, else QUIC with hare-cc's `cc`.
    pub tcp: bool,
    /// The controller: hare-cc grammar, or a kernel name.
    pub cc: String,
    /// Seconds after the first flow's start.
    pub start_s: f64,
    /// Seconds to send (`-T`), or
    pub seconds: Option<f64>,
    /// bytes to send (`-n`).
    pub bytes: Option<u64>,
}

/// A competition.
#[derive(Debug, Clone)]
pub struct CompeteSpec {
    /// The flows.
    pub flows: Vec<CompeteFlow>,
    /// `-w` of the QUIC flows (kernel TCP autotunes).
    pub window: Option<String>,
    /// Give up on a flow this long after its start, seconds.
    pub timeout_s: f64,
    /// Directory with `hare-send` and `hare-recv`.
    pub bin_dir: PathBuf,
    /// Where reports and logs go.
    pub work_dir: PathBuf,
}

/// What came of one flow.
#[derive(Debug)]
pub struct CompeteFlowOutcome {
    /// Its sender's report with the emulator's verdict folded in (`None`: none written).
    pub run: Option<Run>,
    /// Seconds from the first flow's start to this flow's.
    pub offset_s: f64,
    /// The sender's exit status (`None`: killed at the time limit).
    pub sender_ok: Option<bool>,
}

/// What came of a competition.
#[derive(Debug)]
pub struct CompeteOutcome {
    /// Per flow, in the order given.
    pub flows: Vec<CompeteFlowOutcome>,
    /// The emulator's self-check over the whole run.
    pub emulator: EmulatorRun,
}

impl CompeteOutcome {
    /// Valid emulator, every sender succeeded, every report valid.
    pub fn valid(&self) -> bool {
        self.emulator.valid
            && self.flows.iter().all(|f| {
                f.sender_ok == Some(true)
                    && f.run
                        .as_ref()
                        .and_then(|r| r.summary.as_ref())
                        .is_some_and(|s| s.valid)
            })
    }
}

/// Makes the kernel's congestion control `alg` usable: it must be available (its module
/// loaded; `modprobe tcp_<alg>` is tried once) and is added to
/// `net.ipv4.tcp_allowed_congestion_control`. A kernel without it is refused by name.
pub fn ensure_kernel_cc(alg: &str) -> Result<()> {
    const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
    let read = |p: &str| std::fs::read_to_string(p).with_context(|| format!("reading {p}"));
    let has = |list: &str| list.split_whitespace().any(|a| a == alg);
    if !has(&read(AVAILABLE)?) {
        // Best effort: a built-in or missing module leaves the list as it was.
        let _ = std::process::Command::new("modprobe")
            .arg(format!("tcp_{alg}"))
            .stderr(Stdio::null())
            .status();
        let available = read(AVAILABLE)?;
        if !has(&available) {
            bail!(
                "this kernel has no TCP congestion control `{alg}` (available: {})",
                available.trim()
            );
        }
    }
    let allowed = read(ALLOWED)?;
    if !has(&allowed) {
        std::fs::write(ALLOWED, format!("{} {alg}", allowed.trim()))
            .with_context(|| format!("adding {alg} to {ALLOWED}"))?;
    }
    Ok(())
}

/// The transfer spec hare-send / hare-recv of flow `f` run with.
fn transfer_spec(spec: &CompeteSpec, f: &CompeteFlow) -> TransferSpec {
    TransferSpec {
        name: f.name.clone(),
        tcp: f.tcp,
        cc: f.cc.clone(),
        pacing_rate: None,
        kernel_params: CubicParams::default(),
        seconds: f.seconds,
        bytes: f.bytes,
        files: Vec::new(),
        window: if f.tcp { None } else { spec.window.clone() },
        interval: 1.0,
        timeout_s: spec.timeout_s,
        bin_dir: spec.bin_dir.clone(),
        work_dir: spec.work_dir.clone(),
        echo: false,
        connections: 1,
    }
}

/// Runs every flow of `spec` through a fresh emulator built from `ns`.
pub fn run_compete(ns: &NamespaceConfig, spec: &CompeteSpec) -> Result<CompeteOutcome> {
    std::fs::create_dir_all(&spec.work_dir)
        .with_context(|| format!("creating {}", spec.work_dir.display()))?;
    for f in spec.flows.iter().filter(|f| f.tcp) {
        ensure_kernel_cc(&f.cc)?;
    }
    let identity = spec.work_dir.join("identity");
    let emu = NamespaceEmulator::start(ns.clone()).context("starting the namespace emulator")?;
    let payload = (ns.mtu - 28).to_string();
    let specs: Vec<TransferSpec> = spec.flows.iter().map(|f| transfer_spec(spec, f)).collect();
    let peers: Vec<String> = (0..specs.len())
        .map(|i| format!("{}:{}", ns.receiver_addr, RECV_PORT + 1 + i as u16))
        .collect();
    let mut receivers: Vec<Child> = Vec::new();
    for (t, peer) in specs.iter().zip(&peers) {
        match start_receiver(&emu, t, peer, &payload, &identity) {
            Ok(r) => receivers.push(r),
            Err(e) => {
                stop_all(&mut receivers);
                let run = emu.stop();
                bail!(
                    "{e:#}; emulator: {}",
                    run.map_or_else(|e| format!("{e:#}"), |r| r.line())
                );
            }
        }
    }
    let (senders, t0) = start_senders(&emu, spec, &specs, &peers, &payload, &identity);
    let senders = match senders {
        Ok(s) => s,
        Err(e) => {
            stop_all(&mut receivers);
            let _ = emu.stop();
            return Err(e);
        }
    };
    let mut results = Vec::new();
    for ((mut child, report), f) in senders.into_iter().zip(&spec.flows) {
        let deadline = t0 + ((f.start_s + spec.timeout_s) * 1e9) as u64;
        results.push((wait_child(&mut child, deadline), report));
    }
    for r in &mut receivers {
        let _ = wait_child(r, monotonic_ns() + 5_000_000_000);
    }
    let origin_offset_s = t0.saturating_sub(emu.origin_ns()) as f64 / 1e9;
    let emulator = emu.stop().context("stopping the emulator")?;
    let mut flows = Vec::new();
    for ((sender_ok, report), f) in results.into_iter().zip(&spec.flows) {
        let offset = origin_offset_s + f.start_s;
        let run = finish_sender_report(&report, ns, &emulator, sender_ok, offset)?;
        flows.push(CompeteFlowOutcome {
            run,
            offset_s: f.start_s,
            sender_ok,
        });
    }
    Ok(CompeteOutcome { flows, emulator })
}

/// Starts each sender at its start time (from the first one's); returns each child with
/// its report path, and the monotonic time of the first start.
fn start_senders(
    emu: &NamespaceEmulator,
    spec: &CompeteSpec,
    specs: &[TransferSpec],
    peers: &[String],
    payload: &str,
    identity: &Path,
) -> (Result<Vec<(Child, PathBuf)>>, u64) {
    let t0 = monotonic_ns();
    let mut out = Vec::new();
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by(|&a, &b| spec.flows[a].start_s.total_cmp(&spec.flows[b].start_s));
    let mut slots: Vec<Option<(Child, PathBuf)>> = (0..specs.len()).map(|_| None).collect();
    for i in order {
        let at = t0 + (spec.flows[i].start_s * 1e9) as u64;
        let now = monotonic_ns();
        if at > now {
            std::thread::sleep(Duration::from_nanos(at - now));
        }
        let t = &specs[i];
        let report = t.work_dir.join(format!("{}.jsonl", t.name));
        let _ = std::fs::remove_file(&report);
        let started =
            sender_command(emu, t, &peers[i], payload, identity, &report).and_then(|mut cmd| {
                let log = std::fs::File::create(t.work_dir.join(format!("{}.send.log", t.name)))
                    .context("sender log")?;
                cmd.stdout(Stdio::null()).stderr(log);
                cmd.spawn()
                    .context("starting hare-send in the sender namespace")
            });
        match started {
            Ok(child) => slots[i] = Some((child, report)),
            Err(e) => {
                let mut started: Vec<Child> = slots.into_iter().flatten().map(|s| s.0).collect();
                stop_all(&mut started);
                return (Err(e), t0);
            }
        }
    }
    out.extend(slots.into_iter().flatten());
    (Ok(out), t0)
}

/// Kills and reaps `children`.
fn stop_all(children: &mut [Child]) {
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

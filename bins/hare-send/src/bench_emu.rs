//! `hare-send bench --connections ... --rate R --rtt D [--loss P]`: each case through a fresh
//! namespace emulator (hare-emu's `run_transfer`, as `hare-lab transfer -C N` runs it), with
//! the emulator's own VALID / INVALID verdict beside each run; INVALID runs are reported and
//! left out of the medians. Needs root (namespaces and TUN devices).

use std::path::Path;

use anyhow::{bail, Context, Result};
use hare_emu::path_args::PathArgs;
use hare_emu::scenario::transfer::{find_bins, run_transfer, TransferOutcome, TransferSpec};
use hare_emu::NamespaceConfig;
use hare_link::{BitRate, TimeSpan};
use hare_transfer::bench::load_average;
use hare_transfer::bench_conns::loopback::{file_hash, ConnLoad};
use hare_transfer::bench_conns::ConnRun;

use crate::bench_args::{what, Checked, ConnArgs};

/// Namespace instance of the benchmark's emulators (one at a time).
const INSTANCE: &str = "hsbench";

/// The emulated path: a symmetric bottleneck with a one-BDP drop-tail queue, Bernoulli loss
/// on the forward link.
pub struct EmuPath {
    /// `--rate`.
    pub rate: BitRate,
    /// `--rtt`.
    pub rtt: TimeSpan,
    /// `--loss`.
    pub loss: Option<f64>,
}

/// An error saying why, when namespace mode cannot run here (not root, no TUN, no `ip`).
pub fn check_available() -> Result<()> {
    match hare_emu::netns::unavailable_reason() {
        Some(why) => {
            bail!("bench --rate runs through the namespace emulator, which cannot run here: {why}")
        }
        None => Ok(()),
    }
}

/// Runs every round, N after N, each through a fresh emulator.
pub fn run(
    a: &ConnArgs,
    c: &Checked,
    p: &EmuPath,
    exe_dir: &Path,
    scratch: &Path,
) -> Result<Vec<ConnRun>> {
    check_available()?;
    hare_emu::signals::install()?;
    let path = PathArgs {
        path: None,
        rate: p.rate,
        rtt: p.rtt,
        queue: None,
        queue_packets: None,
        loss: p.loss,
        seed: 1,
    }
    .to_path()
    .context("the emulated path")?;
    let ns = NamespaceConfig::new(INSTANCE, path);
    let bin_dir = find_bins(Some(exe_dir))?;
    println!(
        "hare bench --connections: namespace emulator {} x {}, loss {}, {}, -w {}, load average before: {}",
        p.rate,
        p.rtt,
        p.loss.map_or_else(|| "none".to_owned(), |l| l.to_string()),
        what(c),
        a.window.as_deref().unwrap_or("auto"),
        load_average()
    );
    let mut out = Vec::new();
    for round in 1..=c.rounds {
        for &n in &c.list {
            if hare_emu::signals::interrupted() {
                bail!("interrupted");
            }
            let spec = spec(a, c, n, round, &bin_dir, scratch, p);
            let o = run_transfer(&ns, &spec)
                .with_context(|| format!("round {round}, -C {n}: the emulated transfer"))?;
            let r = conn_run(&o, &c.load, n, round)?;
            let verdict = if r.invalid.is_none() { "VALID" } else { "" };
            println!("  {} {verdict}", r.line());
            out.push(r);
        }
    }
    Ok(out)
}

/// The transfer of one case.
fn spec(
    a: &ConnArgs,
    c: &Checked,
    n: u16,
    round: usize,
    bin_dir: &Path,
    scratch: &Path,
    p: &EmuPath,
) -> TransferSpec {
    let (seconds, files) = match &c.load {
        ConnLoad::Seconds(t) => (Some(*t), Vec::new()),
        ConnLoad::File(f) => (None, vec![f.clone()]),
    };
    TransferSpec {
        name: format!("r{round}-c{n}"),
        tcp: false,
        cc: "cubic@linux-6".into(),
        pacing_rate: None,
        kernel_params: hare_emu::CubicParams::default(),
        seconds,
        bytes: None,
        files,
        window: a.window.clone(),
        interval: 1.0,
        timeout_s: timeout_s(&c.load, p.rate),
        bin_dir: bin_dir.to_path_buf(),
        work_dir: scratch.to_path_buf(),
        echo: false,
        connections: n,
    }
}

/// Time limit of one run: `-T` plus a minute, or for a file 20 times its time at the
/// bottleneck rate (at least 10 minutes).
fn timeout_s(load: &ConnLoad, rate: BitRate) -> f64 {
    match load {
        ConnLoad::Seconds(t) => t + 60.0,
        ConnLoad::File(f) => {
            let bytes = std::fs::metadata(f).map_or(0, |m| m.len());
            let at_rate = bytes as f64 * 8.0 / rate.bits_per_sec().max(1) as f64;
            (20.0 * at_rate).max(600.0)
        }
    }
}

/// The run's figures and verdict; an end that failed or a file that arrived different is an
/// error (a wrong transfer is not measured).
fn conn_run(o: &TransferOutcome, load: &ConnLoad, n: u16, round: usize) -> Result<ConnRun> {
    let where_ = o.report_path.display();
    if o.sender_ok != Some(true) || o.receiver_ok != Some(true) {
        bail!(
            "round {round}, -C {n}: hare-send {:?}, hare-recv {:?} (exit status; None: killed at the time limit); emulator {}; see {where_}",
            o.sender_ok,
            o.receiver_ok,
            o.emulator.line()
        );
    }
    let s = o
        .run
        .as_ref()
        .and_then(|r| r.summary.as_ref())
        .with_context(|| format!("round {round}, -C {n}: no summary in {where_}"))?;
    if let ConnLoad::File(f) = load {
        let name = f.file_name().context("--file has no file name")?;
        let got = o.recv_dir.join(name);
        if !s.completed || file_hash(f)? != file_hash(&got)? {
            bail!(
                "round {round}, -C {n}: {} did not arrive complete and byte-identical",
                got.display()
            );
        }
        let _ = std::fs::remove_dir_all(&o.recv_dir);
    }
    let mut reasons = o.emulator.invalid_reasons.clone();
    if reasons.is_empty() {
        reasons.extend(s.invalid_reasons.iter().cloned());
    }
    if reasons.is_empty() {
        reasons.push("the report says INVALID".into());
    }
    Ok(ConnRun {
        connections: n,
        round,
        bytes: s.bytes,
        seconds: s.seconds,
        sender_cpu_s: o.sender_cpu_s,
        receiver_cpu_s: o.receiver_cpu_s,
        invalid: (!o.valid()).then(|| reasons.join("; ")),
    })
}

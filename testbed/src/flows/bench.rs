//! `hare-lab bench flows`: what sharing a link costs. N flows through one 1 Gbit/s x 40 ms
//! bottleneck against one flow alone on the same path, for the same virtual time and so
//! about the same packet rate, run back to back in one process: the ratio of their wall
//! (and CPU) times, and the memory each extra flow adds.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use hare_link::{BitRate, ByteSize, PathConfig, TimeSpan};
use hare_sim::{flow_seed, simulate_flows, Flow, SimConfig, Windows, Workload};

/// The target: N flows cost at most this many times one flow's wall time.
pub const TARGET_RATIO: f64 = 1.5;

/// One measured run.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Flows in the run.
    pub flows: u32,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds of the process.
    pub cpu_s: Option<f64>,
    /// Datagrams moved over both directions of every flow.
    pub datagrams: u64,
    /// Payload bytes delivered by all flows.
    pub bytes: u64,
    /// Peak RSS during the run (VmHWM after a reset), bytes.
    pub peak_rss: Option<u64>,
}

/// One flow against `flows` flows.
#[derive(Debug, Clone, Copy)]
pub struct FlowsBench {
    /// The single flow.
    pub one: Measured,
    /// The shared link.
    pub many: Measured,
}

impl FlowsBench {
    /// Wall time of the shared run over the single flow's.
    pub fn ratio(&self) -> f64 {
        self.many.wall_s / self.one.wall_s.max(1e-9)
    }

    /// Peak memory each flow beyond the first adds, bytes.
    pub fn memory_per_flow(&self) -> Option<u64> {
        let extra = self.many.peak_rss?.saturating_sub(self.one.peak_rss?);
        Some(extra / u64::from(self.many.flows.saturating_sub(1).max(1)))
    }
}

/// The path: 1 Gbit/s x 40 ms, 1 BDP (5 MB) of queue.
fn path() -> PathConfig {
    PathConfig::symmetric(
        BitRate(1_000_000_000),
        TimeSpan(40_000_000),
        Some(ByteSize(5_000_000)),
    )
}

/// `n` CUBIC flows starting together, each sending for `seconds`.
fn flows(n: u32, seconds: u64) -> Vec<Flow> {
    let p = path();
    (0..n)
        .map(|i| {
            let mut cfg = SimConfig::new(
                format!("bench-f{i}"),
                p.forward.clone(),
                p.reverse.clone(),
                "cubic@linux-6",
            )
            .with_seed(flow_seed(1, i));
            cfg.windows = Windows::uniform(32 << 20);
            cfg.workload = Workload::Duration(Duration::from_secs(seconds));
            cfg.fine_interval = None;
            Flow {
                cfg,
                start: Duration::ZERO,
                extra_delay: Duration::ZERO,
            }
        })
        .collect()
}

fn measure(n: u32, seconds: u64) -> Result<Measured> {
    hare_sim::reset_peak_rss();
    let cpu0 = hare_sim::process_cpu_seconds();
    let out = simulate_flows(&path().forward, &flows(n, seconds))
        .with_context(|| format!("{n} flow(s)"))?;
    let cpu = match (cpu0, hare_sim::process_cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let mut datagrams = 0;
    let mut bytes = 0;
    for (i, r) in out.flows.iter().enumerate() {
        let o = r.as_ref().map_err(|e| anyhow::anyhow!("flow {i}: {e}"))?;
        datagrams += o.datagrams;
        bytes += o.run.summary.as_ref().map_or(0, |s| s.bytes);
    }
    Ok(Measured {
        flows: n,
        wall_s: out.wall_seconds,
        cpu_s: cpu,
        datagrams,
        bytes,
        peak_rss: hare_sim::peak_rss_bytes(),
    })
}

/// Runs one flow, then `n` flows, for `seconds` of virtual time each, and prints the
/// comparison to `out`.
pub fn bench_flows(n: u32, seconds: u64, out: &mut dyn Write) -> Result<FlowsBench> {
    writeln!(
        out,
        "1 Gbit/s x 40 ms, 5 MB queue, cubic@linux-6, {seconds} s of virtual time"
    )?;
    let one = measure(1, seconds)?;
    let many = measure(n, seconds)?;
    let b = FlowsBench { one, many };
    for m in [&b.one, &b.many] {
        writeln!(
            out,
            "{} flow(s): {:>9} datagrams, {:>7.1} MB delivered, peak RSS {}",
            m.flows,
            m.datagrams,
            m.bytes as f64 / 1e6,
            m.peak_rss.map_or("unknown".into(), |r| format!(
                "{:.1} MiB",
                r as f64 / 1048576.0
            ))
        )?;
    }
    let cpu = match (b.many.cpu_s, b.one.cpu_s) {
        (Some(m), Some(o)) if o > 0.0 => format!("{:.2}x", m / o),
        _ => "unknown".into(),
    };
    writeln!(
        out,
        "wall time {n} flows / 1 flow: {:.2}x (target <= {TARGET_RATIO}x: {}); CPU time {cpu}; \
         datagrams {:.2}x",
        b.ratio(),
        if b.ratio() <= TARGET_RATIO {
            "PASS"
        } else {
            "MISS"
        },
        b.many.datagrams as f64 / b.one.datagrams.max(1) as f64
    )?;
    match b.memory_per_flow() {
        Some(m) => writeln!(
            out,
            "memory per extra flow: {:.1} MiB",
            m as f64 / 1048576.0
        )?,
        None => writeln!(out, "memory per extra flow: unknown (no /proc)")?,
    }
    Ok(b)
}

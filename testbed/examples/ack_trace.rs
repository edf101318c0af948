//! Per-ACK trace of one scenario run as CSV on stdout: the measurement behind the reasons
//! docs/REPLAY.md gives beside the 2011 and 2007 rows.
//!
//! `cargo run --release -p hare-lab --example ack_trace -- SCENARIO.toml [SECONDS] [--paced]`
//!
//! Columns: virtual time (s), cwnd and ssthresh (segments), packets newly ACKed by the frame,
//! the RTT sample (us), bytes in flight and the bottleneck queue (packets of the scenario's
//! MTU + IP/UDP header).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use hare_lab::runner::Job;
use hare_lab::scenario::Scenario;
use hare_lab::thread_data::ThreadData;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        bail!("usage: ack_trace SCENARIO.toml [SECONDS] [--paced]");
    };
    let secs: f64 = match args.get(1).filter(|a| !a.starts_with("--")) {
        Some(s) => s.parse().with_context(|| format!("seconds {s:?}"))?,
        None => 3.0,
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        bail!("SECONDS must be more than 0 and at most 3600, not {secs}");
    }
    let paced = args.iter().any(|a| a == "--paced");
    if let Ok(filter) = std::env::var("RUST_LOG") {
        // hare-cc's decisions (target `hare_cc`) on stderr, e.g. RUST_LOG=hare_cc=debug.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .without_time()
            .with_ansi(false)
            .init();
    }
    let threads = ThreadData::embedded().context("thread data")?;
    let scenario =
        Scenario::load(&PathBuf::from(file), &threads).context("loading the scenario")?;
    let mut job = Job::all_of(&scenario, true)
        .into_iter()
        .next()
        .context("scenario has no run")?;
    job.quinn_paced = paced;
    let mut cfg = job.sim_config();
    // The sender writes for SECONDS (as `nuttcp -T`); the run ends when that is delivered.
    cfg.workload = hare_sim::Workload::Duration(Duration::from_secs_f64(secs));
    cfg.limits.max_virtual_time = None;
    cfg.fine_interval = None;
    let out = hare_sim::simulate(&cfg, &mut |_| {}).context("simulating")?;
    let pkt = u64::from(cfg.mtu) + u64::from(cfg.ip_overhead);
    println!("t_s,cwnd,ssthresh,acked,rtt_us,in_flight,queue_pkts");
    for p in &out.trace {
        let ssthresh = p.ssthresh_bytes.map_or(String::new(), |b| {
            (b / u64::from(cfg.mtu.max(1))).to_string()
        });
        let rtt = p.rtt_sample_us.map_or(String::new(), |r| r.to_string());
        println!(
            "{:.6},{},{},{},{},{},{}",
            p.t_s,
            p.cwnd_segments,
            ssthresh,
            p.acked_packets,
            rtt,
            p.in_flight_bytes,
            p.queue_bytes / pkt.max(1)
        );
    }
    if let Some(s) = &out.run.summary {
        if let Some(e) = &s.slow_start_exit {
            eprintln!(
                "slow-start exit: cwnd {} by {}",
                e.cwnd_segments,
                e.reason.as_str()
            );
        }
    }
    Ok(())
}

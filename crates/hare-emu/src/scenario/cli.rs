//! `kernel-vs-hare`: run the scenario (or part of it) and write its table and plots.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use hare_link::TimeSpan;

use super::runner::{run_plan, write_outputs, RunOptions, RunResult};
use super::transfer::find_bins;
use super::KvhScenario;

/// Options.
#[derive(Debug, Args)]
pub struct KernelVsHareArgs {
    /// Scenario file.
    #[arg(long, default_value = "testbed/scenarios/kernel-vs-hare.toml")]
    pub scenario: PathBuf,
    /// Output directory (runs/, results.json, table.md, cwnd-*.svg). Runs already in its
    /// results.json are not repeated.
    #[arg(long, default_value = "target/kernel-vs-hare")]
    pub out: PathBuf,
    /// Override the repetitions.
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Override each transfer's duration.
    #[arg(long)]
    pub duration: Option<TimeSpan>,
    /// Only runs whose id contains every one of these (repeatable), e.g. `--only 100m --only q1bdp`.
    #[arg(long)]
    pub only: Vec<String>,
    /// Directory of hare-send and hare-recv (default: next to this executable, $HARE_BIN_DIR).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Namespace instance name.
    #[arg(long, default_value = "kvh")]
    pub instance: String,
    /// Pin the emulator thread to this CPU.
    #[arg(long)]
    pub pin: Option<usize>,
    /// Print the plan and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Run again the runs results.json holds as invalid.
    #[arg(long)]
    pub retry_invalid: bool,
    /// Only rebuild table.md and the plots from results.json.
    #[arg(long)]
    pub table_only: bool,
}

/// Runs the subcommand.
pub fn run(a: KernelVsHareArgs) -> Result<()> {
    crate::signals::install()?;
    let text = std::fs::read_to_string(&a.scenario)
        .with_context(|| format!("reading {}", a.scenario.display()))?;
    let mut s =
        KvhScenario::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.scenario.display()))?;
    if let Some(r) = a.repetitions {
        s.repetitions = r;
    }
    if let Some(d) = a.duration {
        s.duration = d;
    }
    let plan = s.plan();
    if a.dry_run {
        for p in plan
            .iter()
            .filter(|p| a.only.iter().all(|o| p.id.contains(o.as_str())))
        {
            println!(
                "{}  cc={} params={} pacing={:?}",
                p.id,
                p.cc,
                p.kernel_params.describe(),
                p.pacing_rate
            );
        }
        return Ok(());
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let results: Vec<RunResult> = if a.table_only {
        let p = a.out.join("results.json");
        let mut r: Vec<RunResult> = serde_json::from_str(
            &std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?,
        )?;
        super::runner::refresh_metrics(&s, &mut r);
        r
    } else {
        if let Some(why) = crate::netns::unavailable_reason() {
            bail!("kernel-vs-hare needs namespace mode: {why}");
        }
        let opts = RunOptions {
            out: a.out.clone(),
            bin_dir: find_bins(a.bin_dir.as_deref())?,
            only: a.only.clone(),
            instance: a.instance.clone(),
            pin_cpu: a.pin,
            retry_invalid: a.retry_invalid,
        };
        run_plan(&s, &plan, &opts)?
    };
    let files = write_outputs(&s, &results, &a.out)?;
    print!(
        "{}",
        std::fs::read_to_string(a.out.join("table.md")).unwrap_or_default()
    );
    for f in files {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}

/// `transfer` options.
#[derive(Debug, Args)]
pub struct TransferArgs {
    /// The path.
    #[command(flatten)]
    pub path: crate::path_args::PathArgs,
    /// Kernel TCP (hare-send --tcp) instead of QUIC.
    #[arg(long)]
    pub tcp: bool,
    /// --cc for hare-send (hare-cc grammar; a kernel name with --tcp).
    #[arg(long, default_value = "cubic@linux-6")]
    pub cc: String,
    /// Files to send (received into OUT/<name>.recv and compared byte for byte).
    #[arg(long = "file")]
    pub files: Vec<PathBuf>,
    /// Bulk by time, seconds.
    #[arg(short = 'T')]
    pub seconds: Option<f64>,
    /// Bulk by size, bytes.
    #[arg(short = 'n')]
    pub bytes: Option<u64>,
    /// QUIC windows (hare-send/-recv -w).
    #[arg(short = 'w', default_value = "64m")]
    pub window: String,
    /// QUIC connections carrying the job (hare-send -C).
    #[arg(short = 'C', long = "connections", default_value_t = 1)]
    pub connections: u16,
    /// IP MTU of the TUN devices.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Report interval, seconds.
    #[arg(short = 'i', default_value_t = 0.2)]
    pub interval: f64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Output directory (report, logs, received files).
    #[arg(long, default_value = "target/hare-emu-transfer")]
    pub out: PathBuf,
    /// Run name.
    #[arg(long, default_value = "transfer")]
    pub name: String,
    /// Directory of hare-send and hare-recv.
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Namespace instance name.
    #[arg(long, default_value = "xfer")]
    pub instance: String,
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> Result<bool> {
    use std::io::Read;
    let (fa, fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ra, mut rb) = (std::io::BufReader::new(fa), std::io::BufReader::new(fb));
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    // Bounded by the file length: each turn consumes up to 64 KiB of both.
    loop {
        let n = ra.read(&mut ba)?;
        if n == 0 {
            return Ok(rb.read(&mut bb)? == 0);
        }
        rb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// A child's end for people: `exit 0`, `failed`, or killed.
fn exit_text(status: Option<bool>) -> &'static str {
    match status {
        Some(true) => "exit 0",
        Some(false) => "failed",
        None => "did not finish (killed at the time limit or interrupted)",
    }
}

/// `slow-start exit: 1613 segments (ack-train) at 1.234 s`, or that none was seen.
fn exit_line(m: &super::metrics::RunMetrics) -> String {
    match (m.exit_cwnd, &m.exit_reason, m.exit_t_s) {
        (Some(c), Some(r), Some(t)) => format!("slow-start exit: {c} segments ({r}) at {t:.3} s"),
        (Some(c), Some(r), None) => format!("slow-start exit: {c} segments ({r})"),
        _ => "slow-start exit: none seen".to_string(),
    }
}

/// Runs `transfer`.
pub fn transfer(a: TransferArgs) -> Result<()> {
    use super::metrics::{payload_mbps, recovery_time, run_metrics};
    crate::signals::install()?;
    if let Some(why) = crate::netns::unavailable_reason() {
        bail!("transfer needs namespace mode: {why}");
    }
    let path = a.path.to_path()?;
    let mut ns = crate::namespace::NamespaceConfig::new(&a.instance, path.clone());
    ns.mtu = a.mtu;
    let spec = super::transfer::TransferSpec {
        name: a.name.clone(),
        tcp: a.tcp,
        cc: if a.tcp && a.cc == "cubic@linux-6" {
            "cubic".into()
        } else {
            a.cc.clone()
        },
        pacing_rate: None,
        kernel_params: crate::cubic_sysfs::CubicParams::default(),
        seconds: a.seconds,
        bytes: a.bytes,
        files: a.files.clone(),
        window: (!a.tcp).then(|| a.window.clone()),
        interval: a.interval,
        timeout_s: a.timeout,
        bin_dir: find_bins(a.bin_dir.as_deref())?,
        work_dir: a.out.clone(),
        echo: true,
        connections: a.connections,
    };
    let o = super::transfer::run_transfer(&ns, &spec)?;
    println!("{}", o.emulator.line());
    for r in &o.emulator.invalid_reasons {
        println!("  INVALID: {r}");
    }
    let fwd = &o.emulator.engine.forward.link.dropped;
    println!(
        "path model drops (forward): queue {} loss {} episode {} blackout {}",
        fwd.queue_full, fwd.loss, fwd.episode, fwd.blackout
    );
    println!(
        "hare-send: {}; hare-recv: {}",
        exit_text(o.sender_ok),
        exit_text(o.receiver_ok)
    );
    let cap = payload_mbps(path.forward.rate.0, a.mtu, a.tcp);
    if let Some(run) = &o.run {
        let mut m = run_metrics(run, cap);
        if let Some(r) = o.tcp_reductions {
            m.window_reductions = u32::try_from(r.total()).unwrap_or(u32::MAX);
        }
        if let Some(s) = &run.summary {
            println!(
                "summary: {} bytes in {:.2} s ({:.2} Mbit/s of a {cap:.2} Mbit/s payload rate), {} lost, {}, {}",
                s.bytes,
                s.seconds,
                s.mbps(),
                s.lost_packets,
                if s.completed { "completed" } else { "NOT completed" },
                if s.valid { "valid" } else { "INVALID" }
            );
        }
        println!("{}", exit_line(&m));
        match o.tcp_reductions {
            Some(r) => println!("window reductions: {r}"),
            None if a.tcp => println!("window reductions: unknown (no kernel counters)"),
            None => println!(
                "window reductions: {} (controller events)",
                m.window_reductions
            ),
        }
        match m.t90_s {
            Some(t) => println!("time to 90% of the payload rate: {t:.2} s"),
            None => println!("time to 90% of the payload rate: not reached"),
        }
        if let Some(r) = o.receiver_run.as_ref().and_then(|r| r.summary.as_ref()) {
            println!(
                "hare-recv counted {} bytes in {:.2} s ({:.2} Mbit/s)",
                r.bytes,
                r.seconds,
                r.mbps()
            );
        }
        for ev in &run.events {
            if let hare_report::EventKind::Path { what } = &ev.kind {
                let rec = what
                    .ends_with("ends")
                    .then(|| recovery_time(run, ev.t_s, cap))
                    .flatten();
                match rec {
                    Some(r) => println!(
                        "  {:8.3} s  {what}; back at 90% of {cap:.1} Mbit/s after {r:.2} s",
                        ev.t_s
                    ),
                    None => println!("  {:8.3} s  {what}", ev.t_s),
                }
            }
        }
    }
    println!("report: {}", o.report_path.display());
    let mut ok = o.sender_ok == Some(true);
    for f in &a.files {
        let name = f.file_name().context("file name")?;
        let got = o.recv_dir.join(name);
        let same = same_file(f, &got).unwrap_or(false);
        println!(
            "{}: {}",
            got.display(),
            if same {
                "byte-identical"
            } else {
                "DIFFERS or missing"
            }
        );
        ok &= same;
    }
    if !ok {
        bail!("transfer failed");
    }
    Ok(())
}

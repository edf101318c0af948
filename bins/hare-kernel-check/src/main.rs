//! `hare-kernel-check`: record a kernel TCP CUBIC flow ACK by ACK and replay it through
//! hare-cc's kernel model (`hare-kernel-check --rate 100m --rtt 60ms --seconds 10`), or
//! replay a saved trace (`hare-kernel-check replay FILE`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use hare_emu::path_args::PathArgs;
use hare_kernel_check::capture::Capture;
use hare_kernel_check::probe::{Trace, TraceInfo};
use hare_kernel_check::{flow, hz, replay};
use hare_link::{LossModel, TimeSpan};

#[derive(Parser)]
#[command(
    version,
    about = "Record a kernel TCP CUBIC flow ACK by ACK (BPF on tcp_probe) and replay it through hare-cc's kernel model"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    record: RecordArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Replay a saved trace and print the agreement.
    Replay {
        /// The trace file (written by a recording run's --out).
        file: PathBuf,
    },
}

#[derive(Args)]
struct RecordArgs {
    #[command(flatten)]
    path: PathArgs,
    /// Seconds of bulk sending (or of watching, with --port).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// A loss episode on the forward link, `FROM..TO/ONE_IN` (link time; every ONE_IN-th
    /// packet offered in [FROM, TO) is dropped), e.g. `3s..3.02s/4`; `/1` drops all (a
    /// blackout, long enough for a retransmission timeout). Repeatable.
    #[arg(long, value_name = "FROM..TO/ONE_IN")]
    loss_episode: Vec<String>,
    /// Watch a flow the user runs instead: the remote (receiving) port of its sender's
    /// socket on this machine. No emulator is started.
    #[arg(long)]
    port: Option<u16>,
    /// Where to write the trace.
    #[arg(long, default_value = "out/kernel-check/trace.jsonl")]
    out: PathBuf,
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("hare-kernel-check: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Some(Cmd::Replay { file }) => {
            let out = hare_kernel_check::replay_file(&file)?;
            print!("{}", out.report());
            Ok(())
        }
        None => record(&cli.record),
    }
}

/// `FROM..TO/ONE_IN` as a hare-link loss episode.
fn parse_episode(s: &str) -> Result<LossModel> {
    let bad = || format!("--loss-episode {s:?}: expected FROM..TO/ONE_IN, e.g. 3s..3.02s/4");
    let (span, one_in) = s.split_once('/').with_context(bad)?;
    let (from, to) = span.split_once("..").with_context(bad)?;
    Ok(LossModel::Episode {
        from: from
            .parse::<TimeSpan>()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(bad)?,
        to: to
            .parse::<TimeSpan>()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(bad)?,
        one_in: one_in.parse().with_context(bad)?,
        random: false,
    })
}

fn record(args: &RecordArgs) -> Result<()> {
    if !(args.seconds > 0.0 && args.seconds <= 600.0) {
        bail!("--seconds {}: from above 0 to 600", args.seconds);
    }
    let (probes, flow) = match args.port {
        Some(port) => {
            let capture = Capture::start(port)?;
            eprintln!("watching the flow to port {port} for {} s", args.seconds);
            std::thread::sleep(std::time::Duration::from_secs_f64(args.seconds));
            (
                capture.finish()?,
                format!("watched: remote port {port}, {} s", args.seconds),
            )
        }
        None => record_emulated(args)?,
    };
    let (hz, hz_source) = hz::kernel_hz(&probes).context(
        "the kernel's HZ: no CONFIG_HZ found and under a second of records to measure it",
    )?;
    let trace = Trace {
        info: TraceInfo {
            kernel: hz::kernel_release(),
            hz,
            hz_source,
            flow,
        },
        probes,
    };
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let f = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    trace
        .write(std::io::BufWriter::new(f))
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "kernel {} HZ {} ({}); trace {}",
        trace.info.kernel,
        hz,
        trace.info.hz_source,
        args.out.display()
    );
    let out = replay::replay(&trace)?;
    if out.acks == 0 {
        bail!(
            "no ACK of the flow was recorded ({} records): nothing to compare",
            out.records
        );
    }
    print!("{}", out.report());
    Ok(())
}

fn record_emulated(args: &RecordArgs) -> Result<(Vec<hare_kernel_check::probe::Probe>, String)> {
    let mut path = args.path.to_path()?;
    for e in &args.loss_episode {
        path.forward.loss.push(parse_episode(e)?);
    }
    path.validate().context("the path")?;
    let mut capture = None;
    let result = flow::run(path, args.seconds, || {
        capture = Some(Capture::start(flow::PORT)?);
        Ok(())
    });
    // Detach whatever happened to the flow.
    let probes = match capture {
        Some(c) => c.finish()?,
        None => Vec::new(),
    };
    let result = result?;
    let desc = format!(
        "emulated: rate {} rtt {} {} s{}; {} bytes; emulator {}",
        args.path.rate.0,
        args.path.rtt.0,
        args.seconds,
        args.loss_episode
            .iter()
            .map(|e| format!(", loss episode {e}"))
            .collect::<String>(),
        result.bytes,
        if result.emulator.valid {
            "valid".to_owned()
        } else {
            format!("INVALID: {:?}", result.emulator.invalid_reasons)
        }
    );
    eprintln!("{desc}");
    Ok((probes, desc))
}

//! The `hare-lab` subcommands of the emulator, as thin wrappers over the library:
//! `emulate`, `exec sender|receiver -- CMD`, `validate-emulator` and `kernel-vs-hare`.
//!
//! hare-lab adds them with one variant: `#[command(flatten)] Emu(hare_emu::cli::EmuCommand)`
//! and calls [`run`]. `examples/hare-emu.rs` exposes the same commands on their own.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hare_link::{BitRate, ByteSize, TimeSpan};

use crate::check::EmulatorRun;
use crate::cubic_sysfs::{CubicParams, CubicParamsGuard};
use crate::namespace::{NamespaceConfig, NamespaceEmulator};
use crate::netns::Side;
use crate::path_args::PathArgs;
use crate::relay::{RelayConfig, RelayEmulator};
use crate::validate::{ModeSel, ValidateConfig};

/// The emulator's subcommands.
#[derive(Debug, Subcommand)]
pub enum EmuCommand {
    /// Emulate a path in real time: a loopback UDP relay, or two network namespaces joined
    /// by TUN devices (root). Runs until Ctrl-C or --duration; prints its self-check.
    Emulate(EmulateArgs),
    /// Run a command inside the sender's or receiver's namespace of a running emulator
    /// (HARE_EMU_SELF / HARE_EMU_PEER hold the addresses).
    Exec(ExecArgs),
    /// Check the emulator against its path model on this machine: idle RTT, loss-free and
    /// overload blasts, queueing delay, seeded loss; prints a pass/fail table.
    ValidateEmulator(ValidateArgs),
    /// Run the kernel-vs-hare scenario (kernel TCP CUBIC vs hare CUBIC over the same
    /// namespace path) and write its table and plots.
    KernelVsHare(crate::scenario::cli::KernelVsHareArgs),
    /// One hare-send / hare-recv transfer (bulk or files) through a fresh namespace-mode
    /// emulator: report with the emulator's verdict and the path's events, losses, window
    /// reductions, recovery time after each loss episode or blackout, file check.
    Transfer(crate::scenario::cli::TransferArgs),
}

/// Emulator mode on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Loopback UDP relay (no privileges).
    Relay,
    /// Namespaces + TUN (root).
    Namespace,
}

/// Parses `name=value` into tcp_cubic parameters.
pub fn parse_cubic_params(items: &[String]) -> Result<CubicParams> {
    let mut p = CubicParams::default();
    for it in items {
        let (k, v) = it
            .split_once('=')
            .with_context(|| format!("--cubic-param {it:?}: expected name=value"))?;
        let v: u32 = v.trim().parse().with_context(|| {
            format!("--cubic-param {it:?}: value must be a non-negative integer")
        })?;
        let slot = match k.trim() {
            "hystart" => &mut p.hystart,
            "hystart_detect" => &mut p.hystart_detect,
            "hystart_low_window" => &mut p.hystart_low_window,
            "hystart_ack_delta_us" => &mut p.hystart_ack_delta_us,
            "initial_ssthresh" => &mut p.initial_ssthresh,
            "beta" => &mut p.beta,
            other => bail!(
                "--cubic-param {other:?}: one of hystart, hystart_detect, hystart_low_window, \
                 hystart_ack_delta_us, initial_ssthresh, beta"
            ),
        };
        *slot = Some(v);
    }
    Ok(p)
}

/// `emulate` options.
#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Relay (no privileges) or namespace (root).
    #[arg(long, value_enum, default_value = "relay")]
    pub mode: ModeArg,
    /// The path.
    #[command(flatten)]
    pub path: PathArgs,
    /// Relay mode: where senders send.
    #[arg(long, default_value = "127.0.0.1:5300")]
    pub listen: SocketAddr,
    /// Relay mode: the receiver.
    #[arg(long, default_value = "127.0.0.1:5210")]
    pub target: SocketAddr,
    /// Namespace mode: instance name (namespaces hare-<instance>-snd / -rcv).
    #[arg(long, default_value = "lab")]
    pub instance: String,
    /// Namespace mode: MTU of the TUN devices.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Pin the emulator thread to this CPU.
    #[arg(long)]
    pub pin: Option<usize>,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long)]
    pub duration: Option<TimeSpan>,
    /// Set a tcp_cubic module parameter while the emulator runs (name=value, repeatable);
    /// restored on exit, error and Ctrl-C.
    #[arg(long = "cubic-param", value_name = "NAME=VALUE")]
    pub cubic_params: Vec<String>,
    /// Write the emulator's self-check (JSON) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// `exec` options.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Which namespace.
    #[arg(value_enum)]
    pub side: SideArg,
    /// Instance of the running emulator.
    #[arg(long, default_value = "lab")]
    pub instance: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// A side on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SideArg {
    /// The sender's namespace.
    Sender,
    /// The receiver's namespace.
    Receiver,
}

impl From<SideArg> for Side {
    fn from(s: SideArg) -> Side {
        match s {
            SideArg::Sender => Side::Sender,
            SideArg::Receiver => Side::Receiver,
        }
    }
}

/// `validate-emulator` options.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Bottleneck rate R.
    #[arg(long, default_value = "100m")]
    pub rate: BitRate,
    /// Round-trip propagation delay.
    #[arg(long, default_value = "80ms")]
    pub rtt: TimeSpan,
    /// Drop-tail limit (default one BDP).
    #[arg(long)]
    pub queue: Option<ByteSize>,
    /// Modes to validate.
    #[arg(long, value_enum, default_value = "both")]
    pub mode: ModeSel,
    /// Length of each blast.
    #[arg(long, default_value = "2s")]
    pub blast: TimeSpan,
    /// Pin the emulator thread to this CPU.
    #[arg(long)]
    pub pin: Option<usize>,
    /// Namespace-mode instance name.
    #[arg(long, default_value = "val")]
    pub instance: String,
    /// Write the full report (JSON) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn write_json<T: serde::Serialize>(path: &PathBuf, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).context("serialising the report")?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn wait(duration: Option<TimeSpan>, alive: impl Fn() -> bool) {
    let end = duration.map(|d| crate::wall_clock::monotonic_ns() + d.0);
    // Bounded by the deadline or the interrupt flag; checks every 50 ms.
    loop {
        if crate::signals::interrupted() || !alive() {
            return;
        }
        let now = crate::wall_clock::monotonic_ns();
        match end {
            Some(e) if now >= e => return,
            Some(e) => {
                crate::signals::sleep_until_or_interrupted(e.min(now + 50_000_000));
            }
            None => {
                crate::signals::sleep_until_or_interrupted(now + 50_000_000);
            }
        }
    }
}

fn emulate(a: EmulateArgs) -> Result<()> {
    crate::signals::install()?;
    let path = a.path.to_path()?;
    let params = parse_cubic_params(&a.cubic_params)?;
    let guard = if params.is_empty() {
        None
    } else {
        let g = CubicParamsGuard::apply(&params, 600.0).context("setting tcp_cubic parameters")?;
        eprintln!(
            "hare-emu: tcp_cubic {} (restored on exit)",
            params.describe()
        );
        Some(g)
    };
    let run: EmulatorRun = match a.mode {
        ModeArg::Relay => {
            let mut cfg = RelayConfig::new(a.listen, a.target, path);
            cfg.pin_cpu = a.pin;
            let relay = RelayEmulator::start(cfg).context("starting the relay")?;
            eprintln!(
                "hare-emu: relay {} -> {} running; Ctrl-C stops",
                relay.listen_addr(),
                a.target
            );
            wait(a.duration, || relay.is_running());
            relay.stop()?
        }
        ModeArg::Namespace => {
            let mut cfg = NamespaceConfig::new(&a.instance, path);
            cfg.mtu = a.mtu;
            cfg.pin_cpu = a.pin;
            let emu = NamespaceEmulator::start(cfg).context("starting namespace mode")?;
            eprintln!(
                "hare-emu: namespaces {} ({}) and {} ({}) running; \
                 `exec sender|receiver --instance {} -- CMD` runs inside; Ctrl-C stops",
                emu.ns_name(Side::Sender),
                emu.config().sender_addr,
                emu.ns_name(Side::Receiver),
                emu.config().receiver_addr,
                a.instance
            );
            wait(a.duration, || emu.is_running());
            emu.stop()?
        }
    };
    if let Some(g) = guard {
        g.restore().context("restoring tcp_cubic parameters")?;
    }
    println!("{}", run.line());
    for r in &run.invalid_reasons {
        println!("  INVALID: {r}");
    }
    for n in &run.notes {
        println!("  note: {n}");
    }
    if let Some(p) = &a.report {
        write_json(p, &run)?;
    }
    Ok(())
}

fn validate_cmd(a: ValidateArgs) -> Result<()> {
    crate::signals::install()?;
    let mut cfg = ValidateConfig::new(a.rate, a.rtt);
    cfg.queue = a.queue;
    cfg.blast_ns = a.blast.0;
    cfg.pin_cpu = a.pin;
    cfg.instance = a.instance;
    let report = crate::validate::validate(&cfg, a.mode)?;
    print!("{}", report.table());
    if let Some(p) = &a.json {
        write_json(p, &report)?;
    }
    if !report.pass() {
        bail!("validate-emulator: FAIL");
    }
    Ok(())
}

/// Runs one of the emulator's subcommands.
pub fn run(cmd: EmuCommand) -> Result<()> {
    match cmd {
        EmuCommand::Emulate(a) => emulate(a),
        EmuCommand::Exec(a) => {
            let e = crate::namespace::exec_in(&a.instance, a.side.into(), &a.command);
            match e {
                Ok(never) => match never {},
                Err(e) => Err(e).context("exec"),
            }
        }
        EmuCommand::ValidateEmulator(a) => validate_cmd(a),
        EmuCommand::KernelVsHare(a) => crate::scenario::cli::run(a),
        EmuCommand::Transfer(a) => crate::scenario::cli::transfer(a),
    }
}

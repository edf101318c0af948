//! `hare-send`: push bulk data or files to a `hare-recv`, nuttcp-style, over QUIC with
//! kernel-faithful congestion control (or over kernel TCP with `--tcp`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use hare_transfer::quic_config::{Link, DEFAULT_WINDOW};
use hare_transfer::report::{JsonTarget, OutputOptions};
use hare_transfer::trust::Trust;
use hare_transfer::{SendJob, SendOptions, TcpSendOptions, TransferError};

/// Exit status of a file transfer the user interrupted (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "hare-send",
    version,
    about = "Send bulk data or files to hare-recv over QUIC (or kernel TCP), with nuttcp-style reports",
    long_about = "Send bulk data (-n SIZE or -T SECONDS) or files to hare-recv.\n\n\
        Examples:\n  hare-send -n 1g --pin SHA256 receiver.example\n  \
        hare-send -T 10 -i 1 --cc cubic@linux-2.6.20 --pin SHA256 10.0.0.2:5210\n  \
        hare-send --pin SHA256 photos/ notes.txt receiver.example\n  \
        hare-send --tcp --cc cubic -T 10 10.0.0.2\n  \
        hare-send bench",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    send: SendArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print this sender's certificate fingerprint (made on first use), for hare-recv --allow.
    Id(IdentityArgs),
    /// Loopback benchmark: hare-send vs plain quinn (same windows, MTU, quinn Cubic) vs --tcp.
    Bench(BenchArgs),
    /// (benchmark internals) plain quinn receiver.
    #[command(hide = true)]
    BenchPlainRecv(PlainArgs),
    /// (benchmark internals) plain quinn sender.
    #[command(hide = true)]
    BenchPlainSend(PlainSendArgs),
}

#[derive(Args, Debug)]
struct SendArgs {
    /// Files or directories to send (none for bulk mode), then the receiver HOST[:PORT].
    #[arg(value_name = "FILE|DIR... HOST[:PORT]", required = true, num_args = 1..)]
    targets: Vec<String>,
    /// Bulk mode: bytes to send (k/m/g/t suffixes are powers of 2, like nuttcp).
    #[arg(short = 'n', value_name = "SIZE", conflicts_with = "seconds")]
    size: Option<String>,
    /// Bulk mode: seconds to send.
    #[arg(short = 'T', value_name = "SECONDS")]
    seconds: Option<f64>,
    /// Parallel streams (bulk), or files in flight at once (files; default 4).
    #[arg(short = 'P', value_name = "N")]
    parallel: Option<u16>,
    /// Report interval in seconds (0.1 or more).
    #[arg(short = 'i', value_name = "SECONDS", default_value_t = 1.0)]
    interval: f64,
    /// Window like nuttcp -w: stream and connection receive windows and the send window
    /// (with --tcp: SO_SNDBUF/SO_RCVBUF). Default 32m (QUIC), kernel autotuning (TCP).
    #[arg(short = 'w', value_name = "SIZE")]
    window: Option<String>,
    /// Fixed UDP payload size: initial MTU, max UDP payload and MTU-discovery bound together
    /// (with --tcp: TCP_MAXSEG for the same IP packet size).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<u16>,
    /// Congestion control: hare-cc grammar (cubic, cubic@linux-2.6.20,hz=1000, bic, reno,
    /// quinn-cubic, quinn-newreno, quinn-bbr); with --tcp a kernel name (cubic, reno, bbr).
    #[arg(long, value_name = "SPEC")]
    cc: Option<String>,
    /// Trust the receiver whose certificate has this SHA-256 fingerprint.
    #[arg(long, value_name = "SHA256", env = "HARE_PIN", conflicts_with_all = ["cert", "ca"])]
    pin: Option<String>,
    /// Trust the receiver whose certificate is in this PEM file (pins its fingerprint).
    #[arg(long, value_name = "FILE", conflicts_with = "ca")]
    cert: Option<PathBuf>,
    /// Trust receivers whose certificate chains to a CA in this PEM file (name checked).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    #[command(flatten)]
    identity: IdentityArgs,
    #[command(flatten)]
    meta: MetaArgs,
    /// Token the receiver requires.
    #[arg(long, value_name = "TOKEN", env = "HARE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Continue partial files the receiver kept, after checking the part already there.
    #[arg(long)]
    resume: bool,
    /// Overwrite files that exist on the receiver.
    #[arg(long)]
    force: bool,
    /// Rate limit over all streams, bit/s (k/m/g SI suffixes: 100m = 10^8 bit/s).
    #[arg(short = 'R', value_name = "RATE")]
    rate: Option<String>,
    /// Write one qlog per connection (and a .cc.jsonl sidecar of controller events) here.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// iperf3-shaped JSON report to FILE, or `-` for stdout (text lines then suppressed).
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// hare-report JSON lines, written while the run goes on.
    #[arg(long, value_name = "FILE")]
    jsonl: Option<PathBuf>,
    /// Use kernel TCP instead of QUIC (reference runs; unencrypted).
    #[arg(long)]
    tcp: bool,
    /// With --tcp: SO_MAX_PACING_RATE in bit/s (turns kernel pacing on).
    #[arg(long, value_name = "RATE", requires = "tcp")]
    pacing_rate: Option<String>,
    /// No report lines.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
}

/// File metadata that travels (rsync -a keeps permission bits and modification times).
#[derive(Args, Debug)]
struct MetaArgs {
    /// Do not keep permission bits exactly: the receiver's umask narrows them (as rsync
    /// without -p; never wider than the source either way).
    #[arg(long)]
    no_perms: bool,
    /// Do not keep modification times (files get the time they are written).
    #[arg(long)]
    no_times: bool,
}

/// The sender's own identity (its certificate authenticates it to receivers).
#[derive(Args, Debug)]
struct IdentityArgs {
    /// State directory of this sender's certificate and key (default
    /// $XDG_STATE_HOME/hare/sender); made on first use.
    #[arg(long = "identity", value_name = "DIR", env = "HARE_SEND_IDENTITY")]
    dir: Option<PathBuf>,
}

impl IdentityArgs {
    /// Load (or on first use make) the identity, saying so when it was made.
    fn load(&self) -> Result<hare_transfer::identity::Identity> {
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => hare_transfer::identity::default_sender_dir()
                .context("no home directory: give --identity DIR")?,
        };
        let id = hare_transfer::identity::load_or_create(&dir, &[])?;
        if id.created {
            eprintln!(
                "hare-send: new sender identity created in {}",
                dir.display()
            );
        }
        Ok(id)
    }
}

fn run_id(a: IdentityArgs) -> Result<ExitCode> {
    let id = a.load()?;
    println!("sha256:{}", id.fingerprint);
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// UDP payload sizes to test.
    #[arg(long, value_delimiter = ',', default_values_t = [1452u16, 8952])]
    mtu: Vec<u16>,
    /// Window for every QUIC run.
    #[arg(short = 'w', default_value = "32m")]
    window: String,
}

#[derive(Args, Debug)]
struct PlainArgs {
    #[arg(long)]
    mtu: u16,
    #[arg(short = 'w')]
    window: u64,
    #[arg(long)]
    identity: PathBuf,
}

#[derive(Args, Debug)]
struct PlainSendArgs {
    addr: String,
    #[arg(long)]
    pin: String,
    #[arg(long)]
    mtu: u16,
    #[arg(short = 'w')]
    window: u64,
    #[arg(long)]
    seconds: f64,
}

fn size(s: &str, what: &str) -> Result<u64> {
    Ok(hare_link::units::parse_size(s)
        .with_context(|| format!("{what} {s}"))?
        .bytes())
}

fn rate(s: &str, what: &str) -> Result<u64> {
    Ok(hare_link::units::parse_rate(s)
        .with_context(|| format!("{what} {s}"))?
        .bits_per_sec())
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,hare_transfer=info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // One current-thread runtime per process: faster than multi-thread on 2 cores
    // (PLATFORM-FACTS).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

fn options(a: SendArgs) -> Result<SendOptions> {
    let mut targets = a.targets;
    let server = targets.pop().context("missing receiver HOST[:PORT]")?;
    let paths: Vec<PathBuf> = targets.into_iter().map(PathBuf::from).collect();
    let bulk = a.size.is_some() || a.seconds.is_some();
    let job = match (bulk, paths.is_empty()) {
        (true, true) => SendJob::Bulk {
            bytes: a.size.as_deref().map(|s| size(s, "-n")).transpose()?,
            seconds: a.seconds,
            streams: a.parallel.unwrap_or(1),
        },
        (true, false) => bail!("-n / -T are for bulk mode; do not name files with them"),
        (false, false) => SendJob::Files {
            paths,
            resume: a.resume,
            force: a.force,
            parallel: a.parallel.unwrap_or(4),
        },
        (false, true) => bail!("nothing to send: give -n SIZE, -T SECONDS, or files before HOST"),
    };
    if !(0.1..=3600.0).contains(&a.interval) {
        bail!("-i must be between 0.1 and 3600 seconds");
    }
    let explicit_window = a.window.as_deref().map(|w| size(w, "-w")).transpose()?;
    let trust = match (a.pin, a.cert, a.ca) {
        (Some(p), _, _) => Some(Trust::Pin(p.parse()?)),
        (_, Some(c), _) => Some(Trust::CertFile(c)),
        (_, _, Some(c)) => Some(Trust::Ca(c)),
        _ => None,
    };
    let json = a.json.map(|j| {
        if j == "-" {
            JsonTarget::Stdout
        } else {
            JsonTarget::File(j.into())
        }
    });
    let progress = std::io::stdout().is_terminal() && json.is_none() && !a.quiet;
    // Kernel TCP has no TLS to present a certificate in. A bulk run can do without one (open
    // receivers), a file job cannot be authenticated without it or a token.
    let identity = match (a.tcp, a.identity.load()) {
        (true, _) => None,
        (false, Ok(id)) => Some(std::sync::Arc::new(id)),
        (false, Err(e)) if bulk => {
            eprintln!("hare-send: warning: no sender certificate ({e:#}); receivers that authorise senders by certificate will refuse this run");
            None
        }
        (false, Err(e)) => return Err(e),
    };
    Ok(SendOptions {
        server,
        trust,
        identity,
        keep: hare_transfer::sendfiles::Keep {
            perms: !a.meta.no_perms,
            times: !a.meta.no_times,
        },
        token: a.token,
        job,
        link: Link {
            window: explicit_window.unwrap_or(DEFAULT_WINDOW),
            streams: 1,
            mtu: a.mtu,
        },
        cc: a.cc,
        qlog: a.qlog,
        interval: Duration::from_secs_f64(a.interval),
        rate: a.rate.as_deref().map(|r| rate(r, "-R")).transpose()?,
        output: OutputOptions {
            quiet: a.quiet,
            json,
            jsonl: a.jsonl,
            progress,
        },
        tcp: if a.tcp {
            Some(TcpSendOptions {
                buffer: explicit_window.map(|w| w as usize),
                pacing_rate: a
                    .pacing_rate
                    .as_deref()
                    .map(|r| rate(r, "--pacing-rate"))
                    .transpose()?
                    .map(|b| b / 8),
            })
        } else {
            None
        },
    })
}

fn run_send(a: SendArgs) -> Result<ExitCode> {
    init_tracing(a.verbose);
    let opts = options(a)?;
    let bulk = matches!(opts.job, SendJob::Bulk { .. });
    let rt = runtime()?;
    let outcome = rt.block_on(async move {
        let (trigger, stop) = hare_transfer::stop_pair();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                trigger.stop();
                // A second Ctrl-C leaves at once.
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
            }
        });
        hare_transfer::send(opts, stop).await
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(TransferError::Interrupted) => {
            eprintln!("hare-send: interrupted");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        Err(e) => return Err(e.into()),
    };
    let failed: Vec<_> = outcome.failures().collect();
    if outcome.interrupted && !bulk {
        eprintln!(
            "hare-send: interrupted: {} file(s) not completed; the receiver keeps partial data, rerun with --resume",
            failed.len()
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!(
                "hare-send: {}: {}",
                f.name,
                f.reason.as_deref().unwrap_or("failed")
            );
        }
        bail!("{} of {} file(s) failed", failed.len(), outcome.files.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn run_bench(b: BenchArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating hare-send")?;
    let exe_dir = exe
        .parent()
        .context("hare-send has no directory")?
        .to_path_buf();
    let scratch = std::env::temp_dir().join(format!("hare-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let opts = hare_transfer::bench::BenchOptions {
        seconds: b.seconds,
        mtus: b.mtu,
        window: size(&b.window, "-w")?,
        exe_dir,
        scratch: scratch.clone(),
    };
    let before = hare_transfer::bench::load_average();
    println!(
        "hare bench: loopback, {} s per run, window {} B, load average before: {before}",
        opts.seconds, opts.window
    );
    let res = hare_transfer::bench::run(&opts, |l| println!("  {l}"));
    let _ = std::fs::remove_dir_all(&scratch);
    let cases = res?;
    print!("{}", hare_transfer::bench::table(&cases));
    println!(
        "load average after: {}",
        hare_transfer::bench::load_average()
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.command {
        Some(Command::Bench(b)) => run_bench(b),
        Some(Command::Id(a)) => run_id(a),
        Some(Command::BenchPlainRecv(p)) => runtime().and_then(|rt| {
            rt.block_on(hare_transfer::bench::plain_recv(
                p.mtu,
                p.window,
                &p.identity,
            ))?;
            Ok(ExitCode::SUCCESS)
        }),
        Some(Command::BenchPlainSend(p)) => runtime().and_then(|rt| {
            let pin = p.pin.parse()?;
            rt.block_on(hare_transfer::bench::plain_send(
                &p.addr, pin, p.mtu, p.window, p.seconds,
            ))?;
            Ok(ExitCode::SUCCESS)
        }),
        None => run_send(cli.send),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hare-send: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

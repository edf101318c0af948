//! `hare-recv`: receive bulk data or files from `hare-send` over QUIC (or kernel TCP with
//! `--tcp`), serving many senders at once.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod pull;
mod pull_args;
mod ssh_serve;

use anyhow::{Context, Result};
use clap::Parser;
use hare_transfer::cc::QuicCc;
use hare_transfer::exit::{ExitKind, RECV_EXIT_HELP};
use hare_transfer::quic_config::Link;
use hare_transfer::receiver::DEFAULT_PORT;
use hare_transfer::report::{JsonTarget, OutputOptions};
use hare_transfer::tcp::TcpOptions;
use hare_transfer::{Limits, Receiver, RecvOptions, TransferError};

#[derive(Parser, Debug)]
#[command(
    name = "hare-recv",
    version,
    about = "Receive bulk data or files from hare-send over QUIC (or kernel TCP)",
    long_about = "Receive bulk data or files from hare-send.\n\n\
        On first start it makes a self-signed certificate in the identity directory and prints \
        its SHA-256 fingerprint: give that to hare-send --pin.\n\n\
        Units of the report: MB, MiB = 2^20 bytes (as nuttcp), Mbps = 10^6 bit/s (as nuttcp \
        and iperf3). On a terminal narrower than 100 columns the lines take a compact form \
        under a heading; to a file or pipe they are always nuttcp's full lines.\n\n\
        Examples:\n  hare-recv\n  HARE_TOKEN=s3cret hare-recv --dir ~/incoming\n  \
        hare-recv --tcp --cc cubic",
    after_help = RECV_EXIT_HELP
)]
struct Cli {
    /// Address to listen on (UDP; TCP with --tcp).
    #[arg(long, value_name = "ADDR", default_value_t = SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 0], DEFAULT_PORT)))]
    listen: SocketAddr,
    /// State directory of the certificate and key (default $XDG_STATE_HOME/hare).
    #[arg(long, value_name = "DIR")]
    identity: Option<PathBuf>,
    /// Extra DNS name or IP for a newly made certificate (besides localhost); repeatable.
    #[arg(long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// Token every sender must present (with --allow: senders without an allowed
    /// certificate).
    #[arg(long, value_name = "TOKEN", env = "HARE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(flatten)]
    auth: AuthArgs,
    /// Receive files into this directory (without it, file jobs are refused).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Receive window (k/m/g powers of 2; with --tcp: SO_RCVBUF). Default auto: the
    /// connection window starts small and grows each round trip to about twice what the
    /// path delivered, up to --max-window (QUIC); kernel autotuning (TCP).
    #[arg(short = 'w', value_name = "SIZE|auto")]
    window: Option<String>,
    /// Fixed UDP payload size (initial MTU, max UDP payload and MTU-discovery bound).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<u16>,
    /// The controller of the side that sends the data (hare-cc grammar), or the kernel name
    /// with --tcp: when fetching, the remote hare-send's; when listening, this side's own,
    /// which sends only control data and ACKs except in reverse mode (hare-send -r).
    #[arg(long, value_name = "SPEC")]
    cc: Option<String>,
    /// Write one qlog per connection (and a .cc.jsonl sidecar) here.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Report interval in seconds.
    #[arg(short = 'i', value_name = "SECONDS", default_value_t = 1.0)]
    interval: f64,
    /// Jobs served at once (connections still before their hello have a separate budget).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_conns)]
    max_conns: usize,
    /// Jobs served at once for one sender address (default: half of --max-conns).
    #[arg(long, value_name = "N")]
    max_conns_per_peer: Option<usize>,
    /// Largest job (bulk size or total file size).
    #[arg(long, value_name = "SIZE", default_value = "1t")]
    max_size: String,
    /// Longest timed bulk job, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::default().max_seconds)]
    max_time: f64,
    /// Largest connection window granted to one sender, and the cap of -w auto (bounds
    /// memory per connection).
    #[arg(long, value_name = "SIZE", default_value = "128m")]
    max_window: String,
    /// Serve one job, then exit with its status.
    #[arg(short = '1', long)]
    one_shot: bool,
    /// Append one iperf3-shaped JSON document per connection to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// Kernel TCP instead of QUIC (reference runs; unencrypted).
    #[arg(long)]
    tcp: bool,
    /// No report lines (the listening address and fingerprint are still printed).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
    /// A job must move at least SIZE in every 60 s once its data has started, or it loses
    /// its slot (close code 5); 0 turns the rule off.
    #[arg(long, value_name = "SIZE", default_value = "64k")]
    min_rate: String,
    /// Out-of-order ranges held at once over all jobs (each costs about 33 bytes of memory);
    /// a file that would go beyond fails.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_reorder_ranges)]
    reorder_ranges: u64,
    /// Bytes held ahead of their files' in-order frontier at once over all jobs.
    #[arg(long, value_name = "SIZE", default_value = "2g")]
    reorder_bytes: String,
    /// `[user@]host:SRC... DEST`: fetch SRC from host through ssh into the local DEST.
    #[arg(value_name = "HOST:SRC... DEST")]
    pull: Vec<String>,
    /// The command that reaches a remote host (as rsync's -e), e.g. `-e "ssh -p 2222"`;
    /// default `ssh`.
    #[arg(short = 'e', long = "rsh", value_name = "CMD", env = "HARE_RSH")]
    rsh: Option<String>,
    /// The directory of hare-send on the remote, when it is not on the remote PATH.
    #[arg(long, value_name = "DIR")]
    remote_bin: Option<String>,
    /// Fetching: bring symbolic links as links (rsync -l; by default they are skipped).
    #[arg(short = 'l', long)]
    links: bool,
    /// Serve one job for a hare-send that started this receiver through ssh (it reads the
    /// sender's fingerprint on standard input and answers on standard output); not for
    /// people to run.
    #[arg(long, hide = true)]
    ssh_serve: bool,
    /// Worker threads serving the connections (1: one thread, the fastest for one connection
    /// per job; more lets jobs over several connections, hare-send -C, use more cores).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Fetching: the UDP ports the remote hare-send may bind, `LOW-HIGH` or one `PORT`, for
    /// a remote firewall that opens a range (default: a port the remote's kernel picks).
    #[arg(long, value_name = "RANGE")]
    remote_ports: Option<hare_ssh::PortRange>,
    /// With --ssh-serve: the ports this side may bind (the sending hare-send's
    /// --remote-ports); not for people to run.
    #[arg(long, hide = true, value_name = "RANGE")]
    ports: Option<hare_ssh::PortRange>,
    /// Refuse symbolic links whose target is absolute or climbs out of the job's tree with
    /// `..` (rsync --safe-links); by default a link keeps its target text (rsync -l).
    #[arg(long)]
    safe_links: bool,
    #[command(flatten)]
    fetch: pull_args::PullArgs,
}

/// Who may send: sender certificates by fingerprint, or nobody checked (`--open`).
#[derive(clap::Args, Debug)]
struct AuthArgs {
    /// Let in the sender whose certificate has this SHA-256 fingerprint (`hare-send id`
    /// prints it); repeatable.
    #[arg(long = "allow", value_name = "SHA256")]
    allow: Vec<String>,
    /// Allow-list file: one fingerprint per line, then an optional comment; `#` lines are
    /// ignored (default: allowed-senders in the identity directory, if it exists).
    #[arg(long, value_name = "FILE")]
    allow_file: Option<PathBuf>,
    /// Accept files from anyone who can reach the port (without --allow or --token a
    /// receiver with --dir refuses to start); every such job is logged with a warning.
    #[arg(long)]
    open: bool,
}

impl AuthArgs {
    /// The allowed fingerprints: `--allow` values and the allow-list file.
    fn fingerprints(
        &self,
        identity_dir: &std::path::Path,
    ) -> Result<Vec<hare_transfer::identity::Fingerprint>> {
        let mut out = Vec::new();
        for a in &self.allow {
            out.push(a.parse().with_context(|| format!("--allow {a}"))?);
        }
        let file = match &self.allow_file {
            Some(f) => Some(f.clone()),
            None => Some(hare_transfer::senders::default_allow_file(identity_dir)),
        };
        if let Some(f) = file {
            match hare_transfer::senders::load_allow_file(&f)? {
                Some(list) => out.extend(list),
                None if self.allow_file.is_some() => {
                    anyhow::bail!("--allow-file {}: no such file", f.display())
                }
                None => {}
            }
        }
        Ok(out)
    }
}

/// The line that says at start who may send.
fn senders_line(o: &RecvOptions) -> String {
    let certs = if o.tcp.is_some() { 0 } else { o.allow.len() };
    let what = if o.dir.is_some() {
        "files and bulk"
    } else {
        "bulk"
    };
    match (certs, o.token.is_some()) {
        (0, false) if o.dir.is_some() => {
            format!(
            "hare-recv: warning: --open: anyone who can reach this port may write files into {}",
            o.dir.as_deref().unwrap_or(std::path::Path::new("")).display()
        )
        }
        (0, false) => format!("hare-recv: senders: anyone ({what})"),
        (0, true) => format!("hare-recv: senders: those with the token ({what})"),
        (n, false) => format!("hare-recv: senders: {n} allowed certificate(s) ({what})"),
        (n, true) => {
            format!("hare-recv: senders: {n} allowed certificate(s) or the token ({what})")
        }
    }
}

fn size(s: &str, what: &str) -> Result<u64> {
    Ok(hare_link::units::parse_size(s)
        .with_context(|| format!("{what} {s}"))?
        .bytes())
}

/// An error, and the exit status it ends the receiver with.
struct Failed(ExitKind, anyhow::Error);

impl Failed {
    /// A bad option value (exit 2, as clap's own errors).
    fn usage(e: anyhow::Error) -> Self {
        Self(ExitKind::Usage, e)
    }

    /// Anything else: an engine error in the chain says which, else 1.
    fn other(e: anyhow::Error) -> Self {
        let kind = e
            .chain()
            .find_map(|c| c.downcast_ref::<TransferError>())
            .map_or(ExitKind::Error, ExitKind::of);
        Self(kind, e)
    }
}

/// What the command line asks for, checked: every error here is a bad option value.
fn options(cli: Cli) -> Result<(RecvOptions, PathBuf)> {
    if !(0.1..=3600.0).contains(&cli.interval) {
        anyhow::bail!("-i must be between 0.1 and 3600 seconds");
    }
    init_tracing(cli.verbose);
    let identity_dir = match cli.identity {
        Some(d) => d,
        None => hare_transfer::identity::default_dir()
            .context("no home directory: give --identity DIR")?,
    };
    let max_window = size(&cli.max_window, "--max-window")?;
    let link = Link::from_args(cli.window.as_deref(), max_window, cli.mtu)?;
    // Kernel TCP autotunes by itself unless a size is set.
    let explicit_window = (!link.auto).then_some(link.window);
    let json = cli.json.map(|j| {
        if j == "-" {
            JsonTarget::Stdout
        } else {
            JsonTarget::File(j.into())
        }
    });
    let tcp = if cli.tcp {
        Some(TcpOptions {
            cc: hare_transfer::cc::kernel_tcp_name(cli.cc.as_deref().unwrap_or("cubic"))?,
            buffer: explicit_window.map(|w| w as usize),
            pacing_rate: None,
            mss: None,
        })
    } else {
        None
    };
    let cc = match (&cli.cc, cli.tcp) {
        (Some(s), false) => QuicCc::parse(s)?,
        _ => QuicCc::default(),
    };
    let allow = cli.auth.fingerprints(&identity_dir)?;
    let opts = RecvOptions {
        listen: cli.listen,
        allow,
        open: cli.auth.open,
        identity_dir: identity_dir.clone(),
        names: cli.names,
        token: cli.token,
        dir: cli.dir,
        partial_owner: None,
        link,
        cc,
        qlog: cli.qlog,
        interval: Duration::from_secs_f64(cli.interval),
        limits: Limits {
            max_conns: cli.max_conns.max(1),
            max_conns_per_peer: cli
                .max_conns_per_peer
                .unwrap_or(cli.max_conns / 2)
                .clamp(1, cli.max_conns.max(1)),
            max_job_bytes: size(&cli.max_size, "--max-size")?,
            max_seconds: cli.max_time,
            max_window,
            safe_links: cli.safe_links,
            min_progress: size(&cli.min_rate, "--min-rate")?,
            max_reorder_ranges: cli.reorder_ranges,
            max_reorder_bytes: size(&cli.reorder_bytes, "--reorder-bytes")?,
            ..Limits::default()
        },
        one_shot: cli.one_shot,
        output: OutputOptions {
            quiet: cli.quiet,
            json,
            jsonl: None,
            progress: false,
            verbose: cli.verbose > 0,
        },
        tcp,
    };
    Ok((opts, identity_dir))
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only on a terminal: log files must not collect escape sequences.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(cli: Cli) -> Result<ExitKind, Failed> {
    let pull = pull::Pull::parse(&cli.pull, cli.rsh.as_deref(), cli.remote_bin.clone())
        .map_err(Failed::usage)?
        .map(|p| p.with_links(cli.links));
    if let Some(p) = pull {
        let mut forwarded = cli.fetch.remote_args(cli.cc.as_deref());
        if let Some(range) = cli.remote_ports {
            forwarded.extend(["--ports".to_owned(), range.to_string()]);
        }
        let threads = cli.fetch.connections().unwrap_or(1).max(cli.threads);
        let p = p.with_remote_args(forwarded).with_threads(threads);
        let (opts, _) = options(cli).map_err(Failed::usage)?;
        return p.run(opts).map_err(Failed::other);
    }
    cli.fetch.only_when_fetching().map_err(Failed::usage)?;
    let threads = cli.threads;
    if cli.ssh_serve {
        let dest = cli.dir.clone();
        let ports: Vec<u16> = cli.ports.iter().flat_map(|r| r.ports()).collect();
        let (opts, _) = options(cli).map_err(Failed::usage)?;
        return ssh_serve::serve(opts, (dest, threads), &ports).map_err(Failed::other);
    }
    let (opts, identity_dir) = options(cli).map_err(Failed::usage)?;
    let to_stdout = opts.output.json != Some(JsonTarget::Stdout);
    serve(opts, (identity_dir, threads), to_stdout).map_err(Failed::other)
}

/// The receiver's runtime: one thread (docs/PLATFORM.md: the fastest for one connection on
/// a small machine), or `threads` workers, over which tokio spreads the connections' tasks
/// (quinn drives each connection from a task of its own).
pub(crate) fn runtime(threads: u16) -> Result<tokio::runtime::Runtime> {
    let mut b = match threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(usize::from(n));
            b
        }
    };
    b.enable_all().build().context("starting the tokio runtime")
}

/// Bind, say who may send, and serve until a signal (or the one job of `--one-shot`).
fn serve(
    opts: RecvOptions,
    (identity_dir, threads): (PathBuf, u16),
    to_stdout: bool,
) -> Result<ExitKind> {
    let tcp_mode = opts.tcp.is_some();
    let who = senders_line(&opts);
    let rt = runtime(threads)?;
    rt.block_on(async move {
        let (trigger, stop) = hare_transfer::stop_pair();
        // Ctrl-C, SIGTERM and SIGHUP all shut the receiver down the same way; watched before
        // the receiver says it listens, so that a stop right after the start is one too.
        use tokio::signal::unix::{signal, SignalKind};
        let kinds = [
            (SignalKind::interrupt(), "Ctrl-C", 2),
            (SignalKind::terminate(), "SIGTERM", 15),
            (SignalKind::hangup(), "SIGHUP", 1),
        ];
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(2));
        for (kind, name, number) in kinds {
            let mut sig = signal(kind).with_context(|| format!("listening for {name}"))?;
            let (trigger, seen) = (trigger.clone(), seen.clone());
            tokio::spawn(async move {
                if sig.recv().await.is_some() {
                    seen.store(number, std::sync::atomic::Ordering::Relaxed);
                    trigger.stop_because(name);
                }
            });
        }
        let receiver = Receiver::bind(opts)?;
        // On a terminal each line is cut to its width rather than wrapped by it.
        let columns = to_stdout
            .then(hare_transfer::screen::stdout_columns)
            .flatten();
        let say = |s: String| {
            for piece in hare_transfer::screen::fit(&s, columns) {
                if to_stdout {
                    println!("{piece}");
                } else {
                    eprintln!("{piece}");
                }
            }
        };
        say(format!(
            "hare-recv: listening on {} ({})",
            receiver.local_addr(),
            if tcp_mode { "kernel TCP" } else { "QUIC" }
        ));
        if let Some(fp) = receiver.fingerprint() {
            if receiver.created_identity() {
                say(format!(
                    "hare-recv: new identity created in {}",
                    identity_dir.display()
                ));
            }
            for line in fingerprint_lines(&fp.to_string(), columns) {
                say(line);
            }
        }
        say(who);
        match receiver.run(stop).await {
            Ok(()) => Ok(ExitKind::Ok),
            // Only a --one-shot job can be cut short: its status is the signal's.
            Err(TransferError::Interrupted) => Ok(ExitKind::Signal(
                seen.load(std::sync::atomic::Ordering::Relaxed),
            )),
            Err(e) => Err(e.into()),
        }
    })
}

/// The certificate's fingerprint line; on a terminal too narrow for its 64 digits, the
/// digits in two halves of one pin (`--pin` takes them joined, or with a colon between).
fn fingerprint_lines(fp: &str, columns: Option<usize>) -> Vec<String> {
    let line = format!("hare-recv: certificate sha256 {fp}");
    match columns {
        Some(c) if line.len() > c && fp.len() == 64 => vec![
            "hare-recv: certificate sha256, in two halves of one pin:".into(),
            format!("  {}", &fp[..32]),
            format!("  {}", &fp[32..]),
        ],
        _ => vec![line],
    }
}

fn main() -> ExitCode {
    raise_open_files_limit();
    let kind = match run(Cli::parse()) {
        Ok(kind) => kind,
        Err(Failed(kind, e)) => {
            eprintln!("hare-recv: error: {e:#}");
            kind
        }
    };
    ExitCode::from(kind.code())
}

/// Each data stream of a job holds its file open here, up to 512 at once per job: lift the
/// soft limit on open files to the hard one (setrlimit(2), as servers that hold many files
/// do), since the usual soft default of 1024 would fail the files of two busy jobs. A limit
/// that cannot be raised stays, and running out says so in the file's verdict.
fn raise_open_files_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

//! `hare-send`: push bulk data or files to a `hare-recv`, nuttcp-style, over QUIC with
//! kernel-faithful congestion control (or over kernel TCP with `--tcp`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

mod bench_args;
mod bench_conns;
mod bench_emu;
mod daemon_dest;
mod over_ssh;
mod rerun;
mod ssh_serve;
use clap::{Args, Parser, Subcommand};
use hare_transfer::exit::{ExitKind, SEND_EXIT_HELP};
use hare_transfer::quic_config::{
    Link, Liveness, DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEEP_ALIVE, DEFAULT_SEND_IDLE_TIMEOUT,
};
use hare_transfer::report::{JsonTarget, OutputOptions};
use hare_transfer::trust::Trust;
use hare_transfer::SkipRule;
use hare_transfer::{SendJob, SendOptions, TcpSendOptions, TransferError};

/// The signal a file transfer the user interrupted is reported with when none was seen
/// (SIGINT, as Ctrl-C).
const SIGINT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "hare-send",
    version,
    about = "Send bulk data or files to hare-recv over QUIC (or kernel TCP), with nuttcp-style reports",
    long_about = "Send bulk data (-n SIZE or -T SECONDS) or files to hare-recv.\n\n\
        Units of the report: MB, MiB = 2^20 bytes (as nuttcp), Mbps = 10^6 bit/s (as nuttcp \
        and iperf3), cwnd in packets. On a terminal narrower than 100 columns the lines take \
        a compact form under a heading; to a file or pipe they are always nuttcp's full lines.\n\n\
        Examples:\n  hare-send -n 1g --pin SHA256 receiver.example\n  \
        hare-send -T 10 -i 1 --cc cubic@linux-2.6.20 --pin SHA256 10.0.0.2:5210\n  \
        hare-send --pin SHA256 photos/ notes.txt receiver.example\n  \
        hare-send --tcp --cc cubic -T 10 10.0.0.2\n  \
        hare-send -r -T 10 -P 2 --pin SHA256 receiver.example   (receiver sends)\n  \
        hare-send bench",
    after_help = SEND_EXIT_HELP,
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
    /// Loopback benchmark: hare-send vs plain quinn (same windows, MTU, quinn Cubic) vs --tcp;
    /// with --connections 1,2,4,8: -C N against -C 1 (loopback, or the emulator with --rate).
    Bench(BenchArgs),
    /// Loopback benchmark of many small files: hare vs `cp -r` + `sync` of the same tree.
    BenchFiles(BenchFilesArgs),
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
    /// QUIC connections that carry the job, each on its own UDP socket and thread with its
    /// own controller: past one core, and past one flow's loss-bound rate on a lossy long
    /// path. Files travel as ranges of at most --chunk over all of them, and a lost
    /// connection's ranges go again on the others (the job's control channel too, when the
    /// first is lost); bulk puts -P streams on each, and a lost connection's streams continue
    /// on the others. N connections take about N flows' share
    /// of a shared bottleneck: for dedicated or under-used paths (as GridFTP's parallel
    /// streams).
    #[arg(
        short = 'C',
        long = "connections",
        value_name = "N",
        default_value_t = 1
    )]
    connections: u16,
    /// With -C: the largest range of a file sent on one stream (default 4m).
    #[arg(long, value_name = "SIZE")]
    chunk: Option<String>,
    /// Report interval in seconds (0.1 or more).
    #[arg(short = 'i', value_name = "SECONDS", default_value_t = 1.0)]
    interval: f64,
    /// Window like nuttcp -w: stream and connection receive windows and the send window
    /// (with --tcp: SO_SNDBUF/SO_RCVBUF); a SIZE also fixes the receiver's grant for the job
    /// (at most its --max-window). Default auto: windows that start small and grow
    /// each round trip to about twice what the path delivered, up to --max-window (QUIC);
    /// kernel autotuning (TCP).
    #[arg(short = 'w', value_name = "SIZE|auto")]
    window: Option<String>,
    /// Cap of -w auto (bounds the memory one connection holds).
    #[arg(long, value_name = "SIZE", default_value = "128m")]
    max_window: String,
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
    /// Continue partial files the receiver kept (the default; the part already there is
    /// checked against this file's digest first).
    #[arg(long, hide = true)]
    resume: bool,
    /// The command that reaches a remote `[user@]host:DEST` (as rsync's -e): its own
    /// options come with it, e.g. `-e "ssh -p 2222"`; default `ssh`.
    #[arg(short = 'e', long = "rsh", value_name = "CMD", env = "HARE_RSH")]
    rsh: Option<String>,
    /// The directory of hare-recv on the remote, when it is not on the remote PATH (as
    /// rsync's --rsync-path).
    #[arg(long, value_name = "DIR")]
    remote_bin: Option<String>,
    /// Send SRC to a hare-recv that started this sender through ssh and dials it (it reads
    /// the receiver's fingerprint on standard input and answers on standard output); not for
    /// people to run.
    #[arg(long, hide = true)]
    ssh_serve: bool,
    /// The UDP ports the remote hare-recv may bind, `LOW-HIGH` or one `PORT`, for a remote
    /// firewall that opens a range (default: a port the remote's kernel picks).
    #[arg(long, value_name = "RANGE")]
    remote_ports: Option<hare_ssh::PortRange>,
    /// With --ssh-serve: the ports this side may bind (the fetching hare-recv's
    /// --remote-ports); not for people to run.
    #[arg(long, hide = true, value_name = "RANGE")]
    ports: Option<hare_ssh::PortRange>,
    /// Start partial files over instead of continuing them.
    #[arg(long, conflicts_with = "resume")]
    no_resume: bool,
    /// Send every file and replace what the receiver has; by default a file whose size and
    /// modification time match the receiver's copy is skipped as up to date (rsync's quick
    /// check) and one that differs is replaced.
    #[arg(long)]
    force: bool,
    /// Skip files whose BLAKE3 digest matches the receiver's copy (reads every file before
    /// the job starts) instead of comparing size and time (rsync -c).
    #[arg(short = 'c', long, conflicts_with_all = ["force", "ignore_existing", "update"])]
    checksum: bool,
    /// Skip every file that exists on the receiver, whatever it holds.
    #[arg(long, conflicts_with_all = ["force", "update"])]
    ignore_existing: bool,
    /// Skip files that are newer on the receiver (rsync -u).
    #[arg(short = 'u', long, conflicts_with = "force")]
    update: bool,
    /// Rate limit over all streams, bit/s (k/m/g SI suffixes: 100m = 10^8 bit/s); 0 = no
    /// limit.
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
    /// Give up on a receiver that has sent nothing for this many seconds (QUIC idle
    /// timeout; the receiver's own 30 s bound applies to longer values).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SEND_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
    /// Send a keep-alive this often while no data flows (QUIC PING), so that silence means
    /// the path or the receiver is gone.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_KEEP_ALIVE.as_secs_f64())]
    keep_alive: f64,
    /// Give up a connection attempt that gets no answer within this many seconds (a note
    /// comes after 1.5 s).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_CONNECT_TIMEOUT.as_secs_f64())]
    connect_timeout: f64,
    /// No report lines.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
    /// Reverse mode (nuttcp -r, iperf3 -R): hare-recv sends the bulk job (-n or -T, -P, -R)
    /// back over the connection this side opens, so it works through a NAT; hare-recv's own
    /// --cc controls it. Bulk only (QUIC, or kernel TCP with --tcp).
    #[arg(short = 'r', long)]
    reverse: bool,
    /// Send a file that changed while it was read again from its start, up to N times, then
    /// fail it (0: fail at once).
    #[arg(long, value_name = "N", default_value_t = hare_transfer::sender::DEFAULT_RETRIES,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(hare_transfer::sender::MAX_RETRIES)))]
    retries: u32,
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
    /// Send symbolic links as links, their target text unchanged (rsync -l); without it they
    /// are skipped with a warning. The receiver never follows them.
    #[arg(short = 'l', long)]
    links: bool,
    /// With --links: skip (with a warning) links whose target is absolute or climbs out of
    /// the transfer with `..` (rsync --safe-links).
    #[arg(long, requires = "links")]
    safe_links: bool,
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
    /// Seconds per measurement [default: 3].
    #[arg(short = 'T', long)]
    seconds: Option<f64>,
    /// UDP payload sizes to test [default: 1452,8952; with --connections: hare-send's, one
    /// value at most].
    #[arg(long, value_delimiter = ',')]
    mtu: Vec<u16>,
    /// Window for every QUIC run [default: 32m; with --connections: hare-send's, auto].
    #[arg(short = 'w')]
    window: Option<String>,
    /// Interleaved hare / plain-quinn pairs per MTU (the median ratio is reported); with
    /// --connections, rounds of every N [default: 5; with --connections: 3].
    #[arg(long)]
    rounds: Option<usize>,
    /// Benchmark several connections instead: hare-send -C N for each N of the list (e.g.
    /// 1,2,4,8), rounds interleaved across the N values; per N the median goodput and CPU
    /// seconds per 10^9 bytes on each side, and their ratios to one connection.
    #[arg(long, value_name = "N,N,...")]
    connections: Option<String>,
    /// With --connections: send this file in each run (checked byte-identical) instead of
    /// -T seconds of bulk data.
    #[arg(long, value_name = "FILE", requires = "connections")]
    file: Option<PathBuf>,
    /// With --connections: run each case through the namespace emulator (root) at this
    /// bottleneck rate, both directions (e.g. 100m), with a one-BDP drop-tail queue.
    #[arg(long, value_name = "RATE", requires_all = ["connections", "rtt"])]
    rate: Option<hare_link::BitRate>,
    /// With --rate: the emulated path's round-trip propagation delay (e.g. 80ms).
    #[arg(long, value_name = "RTT", requires = "rate")]
    rtt: Option<hare_link::TimeSpan>,
    /// With --rate: Bernoulli loss probability on the forward link (e.g. 0.001).
    #[arg(long, value_name = "P", requires = "rate")]
    loss: Option<f64>,
}

#[derive(Args, Debug)]
struct BenchFilesArgs {
    /// Files in the tree (100 to a directory).
    #[arg(long, default_value_t = 5000)]
    files: usize,
    /// Bytes per file (k/m suffixes are powers of 2).
    #[arg(long, default_value = "1k")]
    size: String,
    /// hare's files in flight (-P).
    #[arg(short = 'P', default_value_t = 4)]
    parallel: u16,
    /// Interleaved hare / cp rounds (the medians are reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where the tree and the copies go (default: the temporary directory); the copies land
    /// on its file system, so this chooses the disk measured.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
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
    let bits = hare_link::units::parse_rate(s)
        .with_context(|| format!("{what} {s}"))?
        .bits_per_sec();
    if bits == 0 && !is_zero(s) {
        bail!("{what} {s} is below 1 bit/s (give 0 for no limit)");
    }
    Ok(bits)
}

/// True when a rate is written as zero (`0`, `0k`, `0.0m`), as opposed to a small value
/// that rounds to 0 bit/s.
fn is_zero(s: &str) -> bool {
    let digits = s
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '/');
    digits.parse::<f64>().is_ok_and(|v| v == 0.0)
}

/// `SECONDS` of an option as a duration, refusing what `Duration` cannot hold.
fn seconds(v: f64, what: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{what} {v:e}: not a number of seconds"))
}

/// Options that only exist over QUIC, refused with --tcp rather than silently ignored.
fn refuse_with_tcp(a: &SendArgs) -> Result<()> {
    let quic_only = [
        ("--pin (or HARE_PIN)", a.pin.is_some()),
        ("--cert", a.cert.is_some()),
        ("--ca", a.ca.is_some()),
        ("--qlog", a.qlog.is_some()),
    ];
    for (name, given) in quic_only {
        if given {
            bail!("{name} cannot be honoured with --tcp: kernel TCP runs are unencrypted and have no certificate or qlog");
        }
    }
    Ok(())
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
    // (docs/PLATFORM.md).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

/// `hare-send HOST FILE` (scp's order reversed): the first name is no file here but the last
/// one is, so the receiver was most likely named first. Said once, instead of "cannot read
/// HOST".
fn host_goes_last(paths: &[PathBuf], server: &str) -> Result<()> {
    let Some(first) = paths.first() else {
        return Ok(());
    };
    let text = first.to_string_lossy();
    let missing = std::fs::symlink_metadata(first).is_err();
    if missing && !text.contains('/') && std::fs::symlink_metadata(server).is_ok() {
        bail!(
            "`{text}` is not a file here but `{server}` is: the receiver HOST[:PORT] goes last \
             (hare-send FILE|DIR... HOST[:PORT])"
        );
    }
    Ok(())
}

/// A source without a name of its own (`.`, `..`, `dir/.`, `/`) stands for what is in it, as
/// `rsync -r . HOST:` sends the current directory's contents: each entry is sent under its
/// own name, in name order. Every other source is kept as given.
fn contents_of_dots(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        if p.file_name().is_some() || !p.is_dir() {
            out.push(p);
            continue;
        }
        let mut entries = std::fs::read_dir(&p)
            .with_context(|| format!("reading {}", p.display()))?
            .map(|e| e.map(|e| p.join(e.file_name())))
            .collect::<std::io::Result<Vec<_>>>()
            .with_context(|| format!("reading {}", p.display()))?;
        entries.sort();
        out.extend(entries);
    }
    Ok(out)
}

/// `s` on one line: a newline, tab or other control character in a name (a refused name
/// may hold any) is written as its escape (`\n`, `\u{1b}`), so that an error line is never
/// split or turned into terminal commands by the name in it.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn options(a: SendArgs) -> Result<SendOptions> {
    let skip = skip_rule(&a);
    if a.tcp {
        refuse_with_tcp(&a)?;
    }
    let mut targets = a.targets;
    let server = targets.pop().context("missing receiver HOST[:PORT]")?;
    let (server, dest) = daemon_dest::split(&server);
    let paths = contents_of_dots(targets.into_iter().map(PathBuf::from).collect())?;
    let bulk = a.size.is_some() || a.seconds.is_some();
    let job = match (bulk, paths.is_empty()) {
        (true, true) => SendJob::Bulk {
            bytes: a.size.as_deref().map(|s| size(s, "-n")).transpose()?,
            seconds: a.seconds,
            streams: a.parallel.unwrap_or(1),
        },
        (true, false) => bail!("-n / -T are for bulk mode; do not name files with them"),
        (false, false) => {
            host_goes_last(&paths, &server)?;
            SendJob::Files {
                paths,
                resume: !a.no_resume,
                force: a.force,
                parallel: a.parallel.unwrap_or(4),
            }
        }
        (false, true) => bail!("nothing to send: give -n SIZE, -T SECONDS, or files before HOST"),
    };
    if !(0.1..=3600.0).contains(&a.interval) {
        bail!("-i must be between 0.1 and 3600 seconds");
    }
    let liveness = Liveness {
        idle_timeout: seconds(a.idle_timeout, "--idle-timeout")?,
        keep_alive: seconds(a.keep_alive, "--keep-alive")?,
        connect_timeout: seconds(a.connect_timeout, "--connect-timeout")?,
    };
    let link = Link::from_args(
        a.window.as_deref(),
        size(&a.max_window, "--max-window")?,
        a.mtu,
    )?;
    // Kernel TCP autotunes by itself unless a size is set.
    let explicit_window = (!link.auto).then_some(link.window);
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
            links: match (a.meta.links, a.meta.safe_links) {
                (false, _) => hare_transfer::sendfiles::Links::Skip,
                (true, false) => hare_transfer::sendfiles::Links::Keep,
                (true, true) => hare_transfer::sendfiles::Links::Safe,
            },
        },
        token: a.token,
        job,
        skip,
        dest,
        via: None,
        link,
        cc: a.cc,
        qlog: a.qlog,
        interval: Duration::from_secs_f64(a.interval),
        rate: a.rate.as_deref().map(|r| rate(r, "-R")).transpose()?,
        output: OutputOptions {
            quiet: a.quiet,
            json,
            jsonl: a.jsonl,
            progress,
            verbose: a.verbose > 0,
        },
        tcp: if a.tcp {
            Some(TcpSendOptions {
                buffer: explicit_window.map(|w| w as usize),
                pacing_rate: a
                    .pacing_rate
                    .as_deref()
                    .map(|r| rate(r, "--pacing-rate"))
                    .transpose()?
                    .map(|b| {
                        if b < 8 {
                            bail!("--pacing-rate must be at least 8 bit/s (1 byte/s)");
                        }
                        Ok(b / 8)
                    })
                    .transpose()?,
            })
        } else {
            None
        },
        liveness,
        reverse: a.reverse,
        retries: a.retries,
        connections: a.connections,
        chunk: match a.chunk.as_deref() {
            Some(c) => size(c, "--chunk")?,
            None => hare_transfer::sender::DEFAULT_CHUNK,
        },
    })
}

/// An error, and the exit status it ends the run with.
struct Failed(ExitKind, anyhow::Error);

/// The kind of an error: an engine error in its chain says which, else `default`.
fn kind_of(e: &anyhow::Error, default: ExitKind) -> ExitKind {
    e.chain()
        .find_map(|c| c.downcast_ref::<TransferError>())
        .map_or(default, ExitKind::of)
}

/// Everything `options` refuses is the command line's fault, except the sender's identity
/// (a file it could not make or read).
fn options_failed(e: anyhow::Error) -> Failed {
    let identity = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<TransferError>(),
            Some(TransferError::Identity { .. })
        )
    });
    let kind = if identity {
        ExitKind::Error
    } else {
        ExitKind::Usage
    };
    Failed(kind, e)
}

fn run_send(mut a: SendArgs) -> Result<ExitKind, Failed> {
    init_tracing(a.verbose);
    if a.ssh_serve {
        // SRC... only: the receiver dials this side, so there is no HOST to name.
        a.targets.push("ssh-pull".into());
        a.quiet = true;
        let ports: Vec<u16> = a.ports.iter().flat_map(|r| r.ports()).collect();
        let opts = options(a).map_err(options_failed)?;
        return ssh_serve::serve(opts, &ports).map_err(|e| Failed(ExitKind::Error, e));
    }
    let quiet = a.quiet;
    let trusted = a.pin.is_some() || a.cert.is_some() || a.ca.is_some() || a.tcp;
    let files = a.size.is_none() && a.seconds.is_none() && a.targets.len() > 1;
    let how = (a.rsh.as_deref(), a.remote_bin.clone(), a.remote_ports);
    let ssh = over_ssh::target(a.targets.last(), files, trusted, how)
        .map_err(|e| Failed(ExitKind::Usage, e))?;
    let opts = options(a).map_err(options_failed)?;
    let bulk = matches!(opts.job, SendJob::Bulk { .. });
    let rt = runtime().map_err(|e| Failed(ExitKind::Error, e))?;
    let signal = Arc::new(AtomicU8::new(SIGINT));
    let seen = signal.clone();
    let outcome = rt
        .block_on(async move {
            let (trigger, stop) = hare_transfer::stop_pair();
            watch_signals(trigger.clone(), seen)?;
            match ssh {
                None => Ok::<_, anyhow::Error>(hare_transfer::send(opts, stop).await),
                Some(t) => over_ssh::send(t, opts, trigger, stop).await,
            }
        })
        .map_err(|e| Failed(ExitKind::Error, e))?;
    let interrupted = ExitKind::Signal(signal.load(Ordering::Relaxed));
    let outcome = match outcome {
        Ok(o) => o,
        Err(TransferError::Interrupted) => {
            eprintln!("hare-send: interrupted");
            return Ok(interrupted);
        }
        Err(e) => return Err(Failed(ExitKind::of(&e), e.into())),
    };
    for f in outcome.files.iter().filter(|f| f.ok && f.retries > 0) {
        eprintln!(
            "hare-send: {}: changed while being sent; retried {} time(s), delivered as last read",
            one_line(&f.name),
            f.retries
        );
    }
    for f in &outcome.files {
        if let (true, Some(now)) = (f.ok, f.grew_to) {
            eprintln!(
                "hare-send: warning: {}: grew while being sent (to {now} bytes); delivered at \
                 the size it had when listed",
                f.name
            );
        }
    }
    let failed: Vec<_> = outcome.failures().collect();
    let skipped = outcome.files.iter().filter(|f| f.skipped.is_some()).count();
    if skipped > 0 && !quiet {
        eprintln!(
            "hare-send: {skipped} of {} file(s) already on the receiver, not sent ({})",
            outcome.files.len(),
            skip_words(&outcome.files)
        );
    }
    if outcome.interrupted && !bulk {
        // Only the receiver's verdicts say a file is complete (verified, renamed and durable);
        // files it has not confirmed may still have arrived whole.
        eprintln!(
            "hare-send: interrupted: {} of {} file(s) not confirmed by the receiver; it keeps what it has. To finish, run the same command again:\n  {}",
            failed.len(),
            outcome.files.len(),
            rerun::command_line()
        );
        return Ok(interrupted);
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!(
                "hare-send: {}: {}",
                one_line(&f.name),
                one_line(f.reason.as_deref().unwrap_or("failed"))
            );
        }
        eprintln!(
            "hare-send: error: {} of {} file(s) failed",
            failed.len(),
            outcome.files.len()
        );
        return Ok(ExitKind::FilesFailed);
    }
    Ok(ExitKind::Ok)
}

/// The skip rule of a file job (none with `--force`: every file is sent and replaces).
fn skip_rule(a: &SendArgs) -> Option<SkipRule> {
    match (a.force, a.checksum, a.ignore_existing, a.update) {
        (true, ..) => None,
        (_, true, _, _) => Some(SkipRule::Checksum),
        (_, _, true, _) => Some(SkipRule::IgnoreExisting),
        (_, _, _, true) => Some(SkipRule::Update),
        _ => Some(SkipRule::Quick),
    }
}

/// The receiver's reasons for the files it did not need, counted: `12 up to date, 1 newer on
/// the receiver (--update)`.
fn skip_words(files: &[hare_transfer::sender::FileReport]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for why in files.iter().filter_map(|f| f.skipped.as_deref()) {
        match counts.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => counts.push((why, 1)),
        }
    }
    counts
        .iter()
        .map(|(w, n)| format!("{n} {w}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP all stop the run the same way: a bulk run drains and
/// prints its summary, a file run keeps the receiver's verified prefix for `--resume`. The
/// exit status of an interrupted file run is 128 + the signal's number, as shells report it
/// (`ExitKind::Signal`, whose number `seen` records); a second signal leaves at once.
fn watch_signals(trigger: hare_transfer::StopTrigger, seen: Arc<AtomicU8>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let leave = |n: u8| std::process::exit(i32::from(ExitKind::Signal(n).code()));
    // POSIX's numbers for these three are the same on every Unix.
    let kinds = [
        (SignalKind::interrupt(), "Ctrl-C", 2),
        (SignalKind::terminate(), "SIGTERM", 15),
        (SignalKind::hangup(), "SIGHUP", 1),
    ];
    for (kind, name, number) in kinds {
        let mut sig = signal(kind).with_context(|| format!("listening for {name}"))?;
        let (trigger, seen) = (trigger.clone(), seen.clone());
        tokio::spawn(async move {
            if sig.recv().await.is_some() {
                if trigger.is_triggered() {
                    leave(number);
                }
                seen.store(number, Ordering::Relaxed);
                trigger.stop_because(name);
                if sig.recv().await.is_some() {
                    leave(number);
                }
            }
        });
    }
    Ok(())
}

/// The directory of this executable (where hare-recv is looked for).
fn exe_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating hare-send")?;
    Ok(exe
        .parent()
        .context("hare-send has no directory")?
        .to_path_buf())
}

fn run_bench(b: BenchArgs) -> Result<ExitCode> {
    if let Some(connections) = b.connections {
        let a = bench_args::ConnArgs {
            connections,
            seconds: b.seconds,
            file: b.file,
            rounds: b.rounds,
            window: b.window,
            mtu: b.mtu,
            rate: b.rate,
            rtt: b.rtt,
            loss: b.loss,
        };
        bench_conns::run(a, &exe_dir()?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let seconds = b.seconds.unwrap_or(3.0);
    if !(seconds.is_finite() && (0.5..=600.0).contains(&seconds)) {
        bail!("bench --seconds {seconds}: must be 0.5 to 600");
    }
    let rounds = b.rounds.unwrap_or(5);
    if !(1..=50).contains(&rounds) {
        bail!("bench --rounds {rounds}: must be 1 to 50");
    }
    let mtus = if b.mtu.is_empty() {
        vec![1452, 8952]
    } else {
        b.mtu
    };
    let exe_dir = exe_dir()?;
    let scratch = std::env::temp_dir().join(format!("hare-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let opts = hare_transfer::bench::BenchOptions {
        seconds,
        mtus,
        window: size(b.window.as_deref().unwrap_or("32m"), "-w")?,
        exe_dir,
        scratch: scratch.clone(),
        rounds,
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

fn run_bench_files(b: BenchFilesArgs) -> Result<ExitCode> {
    if !(1..=50).contains(&b.rounds) {
        bail!("bench-files --rounds {}: must be 1 to 50", b.rounds);
    }
    let bytes = size(&b.size, "--size")?;
    if bytes > 64 << 20 {
        bail!("bench-files --size {}: at most 64m", b.size);
    }
    let base = b.dir.unwrap_or_else(std::env::temp_dir);
    let scratch = base.join(format!("hare-bench-files-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let opts = hare_transfer::bench_files::FilesBenchOptions {
        files: b.files,
        size: bytes as usize,
        parallel: b.parallel,
        rounds: b.rounds,
        scratch: scratch.clone(),
    };
    println!(
        "hare bench-files: {} files of {} B in {}, -P {}, load average before: {}",
        opts.files,
        opts.size,
        base.display(),
        opts.parallel,
        hare_transfer::bench::load_average()
    );
    let res = hare_transfer::bench_files::run(&opts, |l| println!("  {l}"));
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{}", res?);
    println!(
        "load average after: {}",
        hare_transfer::bench::load_average()
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let other = |r: Result<ExitCode>| match r {
        Ok(_) => Ok(ExitKind::Ok),
        Err(e) => Err(Failed(kind_of(&e, ExitKind::Error), e)),
    };
    let res = match cli.command {
        Some(Command::Bench(b)) => other(run_bench(b)),
        Some(Command::BenchFiles(b)) => other(run_bench_files(b)),
        Some(Command::Id(a)) => other(run_id(a)),
        Some(Command::BenchPlainRecv(p)) => other(runtime().and_then(|rt| {
            rt.block_on(hare_transfer::bench::plain_recv(
                p.mtu,
                p.window,
                &p.identity,
            ))?;
            Ok(ExitCode::SUCCESS)
        })),
        Some(Command::BenchPlainSend(p)) => other(runtime().and_then(|rt| {
            let pin = p.pin.parse()?;
            rt.block_on(hare_transfer::bench::plain_send(
                &p.addr, pin, p.mtu, p.window, p.seconds,
            ))?;
            Ok(ExitCode::SUCCESS)
        })),
        None => run_send(cli.send),
    };
    let kind = match res {
        Ok(kind) => kind,
        Err(Failed(kind, e)) => {
            eprintln!("hare-send: error: {}", one_line(&format!("{e:#}")));
            kind
        }
    };
    ExitCode::from(kind.code())
}

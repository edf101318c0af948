//! `hare-recv --ssh-serve`: the remote end of `hare-send SRC... [user@]host:[DEST]`, started by
//! hare-send through ssh (module docs of the `hare-ssh` crate). It reads the sender's
//! certificate fingerprint from standard input, listens on an ephemeral UDP port with a fresh
//! certificate, prints where and whom to trust (with a one-time token) on standard output,
//! serves exactly that sender's one job into DEST (relative to the login's home, created if
//! missing), and ends when the job ends or its standard input closes (ssh or the sender went
//! away): the ssh session is the job's lifeline.

use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hare_ssh::ServeHello;
use hare_transfer::exit::ExitKind;
use hare_transfer::identity::Fingerprint;
use hare_transfer::receiver::{Receiver, RecvOptions};
use hare_transfer::TransferError;

/// Serve one job as `base` says (limits, windows, controller), into `dest`.
pub fn serve(mut base: RecvOptions, dest: Option<PathBuf>) -> Result<ExitKind> {
    let mut first = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut first)
        .context("reading the sender's fingerprint from ssh")?;
    let sender: Fingerprint = first
        .trim()
        .parse()
        .map_err(|e| anyhow::anyhow!("the sender's fingerprint `{}`: {e}", first.trim()))?;
    let dest = dest.unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dest)
        .with_context(|| format!("creating the destination {}", dest.display()))?;
    let state = Scratch::new()?;
    let token = random_hex(16)?;
    base.identity_dir = state.0.clone();
    base.allow = vec![sender];
    base.token = Some(token.clone());
    base.dir = Some(dest);
    base.open = false;
    base.one_shot = true;
    base.tcp = None;
    base.output.quiet = true;
    base.output.json = None;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async move {
        let receiver = bind_any(base)?;
        let fingerprint = receiver
            .fingerprint()
            .context("the receiver has no certificate")?;
        let hello = ServeHello {
            hare: 1,
            port: receiver.local_addr().port(),
            fingerprint: fingerprint.to_string(),
            token,
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", hello.line()).context("answering over ssh")?;
        out.flush().context("answering over ssh")?;
        drop(out);
        let (trigger, stop) = hare_transfer::stop_pair();
        // The lifeline: standard input closes when ssh or the sender is gone.
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut input = std::io::stdin();
            while matches!(input.read(&mut sink), Ok(n) if n > 0) {}
            trigger.stop_because("the ssh session ended");
        });
        match receiver.run(stop).await {
            Ok(()) => Ok(ExitKind::Ok),
            Err(TransferError::Interrupted) => Ok(ExitKind::Signal(1)),
            Err(e) => Err(e.into()),
        }
    })
}

/// Bind on every address, IPv6 and IPv4 (`[::]:0`), or IPv4 only where IPv6 is off.
fn bind_any(mut opts: RecvOptions) -> Result<Receiver> {
    opts.listen = SocketAddr::from(([0u16; 8], 0));
    match Receiver::bind(opts.clone()) {
        Ok(r) => Ok(r),
        Err(_) => {
            opts.listen = SocketAddr::from(([0, 0, 0, 0], 0));
            Ok(Receiver::bind(opts)?)
        }
    }
}

/// `n` random bytes from the kernel, as hex.
fn random_hex(n: usize) -> Result<String> {
    let mut b = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom for the one-time token")?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A private directory for this session's certificate, removed when the session ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!(
            "hare-ssh-{}-{}",
            std::process::id(),
            random_hex(6)?
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.0));
    }
}

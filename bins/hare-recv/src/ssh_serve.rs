//! `hare-recv --ssh-serve`: the remote end of `hare-send SRC... [user@]host:[DEST]`, started by
//! hare-send through ssh (module docs of the `hare-ssh` crate). It reads the sender's
//! certificate fingerprint from standard input, listens on an ephemeral UDP port with a fresh
//! certificate, prints where and whom to trust (with a one-time token) on standard output,
//! serves exactly that sender's one job into DEST (relative to the login's home, created if
//! missing), and ends when the job ends or its standard input closes (ssh or the sender went
//! away): the ssh session is the job's lifeline.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hare_ssh::ServeHello;
use hare_transfer::exit::ExitKind;
use hare_transfer::identity::Fingerprint;
use hare_transfer::receiver::{Receiver, RecvOptions};
use hare_transfer::TransferError;

/// Serve one job as `base` says (limits, windows, controller), into `dest`, listening on the
/// first free port of `ports` (empty: one the kernel picks).
pub fn serve(
    mut base: RecvOptions,
    (dest, threads): (Option<PathBuf>, u16),
    ports: &[u16],
) -> Result<ExitKind> {
    let first = hare_ssh::read_first_line().context("reading the sender's fingerprint from ssh")?;
    let sender: Fingerprint = first
        .parse()
        .map_err(|e| anyhow::anyhow!("the sender's fingerprint `{first}`: {e}"))?;
    let dest = dest.unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dest)
        .with_context(|| format!("creating the destination {}", dest.display()))?;
    let state = Scratch::new()?;
    let token = hare_ssh::one_time_token().context("reading /dev/urandom for the token")?;
    base.identity_dir = state.0.clone();
    base.allow = vec![sender];
    base.token = Some(token.clone());
    base.dir = Some(dest);
    base.open = false;
    base.one_shot = true;
    base.tcp = None;
    base.output.quiet = true;
    base.output.json = None;
    let rt = crate::runtime(threads)?;
    rt.block_on(async move {
        let receiver = bind_any(base, ports)?;
        let fingerprint = receiver
            .fingerprint()
            .context("the receiver has no certificate")?;
        let hello = ServeHello {
            hare: 1,
            port: receiver.local_addr().port(),
            fingerprint: fingerprint.to_string(),
            token,
            // A push's further connections all come to this one port.
            further_ports: Vec::new(),
        };
        hare_ssh::answer(&hello).context("answering over ssh")?;
        let (trigger, stop) = hare_transfer::stop_pair();
        // The lifeline: standard input closes when ssh or the sender is gone.
        hare_ssh::on_lifeline_end(move || trigger.stop_because("the ssh session ended"));
        match receiver.run(stop).await {
            Ok(()) => Ok(ExitKind::Ok),
            Err(TransferError::Interrupted) => Ok(ExitKind::Signal(1)),
            Err(e) => Err(e.into()),
        }
    })
}

/// Bind on every address, IPv6 and IPv4 (`[::]`), or IPv4 only where IPv6 is off, at the
/// first free port of `ports` (empty: port 0, the kernel's pick).
fn bind_any(mut opts: RecvOptions, ports: &[u16]) -> Result<Receiver> {
    let mut last = None;
    for &port in ports.iter().chain(ports.is_empty().then_some(&0)) {
        for any in [
            SocketAddr::from(([0u16; 8], port)),
            SocketAddr::from(([0, 0, 0, 0], port)),
        ] {
            opts.listen = any;
            match Receiver::bind(opts.clone()) {
                Ok(r) => return Ok(r),
                Err(e) => last = Some(e),
            }
        }
    }
    let why = last.map_or_else(String::new, |e| format!(" (last: {e})"));
    match (ports.first(), ports.last()) {
        (Some(first), Some(end)) => anyhow::bail!("no free UDP port in {first}-{end}{why}"),
        _ => anyhow::bail!("could not bind a UDP port{why}"),
    }
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
        let tag = hare_ssh::one_time_token().context("reading /dev/urandom")?;
        let dir = base.join(format!("hare-ssh-{}-{}", std::process::id(), &tag[..12]));
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

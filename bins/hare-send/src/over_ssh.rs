//! `hare-send SRC... [user@]host:[DEST]`: the receiver started through ssh, as scp and qcp do
//! (crate `hare-ssh`). For files, without `--pin`, `--cert` or `--ca`, a destination with a
//! `:` before any `/` is a remote path, unless what follows the `:` is a port number
//! (`HOST:PORT` stays a listening hare-recv, which then needs a trust option; a remote
//! directory named by digits is written `host:./5210`).

use std::time::Duration;

use anyhow::{Context, Result};
use hare_ssh::{RemotePath, Rsh, Session};
use hare_transfer::trust::Trust;
use hare_transfer::{SendOptions, SendOutcome, Stop, StopTrigger, TransferError};

/// How long the remote gets to end by itself once the job is over.
const FINISH: Duration = Duration::from_secs(5);
/// How long the job may still take to end by itself once ssh is gone (a remote that served
/// its job exits as the sender reads its last verdict).
const GRACE: Duration = Duration::from_secs(3);
/// How long the sender gets to wind down once stopped.
const WIND_DOWN: Duration = Duration::from_secs(10);

/// A destination reached through ssh.
pub struct SshTarget {
    rsh: Rsh,
    remote: RemotePath,
    remote_bin: Option<String>,
    remote_ports: Option<hare_ssh::PortRange>,
}

/// The ssh destination `last` names, when no trust option makes it a listening receiver.
pub fn target(
    last: Option<&String>,
    files: bool,
    trusted: bool,
    (rsh, remote_bin, remote_ports): (Option<&str>, Option<String>, Option<hare_ssh::PortRange>),
) -> Result<Option<SshTarget>> {
    let remote = last
        .filter(|_| files && !trusted)
        .and_then(|l| RemotePath::parse(l))
        .filter(|r| r.path.is_empty() || !r.path.bytes().all(|b| b.is_ascii_digit()));
    let Some(remote) = remote else {
        return Ok(None);
    };
    let env = std::env::var("HARE_RSH").ok();
    let rsh = Rsh::choose(rsh, env.as_deref()).map_err(anyhow::Error::msg)?;
    Ok(Some(SshTarget {
        rsh,
        remote,
        remote_bin,
        remote_ports,
    }))
}

/// Start the remote receiver, send to it, and end it; ssh ending first ends the job.
pub async fn send(
    t: SshTarget,
    mut opts: SendOptions,
    trigger: StopTrigger,
    stop: Stop,
) -> Result<std::result::Result<SendOutcome, TransferError>> {
    let identity = opts
        .identity
        .clone()
        .context("a sender certificate is needed to send over ssh")?;
    let mut args = vec!["--ssh-serve".to_owned()];
    if !t.remote.path.is_empty() {
        args.extend(["--dir".to_owned(), t.remote.path.clone()]);
    }
    if let Some(range) = t.remote_ports {
        args.extend(["--ports".to_owned(), range.to_string()]);
    }
    if opts.connections > 1 {
        // A job over several connections: the remote serves them on as many threads.
        args.extend(["--threads".to_owned(), opts.connections.to_string()]);
    }
    let program = ("hare-recv", t.remote_bin.as_deref());
    let first = identity.fingerprint.to_string();
    let mut session = Session::start(&t.rsh, &t.remote, program, &args, &first).await?;
    let fp = session
        .hello
        .fingerprint
        .parse()
        .map_err(|e| anyhow::anyhow!("the remote's fingerprint: {e}"))?;
    opts.server = match session.address.contains(':') {
        true => format!("[{}]:{}", session.address, session.hello.port),
        false => format!("{}:{}", session.address, session.hello.port),
    };
    opts.trust = Some(Trust::Pin(fp));
    // DEST is the remote receiver's --dir here, not a directory beneath it.
    opts.dest = None;
    opts.token = Some(session.hello.token.clone());
    let host = session.host.clone();
    let job = hare_transfer::send(opts, stop);
    tokio::pin!(job);
    let out = tokio::select! {
        r = &mut job => r,
        s = session.ended() => {
            if let Ok(r) = tokio::time::timeout(GRACE, &mut job).await {
                return Ok(r);
            }
            trigger.stop_because("the ssh session ended");
            let _ = tokio::time::timeout(WIND_DOWN, &mut job).await;
            let why = s.map_or_else(|e| e.to_string(), |s| s.to_string());
            return Ok(Err(TransferError::Connection(format!(
                "the ssh session to {host} ended ({why}): the remote hare-recv is gone"
            ))));
        }
    };
    session.finish(FINISH).await;
    Ok(out)
}

//! `hare-send --ssh-serve SRC...`: the remote end of a pull (`hare-recv [user@]host:SRC...
//! DEST`), started by hare-recv through ssh (crate `hare-ssh`). It reads the receiver's
//! certificate fingerprint from standard input, binds an ephemeral UDP port with a fresh
//! certificate, prints where and whom to trust (with a one-time token) on standard output,
//! waits for exactly that receiver to connect, sends SRC as hare-send would (rsync's quick
//! check, resume), and ends when the job ends or its standard input closes (the lifeline).

use std::time::Duration;

use anyhow::{Context, Result};
use hare_ssh::ServeHello;
use hare_transfer::exit::ExitKind;
use hare_transfer::identity::Fingerprint;
use hare_transfer::sender::Listening;
use hare_transfer::{SendJob, SendOptions};

/// How long the receiver has to connect once the answer is printed.
const ACCEPT: Duration = Duration::from_secs(60);

/// Serve one pull of `opts`'s files, listening on the first free port of `ports` (empty:
/// one the kernel picks).
pub fn serve(mut opts: SendOptions, ports: &[u16]) -> Result<ExitKind> {
    let first =
        hare_ssh::read_first_line().context("reading the receiver's fingerprint from ssh")?;
    let receiver: Fingerprint = first
        .parse()
        .map_err(|e| anyhow::anyhow!("the receiver's fingerprint `{first}`: {e}"))?;
    let streams = match &opts.job {
        SendJob::Files { parallel, .. } => *parallel,
        SendJob::Bulk { streams, .. } => *streams,
    };
    let token = hare_ssh::one_time_token().context("reading /dev/urandom for the token")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async move {
        let listening = Listening::bind(&opts, streams, ports)?;
        let hello = ServeHello {
            hare: 1,
            port: listening.port()?,
            fingerprint: listening.fingerprint().to_string(),
            token: token.clone(),
            further_ports: listening.further_ports(),
        };
        hare_ssh::answer(&hello).context("answering over ssh")?;
        let (trigger, stop) = hare_transfer::stop_pair();
        hare_ssh::on_lifeline_end(move || trigger.stop_because("the ssh session ended"));
        let dialled = listening.accept(receiver, ACCEPT).await?;
        opts.via = Some(dialled);
        opts.token = Some(token);
        opts.output.quiet = true;
        opts.output.progress = false;
        opts.output.json = None;
        match hare_transfer::send(opts, stop).await {
            Ok(o) if o.failures().count() > 0 => Ok(ExitKind::FilesFailed),
            Ok(_) => Ok(ExitKind::Ok),
            Err(e) => Ok(ExitKind::of(&e)),
        }
    })
}

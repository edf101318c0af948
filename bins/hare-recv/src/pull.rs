//! `hare-recv [OPTIONS] [user@]host:SRC... DEST`: fetch files as scp does, through ssh. The
//! remote `hare-send --ssh-serve SRC...` is started with the user's ssh (`-e`/`--rsh`,
//! `HARE_RSH`, default ssh; `--remote-bin DIR`), binds an ephemeral UDP port and names it
//! with its certificate and a one-time token; this side dials it (only the remote needs a
//! reachable port), pinned both ways, and receives into DEST (created when missing) as a
//! listening hare-recv would, reruns skipping what is there and resuming partial files. The
//! ssh session is the job's lifeline both ways.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use hare_ssh::{RemotePath, Rsh, Session};
use hare_transfer::exit::ExitKind;
use hare_transfer::receiver::RecvOptions;
use hare_transfer::TransferError;

/// How long the job may still take to end by itself once ssh is gone.
const GRACE: Duration = Duration::from_secs(3);

/// What a pull was asked for.
pub struct Pull {
    remote: RemotePath,
    sources: Vec<String>,
    dest: PathBuf,
    rsh: Rsh,
    remote_bin: Option<String>,
    links: bool,
    /// The remote hare-send's own flags (skip rule, resume, -P, --retries, --cc).
    remote_args: Vec<String>,
    /// Worker threads of the runtime (1: one).
    threads: u16,
}

impl Pull {
    /// `args` = `[user@]host:SRC... DEST`; `None` when there are none (a listening receiver).
    pub fn parse(
        args: &[String],
        rsh: Option<&str>,
        remote_bin: Option<String>,
    ) -> Result<Option<Self>> {
        let Some((dest, srcs)) = args.split_last() else {
            return Ok(None);
        };
        if srcs.is_empty() {
            bail!("give [user@]host:SRC... and a local DEST (hare-recv host:path ./here)");
        }
        let mut remote: Option<RemotePath> = None;
        let mut sources = Vec::new();
        for s in srcs {
            let r =
                RemotePath::parse(s).with_context(|| format!("`{s}` is not [user@]host:SRC"))?;
            if remote.as_ref().is_some_and(|first| first.login != r.login) {
                bail!("all sources must be on one host: `{s}`");
            }
            sources.push(if r.path.is_empty() {
                ".".to_owned()
            } else {
                r.path.clone()
            });
            remote.get_or_insert(r);
        }
        let env = std::env::var("HARE_RSH").ok();
        let rsh = Rsh::choose(rsh, env.as_deref()).map_err(anyhow::Error::msg)?;
        Ok(remote.map(|remote| Self {
            remote,
            sources,
            dest: PathBuf::from(dest),
            rsh,
            remote_bin,
            links: false,
            remote_args: Vec::new(),
            threads: 1,
        }))
    }

    /// Bring symbolic links as links (the remote sender's `--links`).
    pub fn with_links(mut self, links: bool) -> Self {
        self.links = links;
        self
    }

    /// Serve the fetch on `threads` worker threads (`--threads`, or `-C`).
    pub fn with_threads(mut self, threads: u16) -> Self {
        self.threads = threads;
        self
    }

    /// Hand `args` to the remote hare-send (its job options, see `pull_args`).
    pub fn with_remote_args(mut self, args: Vec<String>) -> Self {
        self.remote_args = args;
        self
    }

    /// Run the pull with `opts` (limits, windows, controller, output).
    pub fn run(self, mut opts: RecvOptions) -> Result<ExitKind> {
        std::fs::create_dir_all(&self.dest)
            .with_context(|| format!("creating {}", self.dest.display()))?;
        let identity = hare_transfer::identity::ephemeral(&[])?;
        opts.dir = Some(self.dest.clone());
        let rt = crate::runtime(self.threads)?;
        rt.block_on(async move {
            let mut args = vec!["--ssh-serve".to_owned()];
            if self.links {
                args.push("--links".to_owned());
            }
            args.extend(self.remote_args.iter().cloned());
            args.push("--".to_owned());
            args.extend(self.sources.iter().cloned());
            let program = ("hare-send", self.remote_bin.as_deref());
            let first = identity.fingerprint.to_string();
            let mut session =
                Session::start(&self.rsh, &self.remote, program, &args, &first).await?;
            let sender = session
                .hello
                .fingerprint
                .parse()
                .map_err(|e| anyhow::anyhow!("the remote's fingerprint: {e}"))?;
            let port = session.hello.port;
            let addr = tokio::net::lookup_host((session.address.as_str(), port))
                .await
                .with_context(|| format!("resolving {}", session.address))?
                .next()
                .with_context(|| format!("{} has no address", session.address))?;
            opts.allow = vec![sender];
            opts.partial_owner = Some(format!("ssh {}", self.remote.login));
            opts.token = Some(session.hello.token.clone());
            let host = session.host.clone();
            let further = session.hello.further_ports.clone();
            let job = hare_transfer::receiver::receive_from(
                opts, addr, further, &host, &identity, sender,
            );
            tokio::pin!(job);
            let res = tokio::select! {
                r = &mut job => r,
                s = session.ended() => match tokio::time::timeout(GRACE, &mut job).await {
                    Ok(r) => r,
                    Err(_) => {
                        let why = s.map_or_else(|e| e.to_string(), |s| s.to_string());
                        Err(TransferError::Connection(format!(
                            "the ssh session to {host} ended ({why}): the remote hare-send is gone"
                        )))
                    }
                },
            };
            session.finish(Duration::from_secs(5)).await;
            match res {
                Ok(()) => Ok(ExitKind::Ok),
                Err(e) => {
                    eprintln!("hare-recv: error: {e}");
                    Ok(ExitKind::of(&e))
                }
            }
        })
    }
}

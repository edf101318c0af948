//! One remote hare started through ssh, and the ssh process kept as the job's lifeline.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::hello::ServeHello;
use crate::remote::RemotePath;
use crate::rsh::{shell_quote, Rsh};

/// Longest wait for the remote's answer: ssh's own connection and authentication included
/// (a passphrase typed at a prompt takes a person some seconds).
const HELLO_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines a login may print before the answer (start-up files), at most.
const MAX_LINES: usize = 1000;
/// Exit status a POSIX shell gives a command it cannot find.
const NOT_FOUND: i32 = 127;

/// Why a remote hare could not be started or kept.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    /// The ssh program itself could not be run.
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The remote has no hare (the shell could not find the program).
    #[error(
        "{host} has no `{program}`: install hare there (cargo install --path bins/hare-recv \
         from a clone of hare, or copy the binary) or name its directory with --remote-bin DIR"
    )]
    NotInstalled {
        /// The remote host.
        host: String,
        /// The program looked for.
        program: String,
    },
    /// ssh ended before the remote answered.
    #[error("the ssh session to {host} ended before hare answered ({status}); ssh said why above")]
    Ended {
        /// The remote host.
        host: String,
        /// ssh's exit status.
        status: String,
    },
    /// The remote did not answer in time.
    #[error("no answer from hare on {host} within {} s over ssh", HELLO_TIMEOUT.as_secs())]
    NoAnswer {
        /// The remote host.
        host: String,
    },
    /// Talking to ssh failed.
    #[error("the ssh channel to {host}: {source}")]
    Io {
        /// The remote host.
        host: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A remote hare started through ssh: its answer, and the ssh process that is the lifeline.
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Where the remote listens (the host as ssh resolves it) and whom to trust.
    pub hello: ServeHello,
    /// The host to connect to over UDP (ssh's `hostname` for the login).
    pub address: String,
    /// The remote, for messages.
    pub host: String,
}

impl Session {
    /// Run `program ARGS` on `remote` through `rsh` (`remote_bin`: the directory holding the
    /// program there, else its PATH), write `first_line` (what the remote must know first,
    /// e.g. this side's certificate fingerprint), and wait for its [`ServeHello`].
    pub async fn start(
        rsh: &Rsh,
        remote: &RemotePath,
        (program, remote_bin): (&str, Option<&str>),
        args: &[String],
        first_line: &str,
    ) -> Result<Self, SshError> {
        let prog = match remote_bin {
            Some(dir) => format!("{}/{program}", dir.trim_end_matches('/')),
            None => program.to_owned(),
        };
        let mut line = shell_quote(&prog);
        for a in args {
            line.push(' ');
            line.push_str(&shell_quote(a));
        }
        let mut child = rsh
            .command(&remote.login, &line)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SshError::Spawn {
                program: rsh.words()[0].clone(),
                source,
            })?;
        let io = |source| SshError::Io {
            host: remote.host.clone(),
            source,
        };
        let mut stdin = child.stdin.take();
        if let Some(w) = stdin.as_mut() {
            w.write_all(format!("{first_line}\n").as_bytes())
                .await
                .map_err(io)?;
            w.flush().await.map_err(io)?;
        }
        let stdout = child.stdout.take();
        let answer = tokio::time::timeout(HELLO_TIMEOUT, read_hello(stdout)).await;
        let hello = match answer {
            Ok(Some(h)) => h,
            Ok(None) => return Err(ended(&mut child, remote, &prog).await),
            Err(_) => {
                return Err(SshError::NoAnswer {
                    host: remote.host.clone(),
                })
            }
        };
        let address = rsh.resolve(&remote.login, &remote.host).await;
        Ok(Self {
            child,
            stdin,
            hello,
            address,
            host: remote.host.clone(),
        })
    }

    /// Resolves when the ssh process ends (the remote hare or the ssh connection is gone):
    /// its exit status.
    pub async fn ended(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// The job is over: close the remote's standard input (it then exits), and wait for ssh
    /// at most `limit`, then end it.
    pub async fn finish(mut self, limit: Duration) -> Option<ExitStatus> {
        drop(self.stdin.take());
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(Ok(s)) => Some(s),
            _ => {
                let _ = self.child.kill().await;
                None
            }
        }
    }
}

/// The remote's answer among the lines it prints; `None` when its output ends first.
async fn read_hello(stdout: Option<ChildStdout>) -> Option<ServeHello> {
    let mut lines = BufReader::new(stdout?).lines();
    for _ in 0..MAX_LINES {
        let line = lines.next_line().await.ok()??;
        if let Some(h) = ServeHello::parse(&line) {
            // Keep draining what the remote prints later, so that it never blocks on a
            // full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return Some(h);
        }
    }
    None
}

/// Why ssh ended before the answer, from its exit status.
async fn ended(child: &mut Child, remote: &RemotePath, program: &str) -> SshError {
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    match status {
        Ok(Ok(s)) if s.code() == Some(NOT_FOUND) => SshError::NotInstalled {
            host: remote.host.clone(),
            program: program.to_owned(),
        },
        Ok(Ok(s)) => SshError::Ended {
            host: remote.host.clone(),
            status: s.to_string(),
        },
        _ => SshError::Ended {
            host: remote.host.clone(),
            status: "still running".into(),
        },
    }
}

//! hare over ssh, in scp's shape: `hare-send SRC... [user@]host:[DEST]`.
//!
//! The local side runs the remote hare through the user's own ssh ([`Rsh`]: `-e`/`--rsh`,
//! `HARE_RSH`, or `ssh`), so the user's keys, agent, `~/.ssh/config` and `ProxyJump` apply.
//! Over the ssh channel the two ends exchange what a QUIC connection needs and nothing else:
//! the local side writes its certificate fingerprint, the remote answers with the UDP port it
//! bound, its own certificate fingerprint and a one-time token ([`ServeHello`]). The QUIC
//! connection that follows is pinned both ways (mutual TLS), and the ssh session stays open as
//! the job's lifeline: the remote ends when its standard input closes (the local side or ssh
//! died), and the local side ends when ssh exits ([`Session::ended`]).

mod hello;
mod ports;
mod remote;
mod rsh;
mod serve;
mod session;

pub use hello::{ServeHello, HELLO_PREFIX};
pub use ports::PortRange;
pub use remote::RemotePath;
pub use rsh::{shell_quote, split_words, Rsh};
pub use serve::{answer, on_lifeline_end, one_time_token, read_first_line};
pub use session::{Session, SshError};

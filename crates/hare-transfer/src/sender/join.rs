//! The further connections of a job (`-C N`): each on its own UDP socket and endpoint, made
//! and driven by a current-thread runtime on a thread of its own (quinn drives an endpoint and
//! its connections from the runtime that made them, so each connection's packet work, its
//! encryption and its controller run on that thread), and joined to the job with the session
//! its welcome named. The connection handles work from any thread: the job's tasks write
//! their streams from the main runtime.

use std::net::SocketAddr;
use std::time::Duration;

use hare_cc::Observer;
use tokio::sync::oneshot;

use super::connect::{connect, Connected};
use super::opener::Opener;
use super::SendOptions;
use crate::error::{Result, TransferError};
use crate::protocol::{close, read_frame, write_frame, ToReceiver, ToSender};
use crate::quic_config::Link;

/// How long a further connection may take to join (handshake and answer).
const JOIN_TIMEOUT: Duration = Duration::from_secs(30);

/// One further connection and the thread that drives it.
struct Extra {
    number: u16,
    conn: quinn::Connection,
    /// The stream it joined on, kept for a move of the job's control channel.
    control: Option<Control>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The job's further connections (connection 1 onwards).
pub(super) struct Extras(Vec<Extra>);

/// Where the further connections go and which job they join.
pub(super) struct JoinTo<'a> {
    pub(super) opts: &'a SendOptions,
    pub(super) link: &'a Link,
    pub(super) addr: SocketAddr,
    pub(super) host: &'a str,
    pub(super) session: [u8; 12],
}

impl Extras {
    /// Open connections 1 to `n - 1`, all at once. One that cannot join is said on stderr
    /// and the job goes on with the others (as with a connection lost later).
    pub(super) async fn open(to: JoinTo<'_>, n: u16) -> Self {
        let mut waits = Vec::new();
        for i in 1..n {
            let (ready_tx, ready_rx) = oneshot::channel();
            let (stop_tx, stop_rx) = oneshot::channel();
            let opts = to.opts.clone();
            let (link, addr, host, session) = (*to.link, to.addr, to.host.to_owned(), to.session);
            let thread = std::thread::Builder::new()
                .name(format!("hare-conn-{i}"))
                .spawn(move || {
                    drive(Drive {
                        opts,
                        link,
                        addr,
                        host,
                        session,
                        number: i,
                        ready: ready_tx,
                        stop: stop_rx,
                    })
                })
                .map_err(|e| TransferError::Config(format!("starting connection {i}: {e}")));
            match thread {
                Ok(t) => waits.push((i, ready_rx, stop_tx, t)),
                Err(e) => eprintln!("hare-send: warning: {e}"),
            }
        }
        let mut extras = Extras(Vec::new());
        for (i, ready, stop, thread) in waits {
            match ready.await {
                Ok(Ok((conn, control))) => extras.0.push(Extra {
                    number: i,
                    conn,
                    control: Some(control),
                    stop: Some(stop),
                    thread: Some(thread),
                }),
                Ok(Err(e)) => {
                    eprintln!("hare-send: warning: connection {i} did not join the job: {e}")
                }
                Err(_) => eprintln!("hare-send: warning: connection {i}'s thread ended early"),
            }
        }
        extras
    }

    /// A pull: the receiver dials connections 1 to `n - 1` to this listening sender, which
    /// accepts those that show the certificate of the job's own (`d.conn`) and joins each
    /// to the job as when it dials. They share the listener's endpoint (its one port).
    pub(super) async fn accept(
        d: &super::Dialled,
        n: u16,
        (session, token): ([u8; 12], Option<String>),
    ) -> Result<Self> {
        let receiver = crate::trust::peer_fingerprint(&d.conn);
        let mut extras = Extras(Vec::new());
        for number in 1..n {
            let accepted = tokio::time::timeout(JOIN_TIMEOUT, accept_one(d, receiver)).await;
            let conn = match accepted {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(TransferError::Timeout(format!(
                        "the receiver did not dial connection {number} within {} s",
                        JOIN_TIMEOUT.as_secs()
                    )))
                }
            };
            let (w, r) = conn.open_bi().await.map_err(|e| {
                TransferError::Connection(format!(
                    "connection {number}: opening its control stream: {e}"
                ))
            })?;
            let _ = w.set_priority(1);
            let (mut r, mut w): Control = (Box::new(r), Box::new(w));
            say_join(&mut r, &mut w, (&session, number, token.clone())).await?;
            extras.0.push(Extra {
                number,
                conn,
                control: Some((r, w)),
                stop: None,
                thread: None,
            });
        }
        Ok(extras)
    }

    /// The connections, in their order (connection 1 first).
    pub(super) fn conns(&self) -> Vec<quinn::Connection> {
        self.0.iter().map(|e| e.conn.clone()).collect()
    }

    /// The streams the connections joined on, for moving the job's control channel there
    /// (taken once).
    pub(super) fn standby(&mut self) -> std::collections::VecDeque<super::control_move::Standby> {
        let mut out = std::collections::VecDeque::new();
        for e in &mut self.0 {
            if let Some(control) = e.control.take() {
                out.push_back(super::control_move::Standby {
                    number: e.number,
                    conn: e.conn.clone(),
                    control,
                });
            }
        }
        out
    }

    /// Close them all (the job is over) and let their threads end, bounded.
    pub(super) async fn close(mut self) {
        let mut threads = Vec::new();
        for e in &mut self.0 {
            if e.thread.is_none() {
                // Accepted on the listener's endpoint: closed here.
                e.conn.close(quinn::VarInt::from_u32(close::DONE), b"done");
            }
            if let Some(s) = e.stop.take() {
                let _ = s.send(());
            }
            threads.extend(e.thread.take());
        }
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(3), joined).await;
    }
}

/// What the thread of one further connection needs.
struct Drive {
    opts: SendOptions,
    link: Link,
    addr: SocketAddr,
    host: String,
    session: [u8; 12],
    number: u16,
    ready: oneshot::Sender<Result<(quinn::Connection, Control)>>,
    stop: oneshot::Receiver<()>,
}

/// The body of a further connection's thread: connect and join, hand the connection over,
/// then keep driving it until the job is over.
fn drive(d: Drive) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = d.ready.send(Err(TransferError::Config(format!(
                "starting connection {}'s runtime: {e}",
                d.number
            ))));
            return;
        }
    };
    rt.block_on(async move {
        let observer = Observer::new();
        let joined = tokio::time::timeout(JOIN_TIMEOUT, join(&d, &observer)).await;
        let joined = joined.unwrap_or_else(|_| {
            Err(TransferError::Connection(format!(
                "connection {} did not join the job within {} s",
                d.number,
                JOIN_TIMEOUT.as_secs()
            )))
        });
        let (conn, endpoint, control, mut qlog) = match joined {
            Ok(j) => j,
            Err(e) => {
                let _ = d.ready.send(Err(e));
                return;
            }
        };
        if d.ready.send(Ok((conn.clone(), control))).is_ok() {
            // The job is over when the sender says so or drops the handle.
            let _ = d.stop.await;
        }
        conn.close(quinn::VarInt::from_u32(close::DONE), b"done");
        let _ = tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, endpoint.wait_idle()).await;
        if let Some(q) = qlog.as_mut() {
            // This connection's controller decisions, in its qlog's sidecar.
            let events: Vec<_> = observer.drain_all().into_iter().map(|(_, e)| e).collect();
            q.cc_events(&events);
        }
    });
}

/// A joined connection's control stream: the one it joined on.
type Control = (crate::channels::ControlRead, crate::channels::ControlWrite);

/// A joined connection: the connection, its endpoint, its control stream and its qlog
/// (`--qlog`).
type Joined = (
    quinn::Connection,
    quinn::Endpoint,
    Control,
    Option<crate::qlog::ConnectionQlog>,
);

/// Connect (its controller reporting to `observer`) and join.
async fn join(d: &Drive, observer: &Observer) -> Result<Joined> {
    let Connected {
        mut ctl_r,
        mut ctl_w,
        opener,
        endpoint,
        qlog,
        ..
    } = connect(&d.opts, &d.link, d.addr, &d.host, observer).await?;
    let (Opener::Quic(conn), Some(endpoint)) = (opener, endpoint) else {
        return Err(TransferError::Config("-C needs QUIC".into()));
    };
    let join = (&d.session, d.number, d.opts.token.clone());
    say_join(&mut ctl_r, &mut ctl_w, join).await?;
    Ok((conn, endpoint, (ctl_r, ctl_w), qlog))
}

/// Ask the receiver to let this connection into the job, and hear its answer.
async fn say_join<R, W>(
    r: &mut R,
    w: &mut W,
    (session, number, token): (&[u8; 12], u16, Option<String>),
) -> Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let session: String = session.iter().map(|b| format!("{b:02x}")).collect();
    let hello = ToReceiver::Join {
        session,
        connection: number,
        token,
    };
    write_frame(w, &hello).await?;
    match read_frame::<_, ToSender>(r).await? {
        Some(ToSender::Joined { .. }) => Ok(()),
        Some(ToSender::Refuse { reason }) => Err(TransferError::Refused(format!(
            "connection {number} was not let into the job: {reason}"
        ))),
        Some(_) => Err(TransferError::Protocol(format!(
            "connection {number}: the receiver answered the join with something else"
        ))),
        None => Err(TransferError::Connection(format!(
            "connection {number}: the receiver closed it before answering the join"
        ))),
    }
}

/// The next connection to the listener that shows `receiver`'s certificate (others are
/// closed).
async fn accept_one(
    d: &super::Dialled,
    receiver: Option<crate::identity::Fingerprint>,
) -> Result<quinn::Connection> {
    loop {
        let Some(incoming) = d.endpoint.accept().await else {
            return Err(TransferError::Connection("the endpoint closed".into()));
        };
        let Ok(conn) = incoming.await else { continue };
        if receiver.is_some() && crate::trust::peer_fingerprint(&conn) == receiver {
            return Ok(conn);
        }
        conn.close(
            quinn::VarInt::from_u32(close::REFUSED),
            b"not the job's receiver",
        );
    }
}

/// The summary's line on the connections: how many, and the share of the UDP bytes each
/// sent (connection 0 carries the control channel too).
pub(super) fn shares_line(st: &super::stripes::Stripes) -> String {
    let sent: Vec<u64> = (0..st.len())
        .map(|i| st.conn(i).stats().udp_tx.bytes)
        .collect();
    let total = sent.iter().sum::<u64>().max(1);
    let shares: Vec<String> = sent
        .iter()
        .enumerate()
        .map(|(i, b)| format!("{i}: {:.1}%", *b as f64 * 100.0 / total as f64))
        .collect();
    format!(
        "connections: {} (share of the UDP bytes sent: {})",
        st.len(),
        shares.join(", ")
    )
}

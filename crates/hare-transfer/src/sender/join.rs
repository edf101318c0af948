//! The further connections of a job (`-C N`): each on its own UDP socket and endpoint, made
//! and driven by a current-thread runtime on a thread of its own (quinn drives an endpoint and
//! its connections from the runtime that made them, so each connection's packet work, its
//! encryption and its controller run on that thread), and joined to the job with the session
//! its welcome named. The connection handles work from any thread: the job's tasks write
//! their streams from the main runtime. They join while the job already runs on connection
//! 0, which would otherwise wait two round trips (handshake and join) before its first byte.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hare_cc::Observer;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::connect::{connect, Connected};
use super::control::lock;
use super::opener::Opener;
use super::standby::{Standby, Standbys};
use super::stripes::Stripes;
use super::SendOptions;
use crate::error::{Result, TransferError};
use crate::protocol::{close, read_frame, write_frame, ToReceiver, ToSender};
use crate::quic_config::Link;

/// How long a further connection may take to join (handshake and answer).
const JOIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a further connection goes once it joined: the stripes (it takes work) and the
/// streams the control channel may move to.
#[derive(Clone)]
pub(super) struct Roster {
    pub(super) stripes: Arc<Stripes>,
    pub(super) standby: Standbys,
    /// Set when the job is over: a join that fails after it is not worth a warning.
    over: Arc<AtomicBool>,
}

impl Roster {
    /// Connections 1 to N-1 of `stripes`, none joined yet.
    pub(super) fn new(stripes: Arc<Stripes>) -> Self {
        Self {
            stripes,
            standby: Arc::default(),
            over: Arc::default(),
        }
    }

    /// Connection `number` joined on `control`.
    fn joined(&self, number: u16, conn: quinn::Connection, control: Control) {
        self.stripes.joined(usize::from(number), conn.clone());
        let mut standby = lock(&self.standby);
        let at = standby.partition_point(|s| s.number < number);
        standby.insert(
            at,
            Standby {
                number,
                conn,
                control,
            },
        );
    }

    /// Connection `number` will not join: said on stderr while the job runs.
    fn not_joined(&self, number: u16, why: &str) {
        self.stripes.not_joined(usize::from(number));
        if !self.over.load(Ordering::Relaxed) {
            eprintln!("hare-send: warning: connection {number} did not join the job: {why}");
        }
    }
}

/// The job's further connections (connection 1 onwards), joining while the job runs on
/// connection 0.
pub(super) struct Extras {
    roster: Roster,
    /// Each dialled connection's thread and the word that ends it.
    threads: Vec<(oneshot::Sender<()>, std::thread::JoinHandle<()>)>,
    /// Connections accepted on the listener's endpoint (a pull), closed here at the end.
    accepted: Arc<Mutex<Vec<quinn::Connection>>>,
    /// The tasks that wait for the joins.
    waits: JoinSet<()>,
    /// A pull's further listeners, each on its own port and thread.
    further: Option<super::listen_more::Further>,
}

/// Where the further connections go and which job they join.
pub(super) struct JoinTo<'a> {
    pub(super) opts: &'a SendOptions,
    pub(super) link: &'a Link,
    pub(super) addr: SocketAddr,
    pub(super) host: &'a str,
    pub(super) session: [u8; 12],
}

impl Extras {
    /// Start connections 1 to `n - 1`, all at once, each on its thread; each is added to
    /// `roster` as it joins. One that cannot join is said on stderr and the job goes on with
    /// the others (as with a connection lost later).
    pub(super) fn open(to: JoinTo<'_>, n: u16, roster: Roster) -> Self {
        let mut extras = Extras::empty(roster);
        for i in 1..n {
            let (ready_tx, ready_rx) = oneshot::channel();
            let (stop_tx, stop_rx) = oneshot::channel();
            let drive_it = Drive {
                opts: to.opts.clone(),
                link: *to.link,
                addr: to.addr,
                host: to.host.to_owned(),
                session: to.session,
                number: i,
            };
            let thread = std::thread::Builder::new()
                .name(format!("hare-conn-{i}"))
                .spawn(move || drive(drive_it, ready_tx, stop_rx));
            let thread = match thread {
                Ok(t) => t,
                Err(e) => {
                    extras
                        .roster
                        .not_joined(i, &format!("starting its thread: {e}"));
                    continue;
                }
            };
            extras.threads.push((stop_tx, thread));
            let roster = extras.roster.clone();
            extras.waits.spawn(async move {
                match ready_rx.await {
                    Ok(Ok((conn, control))) => roster.joined(i, conn, control),
                    Ok(Err(e)) => roster.not_joined(i, &e.to_string()),
                    Err(_) => roster.not_joined(i, "its thread ended early"),
                }
            });
        }
        extras
    }

    fn empty(roster: Roster) -> Self {
        Extras {
            roster,
            threads: Vec::new(),
            accepted: Arc::default(),
            waits: JoinSet::new(),
            further: None,
        }
    }

    /// A pull: the receiver dials connections 1 to `n - 1` to this listening sender, which
    /// accepts those that show the certificate of the job's own (`d.conn`) and joins each
    /// to the job as when it dials, while the job runs: each on the listener of its own (its
    /// port and thread) when the remote announced them, else all on the first listener's
    /// endpoint.
    pub(super) fn accept(
        d: &super::Dialled,
        n: u16,
        (session, token): ([u8; 12], Option<String>),
        roster: Roster,
    ) -> Self {
        let mut extras = Extras::empty(roster);
        let receiver = crate::trust::peer_fingerprint(&d.conn);
        if d.further.len() + 1 >= usize::from(n) {
            extras.further = Some(d.further.clone());
            for number in 1..n {
                let (roster, further, token) =
                    (extras.roster.clone(), d.further.clone(), token.clone());
                extras.waits.spawn(async move {
                    let accept = async {
                        loop {
                            let conn = further.next(number).await.ok_or_else(|| {
                                TransferError::Connection("its listener ended".into())
                            })?;
                            if let Some(c) = keep_receivers(conn, receiver) {
                                return join_accepted(c, (&session, number, token)).await;
                            }
                        }
                    };
                    joined_or_not(
                        &roster,
                        number,
                        tokio::time::timeout(JOIN_TIMEOUT, accept).await,
                    );
                });
            }
            return extras;
        }
        let endpoint = d.endpoint.clone();
        let (roster, accepted) = (extras.roster.clone(), extras.accepted.clone());
        extras.waits.spawn(async move {
            for number in 1..n {
                let joined = tokio::time::timeout(
                    JOIN_TIMEOUT,
                    accept_join(&endpoint, receiver, (&session, number, token.clone())),
                )
                .await;
                if let Ok(Ok((conn, _))) = &joined {
                    lock(&accepted).push(conn.clone());
                }
                if !joined_or_not(&roster, number, joined) {
                    for rest in number + 1..n {
                        roster.not_joined(rest, "an earlier connection did not join");
                    }
                    return;
                }
            }
        });
        extras
    }

    /// Where the control channel may move: the join streams, as the connections join.
    pub(super) fn standby(&self) -> Standbys {
        self.roster.standby.clone()
    }

    /// The job's data is over: a join that fails from now on is not said.
    pub(super) fn job_over(&self) {
        self.roster.over.store(true, Ordering::Relaxed);
    }

    /// Close them all (the job is over) and let their threads end, bounded.
    pub(super) async fn close(mut self) {
        self.job_over();
        self.waits.abort_all();
        if let Some(f) = self.further.take() {
            f.close().await;
        }
        for c in lock(&self.accepted).drain(..) {
            c.close(quinn::VarInt::from_u32(close::DONE), b"done");
        }
        // The join streams hold their connections' streams open until here.
        lock(&self.roster.standby).clear();
        let mut threads = Vec::new();
        for (stop, thread) in self.threads.drain(..) {
            let _ = stop.send(());
            threads.push(thread);
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
}

/// The body of a further connection's thread: connect and join, hand the connection over
/// on `ready`, then keep driving it until the job is over (`stop`, which also ends a join
/// still under way).
fn drive(
    d: Drive,
    ready: oneshot::Sender<Result<(quinn::Connection, Control)>>,
    mut stop: oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(TransferError::Config(format!(
                "starting connection {}'s runtime: {e}",
                d.number
            ))));
            return;
        }
    };
    rt.block_on(async move {
        let observer = Observer::new();
        let joining = tokio::time::timeout(JOIN_TIMEOUT, join(&d, &observer));
        let joined = tokio::select! {
            j = joining => j,
            _ = &mut stop => return,
        };
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
                let _ = ready.send(Err(e));
                return;
            }
        };
        if ready.send(Ok((conn.clone(), control))).is_ok() {
            // The job is over when the sender says so or drops the handle.
            let _ = stop.await;
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
/// closed), joined to the job as connection `number` on a stream this side opens.
async fn accept_join(
    endpoint: &quinn::Endpoint,
    receiver: Option<crate::identity::Fingerprint>,
    join: (&[u8; 12], u16, Option<String>),
) -> Result<(quinn::Connection, Control)> {
    let conn = loop {
        let Some(incoming) = endpoint.accept().await else {
            return Err(TransferError::Connection("the endpoint closed".into()));
        };
        let Ok(conn) = incoming.await else { continue };
        if let Some(c) = keep_receivers(conn, receiver) {
            break c;
        }
    };
    join_accepted(conn, join).await
}

/// `conn` if it shows `receiver`'s certificate; any other is closed.
fn keep_receivers(
    conn: quinn::Connection,
    receiver: Option<crate::identity::Fingerprint>,
) -> Option<quinn::Connection> {
    if receiver.is_some() && crate::trust::peer_fingerprint(&conn) == receiver {
        return Some(conn);
    }
    conn.close(
        quinn::VarInt::from_u32(close::REFUSED),
        b"not the job's receiver",
    );
    None
}

/// Join the receiver's connection `conn` to the job as connection `number`, on a stream
/// this side opens.
async fn join_accepted(
    conn: quinn::Connection,
    (session, number, token): (&[u8; 12], u16, Option<String>),
) -> Result<(quinn::Connection, Control)> {
    let (w, r) = conn.open_bi().await.map_err(|e| {
        TransferError::Connection(format!(
            "connection {number}: opening its control stream: {e}"
        ))
    })?;
    let _ = w.set_priority(1);
    let (mut r, mut w): Control = (Box::new(r), Box::new(w));
    say_join(&mut r, &mut w, (session, number, token)).await?;
    Ok((conn, (r, w)))
}

/// Add connection `number` to the job, or say why it is not (a timeout, an error); whether
/// it joined.
fn joined_or_not(
    roster: &Roster,
    number: u16,
    joined: std::result::Result<Result<(quinn::Connection, Control)>, tokio::time::error::Elapsed>,
) -> bool {
    match joined {
        Ok(Ok((conn, control))) => {
            roster.joined(number, conn, control);
            true
        }
        Ok(Err(e)) => {
            roster.not_joined(number, &e.to_string());
            false
        }
        Err(_) => {
            let why = format!(
                "the receiver did not dial it within {} s",
                JOIN_TIMEOUT.as_secs()
            );
            roster.not_joined(number, &why);
            false
        }
    }
}

/// The summary's line on the connections: how many carried the job (of how many asked
/// for, when some never joined), and the share of the UDP bytes each sent (connection 0
/// carries the control channel too).
pub(super) fn shares_line(st: &super::stripes::Stripes) -> String {
    let sent: Vec<(usize, u64)> = (0..st.len())
        .filter_map(|i| st.conn(i).map(|c| (i, c.stats().udp_tx.bytes)))
        .collect();
    let total = sent.iter().map(|(_, b)| b).sum::<u64>().max(1);
    let shares: Vec<String> = sent
        .iter()
        .map(|(i, b)| format!("{i}: {:.1}%", *b as f64 * 100.0 / total as f64))
        .collect();
    let count = match sent.len() == st.len() {
        true => st.len().to_string(),
        false => format!("{} of {} joined before the job ended", sent.len(), st.len()),
    };
    format!(
        "connections: {count} (share of the UDP bytes sent: {})",
        shares.join(", ")
    )
}

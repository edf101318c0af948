//! The further listeners of a pull over several connections (`hare-recv -C N host:SRC`):
//! connections 1 to N-1 of the job each get their own UDP port, socket and endpoint, made and
//! driven by a current-thread runtime on a thread of their own (as a pushing sender's further
//! connections are), so that the sending side of a pull is not bound to the one thread of
//! its first connection. Each thread hands over every connection it accepts; the job keeps
//! the receiver's own and closes the others.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::error::{Result, TransferError};
use crate::protocol::close;

/// One further listener: its port, the connections it accepted, and its thread.
struct Listener {
    port: u16,
    accepted: Option<mpsc::Receiver<quinn::Connection>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The further listeners of a pull (none: the further connections come to the first
/// listener's port, as with one connection's receivers of older versions).
#[derive(Clone, Default)]
pub struct Further(Arc<Mutex<Vec<Listener>>>);

impl std::fmt::Debug for Further {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Further({:?})", self.ports())
    }
}

/// What a listener thread binds and serves with.
pub(super) struct ListenWith {
    pub(super) server: quinn::ServerConfig,
    pub(super) endpoint: quinn::EndpointConfig,
    pub(super) max_udp_payload: u16,
    pub(super) ports: Vec<u16>,
}

impl Further {
    /// Start `n` listeners; `None` (said on stderr) when one cannot start: the further
    /// connections then share the first listener's port.
    pub(super) fn start(with: &ListenWith, n: u16) -> Option<Self> {
        let further = Further::default();
        for i in 1..=n {
            match start_one(with, i) {
                Ok(l) => lock(&further.0).push(l),
                Err(e) => {
                    eprintln!(
                        "hare-send: warning: no port of its own for connection {i} ({e}): the \
                         further connections share the first one's"
                    );
                    further.stop_all();
                    return None;
                }
            }
        }
        Some(further)
    }

    /// The ports of connections 1, 2, ..., in order.
    pub fn ports(&self) -> Vec<u16> {
        lock(&self.0).iter().map(|l| l.port).collect()
    }

    /// How many.
    pub(super) fn len(&self) -> usize {
        lock(&self.0).len()
    }

    /// The next connection that connection `number`'s listener accepted (`None`: its
    /// thread ended).
    pub(super) async fn next(&self, number: u16) -> Option<quinn::Connection> {
        let at = usize::from(number).checked_sub(1)?;
        let mut rx = lock(&self.0).get_mut(at)?.accepted.take()?;
        let conn = rx.recv().await;
        if let Some(l) = lock(&self.0).get_mut(at) {
            l.accepted = Some(rx);
        }
        conn
    }

    /// End every listener (the job is over) and let their threads end, bounded.
    pub(super) async fn close(&self) {
        let threads = self.stop_all();
        let joined = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(3), joined).await;
    }

    fn stop_all(&self) -> Vec<std::thread::JoinHandle<()>> {
        let mut threads = Vec::new();
        for l in lock(&self.0).iter_mut() {
            if let Some(s) = l.stop.take() {
                let _ = s.send(());
            }
            threads.extend(l.thread.take());
        }
        threads
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bind connection `i`'s socket (the first free port of the range, as the first listener)
/// and start the thread that serves it.
fn start_one(with: &ListenWith, i: u16) -> Result<Listener> {
    let sock = crate::socket::bind_udp_any(&with.ports)?;
    let port = sock
        .local_addr()
        .map_err(|e| TransferError::io("reading the local address", e))?
        .port();
    let (tx, rx) = mpsc::channel(4);
    let (stop_tx, stop_rx) = oneshot::channel();
    let (server, endpoint, max) = (
        with.server.clone(),
        with.endpoint.clone(),
        with.max_udp_payload,
    );
    let thread = std::thread::Builder::new()
        .name(format!("hare-listen-{i}"))
        .spawn(move || serve(sock, (server, endpoint, max), tx, stop_rx))
        .map_err(|e| TransferError::Config(format!("starting its thread: {e}")))?;
    Ok(Listener {
        port,
        accepted: Some(rx),
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// The body of a listener's thread: accept connections and hand each over until the job
/// is over; then close what is still open and let the close go out (bounded).
fn serve(
    sock: std::net::UdpSocket,
    (server, config, max): (quinn::ServerConfig, quinn::EndpointConfig, u16),
    accepted: mpsc::Sender<quinn::Connection>,
    mut stop: oneshot::Receiver<()>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let Ok(endpoint) = crate::socket::endpoint(sock, config, Some(server), max) else {
            return;
        };
        loop {
            let incoming = tokio::select! {
                i = endpoint.accept() => i,
                _ = &mut stop => break,
            };
            let Some(incoming) = incoming else { break };
            let Ok(conn) = incoming.await else { continue };
            if let Err(e) = accepted.try_send(conn) {
                let conn = match e {
                    mpsc::error::TrySendError::Full(c) | mpsc::error::TrySendError::Closed(c) => c,
                };
                conn.close(quinn::VarInt::from_u32(close::REFUSED), b"not awaited");
            }
        }
        endpoint.close(quinn::VarInt::from_u32(close::DONE), b"done");
        let _ = tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, endpoint.wait_idle()).await;
    });
}

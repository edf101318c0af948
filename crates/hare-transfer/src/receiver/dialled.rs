//! A receiver that dials its sender: the local end of a pull through ssh (`hare-recv
//! host:SRC... DEST`), where the remote hare-send listens and this side connects, so that
//! only the remote needs a reachable UDP port. The job itself runs as on a listening
//! receiver: the sender opens the control stream and says its hello, this side checks it
//! (the sender's pinned certificate and its one-time token) and receives.

use std::net::SocketAddr;
use std::sync::Arc;

use hare_cc::Observer;
use hare_report::Transport;
use quinn::VarInt;
use tokio::sync::mpsc;

use super::ctx::{JobCtx, SendingCc};
use super::gate::Gate;
use super::quic::{close_after, serve_connection};
use super::redial::DialMore;
use super::{RecvOptions, Shared};
use crate::error::{Result, TransferError};
use crate::identity::{Fingerprint, Identity};
use crate::quic_config::transport_with;
use crate::trust::Trust;

/// Dial the sender at `addr` (`host` for messages), presenting `identity` and trusting only
/// the certificate `sender`, and serve its one job as `opts` say (its `allow` and `token`
/// decide the hello, as on a listening receiver). A job over several connections dials its
/// further connections to the ports `further` of the same host, each from a socket of its
/// own (empty: all to `addr`).
pub async fn receive_from(
    opts: RecvOptions,
    addr: SocketAddr,
    further: Vec<u16>,
    host: &str,
    identity: &Identity,
    sender: Fingerprint,
) -> Result<()> {
    let observer = Observer::new();
    let mut transport = transport_with(&opts.link, opts.cc.factory(&observer));
    // Nothing but the control stream until the hello is accepted, as when listening.
    transport
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_concurrent_bidi_streams(VarInt::from_u32(1));
    let (crypto, _) = crate::trust::client_crypto_as(&Trust::Pin(sender), Some(identity))?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto)
        .map_err(|e| TransferError::Config(e.to_string()))?;
    let mut client = quinn::ClientConfig::new(Arc::new(crypto));
    client.transport_config(Arc::new(transport));
    let client = Arc::new(client);
    let endpoint = client_endpoint(&opts, addr)?;
    let hello_deadline = tokio::time::Instant::now() + opts.limits.hello_timeout;
    let connecting = endpoint
        .connect_with((*client).clone(), addr, "localhost")
        .map_err(|e| TransferError::Connection(format!("{host}: {e}")))?;
    let conn = tokio::time::timeout_at(hello_deadline, connecting)
        .await
        .map_err(|_| TransferError::Timeout(format!("no answer from {host} ({addr}) over UDP")))?
        .map_err(|e| TransferError::Connection(format!("{host} ({addr}): {e}")))?;
    let dial = DialMore {
        opts: Arc::new(opts.clone()),
        shared: Shared::new(&opts.limits),
        gate: Gate::new(opts.limits),
        endpoint: endpoint.clone(),
        client,
        addr,
        further,
    };
    let ctx = dial.job_ctx(conn.clone(), hello_deadline, observer, true);
    let res = serve_connection(ctx, &conn).await;
    close_after(&conn, &res).await;
    let _ = tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, endpoint.wait_idle()).await;
    res
}

/// A client endpoint on a socket of its own, of `addr`'s family.
fn client_endpoint(opts: &RecvOptions, addr: SocketAddr) -> Result<quinn::Endpoint> {
    let bind: SocketAddr = match addr {
        SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
    };
    let sock = crate::socket::bind_udp(bind)?;
    crate::socket::endpoint(
        sock,
        opts.link.endpoint_config()?,
        None,
        opts.link.max_udp_payload(),
    )
}

impl DialMore {
    /// The context of a job (or a join) on `conn`; `first`: the connection that may dial
    /// more.
    fn job_ctx(
        &self,
        conn: quinn::Connection,
        hello_deadline: tokio::time::Instant,
        observer: Observer,
        first: bool,
    ) -> JobCtx {
        JobCtx {
            opts: self.opts.clone(),
            peer: self.addr,
            transport: Transport::Quic,
            data_tx: None::<mpsc::Sender<_>>,
            session: None,
            names: self.shared.names.clone(),
            reorder: self.shared.reorder.clone(),
            jobs: self.shared.jobs.clone(),
            joins: self.shared.joins.clone(),
            joined: Default::default(),
            gate: self.gate.clone(),
            preauth: None,
            hello_deadline,
            peer_cert: crate::trust::peer_fingerprint(&conn),
            controller: Some(SendingCc {
                observer,
                epoch: std::time::Instant::now(),
                qlog: Arc::new(std::sync::Mutex::new(None)),
            }),
            dial_more: first.then(|| self.clone()),
            conn: Some(conn),
        }
    }

    /// Where connection `i` goes, and from which endpoint: the sender's port for it, from a
    /// socket of its own (`Some`), when it announced one.
    fn route(&self, i: u16) -> Result<(SocketAddr, Option<quinn::Endpoint>)> {
        match self.further.get(usize::from(i) - 1) {
            Some(&port) => Ok((
                SocketAddr::new(self.addr.ip(), port),
                Some(client_endpoint(&self.opts, self.addr)?),
            )),
            None => Ok((self.addr, None)),
        }
    }

    /// Dial connections 1 to `n - 1` of the job and serve each (the sender joins it to the
    /// job); each ends with the job or its own failure, said in the log.
    pub(super) fn spawn(&self, n: u16) {
        for i in 1..n {
            let me = self.clone();
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + me.opts.limits.hello_timeout;
                let (to, own) = match me.route(i) {
                    Ok(r) => r,
                    Err(e) => return tracing::warn!("connection {i}: {e}"),
                };
                let endpoint = own.as_ref().unwrap_or(&me.endpoint);
                let connecting = match endpoint.connect_with((*me.client).clone(), to, "localhost")
                {
                    Ok(c) => c,
                    Err(e) => return tracing::warn!("dialling connection {i}: {e}"),
                };
                let conn = match tokio::time::timeout_at(deadline, connecting).await {
                    Ok(Ok(c)) => c,
                    Ok(Err(e)) => return tracing::warn!("connection {i}: {e}"),
                    Err(_) => return tracing::warn!("connection {i}: no answer"),
                };
                let ctx = me.job_ctx(conn.clone(), deadline, Observer::new(), false);
                let res = serve_connection(ctx, &conn).await;
                if let Err(e) = &res {
                    tracing::warn!("connection {i}: {e}");
                }
                close_after(&conn, &res).await;
                if let Some(e) = own {
                    let _ =
                        tokio::time::timeout(crate::quic_config::CLOSE_FLUSH, e.wait_idle()).await;
                }
            });
        }
    }
}

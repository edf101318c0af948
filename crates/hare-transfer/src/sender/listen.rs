//! A sender that waits for its receiver to dial it: the remote end of a pull through ssh
//! (`hare-recv host:SRC... DEST` runs `hare-send --ssh-serve SRC...` there). It binds an
//! ephemeral UDP port with a fresh certificate, announces both over ssh, accepts exactly the
//! receiver whose certificate was named, and then sends as if it had dialled ([`Dialled`]).

use std::sync::Arc;
use std::time::Duration;

use hare_cc::Observer;

use super::listen_more::{Further, ListenWith};
use super::{Dialled, SendOptions};
use crate::cc::QuicCc;
use crate::error::{Result, TransferError};
use crate::identity::{Fingerprint, Identity};
use crate::quic_config::{transport_with, Link};

/// A bound endpoint waiting for one receiver (and, for a job over several connections, a
/// listener of its own for each further connection).
pub struct Listening {
    endpoint: quinn::Endpoint,
    identity: Identity,
    observer: Observer,
    further: Option<Further>,
}

impl Listening {
    /// Bind on all addresses (IPv6 and IPv4, or IPv4 alone), at the first free port of
    /// `ports` (empty: one the kernel picks), with a fresh certificate and a transport whose
    /// controller is `opts`'s (`--cc`), windows and liveness `opts`'s for `streams` files at
    /// once; with `-C N` (`opts.connections`), N-1 further ports of the same range, each
    /// served on a thread of its own ([`Listening::further_ports`]).
    pub fn bind(opts: &SendOptions, streams: u16, ports: &[u16]) -> Result<Self> {
        let identity = crate::identity::ephemeral(&[])?;
        let observer = Observer::new();
        let cc = match &opts.cc {
            Some(s) => QuicCc::parse(s)?,
            None => QuicCc::default(),
        };
        let link = Link {
            streams,
            ..opts.link
        };
        let mut transport = transport_with(&link, cc.factory(&observer));
        opts.liveness.apply(&mut transport);
        let crypto = crate::trust::server_crypto(&identity)?;
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(crypto)
            .map_err(|e| TransferError::Config(e.to_string()))?;
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        server.transport_config(Arc::new(transport));
        let with = ListenWith {
            server,
            endpoint: link.endpoint_config()?,
            max_udp_payload: link.max_udp_payload(),
            ports: ports.to_vec(),
        };
        let sock = crate::socket::bind_udp_any(ports)?;
        let endpoint = crate::socket::endpoint(
            sock,
            with.endpoint.clone(),
            Some(with.server.clone()),
            with.max_udp_payload,
        )?;
        let further = match opts.connections {
            0 | 1 => None,
            n => Further::start(&with, n - 1),
        };
        Ok(Self {
            endpoint,
            identity,
            observer,
            further,
        })
    }

    /// The UDP ports of connections 1 to N-1 of a job over several connections, to
    /// announce (empty: they come to [`Listening::port`] too).
    pub fn further_ports(&self) -> Vec<u16> {
        self.further.as_ref().map_or_else(Vec::new, Further::ports)
    }

    /// The UDP port to announce.
    pub fn port(&self) -> Result<u16> {
        self.endpoint
            .local_addr()
            .map(|a| a.port())
            .map_err(|e| TransferError::io("reading the local address", e))
    }

    /// The certificate to announce.
    pub fn fingerprint(&self) -> Fingerprint {
        self.identity.fingerprint
    }

    /// Accept the receiver whose certificate is `receiver` within `limit`; any other
    /// client is closed and not waited for again.
    pub async fn accept(self, receiver: Fingerprint, limit: Duration) -> Result<Dialled> {
        let wait = async {
            loop {
                let Some(incoming) = self.endpoint.accept().await else {
                    return Err(TransferError::Connection("the endpoint closed".into()));
                };
                let Ok(conn) = incoming.await else { continue };
                if crate::trust::peer_fingerprint(&conn) == Some(receiver) {
                    return Ok(conn);
                }
                conn.close(
                    quinn::VarInt::from_u32(crate::protocol::close::REFUSED),
                    b"not the receiver named over ssh",
                );
            }
        };
        let conn = tokio::time::timeout(limit, wait).await.map_err(|_| {
            TransferError::Timeout(format!(
                "the receiver did not connect within {} s",
                limit.as_secs()
            ))
        })??;
        Ok(Dialled {
            conn,
            observer: self.observer,
            endpoint: self.endpoint,
            further: self.further.unwrap_or_default(),
        })
    }
}

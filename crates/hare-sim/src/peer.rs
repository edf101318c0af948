//! What both endpoints share: a quinn endpoint with its (single) connection, its timer and
//! its buffers, and the steps of receiving, dispatching and finishing a flush.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{Connection, ConnectionHandle, DatagramEvent, Endpoint};

use crate::virtual_clock::Clock;
use crate::wire::Wire;

/// One quinn endpoint with its (single) connection.
pub(crate) struct Peer {
    pub endpoint: Endpoint,
    pub conn: Option<(ConnectionHandle, Connection)>,
    /// The other side's address (where this peer's datagrams come from).
    pub remote: SocketAddr,
    /// Next timer, virtual ns.
    pub timer: Option<u64>,
    pub tx_buf: Vec<u8>,
    pub resp_buf: Vec<u8>,
    /// Something happened: run the application and transmit.
    pub dirty: bool,
}

impl Peer {
    /// A peer with no connection yet.
    pub fn new(endpoint: Endpoint, remote: SocketAddr) -> Self {
        Peer {
            endpoint,
            conn: None,
            remote,
            timer: None,
            tx_buf: Vec::new(),
            resp_buf: Vec::new(),
            dirty: false,
        }
    }

    /// A datagram from the remote arrives: the endpoint's verdict.
    pub fn receive(&mut self, at: Instant, data: BytesMut) -> Option<DatagramEvent> {
        self.dirty = true;
        self.endpoint
            .handle(at, self.remote, None, None, data, &mut self.resp_buf)
    }

    /// Hands an endpoint verdict to the connection, or sends the endpoint's response.
    pub fn dispatch(&mut self, out: &mut Wire, now: u64, event: Option<DatagramEvent>) {
        match event {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                if let Some((own, conn)) = self.conn.as_mut() {
                    if *own == ch {
                        conn.handle_event(ev);
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                let d = BytesMut::from(&self.resp_buf[..t.size]);
                let _ = out.send(now, d);
            }
            // The client never accepts connections; a stray Initial is dropped.
            Some(DatagramEvent::NewConnection(incoming)) => self.endpoint.ignore(incoming),
            None => {}
        }
    }

    /// Fires the connection's timer if it is due at `now`.
    pub fn expire_timer(&mut self, now: u64, at: Instant) {
        if self.timer.is_some_and(|t| t <= now) {
            if let Some((_, conn)) = self.conn.as_mut() {
                conn.handle_timeout(at);
            }
            self.timer = None;
            self.dirty = true;
        }
    }

    /// After a flush: endpoint events both ways, then the connection's next timer.
    pub fn finish_flush(&mut self, clock: Clock, now: u64) {
        let Some((ch, conn)) = self.conn.as_mut() else {
            return;
        };
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(cev) = self.endpoint.handle_event(*ch, ev) {
                conn.handle_event(cev);
            }
        }
        self.timer = conn.poll_timeout().map(|t| clock.ns(t).max(now));
    }
}

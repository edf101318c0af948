//! The discrete-event loop.
//!
//! # Events and time
//! Virtual time is a `u64` of nanoseconds since the connection start; quinn sees it as
//! `base + ns` where `base` is one real `Instant` taken at the start (quinn-proto's `Instant`
//! is `std::time::Instant`, which on Linux holds nanoseconds exactly, so the mapping is
//! lossless both ways).
//!
//! The pending events of a run come from a fixed, small set of sources: the next datagram
//! arrival on each of the two links, each connection's next timer (`poll_timeout`: loss
//! detection, ACK delay, pacing, idle, ...), the next report boundary of each track and the
//! workload's write deadline. The loop takes the earliest, advances the clock to it and
//! handles everything due at that instant in a fixed order (report boundaries, then arrivals
//! at the receiver, arrivals at the sender, expired timers, the write deadline), then lets
//! each endpoint that was touched run its application logic and transmit. Because every
//! source yields its events in time order (a link's deliveries are FIFO, see [`Wire`]), the
//! minimum over the sources *is* the event heap, with no stale entries to skip.
//!
//! # Transmission
//! Each touched connection is polled with `poll_transmit(now, gso_segments, buf)` until it
//! returns `None`, which quinn does when it has nothing to send, when the congestion window is
//! full, or when its pacer wants to wait (it then arms its pacing timer, which shows up in
//! `poll_timeout`). A `Transmit` with `segment_size` carries several datagrams: each is offered
//! to the link separately at `now`, and the link serialises them back to back. A full batch's
//! transmit buffer is handed over without copying: the `Vec` becomes a `BytesMut` that is
//! split per datagram, the receiver's stream chunks keep slices of it until they are read,
//! and the last read returns it to the pool. Partial batches and ACKs are copied per
//! datagram (see `pool.rs` for why).
//!
//! # Two sides
//! Each endpoint with its application lives in its own half ([`ClientSide`], [`ServerSide`]):
//! the sending end of its outgoing link (the link model decides every datagram's fate and
//! arrival time when it is offered) and the arrivals of its incoming one. The halves touch
//! each other only through datagrams, which [`Engine::hand_over`] moves from the sending
//! end of a link to the arrivals of the other side. This one-thread engine does that before
//! every look at the arrivals, so it handles events exactly as one loop over both endpoints
//! would; `window.rs` runs the halves on two threads between hand-overs.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hare_cc::autotune::RcvAutotune;
use quinn_proto::{ClientConfig, Connection, Endpoint, ServerConfig};

use crate::client::ClientSide;
use crate::config::{ReadMode, SimConfig};
use crate::error::SimError;
use crate::peer::Peer;
use crate::pool::DatagramPool;
use crate::receiver_acks::{quickack_segments, AckThinner, ReceiverAcks};
use crate::server::ServerSide;
use crate::virtual_clock::{Clock, Stop};
use crate::wire::Wire;

/// Spare datagram buffers kept for reuse (at MTU 8952, 64 Ki buffers are 560 MiB: more
/// than any path of the thread keeps in flight, so in practice every buffer is reused).
const POOL_LIMIT: usize = 1 << 16;

/// Events handled at one instant before the loop declares a livelock.
pub(crate) const MAX_EVENTS_PER_INSTANT: u32 = 1_000_000;

/// The simulation state. `run` is driven by [`crate::simulate`].
pub(crate) struct Engine {
    pub clock: Clock,
    pub now: u64,
    pub client: ClientSide,
    pub server: ServerSide,
    /// When the client's connection started (virtual ns).
    pub start_ns: u64,
    same_instant: u32,
}

impl Engine {
    /// Builds both endpoints and starts the client's connection at virtual time `start_ns`
    /// (0 for a run of one flow; a later flow of a shared path starts later).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &SimConfig,
        start_ns: u64,
        clock: Clock,
        client_endpoint: quinn_proto::EndpointConfig,
        server_endpoint: quinn_proto::EndpointConfig,
        client_cfg: ClientConfig,
        server_cfg: ServerConfig,
        forward: Wire,
        reverse: Wire,
        tap: crate::tap::TapHandle,
    ) -> Result<Engine, SimError> {
        let client_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 40_000);
        let server_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)), 4_433);
        let seed_bytes = |label: &str| crate::identity::derive(cfg.seed, label);
        let mut client_ep = Endpoint::new(
            Arc::new(client_endpoint),
            None,
            false,
            Some(seed_bytes("client-endpoint-rng")),
        );
        let server_ep = Endpoint::new(
            Arc::new(server_endpoint),
            Some(Arc::new(server_cfg)),
            false,
            Some(seed_bytes("server-endpoint-rng")),
        );
        let (ch, conn) = client_ep
            .connect(
                clock.at(start_ns),
                client_cfg,
                server_addr,
                crate::setup::server_name(),
            )
            .map_err(|e| SimError::Setup(format!("connect: {e}")))?;
        let mut client_peer = Peer::new(client_ep, server_addr);
        client_peer.conn = Some((ch, conn));
        // A fresh client connection has no timer until poll_transmit ran once.
        client_peer.dirty = true;
        let mtu = usize::from(cfg.mtu);
        let pool = |batch| DatagramPool::with_batches(mtu, POOL_LIMIT, batch);
        let client = ClientSide::new(
            client_peer,
            forward,
            cfg.gso_segments,
            if cfg.paced { cfg.gso_segments } else { 1 },
            cfg.workload,
            tap,
            pool(mtu * cfg.gso_segments),
        );
        let thinner = (cfg.receiver_acks == ReceiverAcks::Linux26).then(|| {
            let clamp = cfg.windows.stream_receive.min(cfg.windows.receive_limit());
            let quick = quickack_segments(clamp, u64::from(cfg.mtu));
            AckThinner::new(crate::identity::SeededCids::LEN, quick)
        });
        let server = ServerSide::new(
            Peer::new(server_ep, client_addr),
            reverse,
            cfg.gso_segments,
            cfg.read_mode == ReadMode::Ordered,
            thinner,
            pool(mtu * cfg.gso_segments),
        )
        .with_autotune(
            cfg.windows
                .autotune
                .map(|cap| RcvAutotune::new(cfg.windows.receive, cap, u64::from(cfg.mtu))),
        );
        Ok(Engine {
            clock,
            now: start_ns,
            start_ns,
            client,
            server,
            same_instant: 0,
        })
    }

    /// Payload bytes the receiver has read.
    pub fn bytes_read(&self) -> u64 {
        self.server.bytes_read()
    }

    /// The sender's connection (None only after teardown).
    pub fn client_conn(&self) -> Option<&Connection> {
        self.client.conn()
    }

    /// When the client's handshake completed (the run origin).
    pub fn origin(&self) -> Option<u64> {
        self.client.origin
    }

    /// When the receiver read the end of the stream.
    pub fn done_at(&self) -> Option<u64> {
        self.server.done_at
    }

    /// Last time the receiver got payload, or the origin (the start before the handshake):
    /// for stall detection. Each is set to the time of the moment it happens, so the latest
    /// one is the last.
    pub fn last_progress(&self) -> u64 {
        self.client
            .origin
            .unwrap_or(self.start_ns)
            .max(self.server.last_read)
    }

    /// Drops both connections (hare-cc controllers publish their last events on drop).
    pub fn teardown(&mut self) {
        self.client.peer.conn = None;
        self.server.peer.conn = None;
    }

    /// Moves the datagrams offered on each link to the other side's arrivals, and the
    /// buffers the receiver freed to the sender's pool.
    pub fn hand_over(&mut self) {
        self.server.inbox.take_all(&mut self.client.out.sent);
        self.client.inbox.take_all(&mut self.server.out.sent);
        self.client.pool.absorb(&mut self.server.returned);
    }

    /// Runs the application logic and transmissions of every touched endpoint at `now`.
    pub fn settle(&mut self) -> Result<(), Stop> {
        // The sender first: its handshake completion opens the stream.
        self.client.settle(self.clock, self.now)?;
        self.server.settle(self.clock, self.now)?;
        self.client.pool.absorb(&mut self.server.returned);
        Ok(())
    }

    /// The earliest pending event other than report boundaries, if any.
    pub fn next_event(&mut self) -> Option<u64> {
        self.hand_over();
        [self.client.next_event(), self.server.next_event()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Advances to `t` (never backwards) and handles arrivals, timers and the write
    /// deadline due then. Fails (with a description) when time stopped moving: more than
    /// [`MAX_EVENTS_PER_INSTANT`] steps at one instant, which would otherwise loop forever.
    pub fn advance(&mut self, t: u64) -> Result<(), String> {
        if t > self.now {
            self.now = t;
            self.same_instant = 0;
        } else {
            self.same_instant += 1;
            if self.same_instant > MAX_EVENTS_PER_INSTANT {
                return Err(format!(
                    "livelock: more than {MAX_EVENTS_PER_INSTANT} steps at one instant"
                ));
            }
        }
        let now = self.now;
        let at = self.clock.at(now);
        self.server.inbox.take_all(&mut self.client.out.sent);
        self.server.receive_due(now, at);
        self.client.inbox.take_all(&mut self.server.out.sent);
        self.client.receive_due(now, at);
        self.client.expire_due(now, at);
        self.server.expire_due(now, at);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::client::BATCHES;
    use hare_link::{BitRate, PathConfig, TimeSpan};

    #[test]
    fn full_batches_go_out_without_a_copy_and_their_buffers_come_back() {
        let path = PathConfig::symmetric(BitRate(200_000_000), TimeSpan(20_000_000), None);
        let mut cfg = crate::SimConfig::new("batches", path.forward, path.reverse, "cubic");
        // Window-limited (300 kB < BDP 500 kB): each MAX_DATA credit releases a full burst.
        cfg.windows = crate::Windows::uniform(300_000);
        cfg.workload = crate::Workload::Bytes(20_000_000);
        BATCHES.with(|b| b.set((0, 0)));
        let out = crate::simulate(&cfg, &mut |_| {}).expect("run completes");
        let (batches, reused) = BATCHES.with(|b| b.get());
        assert_eq!(out.run.summary.map(|s| s.bytes), Some(20_000_000));
        assert!(batches > 100, "{batches} full batches");
        assert!(
            reused > batches / 2,
            "{reused} of {batches} batch buffers reused"
        );
    }
}

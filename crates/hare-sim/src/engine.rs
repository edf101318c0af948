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

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, ReadError,
    ReadableError, ServerConfig, StreamEvent, StreamId, WriteError,
};

use crate::config::{ReadMode, SimConfig, Workload};
use crate::error::{Endpoint as Side, SimError};
use crate::pool::DatagramPool;
use crate::receiver_acks::{quickack_segments, AckThinner, ReceiverAcks};
use crate::wire::Wire;

/// Size of the shared buffer of zeros the sender writes from (sliced, never copied).
const ZEROS: usize = 1 << 20;

/// Spare datagram buffers kept for reuse (at MTU 8952, 64 Ki buffers are 560 MiB: more
/// than any path of the thread keeps in flight, so in practice every buffer is reused).
const POOL_LIMIT: usize = 1 << 16;

/// Events handled at one instant before the loop declares a livelock.
const MAX_EVENTS_PER_INSTANT: u32 = 1_000_000;

#[cfg(test)]
thread_local! {
    /// Full batches handed over without copying, and how many of their buffers came back
    /// from the pool (a unit test checks that the zero-copy path runs).
    static BATCHES: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// The virtual clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock whose zero is `base`.
    pub fn new(base: Instant) -> Self {
        Clock { base }
    }

    /// The `Instant` of virtual nanosecond `ns`.
    pub fn at(&self, ns: u64) -> Instant {
        self.base + Duration::from_nanos(ns)
    }

    /// Virtual nanoseconds of `t` (0 before the base).
    pub fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The client's (sender's) application.
struct Sender {
    stream: Option<StreamId>,
    zeros: Bytes,
    written: u64,
    /// quinn refused a write; cleared by `StreamEvent::Writable`.
    blocked: bool,
    /// The stream is finished: no more writes.
    finished: bool,
}

/// The server's (receiver's) application.
struct Receiver {
    stream: Option<StreamId>,
    ordered: bool,
    read: u64,
    fin: bool,
}

/// One quinn endpoint with its (single) connection.
struct Peer {
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    /// Where this peer's datagrams come from, as seen by the other side.
    addr: SocketAddr,
    /// Next timer, virtual ns.
    timer: Option<u64>,
    tx_buf: Vec<u8>,
    resp_buf: Vec<u8>,
    /// Something happened: run the application and transmit.
    dirty: bool,
}

/// What a step of the loop found that ends the run.
pub(crate) enum Stop {
    /// A connection reported an error.
    Lost { side: Side, reason: String },
}

/// The simulation state. `run` is driven by [`crate::simulate`].
pub(crate) struct Engine {
    pub clock: Clock,
    pub now: u64,
    client: Peer,
    server: Peer,
    sender: Sender,
    receiver: Receiver,
    pub forward: Wire,
    pub reverse: Wire,
    gso: usize,
    /// Datagrams per client `poll_transmit`: the GSO batch, or 1 for the unpaced sender
    /// (its controller sees each datagram's `on_sent` before the next is built).
    client_batch: usize,
    /// The Linux 2.6 receiver model's reverse-path thinning, if selected.
    thinner: Option<AckThinner>,
    /// Scratch list of the datagrams the thinner releases.
    thinned: Vec<BytesMut>,
    workload: Workload,
    /// When the client's handshake completed (the run origin).
    pub origin: Option<u64>,
    /// When the receiver read the end of the stream.
    pub done_at: Option<u64>,
    /// Last time the receiver got payload (or the origin): for stall detection.
    pub last_progress: u64,
    /// ACK frames that found the sender window-limited: the sender's writer was blocked by
    /// flow control or the send window while quinn reported itself application-limited (it
    /// had nothing to send although the congestion window had room).
    pub fc_limited: u64,
    tap: crate::tap::TapHandle,
    pool: DatagramPool,
    trace_from: usize,
    same_instant: u32,
}

impl Engine {
    /// Builds both endpoints and starts the client's connection at virtual time 0.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &SimConfig,
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
                clock.at(0),
                client_cfg,
                server_addr,
                crate::setup::server_name(),
            )
            .map_err(|e| SimError::Setup(format!("connect: {e}")))?;
        Ok(Engine {
            clock,
            now: 0,
            client: Peer {
                endpoint: client_ep,
                conn: Some((ch, conn)),
                addr: client_addr,
                timer: None,
                tx_buf: Vec::new(),
                resp_buf: Vec::new(),
                // A fresh client connection has no timer until poll_transmit ran once.
                dirty: true,
            },
            server: Peer {
                endpoint: server_ep,
                conn: None,
                addr: server_addr,
                timer: None,
                tx_buf: Vec::new(),
                resp_buf: Vec::new(),
                dirty: false,
            },
            sender: Sender {
                stream: None,
                zeros: Bytes::from(vec![0u8; ZEROS]),
                written: 0,
                blocked: false,
                finished: false,
            },
            receiver: Receiver {
                stream: None,
                ordered: cfg.read_mode == ReadMode::Ordered,
                read: 0,
                fin: false,
            },
            forward,
            reverse,
            gso: cfg.gso_segments,
            client_batch: if cfg.paced { cfg.gso_segments } else { 1 },
            thinner: (cfg.receiver_acks == ReceiverAcks::Linux26).then(|| {
                let clamp = cfg.windows.stream_receive.min(cfg.windows.receive);
                let quick = quickack_segments(clamp, u64::from(cfg.mtu));
                AckThinner::new(crate::identity::SeededCids::LEN, quick)
            }),
            thinned: Vec::new(),
            workload: cfg.workload,
            origin: None,
            done_at: None,
            last_progress: 0,
            fc_limited: 0,
            tap,
            pool: DatagramPool::with_batches(
                usize::from(cfg.mtu),
                POOL_LIMIT,
                usize::from(cfg.mtu) * cfg.gso_segments,
            ),
            trace_from: 0,
            same_instant: 0,
        })
    }

    /// Payload bytes the receiving application has read.
    pub fn bytes_read(&self) -> u64 {
        self.receiver.read
    }

    /// The sender's connection (None only after teardown).
    pub fn client_conn(&self) -> Option<&Connection> {
        self.client.conn.as_ref().map(|(_, c)| c)
    }

    /// Drops both connections (hare-cc controllers publish their last events on drop).
    pub fn teardown(&mut self) {
        self.client.conn = None;
        self.server.conn = None;
    }

    /// Runs the application logic and transmissions of every touched endpoint at `now`.
    pub fn settle(&mut self) -> Result<(), Stop> {
        // The sender first: its handshake completion opens the stream.
        if self.client.dirty {
            self.client.dirty = false;
            self.drive_client()?;
        }
        if self.server.dirty {
            self.server.dirty = false;
            self.drive_server()?;
        }
        Ok(())
    }

    /// The earliest pending event other than report boundaries, if any.
    pub fn next_event(&self) -> Option<u64> {
        let mut t = None;
        let mut consider = |v: Option<u64>| {
            if let Some(v) = v {
                t = Some(t.map_or(v, |t: u64| t.min(v)));
            }
        };
        consider(self.forward.next_at());
        consider(self.reverse.next_at());
        consider(self.client.timer);
        consider(self.server.timer);
        consider(self.write_deadline());
        consider(self.thinner.as_ref().and_then(AckThinner::deadline));
        t
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
        while let Some(d) = self.forward.pop_due(now) {
            self.server_receive(at, d);
        }
        let mut got_acks = false;
        let server_addr = self.server.addr;
        while let Some(d) = self.reverse.pop_due(now) {
            Self::client_receive(&mut self.client, server_addr, &mut self.forward, now, at, d);
            got_acks = true;
        }
        if got_acks {
            self.after_sender_input(now);
        }
        for peer in [&mut self.client, &mut self.server] {
            if peer.timer.is_some_and(|t| t <= now) {
                if let Some((_, conn)) = peer.conn.as_mut() {
                    conn.handle_timeout(at);
                }
                peer.timer = None;
                peer.dirty = true;
            }
        }
        if self.write_deadline().is_some_and(|d| d <= now) {
            self.finish_writing();
            self.client.dirty = true;
        }
        if let Some(d) = self.thinner.as_mut().and_then(|t| t.due(now)) {
            // The delayed-ACK timer of the 2.6 receiver model.
            drop(self.reverse.send(now, d));
        }
        Ok(())
    }

    fn write_deadline(&self) -> Option<u64> {
        match (self.workload, self.origin) {
            (Workload::Duration(d), Some(o)) if !self.sender.finished => {
                Some(o.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            }
            _ => None,
        }
    }

    /// After the sender processed ACKs: window-limited accounting and trace queue depths.
    fn after_sender_input(&mut self, now: u64) {
        let (app_limited, trace_len) = {
            let s = self.tap.lock();
            (s.last_app_limited, s.trace.len())
        };
        if app_limited && self.sender.blocked && !self.sender.finished {
            self.fc_limited += 1;
        }
        if trace_len > self.trace_from {
            let q = self.forward.queue_bytes(now);
            let mut s = self.tap.lock();
            for p in &mut s.trace[self.trace_from..] {
                p.queue_bytes = q;
            }
            self.trace_from = s.trace.len();
        }
    }

    /// A datagram arrives at the server.
    fn server_receive(&mut self, at: Instant, data: BytesMut) {
        let now = self.now;
        let peer = &mut self.server;
        peer.dirty = true;
        let event =
            peer.endpoint
                .handle(at, self.client.addr, None, None, data, &mut peer.resp_buf);
        match event {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if peer.conn.is_some() {
                    peer.endpoint.ignore(incoming);
                    return;
                }
                match peer.endpoint.accept(incoming, at, &mut peer.resp_buf, None) {
                    Ok((ch, conn)) => peer.conn = Some((ch, conn)),
                    Err(e) => {
                        if let Some(t) = e.response {
                            let d = BytesMut::from(&peer.resp_buf[..t.size]);
                            let _ = self.reverse.send(now, d);
                        }
                    }
                }
            }
            other => Self::dispatch(peer, &mut self.reverse, now, other),
        }
    }

    /// A datagram from `remote` arrives at the client.
    fn client_receive(
        peer: &mut Peer,
        remote: SocketAddr,
        out: &mut Wire,
        now: u64,
        at: Instant,
        data: BytesMut,
    ) {
        peer.dirty = true;
        let event = peer
            .endpoint
            .handle(at, remote, None, None, data, &mut peer.resp_buf);
        Self::dispatch(peer, out, now, event);
    }

    fn dispatch(peer: &mut Peer, out: &mut Wire, now: u64, event: Option<DatagramEvent>) {
        match event {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                if let Some((own, conn)) = peer.conn.as_mut() {
                    if *own == ch {
                        conn.handle_event(ev);
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                let d = BytesMut::from(&peer.resp_buf[..t.size]);
                let _ = out.send(now, d);
            }
            // The client never accepts connections; a stray Initial is dropped.
            Some(DatagramEvent::NewConnection(incoming)) => peer.endpoint.ignore(incoming),
            None => {}
        }
    }

    /// Application events, writes and transmissions of the client.
    fn drive_client(&mut self) -> Result<(), Stop> {
        let Some((_, conn)) = self.client.conn.as_mut() else {
            return Ok(());
        };
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    if self.origin.is_none() {
                        self.origin = Some(self.now);
                        self.last_progress = self.now;
                    }
                    self.sender.stream = conn.streams().open(Dir::Uni);
                }
                Event::Stream(StreamEvent::Writable { .. }) => self.sender.blocked = false,
                Event::ConnectionLost { reason } => {
                    return Err(Stop::Lost {
                        side: Side::Client,
                        reason: reason.to_string(),
                    })
                }
                _ => {}
            }
        }
        self.pump_writes()?;
        self.flush(Side::Client);
        Ok(())
    }

    /// Writes as much as quinn takes.
    fn pump_writes(&mut self) -> Result<(), Stop> {
        let s = &mut self.sender;
        let (Some(id), Some((_, conn))) = (s.stream, self.client.conn.as_mut()) else {
            return Ok(());
        };
        if s.finished || s.blocked {
            return Ok(());
        }
        // Each pass either writes something or ends the loop; quinn takes at most the send
        // window, so the bound is never reached in practice.
        for _ in 0..1_000_000 {
            let want = match self.workload {
                Workload::Bytes(n) => n - s.written,
                Workload::Duration(_) => u64::MAX,
            };
            if want == 0 {
                s.finished = true;
                let _ = conn.send_stream(id).finish();
                return Ok(());
            }
            let len = usize::try_from(want).unwrap_or(ZEROS).min(ZEROS);
            let mut chunk = [s.zeros.slice(..len)];
            match conn.send_stream(id).write_chunks(&mut chunk) {
                // A partial write does not register the stream for a Writable event; keep
                // going until quinn says Blocked, which does.
                Ok(w) => s.written += w.bytes as u64,
                Err(WriteError::Blocked) => {
                    s.blocked = true;
                    return Ok(());
                }
                Err(e) => {
                    return Err(Stop::Lost {
                        side: Side::Client,
                        reason: format!("stream write failed: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    /// The duration workload ended: finish the stream (already written data still flows).
    fn finish_writing(&mut self) {
        let s = &mut self.sender;
        if s.finished {
            return;
        }
        s.finished = true;
        if let (Some(id), Some((_, conn))) = (s.stream, self.client.conn.as_mut()) {
            let _ = conn.send_stream(id).finish();
        }
    }

    /// Application events, reads and transmissions of the server.
    fn drive_server(&mut self) -> Result<(), Stop> {
        let Some((_, conn)) = self.server.conn.as_mut() else {
            return Ok(());
        };
        while let Some(ev) = conn.poll() {
            if let Event::ConnectionLost { reason } = ev {
                return Err(Stop::Lost {
                    side: Side::Server,
                    reason: reason.to_string(),
                });
            }
        }
        let r = &mut self.receiver;
        if r.stream.is_none() {
            r.stream = conn.streams().accept(Dir::Uni);
        }
        if let (Some(id), false) = (r.stream, r.fin) {
            let before = r.read;
            let mut recv = conn.recv_stream(id);
            match recv.read(r.ordered) {
                Ok(mut chunks) => {
                    let mut result = Ok(());
                    // Bounded: each pass consumes a chunk; a receive window holds at most
                    // window / 1 byte of them, far below this bound.
                    for _ in 0..100_000_000u32 {
                        match chunks.next(usize::MAX) {
                            Ok(Some(c)) => {
                                r.read += c.bytes.len() as u64;
                                self.pool.recycle_chunk(c.bytes);
                            }
                            Ok(None) => {
                                r.fin = true;
                                break;
                            }
                            Err(ReadError::Blocked) => break,
                            Err(ReadError::Reset(code)) => {
                                result = Err(Stop::Lost {
                                    side: Side::Server,
                                    reason: format!("stream reset by peer, code {code}"),
                                });
                                break;
                            }
                        }
                    }
                    // Frees receive-window credit; MAX_(STREAM_)DATA goes out on flush below.
                    let _ = chunks.finalize();
                    result?;
                }
                Err(ReadableError::ClosedStream) => r.fin = true,
                Err(e) => {
                    return Err(Stop::Lost {
                        side: Side::Server,
                        reason: format!("stream read failed: {e}"),
                    })
                }
            }
            if r.read > before {
                self.last_progress = self.now;
            }
            if r.fin && self.done_at.is_none() {
                self.done_at = Some(self.now);
            }
        }
        self.flush(Side::Server);
        Ok(())
    }

    /// Polls a connection for datagrams until it has none, offers each to the outgoing link,
    /// processes endpoint events and refreshes the timer.
    fn flush(&mut self, side: Side) {
        let now = self.now;
        let at = self.clock.at(now);
        let clock = self.clock;
        let pool = &mut self.pool;
        let (peer, out, batch) = match side {
            Side::Client => (&mut self.client, &mut self.forward, self.client_batch),
            Side::Server => (&mut self.server, &mut self.reverse, self.gso),
        };
        let mut thinner = match side {
            Side::Client => None,
            Side::Server => self.thinner.as_mut(),
        };
        let thinned = &mut self.thinned;
        let Some((ch, conn)) = peer.conn.as_mut() else {
            return;
        };
        // Bounded: quinn's window and pacer stop it long before this.
        for _ in 0..10_000_000u32 {
            let Some(t) = conn.poll_transmit(at, batch, &mut peer.tx_buf) else {
                break;
            };
            let size = t.size.min(peer.tx_buf.len());
            let seg = match t.segment_size {
                Some(seg) if seg > 0 => seg,
                _ => size.max(1),
            };
            let datagrams = size.div_ceil(seg);
            if side == Side::Client && self.gso > 1 && datagrams >= self.gso {
                // A full batch: its buffer becomes the datagrams, no copy (see pool.rs).
                let batch = std::mem::replace(&mut peer.tx_buf, pool.take_batch());
                #[cfg(test)]
                BATCHES.with(|b| b.set((b.get().0 + 1, pool.batches_reused)));
                let mut rest = crate::pool::vec_into_bytes_mut(batch);
                rest.truncate(size);
                while !rest.is_empty() {
                    let d = rest.split_to(seg.min(rest.len()));
                    // A dropped datagram still shares the batch buffer: just let it go.
                    drop(out.send(now, d));
                }
                continue;
            }
            // One copy per datagram into a recycled buffer (data direction) or a small
            // allocation (ACKs): cheaper than handing over quinn's 10-segment buffer, which
            // would keep its whole capacity alive for one or two datagrams.
            for d in peer.tx_buf[..size].chunks(seg) {
                let datagram = match side {
                    Side::Client => pool.copy_of(d),
                    Side::Server => BytesMut::from(d),
                };
                if let Some(thinner) = thinner.as_deref_mut() {
                    thinner.offer(now, datagram, thinned);
                    for d in thinned.drain(..) {
                        drop(out.send(now, d));
                    }
                    continue;
                }
                if let Some(dropped) = out.send(now, datagram) {
                    if side == Side::Client {
                        pool.recycle(dropped);
                    }
                }
            }
            peer.tx_buf.clear();
        }
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(cev) = peer.endpoint.handle_event(*ch, ev) {
                conn.handle_event(cev);
            }
        }
        peer.timer = conn.poll_timeout().map(|t| clock.ns(t).max(now));
    }
}

#[cfg(test)]
mod tests {
    use super::BATCHES;
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

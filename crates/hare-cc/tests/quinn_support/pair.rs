//! An in-memory quinn-proto client/server pair on a virtual clock: datagrams are handed from
//! one `Endpoint` to the other after a fixed one-way delay, nothing touches a socket. Used to
//! run hare controllers inside a real quinn-proto connection and to obtain a real
//! `RttEstimator` (quinn-proto only constructs it internally; it is `Copy`, so a controller
//! wrapper can keep the one quinn hands to `on_ack`).

use std::any::Any;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics, NewRenoConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, RttEstimator, ServerConfig, StreamEvent, StreamId, TransportConfig,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const CLIENT: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 40_001));
const SERVER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 40_002));

/// Upper bound of loop iterations of one transfer (every loop is bounded).
const MAX_STEPS: usize = 2_000_000;

/// A datagram on the wire.
struct InFlight {
    arrive: Instant,
    data: Vec<u8>,
}

/// Outcome of [`Pair::transfer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferReport {
    /// Bytes the server read.
    pub received: u64,
    /// Virtual time the transfer took.
    pub elapsed: Duration,
}

/// A client and a server endpoint joined by two fixed-delay directions.
pub struct Pair {
    pub now: Instant,
    one_way: Duration,
    client_ep: Endpoint,
    server_ep: Endpoint,
    client: (ConnectionHandle, Connection),
    server: Option<(ConnectionHandle, Connection)>,
    to_server: VecDeque<InFlight>,
    to_client: VecDeque<InFlight>,
}

fn identity() -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), String> {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .map_err(|e| format!("rcgen: {e}"))?;
    let cert = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    Ok((cert, key))
}

impl Pair {
    /// Connect a client whose congestion controller comes from `factory` to a server (which
    /// uses quinn's default) with the given one-way delay. Deterministic RNG seeds.
    pub fn new(
        factory: Arc<dyn ControllerFactory + Send + Sync>,
        one_way: Duration,
    ) -> Result<Self, String> {
        let (cert, key) = identity()?;
        let mut server_cfg = ServerConfig::with_single_cert(vec![cert.clone()], key)
            .map_err(|e| format!("server config: {e}"))?;
        let mut server_transport = TransportConfig::default();
        server_transport.stream_receive_window(quinn_proto::VarInt::from_u32(64 << 20));
        server_transport.receive_window(quinn_proto::VarInt::from_u32(64 << 20));
        server_cfg.transport_config(Arc::new(server_transport));
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).map_err(|e| format!("root store: {e}"))?;
        let mut client_cfg = ClientConfig::with_root_certificates(Arc::new(roots))
            .map_err(|e| format!("client config: {e}"))?;
        let mut transport = TransportConfig::default();
        transport.congestion_controller_factory(factory);
        transport.send_window(64 << 20);
        client_cfg.transport_config(Arc::new(transport));

        let endpoint_cfg = Arc::new(EndpointConfig::default());
        let mut client_ep = Endpoint::new(Arc::clone(&endpoint_cfg), None, false, Some([1; 32]));
        let server_ep = Endpoint::new(
            endpoint_cfg,
            Some(Arc::new(server_cfg)),
            false,
            Some([2; 32]),
        );
        let now = Instant::now();
        let client = client_ep
            .connect(now, client_cfg, SERVER, "localhost")
            .map_err(|e| format!("connect: {e}"))?;
        Ok(Self {
            now,
            one_way,
            client_ep,
            server_ep,
            client,
            server: None,
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
        })
    }

    /// The client connection (whose controller is under test).
    pub fn client(&self) -> &Connection {
        &self.client.1
    }

    /// Send `bytes` on a client unidirectional stream and let the server read them all;
    /// stop after `limit` of virtual time.
    pub fn transfer(&mut self, bytes: u64, limit: Duration) -> Result<TransferReport, String> {
        let start = self.now;
        let chunk = vec![0x5a_u8; 64 * 1024];
        let mut stream: Option<StreamId> = None;
        let mut written = 0_u64;
        let mut finished = false;
        let mut received = 0_u64;
        let mut buf = Vec::new();
        for _ in 0..MAX_STEPS {
            if received >= bytes || self.now.duration_since(start) > limit {
                break;
            }
            // Application: the client writes what flow control admits.
            if !self.client.1.is_handshaking() {
                let id = match stream {
                    Some(id) => id,
                    None => {
                        let id = self.client.1.streams().open(Dir::Uni).ok_or("no stream")?;
                        stream = Some(id);
                        id
                    }
                };
                while written < bytes {
                    let n = (bytes - written).min(chunk.len() as u64) as usize;
                    match self.client.1.send_stream(id).write(&chunk[..n]) {
                        Ok(0) | Err(_) => break,
                        Ok(w) => written += w as u64,
                    }
                }
                if written >= bytes && !finished {
                    finished = self.client.1.send_stream(id).finish().is_ok();
                }
            }
            // The server reads everything, unordered.
            if let Some((_, conn)) = self.server.as_mut() {
                while let Some(event) = conn.poll() {
                    if let Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) = event {
                        // Accepted below.
                    }
                }
                while let Some(id) = conn.streams().accept(Dir::Uni) {
                    let _ = id;
                }
                received += read_all(conn);
            }
            while self.client.1.poll().is_some() {}
            self.flush(&mut buf);
            self.advance()?;
        }
        Ok(TransferReport {
            received,
            elapsed: self.now.duration_since(start),
        })
    }

    /// Put every datagram both sides want to send on the wire.
    fn flush(&mut self, buf: &mut Vec<u8>) {
        let arrive = self.now + self.one_way;
        for _ in 0..10_000 {
            buf.clear();
            let Some(t) = self.client.1.poll_transmit(self.now, 10, buf) else {
                break;
            };
            split(&buf[..t.size], t.segment_size, arrive, &mut self.to_server);
        }
        if let Some((_, conn)) = self.server.as_mut() {
            for _ in 0..10_000 {
                buf.clear();
                let Some(t) = conn.poll_transmit(self.now, 10, buf) else {
                    break;
                };
                split(&buf[..t.size], t.segment_size, arrive, &mut self.to_client);
            }
        }
    }

    /// Move the clock to the next arrival or timer and process it.
    fn advance(&mut self) -> Result<(), String> {
        let mut next = [
            self.to_server.front().map(|d| d.arrive),
            self.to_client.front().map(|d| d.arrive),
            self.client.1.poll_timeout(),
            self.server.as_mut().and_then(|s| s.1.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
        .ok_or("nothing left to do")?;
        if next < self.now {
            next = self.now;
        }
        self.now = next;
        let now = self.now;
        let mut buf = Vec::new();
        while self.to_server.front().is_some_and(|d| d.arrive <= now) {
            let Some(d) = self.to_server.pop_front() else {
                break;
            };
            let event = self.server_ep.handle(
                now,
                CLIENT,
                None,
                None,
                BytesMut::from(&d.data[..]),
                &mut buf,
            );
            match event {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    let conn = self
                        .server_ep
                        .accept(incoming, now, &mut buf, None)
                        .map_err(|e| format!("accept: {:?}", e.cause))?;
                    self.server = Some(conn);
                }
                Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                    if let Some((_, conn)) = self.server.as_mut() {
                        conn.handle_event(ev);
                    }
                }
                Some(DatagramEvent::Response(t)) => split(
                    &buf[..t.size],
                    t.segment_size,
                    now + self.one_way,
                    &mut self.to_client,
                ),
                None => {}
            }
        }
        while self.to_client.front().is_some_and(|d| d.arrive <= now) {
            let Some(d) = self.to_client.pop_front() else {
                break;
            };
            let event = self.client_ep.handle(
                now,
                SERVER,
                None,
                None,
                BytesMut::from(&d.data[..]),
                &mut buf,
            );
            if let Some(DatagramEvent::ConnectionEvent(_, ev)) = event {
                self.client.1.handle_event(ev);
            }
        }
        if self.client.1.poll_timeout().is_some_and(|t| t <= now) {
            self.client.1.handle_timeout(now);
        }
        if let Some((_, conn)) = self.server.as_mut() {
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
        }
        // Endpoint <-> connection bookkeeping (connection ids, draining).
        while let Some(ev) = self.client.1.poll_endpoint_events() {
            if let Some(back) = self.client_ep.handle_event(self.client.0, ev) {
                self.client.1.handle_event(back);
            }
        }
        if let Some((handle, conn)) = self.server.as_mut() {
            while let Some(ev) = conn.poll_endpoint_events() {
                if let Some(back) = self.server_ep.handle_event(*handle, ev) {
                    conn.handle_event(back);
                }
            }
        }
        Ok(())
    }
}

/// Read every readable byte of every stream of `conn` (unordered), returning the count.
fn read_all(conn: &mut Connection) -> u64 {
    let mut total = 0;
    // Client-initiated unidirectional streams, ids 2, 6, 10, ...; the test opens one.
    let id = StreamId::new(quinn_proto::Side::Client, Dir::Uni, 0);
    let mut recv = conn.recv_stream(id);
    if let Ok(mut chunks) = recv.read(false) {
        for _ in 0..1_000_000 {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => total += chunk.bytes.len() as u64,
                _ => break,
            }
        }
        let _ = chunks.finalize();
    }
    total
}

fn split(data: &[u8], segment: Option<usize>, arrive: Instant, queue: &mut VecDeque<InFlight>) {
    let seg = segment.unwrap_or(data.len()).max(1);
    for piece in data.chunks(seg) {
        queue.push_back(InFlight {
            arrive,
            data: piece.to_vec(),
        });
    }
}

/// Wraps a factory's controllers and keeps the first `RttEstimator` quinn hands to `on_ack`.
struct CaptureFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
    slot: Arc<Mutex<Option<RttEstimator>>>,
}

struct CaptureController {
    inner: Box<dyn Controller>,
    slot: Arc<Mutex<Option<RttEstimator>>>,
}

impl ControllerFactory for CaptureFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(CaptureController {
            inner: Arc::clone(&self.inner).build(now, current_mtu),
            slot: Arc::clone(&self.slot),
        })
    }
}

impl Controller for CaptureController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number)
    }
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        if let Ok(mut slot) = self.slot.lock() {
            slot.get_or_insert(*rtt);
        }
        self.inner.on_ack(now, sent, bytes, app_limited, rtt)
    }
    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest: Option<u64>,
    ) {
        self.inner.on_end_acks(now, in_flight, app_limited, largest)
    }
    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, lost: u64) {
        self.inner.on_congestion_event(now, sent, persistent, lost)
    }
    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }
    fn window(&self) -> u64 {
        self.inner.window()
    }
    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(CaptureController {
            inner: self.inner.clone_box(),
            slot: Arc::clone(&self.slot),
        })
    }
    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A real `RttEstimator` taken from a short in-memory quinn-proto transfer (cached).
pub fn rtt_estimator() -> RttEstimator {
    static CAPTURED: OnceLock<RttEstimator> = OnceLock::new();
    *CAPTURED.get_or_init(|| match capture() {
        Ok(rtt) => rtt,
        Err(e) => panic!("could not obtain an RttEstimator from quinn-proto: {e}"),
    })
}

fn capture() -> Result<RttEstimator, String> {
    let slot = Arc::new(Mutex::new(None));
    let factory = Arc::new(CaptureFactory {
        inner: Arc::new(NewRenoConfig::default()),
        slot: Arc::clone(&slot),
    });
    let mut pair = Pair::new(factory, Duration::from_millis(5))?;
    pair.transfer(10_000, Duration::from_secs(5))?;
    let got = *slot.lock().map_err(|_| "poisoned")?;
    got.ok_or_else(|| "no on_ack call in the capture run".to_owned())
}

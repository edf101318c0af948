//! The receiving side: the server endpoint, its application (a reader that discards), the
//! data arriving from the forward link and the reverse link it sends ACKs on.

use std::time::Instant;

use bytes::BytesMut;
use hare_cc::autotune::RcvAutotune;
use quinn_proto::{
    Connection, DatagramEvent, Dir, Event, ReadError, ReadableError, StreamId, VarInt,
};

use crate::error::Endpoint as Side;
use crate::peer::Peer;
use crate::pool::DatagramPool;
use crate::receiver_acks::AckThinner;
use crate::virtual_clock::{Clock, Stop};
use crate::wire::{Arrivals, Wire};

/// The server's application state.
struct Receiver {
    stream: Option<StreamId>,
    ordered: bool,
    read: u64,
    fin: bool,
}

/// The receiving endpoint and everything only it touches.
pub(crate) struct ServerSide {
    pub peer: Peer,
    receiver: Receiver,
    /// The reverse (ACK) link.
    pub out: Wire,
    /// Datagrams arriving from the forward link.
    pub inbox: Arrivals,
    /// The Linux 2.6 receiver model's reverse-path thinning, if selected.
    thinner: Option<AckThinner>,
    /// Scratch list of the datagrams the thinner releases.
    thinned: Vec<BytesMut>,
    /// Datagrams per `poll_transmit`.
    gso: usize,
    /// Buffers of the chunks the application read, for the sender's pool.
    pub returned: DatagramPool,
    /// When the application read the end of the stream.
    pub done_at: Option<u64>,
    /// When the application last got payload (0 before it did).
    pub last_read: u64,
    /// Receive-window autotuning (`-w auto`), fed with the application's byte count.
    autotune: Option<RcvAutotune>,
    /// The largest connection receive window granted (the initial one until it grows).
    pub max_receive_window: Option<u64>,
}

impl ServerSide {
    /// The receiving side around `peer`, which accepts the first connection that arrives.
    pub fn new(
        peer: Peer,
        out: Wire,
        gso: usize,
        ordered: bool,
        thinner: Option<AckThinner>,
        returned: DatagramPool,
    ) -> Self {
        ServerSide {
            peer,
            receiver: Receiver {
                stream: None,
                ordered,
                read: 0,
                fin: false,
            },
            out,
            inbox: Arrivals::default(),
            thinner,
            thinned: Vec::new(),
            gso,
            returned,
            done_at: None,
            last_read: 0,
            autotune: None,
            max_receive_window: None,
        }
    }

    /// The same side with its connection window autotuned by `autotune`.
    pub fn with_autotune(mut self, autotune: Option<RcvAutotune>) -> Self {
        self.max_receive_window = autotune.as_ref().map(RcvAutotune::window);
        self.autotune = autotune;
        self
    }

    /// Payload bytes the application has read.
    pub fn bytes_read(&self) -> u64 {
        self.receiver.read
    }

    /// This side's earliest pending event.
    pub fn next_event(&self) -> Option<u64> {
        let thinner = self.thinner.as_ref().and_then(AckThinner::deadline);
        [self.inbox.next_at(), self.peer.timer, thinner]
            .into_iter()
            .flatten()
            .min()
    }

    /// Datagrams arriving by `now`.
    pub fn receive_due(&mut self, now: u64, at: Instant) {
        while let Some(d) = self.inbox.pop_due(now) {
            self.receive(now, at, d);
        }
    }

    /// The timer and the thinner's delayed ACK due at `now`.
    pub fn expire_due(&mut self, now: u64, at: Instant) {
        self.peer.expire_timer(now, at);
        if let Some(d) = self.thinner.as_mut().and_then(|t| t.due(now)) {
            // The delayed-ACK timer of the 2.6 receiver model.
            drop(self.out.send(now, d));
        }
    }

    /// A datagram arrives.
    fn receive(&mut self, now: u64, at: Instant, data: BytesMut) {
        let peer = &mut self.peer;
        match peer.receive(at, data) {
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
                            let _ = self.out.send(now, d);
                        }
                    }
                }
            }
            other => peer.dispatch(&mut self.out, now, other),
        }
    }

    /// Application events, reads and transmissions, if anything happened.
    pub fn settle(&mut self, clock: Clock, now: u64) -> Result<(), Stop> {
        if !self.peer.dirty {
            return Ok(());
        }
        self.peer.dirty = false;
        let Some((_, conn)) = self.peer.conn.as_mut() else {
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
            Self::read(r, conn, id, &mut self.returned)?;
            if r.read > before {
                self.last_read = now;
            }
            if let Some(a) = self.autotune.as_mut() {
                // Once per RTT, as hare-recv's tuner: the bytes the application read.
                let at = std::time::Duration::from_nanos(now);
                if let Some(w) = a.on_progress(at, r.read, conn.rtt()) {
                    conn.set_receive_window(VarInt::from_u64(w).unwrap_or(VarInt::MAX));
                    self.max_receive_window = Some(w);
                }
            }
            if r.fin && self.done_at.is_none() {
                self.done_at = Some(now);
            }
        }
        self.flush(clock, now);
        Ok(())
    }

    /// Reads everything readable of stream `id`, returning the chunks' buffers to `pool`.
    fn read(
        r: &mut Receiver,
        conn: &mut Connection,
        id: StreamId,
        pool: &mut DatagramPool,
    ) -> Result<(), Stop> {
        let mut recv = conn.recv_stream(id);
        let outcome = match recv.read(r.ordered) {
            Ok(mut chunks) => {
                let mut result = Ok(());
                // Bounded: each pass consumes a chunk; a receive window holds at most
                // window / 1 byte of them, far below this bound.
                for _ in 0..100_000_000u32 {
                    match chunks.next(usize::MAX) {
                        Ok(Some(c)) => {
                            r.read += c.bytes.len() as u64;
                            pool.recycle_chunk(c.bytes);
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
                result
            }
            Err(ReadableError::ClosedStream) => {
                r.fin = true;
                Ok(())
            }
            Err(e) => Err(Stop::Lost {
                side: Side::Server,
                reason: format!("stream read failed: {e}"),
            }),
        };
        outcome
    }

    /// Polls the connection for datagrams until it has none and offers each to the reverse
    /// link, through the 2.6 receiver model's thinner when selected.
    fn flush(&mut self, clock: Clock, now: u64) {
        let at = clock.at(now);
        let peer = &mut self.peer;
        let Some((_, conn)) = peer.conn.as_mut() else {
            return;
        };
        let batch = self.gso;
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
            // ACKs are small: a plain allocation each.
            for d in peer.tx_buf[..size].chunks(seg) {
                let datagram = BytesMut::from(d);
                match self.thinner.as_mut() {
                    Some(thinner) => {
                        thinner.offer(now, datagram, &mut self.thinned);
                        for d in self.thinned.drain(..) {
                            drop(self.out.send(now, d));
                        }
                    }
                    None => drop(self.out.send(now, datagram)),
                }
            }
            peer.tx_buf.clear();
        }
        peer.finish_flush(clock, now);
    }
}

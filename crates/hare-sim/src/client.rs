//! The sending side: the client endpoint, its application (a writer of zeros, like nuttcp),
//! the forward link it offers datagrams to and the ACKs arriving from the reverse link.

use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, StreamEvent, StreamId, WriteError};

use crate::config::Workload;
use crate::error::Endpoint as Side;
use crate::peer::Peer;
use crate::pool::DatagramPool;
use crate::tap::TapHandle;
use crate::virtual_clock::{Clock, Stop};
use crate::wire::{Arrivals, Wire};

/// Size of the shared buffer of zeros the sender writes from (sliced, never copied).
const ZEROS: usize = 1 << 20;

#[cfg(test)]
thread_local! {
    /// Full batches handed over without copying, and how many of their buffers came back
    /// from the pool (a unit test checks that the zero-copy path runs).
    pub(crate) static BATCHES: std::cell::Cell<(u64, u64)> =
        const { std::cell::Cell::new((0, 0)) };
}

/// The client's application state.
struct Sender {
    stream: Option<StreamId>,
    zeros: Bytes,
    written: u64,
    /// quinn refused a write; cleared by `StreamEvent::Writable`.
    blocked: bool,
    /// The stream is finished: no more writes.
    finished: bool,
}

/// The sending endpoint and everything only it touches.
pub(crate) struct ClientSide {
    pub peer: Peer,
    sender: Sender,
    /// The forward (data) link.
    pub out: Wire,
    /// ACKs and handshake data arriving from the reverse link.
    pub inbox: Arrivals,
    gso: usize,
    /// Datagrams per `poll_transmit`: the GSO batch, or 1 for the unpaced sender (its
    /// controller sees each datagram's `on_sent` before the next is built).
    batch: usize,
    workload: Workload,
    /// When the handshake completed (the run origin).
    pub origin: Option<u64>,
    /// ACK frames that found the sender window-limited: the writer was blocked by flow
    /// control or the send window while quinn reported itself application-limited (it had
    /// nothing to send although the congestion window had room).
    pub fc_limited: u64,
    pub tap: TapHandle,
    pub pool: DatagramPool,
    trace_from: usize,
}

impl ClientSide {
    /// The sending side around `peer` (whose connection is being set up).
    pub fn new(
        peer: Peer,
        out: Wire,
        gso: usize,
        batch: usize,
        workload: Workload,
        tap: TapHandle,
        pool: DatagramPool,
    ) -> Self {
        ClientSide {
            peer,
            sender: Sender {
                stream: None,
                zeros: Bytes::from(vec![0u8; ZEROS]),
                written: 0,
                blocked: false,
                finished: false,
            },
            out,
            inbox: Arrivals::default(),
            gso,
            batch,
            workload,
            origin: None,
            fc_limited: 0,
            tap,
            pool,
            trace_from: 0,
        }
    }

    /// The connection (None only after teardown).
    pub fn conn(&self) -> Option<&Connection> {
        self.peer.conn.as_ref().map(|(_, c)| c)
    }

    /// The application has finished the stream (the end of the run is then near: the
    /// two-thread engine leaves the rest to one thread).
    pub fn finished(&self) -> bool {
        self.sender.finished
    }

    /// When the duration workload stops writing, if it is running.
    pub fn write_deadline(&self) -> Option<u64> {
        match (self.workload, self.origin) {
            (Workload::Duration(d), Some(o)) if !self.sender.finished => {
                Some(o.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            }
            _ => None,
        }
    }

    /// This side's earliest pending event.
    pub fn next_event(&self) -> Option<u64> {
        [self.inbox.next_at(), self.peer.timer, self.write_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// ACKs arriving by `now`, then window-limited accounting and trace queue depths.
    pub fn receive_due(&mut self, now: u64, at: Instant) {
        let mut got_acks = false;
        while let Some(d) = self.inbox.pop_due(now) {
            let event = self.peer.receive(at, d);
            self.peer.dispatch(&mut self.out, now, event);
            got_acks = true;
        }
        if got_acks {
            self.after_input(now);
        }
    }

    /// The timer and the write deadline due at `now`.
    pub fn expire_due(&mut self, now: u64, at: Instant) {
        self.peer.expire_timer(now, at);
        if self.write_deadline().is_some_and(|d| d <= now) {
            self.finish_writing();
            self.peer.dirty = true;
        }
    }

    /// After the sender processed ACKs: window-limited accounting and trace queue depths.
    fn after_input(&mut self, now: u64) {
        let (app_limited, trace_len) = {
            let s = self.tap.lock();
            (s.last_app_limited, s.trace.len())
        };
        if app_limited && self.sender.blocked && !self.sender.finished {
            self.fc_limited += 1;
        }
        if trace_len > self.trace_from {
            let q = self.out.queue_bytes(now);
            let mut s = self.tap.lock();
            for p in &mut s.trace[self.trace_from..] {
                p.queue_bytes = q;
            }
            self.trace_from = s.trace.len();
        }
    }

    /// Application events, writes and transmissions, if anything happened.
    pub fn settle(&mut self, clock: Clock, now: u64) -> Result<(), Stop> {
        if !self.peer.dirty {
            return Ok(());
        }
        self.peer.dirty = false;
        let Some((_, conn)) = self.peer.conn.as_mut() else {
            return Ok(());
        };
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    if self.origin.is_none() {
                        self.origin = Some(now);
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
        self.flush(clock, now);
        Ok(())
    }

    /// Writes as much as quinn takes.
    fn pump_writes(&mut self) -> Result<(), Stop> {
        let s = &mut self.sender;
        let (Some(id), Some((_, conn))) = (s.stream, self.peer.conn.as_mut()) else {
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
        if let (Some(id), Some((_, conn))) = (s.stream, self.peer.conn.as_mut()) {
            let _ = conn.send_stream(id).finish();
        }
    }

    /// Polls the connection for datagrams until it has none and offers each to the forward
    /// link (see the engine's module comment for the two ways a batch goes out).
    fn flush(&mut self, clock: Clock, now: u64) {
        let at = clock.at(now);
        let peer = &mut self.peer;
        let Some((_, conn)) = peer.conn.as_mut() else {
            return;
        };
        // Bounded: quinn's window and pacer stop it long before this.
        for _ in 0..10_000_000u32 {
            let Some(t) = conn.poll_transmit(at, self.batch, &mut peer.tx_buf) else {
                break;
            };
            let size = t.size.min(peer.tx_buf.len());
            let seg = match t.segment_size {
                Some(seg) if seg > 0 => seg,
                _ => size.max(1),
            };
            if self.gso > 1 && size.div_ceil(seg) >= self.gso {
                // A full batch: its buffer becomes the datagrams, no copy (see pool.rs).
                let batch = std::mem::replace(&mut peer.tx_buf, self.pool.take_batch());
                #[cfg(test)]
                BATCHES.with(|b| b.set((b.get().0 + 1, self.pool.batches_reused)));
                let mut rest = crate::pool::vec_into_bytes_mut(batch);
                rest.truncate(size);
                while !rest.is_empty() {
                    let d = rest.split_to(seg.min(rest.len()));
                    // A dropped datagram still shares the batch buffer: just let it go.
                    drop(self.out.send(now, d));
                }
                continue;
            }
            // One copy per datagram into a recycled buffer: cheaper than handing over
            // quinn's 10-segment buffer, which would keep its whole capacity alive for one
            // or two datagrams.
            for d in peer.tx_buf[..size].chunks(seg) {
                if let Some(dropped) = self.out.send(now, self.pool.copy_of(d)) {
                    self.pool.recycle(dropped);
                }
            }
            peer.tx_buf.clear();
        }
        peer.finish_flush(clock, now);
    }
}

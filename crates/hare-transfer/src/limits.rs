//! Which limit held the QUIC sender back in an interval: the congestion window, or the
//! peer's flow-control credit.
//!
//! quinn sends DATA_BLOCKED / STREAM_DATA_BLOCKED (RFC 9000 §19.12, §19.13) when the
//! application's write finds the credit used up, but hare writes into quinn's send buffer as
//! far as the credit goes: in a run that cwnd holds back the buffer still fills up to the
//! credit, and those frames go out although what cwnd let onto the wire never reached the
//! window. Flow control binds only when quinn had room in cwnd and nothing it could send:
//! quinn's `app_limited` at the end of an ACK frame (set when a transmit found nothing to send
//! while not congestion- or pacing-blocked). cwnd binds when a packet sent filled the window
//! (bytes in flight within one datagram of it, quinn's own send test).
//!
//! [`Watched`] wraps any controller (hare's or quinn's built-ins) and counts both, so the
//! sampler can tell them apart; everything else goes to the wrapped controller unchanged.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// What a connection's sends and ACK frames showed so far (cumulative).
#[derive(Debug, Default)]
pub struct LimitCounts {
    /// ACK frames processed.
    acks: AtomicU64,
    /// ACK frames after which quinn was application-limited: room in cwnd, nothing to send.
    app_limited_acks: AtomicU64,
    /// Packets sent that brought bytes in flight to within one datagram of cwnd.
    cwnd_full_sends: AtomicU64,
}

/// A copy of [`LimitCounts`] at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitSnapshot {
    /// ACK frames processed.
    pub acks: u64,
    /// ACK frames after which quinn was application-limited.
    pub app_limited_acks: u64,
    /// Sends that filled cwnd.
    pub cwnd_full_sends: u64,
}

impl LimitCounts {
    /// The counts now.
    pub fn snapshot(&self) -> LimitSnapshot {
        LimitSnapshot {
            acks: self.acks.load(Ordering::Relaxed),
            app_limited_acks: self.app_limited_acks.load(Ordering::Relaxed),
            cwnd_full_sends: self.cwnd_full_sends.load(Ordering::Relaxed),
        }
    }
}

/// Which limit bound between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Binding {
    /// cwnd: a send filled it.
    pub cwnd: bool,
    /// The peer's flow-control credit: the writer was blocked on it (DATA_BLOCKED or
    /// STREAM_DATA_BLOCKED went out) and most ACK frames found quinn with room in cwnd and
    /// nothing to send (a few such frames happen anyway: before the first write, at the
    /// end of a job).
    pub flow_control: bool,
}

impl Binding {
    /// The limits of the span from `before` to `now`, in which `blocked_frames` DATA_BLOCKED
    /// and STREAM_DATA_BLOCKED frames were sent.
    pub fn between(before: LimitSnapshot, now: LimitSnapshot, blocked_frames: u64) -> Self {
        Self {
            cwnd: now.cwnd_full_sends > before.cwnd_full_sends,
            flow_control: blocked_frames > 0
                && 2 * (now.app_limited_acks - before.app_limited_acks.min(now.app_limited_acks))
                    > now.acks - before.acks.min(now.acks),
        }
    }
}

/// A controller that counts for [`Binding`] and otherwise is `inner`.
pub struct Watched {
    inner: Box<dyn Controller>,
    counts: Arc<LimitCounts>,
    in_flight: u64,
    mtu: u64,
}

impl Watched {
    /// The counts this controller (and every copy quinn makes of it) adds to.
    pub fn counts(&self) -> &Arc<LimitCounts> {
        &self.counts
    }

    /// A packet went out: cwnd is full when less than a datagram of it is left.
    fn sent(&mut self, bytes: u64) {
        self.in_flight = self.in_flight.saturating_add(bytes);
        if self.in_flight.saturating_add(self.mtu) >= self.inner.window() {
            self.counts.cwnd_full_sends.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Controller for Watched {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        self.sent(bytes);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        // quinn's figure is authoritative (it also drops bytes of packets declared lost).
        self.in_flight = in_flight;
        self.counts.acks.fetch_add(1, Ordering::Relaxed);
        if app_limited {
            self.counts.app_limited_acks.fetch_add(1, Ordering::Relaxed);
        }
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = u64::from(new_mtu);
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Self {
            inner: self.inner.clone_box(),
            counts: self.counts.clone(),
            in_flight: self.in_flight,
            mtu: self.mtu,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds [`Watched`] controllers around those of `inner`.
pub struct WatchedFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
}

impl WatchedFactory {
    /// Wrap `inner`'s controllers.
    pub fn new(inner: Arc<dyn ControllerFactory + Send + Sync>) -> Self {
        Self { inner }
    }
}

impl ControllerFactory for WatchedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Watched {
            inner: self.inner.clone().build(now, current_mtu),
            counts: Arc::new(LimitCounts::default()),
            in_flight: 0,
            mtu: u64::from(current_mtu),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed window of 10 datagrams of 1200 bytes.
    #[derive(Clone)]
    struct Fixed;

    impl Controller for Fixed {
        fn on_congestion_event(&mut self, _: Instant, _: Instant, _: bool, _: u64) {}
        fn on_mtu_update(&mut self, _: u16) {}
        fn window(&self) -> u64 {
            12_000
        }
        fn clone_box(&self) -> Box<dyn Controller> {
            Box::new(self.clone())
        }
        fn initial_window(&self) -> u64 {
            12_000
        }
        fn into_any(self: Box<Self>) -> Box<dyn Any> {
            self
        }
    }

    struct FixedFactory;

    impl ControllerFactory for FixedFactory {
        fn build(self: Arc<Self>, _: Instant, _: u16) -> Box<dyn Controller> {
            Box::new(Fixed)
        }
    }

    fn watched() -> Box<dyn Controller> {
        Arc::new(WatchedFactory::new(Arc::new(FixedFactory))).build(Instant::now(), 1200)
    }

    fn counts(c: Box<dyn Controller>) -> LimitSnapshot {
        match c.into_any().downcast::<Watched>() {
            Ok(w) => w.counts().snapshot(),
            Err(_) => panic!("not a Watched controller"),
        }
    }

    /// A lossy run cwnd holds back: every window is sent in full, a loss takes a packet's
    /// bytes out of flight, quinn is never application-limited. The writer still found the
    /// credit used up (hare fills quinn's buffer as far as the credit goes, so the blocked
    /// frames go out): cwnd binds, flow control does not.
    #[test]
    fn a_lossy_cwnd_limited_span_is_cwnd_not_flow_control() {
        let c = watched();
        let mut c = c.clone_box();
        let t = Instant::now();
        let before = counts(c.clone_box());
        for round in 0..3u64 {
            for pn in 0..10 {
                c.on_sent(t, 1200, round * 10 + pn);
            }
            c.on_congestion_event(t, t, false, 1200);
            c.on_end_acks(t, 0, false, Some(round * 10 + 9));
        }
        let now = counts(c.clone_box());
        // The 9th and 10th packet of each round leave less than a datagram of the window.
        assert_eq!(now.cwnd_full_sends - before.cwnd_full_sends, 6);
        assert_eq!(now.acks - before.acks, 3);
        assert_eq!(now.app_limited_acks, 0);
        let b = Binding::between(before, now, 7);
        assert_eq!(
            b,
            Binding {
                cwnd: true,
                flow_control: false
            }
        );
    }

    /// quinn had room in cwnd and nothing to send while the writer was blocked on credit:
    /// flow control binds; cwnd never filled.
    #[test]
    fn room_in_cwnd_and_nothing_to_send_while_blocked_is_flow_control() {
        let mut c = watched();
        let t = Instant::now();
        let before = counts(c.clone_box());
        for pn in 0..4 {
            c.on_sent(t, 1200, pn);
        }
        c.on_end_acks(t, 0, true, Some(3));
        let now = counts(c.clone_box());
        assert_eq!(
            Binding::between(before, now, 1),
            Binding {
                cwnd: false,
                flow_control: true
            }
        );
        // Application-limited without a blocked frame: the sender had nothing to send
        // (the end of a sized job), which is no flow-control limit.
        assert_eq!(Binding::between(before, now, 0), Binding::default());
    }
}

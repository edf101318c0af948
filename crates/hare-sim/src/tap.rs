//! A transparent congestion-controller wrapper that records what the sender's controller saw
//! and decided, for the per-ACK trace and the interval records.
//!
//! quinn-proto 0.11 exposes neither bytes in flight nor per-ACK-frame state to the
//! application, but it hands both to the controller: `on_end_acks(now, in_flight, app_limited,
//! largest_acked)` is called once per ACK frame after `on_ack` for each newly acknowledged
//! packet (docs/PLATFORM.md, "quinn-proto 0.11.19 behaviour"). The wrapper forwards every call
//! unchanged to the real controller (so it changes no decision) and writes a few numbers into a
//! shared [`TapState`] that the simulator reads between events. A `Mutex` is needed only
//! because quinn requires controllers to be `Send + Sync`; the sender's controller and
//! everything that reads the tap run on one thread (the caller's, also with the two-thread
//! engine, which runs the receiver on the other), so it is never contended.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;
use std::time::Instant;

/// quinn's built-ins report an infinite ssthresh as `u64::MAX`; anything this large is
/// treated as infinite.
const INFINITE_SSTHRESH: u64 = u64::MAX / 2;

/// Normalises quinn's "infinite" ssthresh to `None`.
pub(crate) fn finite_ssthresh(s: Option<u64>) -> Option<u64> {
    s.filter(|&v| v < INFINITE_SSTHRESH)
}

/// One ACK frame as the controller saw it (times still as `Instant`s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawTrace {
    pub at: Instant,
    pub cwnd: u64,
    pub ssthresh: Option<u64>,
    pub in_flight: u64,
    pub acked: u32,
    pub rtt_us: Option<u64>,
    pub queue_bytes: u64,
}

/// The first congestion event seen (used to infer slow-start exit for quinn's built-ins).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FirstCongestion {
    pub at: Instant,
    /// cwnd in bytes just before the controller reacted.
    pub cwnd_before: u64,
    pub persistent: bool,
}

/// What the wrapper recorded.
#[derive(Debug, Default)]
pub(crate) struct TapState {
    /// When quinn built the (first) controller: hare-cc event times count from here.
    pub built_at: Option<Instant>,
    /// Segment size quinn gave the controller at build (its `current_mtu`).
    pub mss: u64,
    /// Bytes in flight: exact after each ACK frame, then plus bytes sent and minus bytes lost.
    pub in_flight: u64,
    /// Largest window seen after an ACK frame or congestion event, in bytes.
    pub max_cwnd: u64,
    /// `app_limited` of the latest ACK frame.
    pub last_app_limited: bool,
    /// ACK frames processed.
    pub frames: u64,
    /// Congestion events (loss batches) the controller was told about.
    pub congestion_events: u64,
    /// The first of them.
    pub first_congestion: Option<FirstCongestion>,
    /// Record trace points?
    pub trace_on: bool,
    /// Trace points not yet collected by the simulator.
    pub trace: Vec<RawTrace>,
}

/// Shared handle to a [`TapState`].
#[derive(Debug, Clone, Default)]
pub(crate) struct TapHandle(Arc<Mutex<TapState>>);

impl TapHandle {
    /// A handle with tracing on or off.
    pub fn new(trace_on: bool) -> Self {
        let h = TapHandle::default();
        h.lock().trace_on = trace_on;
        h
    }

    /// Lock the state (a poisoned lock still holds usable plain data).
    pub fn lock(&self) -> MutexGuard<'_, TapState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wraps a factory so that every controller it builds reports into one [`TapHandle`].
pub(crate) struct TapFactory {
    pub inner: Arc<dyn ControllerFactory + Send + Sync>,
    pub tap: TapHandle,
    /// The inner controllers send unpaced: their `window()` is a send gate, not the cwnd.
    pub unpaced: bool,
}

/// The congestion window a controller stands for, in bytes, as the report shows it. An
/// unpaced hare controller's `window()` is its send gate (open: above 4 GiB, closed: one
/// segment); its kernel window plus the one byte of hare's send-test slack is what the same
/// controller reports as `window()` when paced, so both modes report the same figure.
pub(crate) fn reported_window(c: &dyn Controller, unpaced: bool) -> u64 {
    if unpaced {
        c.metrics().congestion_window.saturating_add(1)
    } else {
        c.window()
    }
}

impl ControllerFactory for TapFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        {
            let mut s = self.tap.lock();
            if s.built_at.is_none() {
                s.built_at = Some(now);
                s.mss = u64::from(current_mtu);
            }
        }
        let inner = Arc::clone(&self.inner).build(now, current_mtu);
        Box::new(TapController {
            inner,
            tap: self.tap.clone(),
            unpaced: self.unpaced,
            frame_acked: 0,
            frame_last_sent: None,
        })
    }
}

/// The wrapper itself.
struct TapController {
    inner: Box<dyn Controller>,
    tap: TapHandle,
    /// See [`TapFactory::unpaced`].
    unpaced: bool,
    /// Newly acknowledged packets in the ACK frame being processed.
    frame_acked: u32,
    /// Send time of the last (largest) newly acknowledged packet of that frame.
    frame_last_sent: Option<Instant>,
}

impl Controller for TapController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        self.tap.lock().in_flight += bytes;
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        // quinn calls on_ack in ascending packet number order, so the last one is the largest.
        self.frame_acked += 1;
        self.frame_last_sent = Some(sent);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        let cwnd = reported_window(self.inner.as_ref(), self.unpaced);
        let acked = std::mem::take(&mut self.frame_acked);
        let rtt_us = self
            .frame_last_sent
            .take()
            .map(|sent| now.saturating_duration_since(sent).as_micros() as u64);
        let mut s = self.tap.lock();
        s.in_flight = in_flight;
        s.max_cwnd = s.max_cwnd.max(cwnd);
        s.last_app_limited = app_limited;
        s.frames += 1;
        if s.trace_on {
            let ssthresh = finite_ssthresh(self.inner.metrics().ssthresh);
            s.trace.push(RawTrace {
                at: now,
                cwnd,
                ssthresh,
                in_flight,
                acked,
                rtt_us,
                queue_bytes: 0,
            });
        }
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        let before = reported_window(self.inner.as_ref(), self.unpaced);
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        let after = reported_window(self.inner.as_ref(), self.unpaced);
        let mut s = self.tap.lock();
        s.in_flight = s.in_flight.saturating_sub(lost_bytes);
        s.max_cwnd = s.max_cwnd.max(after);
        s.congestion_events += 1;
        if s.first_congestion.is_none() {
            s.first_congestion = Some(FirstCongestion {
                at: now,
                cwnd_before: before,
                persistent: is_persistent_congestion,
            });
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(TapController {
            inner: self.inner.clone_box(),
            tap: self.tap.clone(),
            unpaced: self.unpaced,
            frame_acked: 0,
            frame_last_sent: None,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        // Downcasting goes through to the real controller (e.g. hare-cc's HareController).
        self.inner.into_any()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::congestion::NewRenoConfig;
    use std::time::Duration;

    // `RttEstimator` cannot be built outside quinn-proto, so `on_ack` is exercised by the
    // simulation tests (tests/trace.rs); here the other callbacks.
    #[test]
    fn forwards_and_records() {
        let tap = TapHandle::new(true);
        let factory = Arc::new(TapFactory {
            inner: Arc::new(NewRenoConfig::default()),
            tap: tap.clone(),
            unpaced: false,
        });
        let t0 = Instant::now();
        let mut c = factory.build(t0, 1200);
        let plain = Arc::new(NewRenoConfig::default()).build(t0, 1200);
        assert_eq!(c.window(), plain.window());
        assert_eq!(c.initial_window(), plain.initial_window());
        c.on_sent(t0, 2400, 1);
        assert_eq!(tap.lock().in_flight, 2400);
        let t1 = t0 + Duration::from_millis(100);
        c.on_end_acks(t1, 1200, true, Some(0));
        {
            let s = tap.lock();
            assert_eq!(s.in_flight, 1200);
            assert_eq!(s.frames, 1);
            assert!(s.last_app_limited);
            assert_eq!(s.trace.len(), 1);
            assert_eq!(s.trace[0].acked, 0);
            assert_eq!(s.trace[0].rtt_us, None);
            assert_eq!(s.trace[0].cwnd, plain.window());
            // NewReno starts with ssthresh u64::MAX: reported as infinite.
            assert_eq!(s.trace[0].ssthresh, None);
            assert_eq!(s.mss, 1200);
            assert_eq!(s.built_at, Some(t0));
        }
        // NewReno ignores losses of packets sent before its recovery start (its build time).
        c.on_congestion_event(t1, t0 + Duration::from_millis(1), false, 1200);
        let s = tap.lock();
        assert_eq!(s.congestion_events, 1);
        assert_eq!(s.in_flight, 0);
        let first = s.first_congestion.map(|f| (f.cwnd_before, f.persistent));
        assert_eq!(first, Some((plain.window(), false)));
        // NewReno halves the window on loss (loss_reduction_factor 0.5).
        assert_eq!(c.window(), plain.window() / 2);
    }

    #[test]
    fn infinite_ssthresh_is_none() {
        assert_eq!(finite_ssthresh(Some(u64::MAX)), None);
        assert_eq!(finite_ssthresh(Some(14_720)), Some(14_720));
        assert_eq!(finite_ssthresh(None), None);
    }
}

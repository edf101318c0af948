//! The two-thread engine: both endpoints advance through a window of virtual time at once.
//!
//! Conservative synchronisation with a fixed lookahead (the "YAWNS" window of parallel
//! discrete-event simulation): a datagram offered at `t` arrives no earlier than `t` plus
//! the link's propagation delay (hare-link adds serialisation, queueing and jitter, never
//! subtracts), so nothing either side does in `[start, start + d)` can reach the other side
//! before `start + d`, where `d` is the smaller one-way delay of the two directions. Within
//! such a window each side handles its own events in time order on its own thread (the
//! receiver on a scoped thread, the sender on the caller's), and at its end
//! [`Engine::hand_over`] moves the datagrams each side offered into the other's arrivals.
//! Every side sees the same inputs at the same virtual times as in the one-thread loop, and
//! its events at one instant in the same order, so the run is the same whatever the
//! threads' scheduling.
//!
//! What the report samples at a boundary inside a window is taken by each side when its own
//! clock reaches the boundary (the sender's counters, the receiver's byte count) and put
//! together afterwards. Three things need the exact instant across both sides, and the
//! runner keeps them out of windows: the end of the transfer (windows stop once the sender
//! has finished its stream, whose last byte then needs at least one more delay to arrive),
//! the stall and virtual-time limits (a window ends before either deadline), and a lost
//! connection or a livelock (the run is redone on one thread).

use crate::client::ClientSide;
use crate::config::SimConfig;
use crate::engine::{Engine, MAX_EVENTS_PER_INSTANT};
use crate::probe::Probe;
use crate::report::Sample;
use crate::server::ServerSide;
use crate::virtual_clock::Clock;

/// Smallest one-way delay for which two threads are used: below it a window holds too
/// little work to pay for starting a thread.
const MIN_LOOKAHEAD_NS: u64 = 50_000;

/// Fewest full-size datagrams the bottleneck can carry in one window for two threads to be
/// used (a window with less work is dominated by starting and joining the thread).
const MIN_DATAGRAMS_PER_WINDOW: u64 = 32;

/// Buffers the receiver frees during a window reach the sender's pool only at its end, so a
/// window holds up to its length at the bottleneck rate in extra memory: windows are cut to
/// keep that under this many bytes (16 MiB: 13 ms at 10 Gbit/s), but not below 1 ms.
const WINDOW_BUFFER_BYTES: u64 = 16 << 20;

/// Shortest window the memory bound may cut to.
const MIN_WINDOW_NS: u64 = 1_000_000;

/// How many threads the simulator may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// The one-thread engine: both endpoints in one event loop.
    One,
    /// Both endpoints on their own thread between exchanges of datagrams, where the path's
    /// delay gives each enough work (one thread otherwise); the same run as [`Threads::One`].
    #[default]
    Auto,
}

/// The window length for `cfg`, or `None` when the run stays on one thread.
pub(crate) fn window_ns(cfg: &SimConfig, threads: Threads) -> Option<u64> {
    // qlog files are written as events happen; a redone run would write them twice.
    if threads == Threads::One || cfg.qlog_dir.is_some() {
        return None;
    }
    let lookahead = cfg.forward.delay.0.min(cfg.reverse.delay.0);
    if lookahead < MIN_LOOKAHEAD_NS {
        return None;
    }
    let rate = cfg.forward.rate.0.max(1);
    let by_memory =
        u64::try_from(u128::from(WINDOW_BUFFER_BYTES) * 8_000_000_000 / u128::from(rate))
            .unwrap_or(u64::MAX);
    let window = lookahead.min(by_memory.max(MIN_WINDOW_NS));
    let bytes = u128::from(rate) * u128::from(window) / 8_000_000_000;
    (bytes >= u128::from(MIN_DATAGRAMS_PER_WINDOW) * u128::from(cfg.mtu)).then_some(window)
}

/// What the two sides recorded at the report boundaries of a window.
pub(crate) struct WindowSamples {
    /// The sender's samples (receiver bytes still 0), one per boundary.
    pub sender: Vec<Sample>,
    /// The receiver's byte count at each boundary.
    pub bytes: Vec<u64>,
}

/// One side as the window loop drives it.
trait Side {
    /// The side's earliest pending event.
    fn next(&self) -> Option<u64>;
    /// Arrivals, timers and deadlines due at `now`, then the application and transmissions.
    fn step(&mut self, clock: Clock, now: u64) -> Result<(), String>;
}

impl Side for ClientSide {
    fn next(&self) -> Option<u64> {
        self.next_event()
    }

    fn step(&mut self, clock: Clock, now: u64) -> Result<(), String> {
        let at = clock.at(now);
        self.receive_due(now, at);
        self.expire_due(now, at);
        self.settle(clock, now)
            .map_err(|_| "the sender's connection was lost".to_string())
    }
}

impl Side for ServerSide {
    fn next(&self) -> Option<u64> {
        self.next_event()
    }

    fn step(&mut self, clock: Clock, now: u64) -> Result<(), String> {
        let at = clock.at(now);
        self.receive_due(now, at);
        self.expire_due(now, at);
        self.settle(clock, now)
            .map_err(|_| "the receiver's connection was lost".to_string())
    }
}

/// Runs `side` through every event before `end`, calling `sample` at each of `ticks` (in
/// order, all before `end`) before the events at that instant, as the one-thread loop does.
/// Returns the time of its last event and the samples; an error means the window must be
/// redone on one thread.
fn run_until<S: Side, T>(
    side: &mut S,
    clock: Clock,
    mut now: u64,
    end: u64,
    ticks: &[u64],
    mut sample: impl FnMut(&S, u64) -> T,
) -> Result<(u64, Vec<T>), String> {
    let mut samples = Vec::with_capacity(ticks.len());
    let mut ticks = ticks.iter().copied().peekable();
    let mut same_instant = 0u32;
    loop {
        let event = side.next().filter(|&t| t < end);
        match (ticks.peek().copied(), event) {
            (Some(tick), e) if e.is_none_or(|e| tick <= e) => {
                samples.push(sample(side, tick));
                ticks.next();
            }
            (_, Some(t)) => {
                if t > now {
                    now = t;
                    same_instant = 0;
                } else {
                    same_instant += 1;
                    if same_instant > MAX_EVENTS_PER_INSTANT {
                        return Err("livelock".into());
                    }
                }
                side.step(clock, now)?;
            }
            (_, None) => return Ok((now, samples)),
        }
    }
}

impl Engine {
    /// Runs both sides through every event before `end` on two threads, sampling at `ticks`
    /// (sorted, all before `end`). The caller guarantees `end` is at most one lookahead
    /// after the earliest pending event. An error means the run must be redone on one
    /// thread; the engine is then in no state to continue.
    pub fn run_window(
        &mut self,
        end: u64,
        ticks: &[u64],
        probe: &Probe,
    ) -> Result<WindowSamples, String> {
        self.hand_over();
        let clock = self.clock;
        let now = self.now;
        let (client, server) = (&mut self.client, &mut self.server);
        let (sender, receiver) = std::thread::scope(|scope| {
            let receiver = scope
                .spawn(move || run_until(server, clock, now, end, ticks, |s, _| s.bytes_read()));
            let sender = run_until(client, clock, now, end, ticks, |c, tick| {
                c.conn().map_or_else(Sample::default, |conn| {
                    probe.sender(conn, c.fc_limited, tick)
                })
            });
            (sender, receiver.join())
        });
        let receiver = match receiver {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let (client_now, sender) = sender?;
        let (server_now, bytes) = receiver?;
        self.now = [client_now, server_now, ticks.last().copied().unwrap_or(0)]
            .into_iter()
            .fold(self.now, u64::max);
        self.hand_over();
        Ok(WindowSamples { sender, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hare_link::{BitRate, PathConfig, TimeSpan};

    fn cfg(rate: u64, rtt_ns: u64) -> SimConfig {
        let path = PathConfig::symmetric(BitRate(rate), TimeSpan(rtt_ns), None);
        SimConfig::new("w", path.forward, path.reverse, "cubic")
    }

    #[test]
    fn windows_follow_the_delay_the_rate_and_the_memory_bound() {
        // 1 Gbit/s x 80 ms: the 40 ms one-way delay.
        assert_eq!(
            window_ns(&cfg(1_000_000_000, 80_000_000), Threads::Auto),
            Some(40_000_000)
        );
        // 10 Gbit/s: 16 MiB of buffers = 13.4 ms.
        assert_eq!(
            window_ns(&cfg(10_000_000_000, 80_000_000), Threads::Auto),
            Some(13_421_772)
        );
        assert_eq!(
            window_ns(&cfg(10_000_000_000, 80_000_000), Threads::One),
            None
        );
        // 40 us one way: too short.
        assert_eq!(window_ns(&cfg(10_000_000_000, 80_000), Threads::Auto), None);
        // 10 Mbit/s x 1 ms: 625 bytes per window, less than a datagram.
        assert_eq!(window_ns(&cfg(10_000_000, 1_000_000), Threads::Auto), None);
    }
}

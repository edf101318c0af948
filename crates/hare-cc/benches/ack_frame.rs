//! Cost of one ACK frame in steady-state congestion avoidance: `on_ack` for each of its
//! packets, `on_end_acks`, then the `on_sent` call that refills the window (one per transmit
//! batch, as quinn interleaves them), for hare CUBIC (linux-6, linux-2.6.20, and linux-6
//! with an observer) against quinn's built-in `Cubic`, all in the same run. The path drops one packet whenever
//! the window exceeds 1500 packets, so every variant runs the same congestion-avoidance
//! sawtooth (with its rare congestion events inside the timed frames). Prints the ratio
//! hare/quinn at the end, twice: from the iterations criterion timed (total time / total
//! frames per variant), and from an interleaved run (variants measured in turn; the median
//! over the rounds of each round's ratio, `HARE_BENCH_ROUNDS` rounds, default 100), the robust
//! figure on a shared machine whose clock and load change between rounds.
//!
//! Run: `cargo bench -p hare-cc --bench ack_frame -- --measurement-time 3 --warm-up-time 1`
//! (`HARE_BENCH_ONLY=quinn-cubic,hare-cubic-linux-6` limits the interleaved run to those
//! variants, e.g. to count instructions per frame under `valgrind --tool=callgrind`;
//! `HARE_BENCH_PER_FRAME=N` acknowledges N packets per frame instead of 2, at the same rate:
//! quinn's controller works per packet and hare's per frame, so the ratio depends on it).
//! The `harness-only` variant's controller does nothing (a fixed window): its time is the
//! bench's own share of every frame (the flight queue, the `Instant`s, the calls), which the
//! last lines subtract to give each controller's own cost against quinn's.

#[path = "../tests/quinn_support/pair.rs"]
#[allow(dead_code)]
mod pair;

use std::collections::{BTreeMap, VecDeque};
use std::hint::black_box;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use hare_cc::{CcSpec, Observer};
use quinn_proto::congestion::{Controller, ControllerFactory, CubicConfig};
use quinn_proto::RttEstimator;

const MTU: u16 = 1200;
/// Packets acknowledged per ACK frame by default: a receiver acknowledging every second
/// ack-eliciting packet (RFC 9000 section 13.2.2).
const PER_FRAME: u64 = 2;
/// Virtual time per acknowledged packet: 1200 B at 192 Mbit/s.
const PACKET_GAP: Duration = Duration::from_micros(50);

/// Packets acknowledged per ACK frame: `HARE_BENCH_PER_FRAME` (1 to 64), else [`PER_FRAME`].
fn per_frame() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("HARE_BENCH_PER_FRAME")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| (1..=64).contains(n))
            .unwrap_or(PER_FRAME)
    })
}
/// Base RTT of the synthetic path.
const RTT: Duration = Duration::from_millis(80);
/// The path's capacity in packets: a window above it loses one packet (one congestion event),
/// so both controllers run a congestion-avoidance sawtooth below it for the whole run.
const CAPACITY: u64 = 1500;

/// A controller in steady state: a window's worth of packets in flight, one ACK frame at a
/// time acknowledging the oldest ones, the window refilled after each frame.
struct Steady {
    ctrl: Box<dyn Controller>,
    rtt: RttEstimator,
    base: Instant,
    now: Duration,
    next_pn: u64,
    flight: VecDeque<(u64, Duration)>,
    /// [`per_frame`], read once.
    per_frame: u64,
    /// Virtual time between two frames: `per_frame` packets' worth.
    frame_gap: Duration,
}

impl Steady {
    fn new(factory: Arc<dyn ControllerFactory + Send + Sync>, rtt: RttEstimator) -> Self {
        let base = Instant::now();
        let mut s = Self {
            ctrl: factory.build(base, MTU),
            rtt,
            base,
            now: Duration::ZERO,
            next_pn: 0,
            flight: VecDeque::new(),
            per_frame: per_frame(),
            frame_gap: PACKET_GAP * per_frame() as u32,
        };
        s.refill();
        // Slow start to ~1000 packets, then one loss: both controllers in congestion
        // avoidance, then a few thousand frames to settle.
        for _ in 0..200_000 {
            if s.ctrl.window() >= 1000 * u64::from(MTU) {
                break;
            }
            s.frame();
        }
        let now = s.base + s.now;
        let sent = s.base + s.flight.front().map_or(Duration::ZERO, |p| p.1);
        s.ctrl.on_congestion_event(now, sent, false, u64::from(MTU));
        for _ in 0..20_000 {
            s.frame();
        }
        s
    }

    fn in_flight_bytes(&self) -> u64 {
        self.flight.len() as u64 * u64::from(MTU)
    }

    /// Send what the window admits as one transmit: quinn calls `on_sent` once per
    /// `poll_transmit` batch (up to a GSO batch), not per packet.
    fn refill(&mut self) {
        let window = self.ctrl.window();
        let mut n = 0_u64;
        // quinn's send test; at most the frame's packets + 2 (growth) per transmit.
        while n < self.per_frame + 2 && self.in_flight_bytes() + u64::from(MTU) < window {
            self.flight.push_back((self.next_pn, self.now));
            self.next_pn += 1;
            n += 1;
        }
        if n > 0 {
            let bytes = n * u64::from(MTU);
            self.ctrl
                .on_sent(self.base + self.now, bytes, self.next_pn - 1);
        }
    }

    /// One ACK frame and the sends it releases.
    fn frame(&mut self) {
        self.now += self.frame_gap;
        let now = self.base + self.now.max(RTT);
        let mut largest = None;
        for _ in 0..self.per_frame {
            let Some((pn, sent)) = self.flight.pop_front() else {
                break;
            };
            largest = Some(pn);
            self.ctrl
                .on_ack(now, self.base + sent, u64::from(MTU), false, &self.rtt);
        }
        self.ctrl
            .on_end_acks(now, self.in_flight_bytes(), false, largest);
        if self.ctrl.window() > CAPACITY * u64::from(MTU) {
            // The bottleneck overflowed: the oldest packet in flight is declared lost.
            if let Some((_, sent)) = self.flight.pop_front() {
                self.ctrl
                    .on_congestion_event(now, self.base + sent, false, u64::from(MTU));
            }
        }
        self.refill();
    }
}

/// Total measured time and frames per variant.
fn totals() -> &'static Mutex<BTreeMap<&'static str, (Duration, u64)>> {
    static TOTALS: OnceLock<Mutex<BTreeMap<&'static str, (Duration, u64)>>> = OnceLock::new();
    TOTALS.get_or_init(|| Mutex::new(BTreeMap::new()))
}

fn variants() -> Vec<(&'static str, Arc<dyn ControllerFactory + Send + Sync>)> {
    let spec = |s: &str| -> CcSpec {
        match s.parse() {
            Ok(spec) => spec,
            Err(e) => panic!("{s}: {e}"),
        }
    };
    vec![
        ("harness-only", Arc::new(HarnessOnly)),
        ("quinn-cubic", Arc::new(CubicConfig::default())),
        ("hare-cubic-linux-6", spec("cubic@linux-6").factory()),
        (
            "hare-cubic-linux-2.6.20",
            spec("cubic@linux-2.6.20").factory(),
        ),
        (
            "hare-cubic-linux-6+observer",
            spec("cubic@linux-6").factory_with_observer(Observer::new()),
        ),
    ]
}

fn ack_frame(c: &mut Criterion) {
    let rtt = pair::rtt_estimator();
    let mut group = c.benchmark_group("ack_frame");
    for (name, factory) in variants() {
        let mut steady = Steady::new(factory, rtt);
        let start_window = steady.ctrl.window();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    steady.frame();
                }
                let elapsed = start.elapsed();
                black_box(steady.ctrl.window());
                if let Ok(mut t) = totals().lock() {
                    let e = t.entry(name).or_insert((Duration::ZERO, 0));
                    e.0 += elapsed;
                    e.1 += iters;
                }
                elapsed
            })
        });
        // Show that the measured state was congestion avoidance with a live window.
        let m = steady.ctrl.metrics();
        eprintln!(
            "{name}: window {start_window} -> {} bytes, ssthresh {:?}, {} packets in flight",
            steady.ctrl.window(),
            m.ssthresh,
            steady.flight.len()
        );
    }
    group.finish();
}

/// Interleaved measurement: rounds of `FRAMES` frames per variant in turn, so that a load
/// change on the (shared, 2-core) machine hits every variant alike. Per variant: the median
/// ns per frame over the rounds, and the median over the rounds of its ratio to quinn-cubic's
/// frame time in the same round (paired, so a clock or load change between rounds cancels).
fn interleaved(rounds: usize) -> Vec<(&'static str, f64, Option<f64>)> {
    const FRAMES: u32 = 20_000;
    let rtt = pair::rtt_estimator();
    // `HARE_BENCH_ONLY=a,b`: only these variants (e.g. under a profiler).
    let only = std::env::var("HARE_BENCH_ONLY").ok();
    let mut runs: Vec<(&'static str, Steady, Vec<f64>)> = variants()
        .into_iter()
        .filter(|(name, _)| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|x| x == *name))
        })
        .map(|(name, f)| (name, Steady::new(f, rtt), Vec::with_capacity(rounds)))
        .collect();
    for _ in 0..rounds {
        for (_, steady, samples) in runs.iter_mut() {
            let start = Instant::now();
            for _ in 0..FRAMES {
                steady.frame();
            }
            samples.push(start.elapsed().as_nanos() as f64 / f64::from(FRAMES));
            black_box(steady.ctrl.window());
        }
    }
    let quinn: Option<Vec<f64>> = runs
        .iter()
        .find(|(name, _, _)| *name == "quinn-cubic")
        .map(|(_, _, samples)| samples.clone());
    runs.into_iter()
        .map(|(name, _, samples)| {
            let ratio = quinn
                .as_ref()
                .map(|q| median(samples.iter().zip(q).map(|(h, q)| h / q).collect()));
            (name, median(samples), ratio)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn report() {
    let criterion: Vec<(&'static str, f64)> = match totals().lock() {
        Ok(t) => t
            .iter()
            .filter(|(_, (_, n))| *n > 0)
            .map(|(name, (d, n))| (*name, d.as_nanos() as f64 / *n as f64))
            .collect(),
        Err(_) => Vec::new(),
    };
    let rounds = std::env::var("HARE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let inter = interleaved(rounds);
    let quinn = criterion
        .iter()
        .find(|(n, _)| *n == "quinn-cubic")
        .map(|(_, ns)| *ns);
    println!(
        "\nack_frame: ns per ACK frame ({} packets + refill), ratio to quinn-cubic",
        per_frame()
    );
    println!(
        "  {:<28} {:>14} {:>7}   {:>22} {:>13}",
        "variant", "criterion mean", "ratio", "interleaved median", "paired ratio"
    );
    for (name, ns, ratio) in &inter {
        let c = criterion.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let c_ratio = c.zip(quinn).map(|(a, q)| a / q);
        println!(
            "  {name:<28} {:>11.1} ns {:>6.2}x   {:>19.1} ns {:>12.2}x",
            c.unwrap_or(f64::NAN),
            c_ratio.unwrap_or(f64::NAN),
            ns,
            ratio.unwrap_or(f64::NAN)
        );
    }
    println!(
        "  (interleaved: {rounds} rounds of 20,000 frames per variant, in turn; paired ratio: \
         median over the rounds of the variant's time / quinn-cubic's in the same round)"
    );
    print_controller_only(&inter);
}

/// Each controller's own time per frame (its interleaved median less `harness-only`'s)
/// against quinn-cubic's, when both were measured.
fn print_controller_only(inter: &[(&'static str, f64, Option<f64>)]) {
    let ns_of = |want: &str| inter.iter().find(|(n, _, _)| *n == want).map(|v| v.1);
    let (Some(harness), Some(quinn)) = (ns_of("harness-only"), ns_of("quinn-cubic")) else {
        return;
    };
    println!(
        "  controller's own time per frame (interleaved median less harness-only's {harness:.1} ns), \
         ratio to quinn-cubic's:"
    );
    for (name, ns, _) in inter {
        if *name != "harness-only" {
            let own = ns - harness;
            println!(
                "  {name:<28} {own:>11.1} ns {:>6.2}x",
                own / (quinn - harness)
            );
        }
    }
}

/// A controller that does nothing but hold a fixed window below the path's capacity: the
/// bench's own cost per frame.
#[derive(Debug, Clone)]
struct NothingController(u64);

impl Controller for NothingController {
    fn on_congestion_event(&mut self, _: Instant, _: Instant, _: bool, _: u64) {}
    fn on_mtu_update(&mut self, _: u16) {}
    fn window(&self) -> u64 {
        self.0
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn initial_window(&self) -> u64 {
        self.0
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Builds [`NothingController`]s with a window of 1100 packets.
#[derive(Debug)]
struct HarnessOnly;

impl ControllerFactory for HarnessOnly {
    fn build(self: Arc<Self>, _now: Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(NothingController(1100 * u64::from(mtu)))
    }
}

criterion_group!(benches, ack_frame);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}

//! The emulation loop: hare-link in wall time between two packet ports.
//!
//! One thread runs both directions. Each turn it
//! 1. releases every packet whose due time has passed (all of them, whatever their number),
//!    recording each one's lateness (release time minus due time);
//! 2. drains both inputs until `EAGAIN`, offering each packet to its direction's
//!    [`hare_link::Link`] at its arrival time and holding the delivered ones in a
//!    [`DelayLine`]; releases due packets between batches so a long drain does not delay them;
//! 3. sleeps in `ppoll` until the next due time or an input becomes readable, with a 1 ns
//!    timer slack (docs/PLATFORM.md: 50 us slack overshoots by about 54 us).
//!
//! Link time is `CLOCK_MONOTONIC` minus the run's origin, in nanoseconds; scheduled loss
//! episodes and blackouts count from it.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use hare_link::{Link, LinkStats, PathConfig};
use serde::{Deserialize, Serialize};

use crate::delay_line::DelayLine;
use crate::error::{EmuError, Result};
use crate::lateness::{LatenessHistogram, LatenessSummary};
use crate::wall_clock::{self, RunClock};

/// Direction of a packet through the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dir {
    /// Sender to receiver (the path's `forward` link, where the bottleneck is).
    Forward,
    /// Receiver to sender (ACKs; the path's `reverse` link).
    Reverse,
}

/// The two pairs of packet endpoints the loop moves packets between.
///
/// `recv(Forward)` reads what the sender side emitted, `send(Forward)` delivers it to the
/// receiver side; `Reverse` the other way. Both reads are non-blocking: they return
/// `ErrorKind::WouldBlock` when nothing is waiting.
pub trait Ports {
    /// The file descriptor to poll for readability of each direction's input:
    /// `[forward input, reverse input]`.
    fn poll_fds(&self) -> [RawFd; 2];
    /// Reads one packet of direction `dir` into `buf`; returns its length and, when the
    /// kernel stamped it, its arrival time (`CLOCK_MONOTONIC` ns).
    fn recv(&mut self, dir: Dir, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)>;
    /// Delivers one packet of direction `dir`.
    fn send(&mut self, dir: Dir, data: &[u8]) -> io::Result<()>;
    /// Bytes to add to a read's length to get the IP length the link counts: 0 for TUN
    /// (whole IP packets), 28 for UDP over IPv4, 48 over IPv6.
    fn ip_overhead(&self) -> u32;
}

/// How to run the loop.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Both directions of the path.
    pub path: PathConfig,
    /// Pin the emulator thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Timer slack of the emulator thread in ns (1 = as precise as the kernel allows).
    pub timer_slack_ns: u64,
    /// Cap on packet bytes held per direction (queue plus in flight); `None` = derived from
    /// the path (see [`default_hold_cap`]).
    pub max_held_bytes: Option<usize>,
    /// Scheduling of the emulator thread.
    pub sched: wall_clock::SchedPolicy,
    /// Hold a zero CPU wake-up latency request while running (see
    /// [`wall_clock::WakeLatencyGuard`]); default off.
    pub zero_wake_latency: bool,
}

impl EngineConfig {
    /// Defaults for a path: no pinning, 1 ns slack, derived cap.
    pub fn new(path: PathConfig) -> Self {
        EngineConfig {
            path,
            pin_cpu: None,
            timer_slack_ns: 1,
            max_held_bytes: None,
            sched: wall_clock::SchedPolicy::default_for_emulator(),
            // Off by default: on this VM polling idle vCPUs left the traffic generator short of
            // CPU (docs/EMULATOR.md); `HARE_EMU_WAKE_QOS=on` turns it on.
            zero_wake_latency: crate::netns::is_root()
                && std::env::var("HARE_EMU_WAKE_QOS").as_deref() == Ok("on"),
        }
    }
}

/// Bytes one direction may need to hold: twice what the link can have in flight
/// (`rate x (delay + jitter bound)`) plus its drop-tail limit (or 64 MiB when unlimited),
/// plus 4 MiB for bursts.
pub fn default_hold_cap(link: &hare_link::LinkConfig) -> usize {
    let jitter = link.jitter.map_or(0, |j| match j.distribution {
        hare_link::JitterDistribution::Uniform => j.amount.0,
        hare_link::JitterDistribution::Exponential => j.amount.0.saturating_mul(10),
    });
    let flight = (link.rate.0 as u128 * u128::from(link.delay.0.saturating_add(jitter))
        / 8
        / 1_000_000_000) as u64;
    let queue = match (link.queue_bytes, link.queue_packets) {
        (Some(b), _) => b.0,
        (None, Some(p)) => p.saturating_mul(65_536),
        (None, None) => 64 << 20,
    };
    let total = flight
        .saturating_mul(2)
        .saturating_add(queue)
        .saturating_add(4 << 20);
    usize::try_from(total.min(1 << 34)).unwrap_or(usize::MAX)
}

/// What one direction did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionReport {
    /// The path model's counters (offered, delivered, dropped by reason, peak queue).
    pub link: LinkStats,
    /// Lateness of the packets released.
    pub lateness: LatenessSummary,
    /// Packets handed to the far side.
    pub released_packets: u64,
    /// Their IP bytes.
    pub released_bytes: u64,
    /// Packets refused because the delay line was full (unintended drops).
    pub ring_overflows: u64,
    /// Packets the output refused (socket buffer full, no peer yet, ...: unintended drops).
    pub send_errors: u64,
    /// Read errors other than `WouldBlock` (each one a packet possibly lost).
    pub recv_errors: u64,
    /// Packets still held when the run stopped (neither delivered nor dropped).
    pub held_at_stop: u64,
    /// Most bytes held at once.
    pub peak_held_bytes: u64,
    /// Input lag: from the kernel's arrival stamp to the emulator's read (relay mode; TUN
    /// reads carry no stamp). The link is offered the packet at the stamp, so the lag does
    /// not delay it, but a lag approaching the path's queueing time means the emulator falls
    /// behind its input.
    pub input_lag: LatenessSummary,
}

/// What the loop did over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineReport {
    /// Sender to receiver.
    pub forward: DirectionReport,
    /// Receiver to sender.
    pub reverse: DirectionReport,
    /// Lateness over both directions.
    pub lateness: LatenessSummary,
    /// Wall time the loop ran, ns.
    pub wall_ns: u64,
    /// CPU time of the emulator thread, ns.
    pub cpu_ns: u64,
    /// Times the loop slept in `ppoll`.
    pub wakeups: u64,
    /// CPU the thread was pinned to.
    pub pinned_cpu: Option<usize>,
    /// Timer slack in effect, ns.
    pub timer_slack_ns: u64,
    /// The scheduling policy asked for.
    pub sched: Option<wall_clock::SchedPolicy>,
    /// The thread ran in `SCHED_FIFO` (at the end of the run).
    pub realtime: bool,
    /// Times the thread stepped down from FIFO to stay inside the real-time budget.
    #[serde(default)]
    pub rt_budget_demotions: u64,
    /// A zero wake-up latency request was held.
    #[serde(default)]
    pub zero_wake_latency: bool,
}

impl EngineReport {
    /// Emulator CPU use in percent of one core.
    pub fn cpu_pct(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            100.0 * self.cpu_ns as f64 / self.wall_ns as f64
        }
    }
}

struct Side {
    dir: Dir,
    link: Link,
    line: DelayLine,
    hist: LatenessHistogram,
    lag: LatenessHistogram,
    report: DirectionReport,
    input_empty: bool,
}

impl Side {
    fn new(dir: Dir, cfg: &hare_link::LinkConfig, cap: Option<usize>) -> Result<Side> {
        Ok(Side {
            dir,
            link: Link::new(cfg)?,
            line: DelayLine::new(cap.unwrap_or_else(|| default_hold_cap(cfg))),
            hist: LatenessHistogram::default(),
            lag: LatenessHistogram::default(),
            report: DirectionReport::default(),
            input_empty: false,
        })
    }

    /// Sends every due packet.
    fn release<P: Ports>(&mut self, ports: &mut P, clock: &RunClock) {
        let mut now = clock.now();
        // Bounded by the packets held: each turn removes one.
        while let Some(p) = self.line.pop_due(now) {
            self.hist.record(now - p.due);
            match ports.send(self.dir, &p.data) {
                Ok(()) => {
                    self.report.released_packets += 1;
                    self.report.released_bytes +=
                        p.data.len() as u64 + u64::from(ports.ip_overhead());
                }
                Err(_) => self.report.send_errors += 1,
            }
            self.line.recycle(p.data);
            now = clock.now();
        }
    }

    /// Reads up to `max` packets; marks the input empty on `WouldBlock`.
    fn drain<P: Ports>(&mut self, ports: &mut P, clock: &RunClock, buf: &mut [u8], max: usize) {
        for _ in 0..max {
            match ports.recv(self.dir, buf) {
                Ok((n, stamp)) => {
                    let read_at = clock.now();
                    // The kernel's arrival stamp, on the link clock, when there is one.
                    let now = match stamp {
                        Some(t) => {
                            let at = t.saturating_sub(clock.origin()).min(read_at);
                            self.lag.record(read_at - at);
                            at
                        }
                        None => read_at,
                    };
                    let ip_len = u32::try_from(n)
                        .unwrap_or(u32::MAX)
                        .saturating_add(ports.ip_overhead());
                    if let hare_link::Verdict::Delivered { at } = self.link.offer(now, ip_len) {
                        if !self.line.push(at, &buf[..n]) {
                            self.report.ring_overflows += 1;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.input_empty = true;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.report.recv_errors += 1,
            }
        }
    }

    fn finish(mut self) -> (DirectionReport, LatenessHistogram) {
        self.report.link = *self.link.stats();
        self.report.lateness = self.hist.summary();
        self.report.held_at_stop = self.line.len() as u64;
        self.report.peak_held_bytes = self.line.peak_bytes() as u64;
        self.report.input_lag = self.lag.summary();
        (self.report, self.hist)
    }
}

/// Keeps a `SCHED_FIFO` emulator inside the kernel's real-time budget.
///
/// Linux lets real-time threads run `sched_rt_runtime_us` (950 ms) of every
/// `sched_rt_period_us` (1 s) per CPU and then stops them for the rest of the period ("sched:
/// RT throttling activated"): a 50 ms stall, which validate-emulator saw as lateness of up to
/// 50 ms at 1.2 Gbit/s when the thread used about 80% of a core on average. So the thread
/// watches its CPU time over the trailing second (ten 100 ms buckets) and steps down to
/// nice -20 above 900 ms, back to FIFO below 700 ms.
struct RtBudget {
    policy: wall_clock::SchedPolicy,
    buckets: [u64; 10],
    at: usize,
    bucket_end: u64,
    cpu_mark: u64,
    demoted: bool,
    demotions: u64,
}

impl RtBudget {
    const BUCKET_NS: u64 = 100_000_000;

    fn new(policy: wall_clock::SchedPolicy, now: u64) -> Self {
        RtBudget {
            policy,
            buckets: [0; 10],
            at: 0,
            bucket_end: now + Self::BUCKET_NS,
            cpu_mark: wall_clock::thread_cpu_ns(),
            demoted: false,
            demotions: 0,
        }
    }

    fn check(&mut self, now: u64) {
        if !matches!(self.policy, wall_clock::SchedPolicy::Fifo(_)) || now < self.bucket_end {
            return;
        }
        let cpu = wall_clock::thread_cpu_ns();
        self.buckets[self.at] = cpu.saturating_sub(self.cpu_mark);
        self.cpu_mark = cpu;
        self.at = (self.at + 1) % self.buckets.len();
        self.bucket_end = now + Self::BUCKET_NS;
        let trailing: u64 = self.buckets.iter().sum();
        if !self.demoted && trailing > 900_000_000 {
            if wall_clock::SchedPolicy::Nice(-20).apply_from_fifo().is_ok() {
                self.demoted = true;
                self.demotions += 1;
            }
        } else if self.demoted && trailing < 700_000_000 && self.policy.apply().is_ok() {
            self.demoted = false;
        }
    }
}

/// Packets read per direction before the other direction and the due packets get a turn.
const DRAIN_BATCH: usize = 64;
/// Longest sleep, so a stop request is seen within this long.
const MAX_SLEEP_NS: u64 = 20_000_000;

/// Runs the loop on the calling thread until `stop` is set. Link time starts at `clock`'s
/// origin. Sets the thread's timer slack and pinning first.
pub fn run_engine<P: Ports>(
    ports: &mut P,
    cfg: &EngineConfig,
    clock: RunClock,
    stop: &AtomicBool,
) -> Result<EngineReport> {
    cfg.path.validate()?;
    wall_clock::set_timer_slack(cfg.timer_slack_ns.max(1))?;
    if let Some(cpu) = cfg.pin_cpu {
        wall_clock::pin_to_cpu(cpu)?;
    }
    // Best effort: without the privilege the run still goes on and its lateness shows it.
    let _ = cfg.sched.apply();
    let wake_guard = if cfg.zero_wake_latency {
        wall_clock::WakeLatencyGuard::acquire()
    } else {
        None
    };
    let mut fwd = Side::new(Dir::Forward, &cfg.path.forward, cfg.max_held_bytes)?;
    let mut rev = Side::new(Dir::Reverse, &cfg.path.reverse, cfg.max_held_bytes)?;
    let mut buf = vec![0u8; 65_536];
    let fds = ports.poll_fds();
    let cpu0 = wall_clock::thread_cpu_ns();
    let wall0 = clock.now();
    let mut wakeups = 0u64;
    let mut budget = RtBudget::new(cfg.sched, wall0);

    while !stop.load(Ordering::Relaxed) {
        budget.check(clock.now());
        fwd.release(ports, &clock);
        rev.release(ports, &clock);
        fwd.input_empty = false;
        rev.input_empty = false;
        // Drain until both inputs said EAGAIN; between batches release what fell due.
        // Bounded: each pass reads at most 2 * DRAIN_BATCH packets, and the loop ends when
        // both inputs are empty or a stop is requested.
        while !(stop.load(Ordering::Relaxed) || fwd.input_empty && rev.input_empty) {
            if !fwd.input_empty {
                fwd.drain(ports, &clock, &mut buf, DRAIN_BATCH);
            }
            if !rev.input_empty {
                rev.drain(ports, &clock, &mut buf, DRAIN_BATCH);
            }
            fwd.release(ports, &clock);
            rev.release(ports, &clock);
        }
        let next = match (fwd.line.next_due(), rev.line.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let now = clock.now();
        let wait = match next {
            Some(due) if due <= now => continue,
            Some(due) => (due - now).min(MAX_SLEEP_NS),
            None => MAX_SLEEP_NS,
        };
        wakeups += 1;
        poll_inputs(fds, wait)?;
    }

    let wall_ns = clock.now().saturating_sub(wall0);
    let cpu_ns = wall_clock::thread_cpu_ns().saturating_sub(cpu0);
    let (forward, hf) = fwd.finish();
    let (reverse, hr) = rev.finish();
    let mut all = hf;
    all.merge(&hr);
    Ok(EngineReport {
        forward,
        reverse,
        lateness: all.summary(),
        wall_ns,
        cpu_ns,
        wakeups,
        pinned_cpu: cfg.pin_cpu,
        timer_slack_ns: wall_clock::timer_slack(),
        sched: Some(cfg.sched),
        realtime: wall_clock::is_realtime(),
        rt_budget_demotions: budget.demotions,
        zero_wake_latency: wake_guard.is_some(),
    })
}

/// Waits up to `wait_ns` for either fd to become readable (`ppoll`, ns timeout).
fn poll_inputs(fds: [RawFd; 2], wait_ns: u64) -> Result<()> {
    let mut pfd = [
        libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: fds[1],
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = libc::timespec {
        tv_sec: (wait_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (wait_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: two valid pollfd entries, a valid timespec, no signal mask change.
    let rc = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(EmuError::io("ppoll", e));
        }
    }
    Ok(())
}

//! CPU use of this process over a span of wall time (nuttcp's `%TX` / `%RX`).

use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};

/// User + system CPU seconds of this process so far; `None` if the kernel will not say.
pub fn process_cpu_seconds() -> Option<f64> {
    let (user, system) = process_cpu_split()?;
    Some(user + system)
}

/// User + system CPU seconds of this process's children that have been waited for
/// (`RUSAGE_CHILDREN`): the difference around one child's wait is that child's own CPU time,
/// as long as no other child is reaped meanwhile.
pub fn reaped_children_cpu_seconds() -> Option<f64> {
    let (user, system) = usage_split(UsageWho::RUSAGE_CHILDREN)?;
    Some(user + system)
}

/// User and system CPU seconds of this process so far.
pub fn process_cpu_split() -> Option<(f64, f64)> {
    usage_split(UsageWho::RUSAGE_SELF)
}

/// User and system CPU seconds of `who`.
fn usage_split(who: UsageWho) -> Option<(f64, f64)> {
    let u = getrusage(who).ok()?;
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some((tv(u.user_time()), tv(u.system_time())))
}

/// A start point to measure CPU percent from.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    wall: Instant,
    cpu: Option<f64>,
    split: Option<(f64, f64)>,
}

impl CpuClock {
    /// Start measuring now.
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: process_cpu_seconds(),
            split: process_cpu_split(),
        }
    }

    /// CPU percent of one core since the start (100 = one core busy all the time).
    pub fn percent(&self) -> Option<f64> {
        let wall = self.wall.elapsed().as_secs_f64();
        let used = process_cpu_seconds()? - self.cpu?;
        (wall > 0.0).then(|| 100.0 * used / wall)
    }

    /// User and system CPU percent of one core since the start (iperf3's `host_user`,
    /// `host_system`).
    pub fn split_percent(&self) -> Option<(f64, f64)> {
        let wall = self.wall.elapsed().as_secs_f64();
        let (u1, s1) = process_cpu_split()?;
        let (u0, s0) = self.split?;
        (wall > 0.0).then(|| (100.0 * (u1 - u0) / wall, 100.0 * (s1 - s0) / wall))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_loop_counts_cpu() {
        // The wall clock starts before the CPU clock and is read after it: whatever the load
        // (this test shares the machine with other tests and builds), the percent cannot be
        // below the CPU this thread spun over that longer wall time.
        let wall = Instant::now();
        let c = CpuClock::start();
        let start = process_cpu_seconds().expect("getrusage works on Linux");
        // Spin until 30 ms of CPU were used (bounded by 10 s of wall time on a loaded host).
        let t = Instant::now();
        let mut x = 0u64;
        while process_cpu_seconds().unwrap_or(start) - start < 0.03 && t.elapsed().as_secs() < 10 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let spun = process_cpu_seconds().unwrap_or(start) - start;
        let p = c.percent().expect("percent");
        let floor = 100.0 * spun / wall.elapsed().as_secs_f64().max(1e-9);
        // At most one core per thread of the test binary.
        assert!(
            spun > 0.0 && p >= floor && p <= 100.0 * 64.0,
            "{p} (floor {floor})"
        );
    }
}

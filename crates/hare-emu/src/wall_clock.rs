//! Wall-time primitives of the emulator: the monotonic nanosecond clock, absolute sleeps,
//! timer slack, CPU pinning and per-thread CPU time.
//!
//! Why these: docs/PLATFORM.md ("Timer precision in user space") measured sleeps overshooting
//! by about 54 us (p50) with the default 50 us timer slack and about 5 us with
//! `prctl(PR_SET_TIMERSLACK, 1)`; a millisecond clock (mahimahi's) would add up to 1 ms of
//! error to every packet. So every time here is `CLOCK_MONOTONIC` in nanoseconds.

use crate::error::{last_os, Result};

/// Nanoseconds of `CLOCK_MONOTONIC` (since boot, excluding suspend).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time consumed by the calling thread, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer; the clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A monotonic clock with its origin at construction: link time for hare-link.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: u64,
}

impl RunClock {
    /// Starts the clock now.
    pub fn start() -> Self {
        RunClock {
            origin: monotonic_ns(),
        }
    }

    /// A clock whose origin is the given `CLOCK_MONOTONIC` reading.
    pub fn from_origin(origin: u64) -> Self {
        RunClock { origin }
    }

    /// The origin, as a `CLOCK_MONOTONIC` reading in ns.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Nanoseconds since the origin.
    pub fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin)
    }
}

/// Sets the calling thread's timer slack to `ns` (`prctl(PR_SET_TIMERSLACK)`); 1 ns makes
/// `ppoll`/`clock_nanosleep` wake as close to the deadline as the hrtimer allows.
pub fn set_timer_slack(ns: u64) -> Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(last_os("prctl(PR_SET_TIMERSLACK)"));
    }
    Ok(())
}

/// The calling thread's timer slack in ns (`prctl(PR_GET_TIMERSLACK)`).
pub fn timer_slack() -> u64 {
    // SAFETY: PR_GET_TIMERSLACK returns the value and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    rc.max(0) as u64
}

/// Pins the calling thread to one CPU (`sched_setaffinity`).
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it (cpu checked below).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(crate::error::EmuError::config(
                "pin",
                format!("cpu {cpu} is out of range"),
            ));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(last_os(format!("sched_setaffinity(cpu {cpu})")));
        }
    }
    Ok(())
}

/// Sleeps until `CLOCK_MONOTONIC` reads `deadline_ns` (absolute, so no drift accumulates).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // Bounded: EINTR is retried at most a few times, then we return early (callers re-check
    // the clock).
    for _ in 0..8 {
        // SAFETY: valid timespec; remaining-time pointer unused with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// `CLOCK_REALTIME` now, in ns (the clock of the kernel's receive timestamps).
pub(crate) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_sleeps_reach_the_deadline() {
        let c = RunClock::start();
        let a = c.now();
        let deadline = c.origin() + a + 2_000_000;
        sleep_until(deadline);
        let b = monotonic_ns();
        assert!(b >= deadline, "woke {} ns early", deadline - b);
        assert!(c.now() >= a + 2_000_000);
    }

    #[test]
    fn timer_slack_can_be_set_to_one_ns() {
        // Run on a scratch thread: the slack is per thread.
        let got = std::thread::spawn(|| set_timer_slack(1).map(|_| timer_slack()))
            .join()
            .map_err(|_| "thread panicked");
        assert_eq!(got.ok().and_then(|r| r.ok()), Some(1));
    }
}

/// Default real-time priority of the emulator thread when running as root.
pub const DEFAULT_RT_PRIORITY: i32 = 20;

/// How the emulator thread is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedPolicy {
    /// The default policy at nice 0.
    Normal,
    /// The default policy (CFS/EEVDF) at this nice value (-20 = the largest share).
    Nice(i32),
    /// `SCHED_FIFO` at this priority.
    Fifo(i32),
}

impl SchedPolicy {
    /// The default: as root `SCHED_FIFO` at [`DEFAULT_RT_PRIORITY`], else normal;
    /// `HARE_EMU_SCHED=fifo|nice|normal` overrides.
    pub fn default_for_emulator() -> SchedPolicy {
        match std::env::var("HARE_EMU_SCHED").as_deref() {
            Ok("normal") => SchedPolicy::Normal,
            Ok("nice") => SchedPolicy::Nice(-20),
            Ok("fifo") => SchedPolicy::Fifo(DEFAULT_RT_PRIORITY),
            _ if crate::netns::is_root() => SchedPolicy::Fifo(DEFAULT_RT_PRIORITY),
            _ => SchedPolicy::Normal,
        }
    }

    /// Applies a `Nice` policy to a thread that may be in `SCHED_FIFO` now: back to
    /// `SCHED_OTHER` first, then the nice value.
    pub fn apply_from_fifo(self) -> Result<()> {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: valid sched_param; 0 = the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
            return Err(last_os("sched_setscheduler(SCHED_OTHER)"));
        }
        self.apply()
    }

    /// Applies the policy to the calling thread.
    pub fn apply(self) -> Result<()> {
        match self {
            SchedPolicy::Normal => Ok(()),
            SchedPolicy::Fifo(p) => set_realtime(p),
            SchedPolicy::Nice(n) => {
                // SAFETY: setpriority on the calling thread (tid) touches no memory.
                let rc = unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, n)
                };
                if rc != 0 {
                    return Err(last_os(format!("setpriority({n})")));
                }
                Ok(())
            }
        }
    }
}

/// Puts the calling thread in `SCHED_FIFO` at `priority` (needs root or CAP_SYS_NICE).
///
/// Why: on a loaded 2-core machine an ordinary thread waits behind compilers for whole
/// scheduler slices (several ms), which shows up as per-packet lateness. A FIFO thread runs as
/// soon as its timer fires; it sleeps in `ppoll` between packets, and the kernel's RT
/// throttling (`sched_rt_runtime_us`, 95% by default) bounds it even if it were to spin.
pub fn set_realtime(priority: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: valid sched_param; 0 = the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(last_os(format!(
            "sched_setscheduler(SCHED_FIFO, {priority})"
        )));
    }
    Ok(())
}

/// The scheduling policy of the calling thread is `SCHED_FIFO`.
pub fn is_realtime() -> bool {
    // SAFETY: no memory touched.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

/// A PM QoS request for zero CPU wake-up latency (`/dev/cpu_dma_latency` = 0), held while the
/// value lives and released when it is dropped (the kernel drops the request when the file
/// closes).
///
/// Why: on this project's VMs (cpuidle driver `haltpoll`) an idle vCPU halts, and waking it
/// takes hundreds of us to ms; with the request the idle loop polls instead, as `cyclictest`
/// arranges by default. Only while an emulator runs; needs root.
#[derive(Debug)]
pub struct WakeLatencyGuard {
    _file: std::fs::File,
}

impl WakeLatencyGuard {
    /// Takes the request; `None` without the privilege or the device.
    pub fn acquire() -> Option<WakeLatencyGuard> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .ok()?;
        f.write_all(&0i32.to_ne_bytes()).ok()?;
        Some(WakeLatencyGuard { _file: f })
    }
}

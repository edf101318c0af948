//! Kernel clocks derived from "microseconds since the controller was built".
//!
//! - `jiffies`: a wrapping u32 tick counter at `HZ`, starting at boot from
//!   `INITIAL_JIFFIES = (u32)(-300 * HZ)` (include/linux/jiffies.h), so it wraps to 0 five
//!   minutes after boot. The machine's uptime when the controller is built is a profile key
//!   (`uptime_ms`), which places the connection on that counter: this reproduces the
//!   `epoch_start == 0` ambiguity and the "first 5 minutes of uptime" sample loss of the old
//!   `(s32)(jiffies - epoch_start) < HZ` blackout when asked.
//! - the 2.6.39 - 5.5 ms clock of `bictcp_clock()`: `jiffies_to_msecs(jiffies)` when
//!   HZ >= 1000, else `ktime_to_ms(ktime_get_real())` (17a6e9f1aa9b). hare uses the uptime as
//!   the real-time base: only differences and the u32 wrap matter to CUBIC.
//! - the 5.6+ us clock `tcp_mstamp` truncated to u32 (cff04e2da308).
//!
//! HZ must divide 1000 (checked by the profile), so the kernel's conversion helpers reduce to
//! the exact integer forms used here (`msecs_to_jiffies` / `usecs_to_jiffies` round up).

/// Microseconds per second.
pub const USEC_PER_SEC: u64 = 1_000_000;

/// The three kernel clocks of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelClock {
    hz: u32,
    /// Machine uptime in microseconds when the controller was built.
    uptime_us: u64,
    /// Ticks added to `jiffies` (0 but for [`KernelClock::aligned`]): the kernel's jiffies
    /// and its microsecond clock do not tick in phase.
    jiffies_offset: u32,
}

impl KernelClock {
    /// A clock at `hz` for a machine that has been up `uptime_ms` when the controller is built.
    pub fn new(hz: u32, uptime_ms: u64) -> Self {
        KernelClock {
            hz: hz.max(1),
            uptime_us: uptime_ms.saturating_mul(1000),
            jiffies_offset: 0,
        }
    }

    /// A clock matching a running kernel at one instant: the microsecond clock (5.6+
    /// `bictcp_clock_us()`, `tcp_mstamp`) reads `now_us` itself at controller time `now_us`
    /// (uptime 0), and `jiffies` reads `jiffies_now` there. The kernel's jiffies tick at
    /// their own phase against its microsecond clock (and a tick can fall between two reads
    /// of one ACK), so a tool replaying a captured kernel flow aligns the model's clock ACK
    /// by ACK with this. The ms clock of 2.6.39 - 5.5 follows the microsecond one.
    pub fn aligned(hz: u32, now_us: u64, jiffies_now: u32) -> Self {
        let mut clock = KernelClock::new(hz, 0);
        clock.jiffies_offset = jiffies_now.wrapping_sub(clock.jiffies(now_us));
        clock
    }

    /// `HZ`.
    #[inline]
    pub fn hz(&self) -> u32 {
        self.hz
    }

    /// `INITIAL_JIFFIES` for this HZ: `(u32)(-300 * HZ)`.
    #[inline]
    pub fn initial_jiffies(&self) -> u32 {
        0u32.wrapping_sub(300u32.wrapping_mul(self.hz))
    }

    /// Ticks since boot at `now_us` (controller time).
    #[inline]
    fn ticks(&self, now_us: u64) -> u64 {
        let since_boot = self.uptime_us.saturating_add(now_us);
        match since_boot.checked_mul(u64::from(self.hz)) {
            Some(p) => p / USEC_PER_SEC,
            // Only past ~584 years of uptime at HZ 1000; u128 cannot overflow.
            None => {
                ((u128::from(since_boot) * u128::from(self.hz)) / u128::from(USEC_PER_SEC)) as u64
            }
        }
    }

    /// `(u32)jiffies` (`tcp_time_stamp` / `tcp_jiffies32`) at `now_us`.
    #[inline]
    pub fn jiffies(&self, now_us: u64) -> u32 {
        self.initial_jiffies()
            .wrapping_add(self.ticks(now_us) as u32)
            .wrapping_add(self.jiffies_offset)
    }

    /// The 2.6.39 - 5.5 `bictcp_clock()` in ms at `now_us`.
    pub fn ms_clock(&self, now_us: u64) -> u32 {
        if self.hz >= 1000 {
            jiffies_to_msecs(self.hz, self.jiffies(now_us))
        } else {
            (self.uptime_us.saturating_add(now_us) / 1000) as u32
        }
    }

    /// The 5.6+ `bictcp_clock_us()` (`tcp_mstamp` as u32) at `now_us`.
    pub fn us_clock(&self, now_us: u64) -> u32 {
        self.uptime_us.saturating_add(now_us) as u32
    }

    /// `msecs_to_jiffies(m)` (rounds up).
    pub fn msecs_to_jiffies(&self, m: u32) -> u32 {
        msecs_to_jiffies(self.hz, m)
    }

    /// `usecs_to_jiffies(u)` (rounds up).
    pub fn usecs_to_jiffies(&self, u: u32) -> u32 {
        usecs_to_jiffies(self.hz, u)
    }
}

/// Run `f` with `hz` as a compile-time constant for the usual `CONFIG_HZ` values the profiles
/// take (100, 250, 1000; the `hz` key accepts divisors of 1000 only), as the kernel's own HZ
/// is a constant: the divisions by HZ then compile to multiplications, with the same results.
/// Any other accepted HZ takes the general path.
#[inline(always)]
pub fn with_hz<R>(hz: u32, f: impl Fn(u32) -> R) -> R {
    match hz {
        1000 => f(1000),
        250 => f(250),
        100 => f(100),
        other => f(other),
    }
}

/// `msecs_to_jiffies(m)` for an HZ that divides 1000: `(m + 1000/HZ - 1) / (1000/HZ)`.
pub fn msecs_to_jiffies(hz: u32, m: u32) -> u32 {
    with_hz(hz, |hz| {
        let per = 1000 / hz.clamp(1, 1000);
        u64::from(m).div_ceil(u64::from(per)) as u32
    })
}

/// `usecs_to_jiffies(u)` for an HZ that divides 10^6 (rounds up).
pub fn usecs_to_jiffies(hz: u32, u: u32) -> u32 {
    with_hz(hz, |hz| {
        let per = USEC_PER_SEC / u64::from(hz.max(1));
        u64::from(u).div_ceil(per) as u32
    })
}

/// `jiffies_to_msecs(j)` for an HZ that divides 1000 (u32 arithmetic, as the kernel's).
pub fn jiffies_to_msecs(hz: u32, j: u32) -> u32 {
    with_hz(hz, |hz| j.wrapping_mul(1000 / hz.clamp(1, 1000)))
}

/// `jiffies_to_usecs(j)` for an HZ that divides 10^6.
pub fn jiffies_to_usecs(hz: u32, j: u32) -> u64 {
    with_hz(hz, |hz| {
        u64::from(j) * (USEC_PER_SEC / u64::from(hz.max(1)))
    })
}

/// The kernel's `after(a, b)` on 32-bit sequence numbers: `(s32)(b - a) < 0`.
pub fn after32(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

//! Ctrl-C / SIGTERM / SIGHUP turn into a flag that every long-running call polls, so the
//! process unwinds normally and its guards (namespaces, TUN devices, tcp_cubic parameters)
//! tear down and restore what they changed.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{last_os, Result};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (idempotent).
pub fn install() -> Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask is well formed;
        // the handler only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(last_os("sigaction"));
            }
        }
    }
    Ok(())
}

/// True once a signal arrived (or [`request_stop`] was called).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sets the flag as a signal would (tests, and callers that want everything to stop).
pub fn request_stop() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Sleeps until `deadline_ns` (`CLOCK_MONOTONIC`) or an interrupt, in steps of at most
/// 50 ms. Returns false when interrupted.
pub fn sleep_until_or_interrupted(deadline_ns: u64) -> bool {
    loop {
        if interrupted() {
            return false;
        }
        let now = crate::wall_clock::monotonic_ns();
        if now >= deadline_ns {
            return true;
        }
        crate::wall_clock::sleep_until(deadline_ns.min(now + 50_000_000));
    }
}

//! Shared by the namespace transfer tests: finding (or building) hare-send and hare-recv,
//! and runs retried while the host stalls the VM.

use std::path::PathBuf;

use hare_emu::netns;
use hare_emu::scenario::transfer::{
    find_or_build_bins, run_transfer, TransferOutcome, TransferSpec,
};
use hare_emu::NamespaceConfig;

/// The directory of hare-send and hare-recv, or `None` (the test is skipped, saying why)
/// when namespace mode cannot run here and is not required. It is required, and the test
/// fails instead, when running as root (CI runs as root, so a broken setup there cannot pass
/// by doing nothing) or when `HARE_REQUIRE_NETNS` is set.
pub fn bins() -> Option<PathBuf> {
    if let Some(why) = netns::unavailable_reason() {
        let required = netns::is_root() || std::env::var_os("HARE_REQUIRE_NETNS").is_some();
        assert!(
            !required,
            "namespace mode is required here but cannot run: {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    Some(find_or_build_bins().expect("hare-send / hare-recv"))
}

/// Attempts at a run the emulator's self-check accepts.
pub const ATTEMPTS: u32 = 6;

/// Before a retry, the idle probe listens in windows of this long ...
const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);
/// ... until one has at most this many wake-ups over 1 ms late (the VM's usual rate is about
/// one a second; a burst gives hundreds) ...
const QUIET_LATE: u64 = 4;
/// ... or this many windows have passed (30 s).
const QUIET_WINDOWS: u32 = 15;

/// Runs a transfer until the emulator's self-check calls it valid, at most [`ATTEMPTS`] times,
/// each with a [`StallProbe`] beside it; after a rejected one it waits for the host to be
/// quiet ([`wait_for_quiet_host`]). A run rejected for lateness says nothing about the path
/// when the host stalled the VM: these 2-vCPU VMs stall even an idle SCHED_FIFO thread by over
/// 1 ms about once a second, in bursts that come and go over minutes (cyclictest,
/// docs/EMULATOR.md); eight rejections in a row were seen in CI, and a burst of hundreds of
/// late wake-ups in five seconds made four attempts in a row invalid.
pub fn valid_run(ns: &NamespaceConfig, spec: &TransferSpec) -> (TransferOutcome, Stalls) {
    let mut attempt = 1;
    loop {
        let probe = StallProbe::start();
        let o = run_transfer(ns, spec).unwrap();
        let stalls = probe.finish();
        if o.emulator.valid || attempt == ATTEMPTS {
            return (o, stalls);
        }
        println!(
            "attempt {attempt} of {}: emulator marked the run invalid ({:?}); {stalls}; retrying",
            spec.name, o.emulator.invalid_reasons
        );
        attempt += 1;
        println!("{}", wait_for_quiet_host());
    }
}

/// Listen with an idle [`StallProbe`] in [`QUIET_WINDOW`]s until one window sees at most
/// [`QUIET_LATE`] late wake-ups (a burst of host stalls has passed), for at most
/// [`QUIET_WINDOWS`] windows. Says what it waited for.
fn wait_for_quiet_host() -> String {
    let mut window = 0;
    loop {
        window += 1;
        let probe = StallProbe::start();
        std::thread::sleep(QUIET_WINDOW);
        let stalls = probe.finish();
        if stalls.late_over_1ms <= QUIET_LATE || window >= QUIET_WINDOWS {
            return format!(
                "waited {window} window(s) of {} s for a quiet host; the last: {stalls}",
                QUIET_WINDOW.as_secs()
            );
        }
    }
}

/// What a [`StallProbe`] saw.
pub struct Stalls {
    pub wakeups: u64,
    pub late_over_1ms: u64,
    pub max_late_ns: u64,
}

impl std::fmt::Display for Stalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "idle real-time probe: {} of {} 1 ms wake-ups over 1 ms late, max {:.3} ms",
            self.late_over_1ms,
            self.wakeups,
            self.max_late_ns as f64 / 1e6
        )
    }
}

/// A thread that only sleeps to the next whole millisecond, in SCHED_FIFO one *above* the
/// emulator (so the emulator's own work cannot delay it; it costs the emulator a few us a
/// millisecond), and records how late it wakes (what cyclictest measures): the machine's own
/// stalls, independent of the emulator. Bounded by `finish`.
struct StallProbe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<Stalls>,
}

impl StallProbe {
    fn start() -> StallProbe {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let _ = hare_emu::wall_clock::set_timer_slack(1);
            let _ =
                hare_emu::wall_clock::set_realtime(hare_emu::wall_clock::DEFAULT_RT_PRIORITY + 1);
            let mut st = Stalls {
                wakeups: 0,
                late_over_1ms: 0,
                max_late_ns: 0,
            };
            let mut due = hare_emu::wall_clock::monotonic_ns() + 1_000_000;
            while !flag.load(Ordering::Relaxed) {
                hare_emu::wall_clock::sleep_until(due);
                let late = hare_emu::wall_clock::monotonic_ns().saturating_sub(due);
                st.wakeups += 1;
                st.max_late_ns = st.max_late_ns.max(late);
                if late > 1_000_000 {
                    st.late_over_1ms += 1;
                }
                due += 1_000_000 * (1 + late / 1_000_000);
            }
            st
        });
        StallProbe { stop, handle }
    }

    fn finish(self) -> Stalls {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle.join().expect("stall probe thread")
    }
}

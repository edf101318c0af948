//! A digest of every decision the controllers make over seeded event scripts, to show that a
//! change meant to leave behaviour alone (a speed-up, a refactor) does: run it before and
//! after the change and compare the two files.
//!
//! ```text
//! HARE_DIGEST_OUT=/tmp/before.txt cargo test -p hare-cc --release --test decision_digest -- --ignored
//! # ... apply the change ...
//! HARE_DIGEST_OUT=/tmp/after.txt cargo test -p hare-cc --release --test decision_digest -- --ignored
//! diff /tmp/before.txt /tmp/after.txt && echo identical
//! ```
//!
//! Per spec (every profile and algorithm, paced and unpaced, plus named variants) it runs
//! `HARE_DIGEST_SEEDS` scripts (default 40) of `HARE_DIGEST_STEPS` events (default 3,000):
//! sends of one to eight segments (some short), ACK frames of one to three transmits, losses
//! in the same frame as an ACK (the same `now`) or found by a timer, ECN-CE marks, persistent
//! congestion, idle gaps and MTU changes, each script on its own RTT and loss rate. After
//! every event it hashes `window()`, `metrics()`, the pacing rate, the adapter's carry and
//! flight, the snapshot, the kernel socket and module state; at the end the observer's events.
//! It asserts only the script invariants (`ScriptDriver`: cwnd floor, window and snapshot
//! agreement, carry below a segment, no shrinking without a loss) on every step; the digests
//! are for comparing two builds. A tool, ignored in the test suite (about 25 s in release).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

mod script;

use hare_cc::{CcSpec, Observer, Profile};
use quinn_proto::congestion::Controller;
use script::{ScriptDriver, ScriptEvent};

/// xorshift64: a fixed, seedable stream (the digest must not depend on a library's version).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// One ACK frame, possibly followed by a loss or an ECN-CE mark (in the same frame or later).
fn ack_events(r: &mut Rng, rtt: u32, loss_rate: u64, out: &mut Vec<ScriptEvent>) {
    let dt_us = if r.below(10) == 0 {
        rtt / 4
    } else {
        r.below(u64::from(rtt) / 40 + 1) as u32
    };
    out.push(ScriptEvent::Ack {
        dt_us,
        bursts: 1 + r.below(3) as u16,
        app_limited: r.below(10) == 0,
    });
    if loss_rate > 0 && r.below(1000) < loss_rate {
        let dt_us = if r.below(2) == 0 {
            0
        } else {
            r.below(5000) as u32
        };
        out.push(ScriptEvent::Lose {
            dt_us,
            bursts: 1 + r.below(2) as u16,
            persistent: r.below(30) == 0,
        });
    }
    if loss_rate > 0 && r.below(3000) < loss_rate {
        let dt_us = if r.below(2) == 0 { 0 } else { 100 };
        out.push(ScriptEvent::EcnCe { dt_us });
    }
}

/// A script of about `n` events on its own RTT, burst size and loss rate.
fn script(seed: u64, n: usize) -> Vec<ScriptEvent> {
    let mut r = Rng::new(seed);
    let mut out = Vec::with_capacity(n + 2);
    let rtt = 2_000 + r.below(80_000) as u32;
    let burst = 1 + r.below(8) as u32;
    let loss_rate = [0, 2, 20, 200][r.below(4) as usize];
    while out.len() < n {
        match r.below(1000) {
            x if x < 450 => {
                let short = if r.below(20) == 0 {
                    r.below(1000) as u32
                } else {
                    0
                };
                let dt_us = if r.below(4) == 0 {
                    r.below(300) as u32
                } else {
                    0
                };
                let segments = 1 + r.below(u64::from(burst)) as u32;
                out.push(ScriptEvent::Send {
                    dt_us,
                    bytes: 1200 * segments - short,
                });
            }
            x if x < 900 => ack_events(&mut r, rtt, loss_rate, &mut out),
            x if x < 995 => out.push(ScriptEvent::Ack {
                dt_us: rtt,
                bursts: 2,
                app_limited: false,
            }),
            x if x < 998 => out.push(ScriptEvent::Send {
                dt_us: rtt * 3,
                bytes: 1200,
            }),
            _ => out.push(ScriptEvent::Mtu {
                mtu: [1200, 1350, 1452, 1500, 9000][r.below(5) as usize],
            }),
        }
    }
    out
}

fn specs() -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for p in Profile::NAMES {
        for a in ["cubic", "bic", "reno"] {
            for paced in [true, false] {
                out.push((format!("{a}@{p}"), paced));
            }
        }
    }
    for named in [
        "bic@linux-6,slow_start=hystart",
        "reno@linux-2.6.29,slow_start=hystart",
        "cubic@linux-6,slow_start=hystart++",
        "cubic@linux-2.6.39,hz=1000",
        "cubic@linux-2.6.20,initial_ssthresh=0",
        "cubic@linux-4.4,hystart_detect=2",
    ] {
        out.push((named.to_string(), true));
    }
    out
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The digest of one spec over all seeds, and how many steps broke a script invariant.
fn digest(spec: &CcSpec, paced: bool, seeds: u64, steps: usize) -> (u64, usize) {
    let mut h = DefaultHasher::new();
    let mut violations = 0;
    for seed in 0..seeds {
        let observer = Observer::new();
        let Some(factory) = spec.hare_factory() else {
            panic!("{spec} is not a hare controller")
        };
        let factory = factory.paced(paced).with_observer(observer.clone());
        let mut d = ScriptDriver::new(&factory, 1200 + (seed % 3) as u16 * 100);
        for event in script(seed * 7919 + 17, steps) {
            violations += usize::from(d.apply(event).is_err());
            let c = d.controller();
            let m = c.metrics();
            (c.window(), m.congestion_window, m.ssthresh, m.pacing_rate).hash(&mut h);
            (
                c.pacing_rate(),
                c.ack_carry(),
                c.bytes_in_flight(),
                c.in_recovery(),
            )
                .hash(&mut h);
            format!("{:?}", c.snapshot()).hash(&mut h);
            let k = c.kernel();
            format!("{:?}{:?}", k.tcp_sock(), k.module()).hash(&mut h);
        }
        drop(d);
        for id in observer.controllers() {
            for event in observer.drain_events(id) {
                format!("{event:?}").hash(&mut h);
            }
        }
    }
    (h.finish(), violations)
}

/// Debug builds (the test profile) keep a whole copy of the module beside the smaller save
/// taken before each ACK's growth step, and assert after every restore (a loss quinn reports
/// after the frame's acks) that the two agree: these scripts, with losses in the same frame
/// as an ACK in slow start and in congestion avoidance, run that check for every spec. Not
/// built in release, where the check does not exist.
#[cfg(debug_assertions)]
#[test]
fn every_amended_ack_restores_what_its_growth_step_wrote() {
    for (spec, paced) in specs() {
        let parsed: CcSpec = match spec.parse() {
            Ok(s) => s,
            Err(e) => panic!("{spec}: {e}"),
        };
        let (_, violations) = digest(&parsed, paced, 3, 1000);
        assert_eq!(violations, 0, "{spec} (paced {paced})");
    }
}

#[test]
#[ignore = "a tool: compare its output before and after a change (see the file's docs)"]
fn decision_digest() {
    let seeds = env_or("HARE_DIGEST_SEEDS", 40);
    let steps = usize::try_from(env_or("HARE_DIGEST_STEPS", 3000)).unwrap_or(3000);
    let mut report = String::new();
    let mut all = DefaultHasher::new();
    let mut broken = Vec::new();
    for (spec, paced) in specs() {
        let parsed: CcSpec = match spec.parse() {
            Ok(s) => s,
            Err(e) => panic!("{spec}: {e}"),
        };
        let (d, violations) = digest(&parsed, paced, seeds, steps);
        d.hash(&mut all);
        if violations > 0 {
            broken.push(format!("{spec} (paced {paced}): {violations}"));
        }
        report.push_str(&format!(
            "{spec:<45} paced={paced:<5} {d:016x} invariant violations {violations}\n"
        ));
    }
    report.push_str(&format!("all {:016x}\n", all.finish()));
    println!("{report}");
    if let Ok(path) = std::env::var("HARE_DIGEST_OUT") {
        if let Err(e) = std::fs::write(&path, &report) {
            panic!("writing {path}: {e}");
        }
    }
    assert!(broken.is_empty(), "script invariants broken: {broken:?}");
}
